"""Fixtures for the examples' tests: the CNClaim tests' ``client``, and a ``kubeconfig``
for an example's operator run as a process."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from reconcilekit import Client
from reconcilekit.testing import Cluster

from cnclaim_env import cnclaim_client


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    """A client of the test's API server, with the CNClaim CRDs installed
    (:func:`cnclaim_env.cnclaim_client`)."""
    async with cnclaim_client(apiserver) as c:
        yield c


@pytest.fixture
def kubeconfig(apiserver: Cluster, tmp_path: Path) -> Path:
    """A kubeconfig file for the test's API server (written in ``tmp_path`` for the
    in-process one, the backend's own for a real cluster)."""
    if apiserver.server is not None:
        return apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")
    assert apiserver.kubeconfig_path is not None
    return apiserver.kubeconfig_path
