"""The KVStore operator (``kvstore_operator.py``) on whichever backend the suite runs on,
with no branch on it: a StatefulSet, a headless Service and a PodDisruptionBudget per
KVStore, and what the cluster's controllers and a simulated kubelet make of them."""

from __future__ import annotations

from typing import Any

import anyio

from reconcilekit import Client, NotFound, Resource
from reconcilekit.conditions import is_status_condition_true
from reconcilekit.kinds import (
    ENDPOINTS,
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    SERVICES,
    STATEFUL_SETS,
)
from reconcilekit.testing import Cluster, NodeSimulator, eventually

from kvstore_operator import KVSTORES, KVSTORES_KIND, build

SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


async def _get(client: Client, resource: Resource, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, ns)
    except NotFound:
        return None


async def _claims_released(client: Client, ns: str) -> tuple[str, ...] | None:
    """Once the KVStore is gone: the claims left, each of them being deleted."""
    if await _get(client, KVSTORES, "kv", ns) is not None:
        return None
    claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
    assert all(c["metadata"].get("deletionTimestamp") for c in claims), claims
    return ("released", *(c["metadata"]["name"] for c in claims))


async def test_a_kvstore_runs_its_replicas_keeps_a_quorum_and_goes_with_its_owner(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    await apiserver.install_crd(KVSTORES_KIND.crd())
    async with Client(apiserver.configuration) as client, \
            NodeSimulator(client, nodes=3, namespace=ns):
        manager = build(client, namespace=ns)
        async with anyio.create_task_group() as tg:
            await tg.start(manager.run)
            await client.create(KVSTORES, {
                "apiVersion": KVSTORES.api_version, "kind": "KVStore",
                "metadata": {"name": "kv"}, "spec": {"image": "registry.k8s.io/pause:3.9"}}, ns)

            async def ready(replicas: int) -> dict[str, Any] | None:
                got = await client.get(KVSTORES, "kv", ns)
                status = got.get("status") or {}
                return got if status.get("readyReplicas") == replicas and (
                    is_status_condition_true(status.get("conditions"), "Ready")) else None
            await eventually(lambda: ready(3), within=SETTLE, what="three replicas ready")

            endpoints = await client.get(ENDPOINTS, "kv", ns)
            assert sorted(a["hostname"] for s in endpoints["subsets"]
                          for a in s["addresses"]) == ["kv-0", "kv-1", "kv-2"]
            claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
            assert sorted(c["metadata"]["name"] for c in claims) == [
                "data-kv-0", "data-kv-1", "data-kv-2"]

            async def budget(allowed: int, healthy: int) -> dict[str, Any] | None:
                got = await client.get(POD_DISRUPTION_BUDGETS, "kv", ns)
                status = got.get("status") or {}
                return status if (status.get("disruptionsAllowed"), status.get(
                    "currentHealthy"), status.get("observedGeneration")) == (
                    allowed, healthy, got["metadata"]["generation"]) else None
            status = await eventually(lambda: budget(1, 3), within=SETTLE,
                                      what="one disruption allowed")
            assert (status["desiredHealthy"], status["expectedPods"]) == (2, 3)

            scale = await client.get_scale(KVSTORES, "kv", ns)
            assert (scale["spec"].get("replicas"), scale["status"]["replicas"]) == (3, 3)
            await client.patch_scale(KVSTORES, "kv", {"spec": {"replicas": 1}}, ns)
            await eventually(lambda: ready(1), within=SETTLE, what="scaled to one")
            await eventually(lambda: budget(0, 1), within=SETTLE, what="none allowed")
            assert (await client.get(STATEFUL_SETS, "kv", ns))["spec"]["replicas"] == 1

            await client.delete(KVSTORES, "kv", ns)
            _, *left = await eventually(lambda: _claims_released(client, ns), within=SETTLE,
                                        what="the KVStore's finalizer deleting its claims")
            assert set(left) <= {"data-kv-0", "data-kv-1", "data-kv-2"}
            manager.stop()

        async def collected() -> bool:
            return all([await _get(client, kind, "kv", ns) is None
                        for kind in (STATEFUL_SETS, SERVICES, POD_DISRUPTION_BUDGETS)])
        await eventually(collected, within=SETTLE, what="the children garbage-collected")
