"""Fixtures for the API server's conformance tests.

Every test here talks HTTP through kubernetes-asyncio's configuration and
aiohttp session to the ``apiserver`` fixture: reconcilekit's in-process
server by default, a real cluster when RECONCILEKIT_TEST_KUBECONFIG is set.
Where no real cluster was at hand, each behaviour cites the kube-apiserver
source or documentation it copies.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit.testing import Cluster

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.reconcilekit.dev"},
    "spec": {
        "group": "test.reconcilekit.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "listKind": "WidgetList", "shortNames": ["wdg"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
            }},
        }],
    },
}

GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.test.reconcilekit.dev"},
    "spec": {
        "group": "test.reconcilekit.dev",
        "scope": "Cluster",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        }],
    },
}


@pytest.fixture
async def widgets(apiserver: Cluster) -> str:
    """Install the namespaced Widget CRD (with status); returns its collection path."""
    await apiserver.install_crd(WIDGET_CRD)
    return f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/widgets"


@pytest.fixture
async def gadgets(apiserver: Cluster) -> str:
    """Install the cluster-scoped Gadget CRD (no status subresource)."""
    await apiserver.install_crd(GADGET_CRD)
    return "/apis/test.reconcilekit.dev/v1/gadgets"


@pytest.fixture
def pods(apiserver: Cluster) -> str:
    return f"/api/v1/namespaces/{apiserver.namespace}/pods"


@pytest.fixture
def configmaps(apiserver: Cluster) -> str:
    return f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
