"""API servers for benchmarks: the in-process one in a process of its own, or kube-apiserver.

Either way the benchmark gets a kubeconfig path and talks HTTP to a server
that does not share its process (so the client's CPU is its own).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

__all__ = ["api_server"]


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
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out", str(kubeconfig),
            stdout=subprocess.PIPE)
        try:
            assert proc.stdout is not None
            await proc.stdout.readline()  # the server prints a line once it serves
            yield kubeconfig
        finally:
            proc.terminate()
            await proc.wait()
