"""Fixtures of the differential corpus: kubectl, and the in-process server beside kube-apiserver.

On the kube pass (``RECONCILEKIT_TEST_ASSETS`` or a kubeconfig) one in-process
server runs for the whole pytest session, as ``python -m reconcilekit.testing``
in a subprocess of its own (so no event loop is shared with the tests); each
session uses a namespace of its own on it, named as the test's namespace on the
real server. Sharing it is safe: sessions touch only their namespace and the
corpus's CRDs, which every session installs alike. Elsewhere the corpus's
session tests are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio import config as kube_config
from kubernetes_asyncio.client import Configuration

from reconcilekit.testing import Cluster
from reconcilekit.testing._control_plane import assets_from_env
from reconcilekit.testing._pytest_plugin import backend

NEEDS_KUBE = ("the differential corpus compares kubectl against kube-apiserver and the "
              "in-process server: run with RECONCILEKIT_TEST_ASSETS=DIR (kube-apiserver, "
              "etcd, kube-controller-manager) or RECONCILEKIT_TEST_KUBECONFIG")


def find_kubectl() -> str | None:
    """kubectl from the assets directory, else from PATH."""
    assets = assets_from_env()
    if assets is not None and Path(assets, "kubectl").is_file():
        return str(Path(assets, "kubectl"))
    return shutil.which("kubectl")


@pytest.fixture(scope="session")
def kubectl() -> str:
    """kubectl's path; skips off the kube pass, or when there is no kubectl."""
    if backend() == "in-process":
        pytest.skip(NEEDS_KUBE)
    found = find_kubectl()
    if found is None:
        pytest.skip(f"no kubectl in the assets directory ({assets_from_env()}) nor on PATH")
    return found


@pytest.fixture(scope="session")
def in_process_kubeconfig(kubectl: str) -> Iterator[Path]:
    """A kubeconfig for one in-process server serving the whole pytest session."""
    directory = Path(tempfile.mkdtemp(prefix="reconcilekit-differential-"))
    kubeconfig = directory / "kubeconfig"
    log = (directory / "server.log").open("w")  # a file: a full pipe would block the server
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out", str(kubeconfig),
         "--enable-admission-plugins=OwnerReferencesPermissionEnforcement"],
        stdout=subprocess.PIPE, stderr=log, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the server's one line, or EOF when it failed
        if "listening on" not in line:
            proc.kill()
            proc.wait()
            raise RuntimeError(f"python -m reconcilekit.testing did not start: {line}"
                               f"{(directory / 'server.log').read_text()}")
        yield kubeconfig
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def in_process_twin(in_process_kubeconfig: Path, apiserver: Cluster
                          ) -> AsyncIterator[Cluster]:
    """The in-process server, with a namespace named as the real server's test namespace
    (the real side of a comparison is ``apiserver``, which has a kubeconfig)."""
    assert apiserver.kubeconfig_path is not None, "a real backend has a kubeconfig"
    configuration = Configuration()
    await kube_config.load_kube_config(config_file=str(in_process_kubeconfig),
                                       client_configuration=configuration)
    local = Cluster(configuration)
    try:
        made = await local.request("POST", "/api/v1/namespaces", json={
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": apiserver.namespace}})
        assert made.status == 201, made
        yield local
    finally:
        await local.close()
