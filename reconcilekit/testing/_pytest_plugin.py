"""pytest plugin (entry point ``pytest11``): the ``apiserver`` and ``kube_client`` fixtures.

``apiserver`` yields a :class:`reconcilekit.testing.Cluster`: a fresh
in-process :class:`APIServer` per test, or, when ``RECONCILEKIT_TEST_KUBECONFIG``
names a kubeconfig, that real cluster with a namespace of the test's own.
``kube_client`` is a kubernetes-asyncio ``ApiClient`` for it, ``client`` a
:class:`reconcilekit.Client`.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from .._client import Client
from ._cluster import KUBECONFIG_ENV, NO_FAULTS_REASON, Cluster, open_cluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "in_process_only: needs reconcilekit's in-process API server "
        "(skipped against a real cluster)")


@pytest_asyncio.fixture
async def apiserver(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    """The API server a test talks to (in-process, or the real cluster of the env var)."""
    if os.environ.get(KUBECONFIG_ENV) and request.node.get_closest_marker("in_process_only"):
        pytest.skip(NO_FAULTS_REASON)
    async with open_cluster(os.environ.get(KUBECONFIG_ENV)) as cluster:
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
