"""pytest plugin (entry point ``pytest11``): ``apiserver``, ``client`` and ``kube_client``.

``apiserver`` yields a :class:`reconcilekit.testing.Cluster` on one of three
backends, chosen by the environment:

* ``RECONCILEKIT_TEST_KUBECONFIG=PATH``: the existing cluster of that kubeconfig;
* ``RECONCILEKIT_TEST_ASSETS=DIR`` (or envtest's ``KUBEBUILDER_ASSETS``): one
  :class:`ControlPlane` (etcd, kube-apiserver, kube-controller-manager) from
  those binaries, started on first use and shared by the whole session;
* neither: a fresh in-process :class:`APIServer` per test (the default).

On a real backend each test gets a namespace of its own (usable: its
``default`` ServiceAccount exists), deleted afterwards, and tests marked
``in_process_only`` (fault injection) are skipped with the reason.
``kube_client`` is a kubernetes-asyncio ``ApiClient`` for the cluster,
``client`` a :class:`reconcilekit.Client`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from .._client import Client
from ._cluster import KUBECONFIG_ENV, NO_FAULTS_REASON, Cluster, open_cluster
from ._control_plane import ControlPlane, assets_from_env

_plane: ControlPlane | None = None
_plane_kubeconfig: Path | None = None


def backend() -> str:
    """``"kubeconfig"``, ``"control-plane"`` or ``"in-process"``, from the environment."""
    if os.environ.get(KUBECONFIG_ENV):
        return "kubeconfig"
    if assets_from_env() is not None:
        return "control-plane"
    return "in-process"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "in_process_only: needs reconcilekit's in-process API server "
        "(skipped against a real API server)")


def pytest_report_header(config: pytest.Config) -> str:
    kind = backend()
    if kind == "kubeconfig":
        return f"reconcilekit backend: the cluster of {os.environ[KUBECONFIG_ENV]}"
    if kind == "control-plane":
        return f"reconcilekit backend: kube-apiserver started from {assets_from_env()}"
    return "reconcilekit backend: the in-process API server"


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    global _plane
    if _plane is not None:
        _plane.stop()
        _plane = None


def _control_plane() -> tuple[ControlPlane, Path]:
    """The session's control plane, started on first use (blocking, in the main thread)."""
    global _plane, _plane_kubeconfig
    if _plane is None:
        plane = ControlPlane()
        plane.start()
        _plane = plane
        _plane_kubeconfig = plane.write_kubeconfig(
            Path(tempfile.mkdtemp(prefix="reconcilekit-test-")) / "kubeconfig")
    assert _plane_kubeconfig is not None
    return _plane, _plane_kubeconfig


@pytest_asyncio.fixture
async def apiserver(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    """The API server a test talks to: in-process, the session's control plane, or a cluster."""
    kind = backend()
    if kind != "in-process" and request.node.get_closest_marker("in_process_only"):
        pytest.skip(NO_FAULTS_REASON)
    if kind == "control-plane":
        plane, kubeconfig = _control_plane()
        async with open_cluster(kubeconfig, configuration=plane.configuration()) as cluster:
            yield cluster
        return
    async with open_cluster(os.environ.get(KUBECONFIG_ENV) or None) as cluster:
        yield cluster


@pytest_asyncio.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    """A :class:`reconcilekit.Client` for :func:`apiserver` (a test may define its own)."""
    async with Client(apiserver.configuration) as c:
        yield c


@pytest_asyncio.fixture
async def kube_client(apiserver: Cluster) -> AsyncIterator[Any]:
    """A kubernetes-asyncio ``ApiClient`` for :func:`apiserver`."""
    async with apiserver.api_client() as api:
        yield api
