"""Fixtures for the API server's conformance tests.

Every test here talks HTTP through kubernetes-asyncio's configuration and
aiohttp session to the ``apiserver`` fixture: reconcilekit's in-process
server by default, a real cluster when RECONCILEKIT_TEST_KUBECONFIG is set.
Where no real cluster was at hand, each behaviour cites the kube-apiserver
source or documentation it copies. What the tests import (the CRDs, the
recording webhook, ...) is in apiserver_helpers.py.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from apiserver_helpers import GADGET_CRD, PROBE_CRD, WIDGET_CRD, RecordingWebhook

from reconcilekit.testing import Cluster


async def _release_finalizers(apiserver: Cluster, collection: str) -> None:
    """Strip the finalizers a test left, so that its namespace can go (real clusters)."""
    listed = await apiserver.request("GET", collection)
    for item in listed.body.get("items", []) if listed.status == 200 else []:
        if item["metadata"].get("finalizers"):
            await apiserver.request(
                "PATCH", f"{collection}/{item['metadata']['name']}",
                json={"metadata": {"finalizers": None}},
                content_type="application/merge-patch+json")


@pytest.fixture
async def widgets(apiserver: Cluster) -> AsyncIterator[str]:
    """Install the namespaced Widget CRD (with status); yields its collection path."""
    await apiserver.install_crd(WIDGET_CRD)
    path = f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/widgets"
    yield path
    if not apiserver.in_process:
        await _release_finalizers(apiserver, path)


@pytest.fixture
async def gadgets(apiserver: Cluster) -> str:
    """Install the cluster-scoped Gadget CRD (no status subresource)."""
    await apiserver.install_crd(GADGET_CRD)
    return "/apis/test.reconcilekit.dev/v1/gadgets"


@pytest.fixture
async def probes(apiserver: Cluster) -> AsyncIterator[str]:
    """Install the Probe CRD (schema, defaults, CEL rules); yields its collection path."""
    await apiserver.install_crd(PROBE_CRD)
    yield f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/probes"


@pytest.fixture
async def pods(apiserver: Cluster) -> AsyncIterator[str]:
    path = f"/api/v1/namespaces/{apiserver.namespace}/pods"
    yield path
    if not apiserver.in_process:  # no kubelet: a Pod bound to a node stays Terminating
        await _release_finalizers(apiserver, path)
        await apiserver.request("DELETE", path, json={"gracePeriodSeconds": 0})


@pytest.fixture
async def configmaps(apiserver: Cluster) -> AsyncIterator[str]:
    path = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    yield path
    if not apiserver.in_process:
        await _release_finalizers(apiserver, path)


@pytest.fixture
async def webhook() -> AsyncIterator[RecordingWebhook]:
    """A :class:`RecordingWebhook`, listening until the test ends."""
    server = RecordingWebhook()
    await server.start()
    yield server
    await server.stop()
