"""API servers for benchmarks: the in-process one in a process of its own, or kube-apiserver.

Either way the benchmark gets a kubeconfig path and talks HTTP to a server
that does not share its process (so the client's CPU is its own).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from reconcilekit.testing import OperatorProcess
from reconcilekit.testing._control_plane import assets_from_env

__all__ = ["add_assets_option", "api_server", "kube_apiserver_version"]


@asynccontextmanager
async def api_server(assets: str | None = None) -> AsyncIterator[Path]:
    """A kube-apiserver control plane (without kube-controller-manager) from ``assets``,
    else ``python -m reconcilekit.testing``; yields the path of a kubeconfig for it."""
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        if assets:
            from reconcilekit.testing import ControlPlane

            async with ControlPlane(assets, controller_manager=False) as plane:
                plane.write_kubeconfig(kubeconfig)
                yield kubeconfig
            return
        async with OperatorProcess(sys.executable, "-m", "reconcilekit.testing",
                                   "--kubeconfig-out", str(kubeconfig),
                                   name="the in-process API server") as server:
            await server.wait_for_line("listening on", within=120)  # printed once it serves
            yield kubeconfig


def add_assets_option(parser: argparse.ArgumentParser) -> None:
    """``--assets DIR``: the etcd and kube-apiserver binaries a benchmark starts."""
    parser.add_argument("--assets", metavar="DIR", default=assets_from_env(),
                        help="etcd and kube-apiserver binaries "
                             "(default $RECONCILEKIT_TEST_ASSETS)")


def kube_apiserver_version(assets: str) -> str:
    """What ``kube-apiserver --version`` of ``assets`` says (``Kubernetes v1.28.7``)."""
    return subprocess.run([str(Path(assets) / "kube-apiserver"), "--version"],
                          capture_output=True, text=True, check=False).stdout.strip()
