"""Fixtures for the API server's conformance tests.

Every test here talks HTTP through kubernetes-asyncio's configuration and
aiohttp session to the ``apiserver`` fixture: reconcilekit's in-process
server by default, a real cluster when RECONCILEKIT_TEST_KUBECONFIG is set.
Where no real cluster was at hand, each behaviour cites the kube-apiserver
source or documentation it copies.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from reconcilekit.testing import Cluster

GROUP = "test.reconcilekit.dev"


def crd(kind: str, schema: dict[str, Any], *, scope: str = "Namespaced",
        status: bool = False, **names: Any) -> dict[str, Any]:
    """A one-version (v1) CustomResourceDefinition of ``kind`` in the tests' group."""
    plural = f"{kind.lower()}s"
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               **names},
                     "versions": [version]}}


ANYTHING: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
WIDGET_CRD = crd("Widget", ANYTHING, status=True, listKind="WidgetList", shortNames=["wdg"])
GADGET_CRD = crd("Gadget", ANYTHING, scope="Cluster")


# A namespaced kind with a schema that exercises pruning, defaults, validation and CEL
# rules (test_apiserver_crd_schema.py), and list types (test_apiserver_apply.py).
PROBE_CRD = crd("Probe", {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.size <= self.maxSize",
                 "message": "size must not exceed maxSize"},
                {"rule": "!has(self.mode) || self.mode != 'bad'",
                 "messageExpression": "'mode ' + self.mode + ' is bad'",
                 "fieldPath": ".mode"},
                {"rule": "self.size == oldSelf.size || self.mode == 'resize'",
                 "message": "size is immutable unless resizing"},
                {"rule": "!has(self.name) || self.name.lowerAscii() != 'root'"},
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 100},
                "maxSize": {"type": "integer", "default": 50},
                "mode": {"type": "string", "enum": ["fast", "slow", "bad", "resize"]},
                "name": {"type": "string", "minLength": 2, "maxLength": 5,
                         "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "maximum": 10, "exclusiveMaximum": True},
                "even": {"type": "integer", "multipleOf": 2},
                "flag": {"type": "boolean"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "items": {"type": "string"},
                         "x-kubernetes-list-type": "set"},
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["key"],
                    "items": {"type": "object", "required": ["key"], "properties": {
                        "key": {"type": "string"},
                        "v": {"type": "string", "default": "dv"}}}},
                "labels": {"type": "object", "maxProperties": 2,
                           "additionalProperties": {"type": "string"}},
                "free": {"type": "object",
                         "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string"},
                "nullable": {"type": "string", "nullable": True},
                "nested": {"type": "object", "default": {},
                           "properties": {"deep": {"type": "integer"},
                                          "level": {"type": "string",
                                                    "default": "info"}}},
                "created": {"type": "string", "format": "date-time"},
                "immut": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "immut is immutable"}]},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}, status=True)


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


@asynccontextmanager
async def serving_cli(kubeconfig: Path, *args: str) -> AsyncIterator[str]:
    """Run ``python -m reconcilekit.testing --kubeconfig-out KUBECONFIG``; yields the line
    it prints once listening. On exit it is sent SIGTERM and must exit 0."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out", str(kubeconfig),
        *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        yield (await asyncio.wait_for(proc.stdout.readline(), 30)).decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await proc.wait()
    assert code == 0
