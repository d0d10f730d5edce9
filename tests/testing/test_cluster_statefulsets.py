"""StatefulSets played by the cluster's statefulset controller, on every backend.

The same test, unchanged, runs against the in-process server and against
kube-apiserver with kube-controller-manager, a :class:`NodeSimulator` playing
the kubelet on both. Revision names are compared exactly: the in-process
server names a template's ControllerRevision as kube-controller-manager does.
"""

from __future__ import annotations

from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import PERSISTENT_VOLUME_CLAIMS, PODS, STATEFUL_SETS
from reconcilekit.testing import Cluster, NodeSimulator, eventually

from cluster_events import events_of

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing
CLAIM = {"metadata": {"name": "data"}, "spec": {
    "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


def _statefulset(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "serviceName": name,
                     "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": IMAGE}]}},
                     "volumeClaimTemplates": [CLAIM], **spec}}


async def _settled(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    """The StatefulSet once every replica is ready at the update revision."""
    sts = await client.get(STATEFUL_SETS, name, ns)
    status, want = sts.get("status") or {}, sts["spec"]["replicas"]
    done = (status.get("observedGeneration") == sts["metadata"]["generation"]
            and status.get("replicas") == want == status.get("readyReplicas", 0)
            and status.get("updatedReplicas", 0) == want
            and status.get("currentRevision") == status.get("updateRevision"))
    live = [p for p in (await client.list(PODS, ns, label_selector=f"app={name}"))["items"]
            if not p["metadata"].get("deletionTimestamp")]
    return sts if done and len(live) == want else None


async def test_a_statefulset_scales_in_order_with_its_claims_and_rolls_out(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns):
        await client.create(STATEFUL_SETS, _statefulset("db", 3), ns)
        sts = await eventually(lambda: _settled(client, ns, "db"), within=SETTLE,
                               what="three ready replicas")
        revision = sts["status"]["updateRevision"]
        assert revision == "db-5cf8d78448"  # kube-controller-manager's name for this template
        assert sts["status"]["collisionCount"] == 0
        pods = sorted((await client.list(PODS, ns, label_selector="app=db"))["items"],
                      key=lambda p: p["metadata"]["name"])
        assert [p["metadata"]["name"] for p in pods] == ["db-0", "db-1", "db-2"]
        for i, pod in enumerate(pods):
            assert pod["metadata"]["labels"] == {
                "app": "db", "controller-revision-hash": revision,
                "statefulset.kubernetes.io/pod-name": f"db-{i}",
                "apps.kubernetes.io/pod-index": str(i)}
            assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (f"db-{i}", "db")
            assert pod["spec"]["volumes"][0] == {
                "name": "data", "persistentVolumeClaim": {"claimName": f"data-db-{i}"}}
        claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
        assert sorted(c["metadata"]["name"] for c in claims) == [
            "data-db-0", "data-db-1", "data-db-2"]
        assert all(c["metadata"]["labels"] == {"app": "db"} for c in claims)
        expected = [f"create Pod db-{i} in StatefulSet db successful" for i in range(3)]
        events = await events_of(client, ns, "db", having=[
            *expected, "create Claim data-db-0 Pod db-0 in StatefulSet db success"])
        assert [e for e in events if e.startswith("create Pod")] == expected

        await client.patch(STATEFUL_SETS, "db", {"spec": {"replicas": 1}}, ns)
        await eventually(lambda: _settled(client, ns, "db"), within=SETTLE, what="one replica")
        expected = ["delete Pod db-2 in StatefulSet db successful",
                    "delete Pod db-1 in StatefulSet db successful"]
        events = await events_of(client, ns, "db", having=expected)
        assert [e for e in events if e.startswith("delete Pod")] == expected
        claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
        assert len(claims) == 3  # kept: the default retention policy is Retain

        await client.patch(STATEFUL_SETS, "db", {"spec": {"replicas": 2, "template": {
            "metadata": {"annotations": {"restarted": "1"}}}}}, ns)

        async def updated() -> dict[str, Any] | None:
            got = await _settled(client, ns, "db")
            return got if got is not None and got["status"]["updateRevision"] != revision \
                else None
        sts = await eventually(updated, within=SETTLE, what="rolled out to revision 2")
        revisions = await client.request(
            "GET", f"/apis/apps/v1/namespaces/{ns}/controllerrevisions")
        assert sorted((r["metadata"]["name"], r["revision"]) for r in revisions["items"]) == sorted(
            [(revision, 1), (sts["status"]["updateRevision"], 2)])
        pods = (await client.list(PODS, ns, label_selector="app=db"))["items"]
        assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {
            sts["status"]["updateRevision"]}


async def test_a_parallel_statefulset_with_claims_deleted_along(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns):
        made = await client.create(STATEFUL_SETS, _statefulset(
            "cache", 2, podManagementPolicy="Parallel",
            persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete",
                                                  "whenScaled": "Retain"}), ns)
        await eventually(lambda: _settled(client, ns, "cache"), within=SETTLE,
                         what="two ready replicas")
        claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
        assert sorted(c["metadata"]["name"] for c in claims) == ["data-cache-0", "data-cache-1"]
        for c in claims:
            assert c["metadata"]["ownerReferences"] == [{
                "apiVersion": "apps/v1", "kind": "StatefulSet", "name": "cache",
                "uid": made["metadata"]["uid"]}]


async def test_a_partitioned_rolling_update_updates_only_the_ordinals_from_the_partition(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns):
        await client.create(STATEFUL_SETS, _statefulset("part", 3, updateStrategy={
            "type": "RollingUpdate", "rollingUpdate": {"partition": 2}}), ns)
        sts = await eventually(lambda: _settled(client, ns, "part"), within=SETTLE,
                               what="three ready replicas")
        first = sts["status"]["updateRevision"]
        before = {p["metadata"]["name"]: p["metadata"]["uid"]
                  for p in (await client.list(PODS, ns, label_selector="app=part"))["items"]}
        await client.patch(STATEFUL_SETS, "part", {"spec": {"template": {"spec": {
            "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.8"}]}}}}, ns)

        async def partly_updated() -> dict[str, Any] | None:
            got = await client.get(STATEFUL_SETS, "part", ns)
            status = got.get("status") or {}
            done = (status.get("observedGeneration") == got["metadata"]["generation"]
                    and status.get("updatedReplicas") == 1 and status.get("readyReplicas") == 3
                    and status.get("currentReplicas") == 2)
            return got if done else None
        sts = await eventually(partly_updated, within=SETTLE, what="ordinal 2 updated")
        status = sts["status"]
        assert (status["currentRevision"], status["replicas"]) == (first, 3)
        assert status["updateRevision"] != first
        pods = {p["metadata"]["name"]: p
                for p in (await client.list(PODS, ns, label_selector="app=part"))["items"]}
        assert {name: (p["metadata"]["labels"]["controller-revision-hash"],
                       p["spec"]["containers"][0]["image"]) for name, p in pods.items()} == {
            "part-0": (first, IMAGE), "part-1": (first, IMAGE),
            "part-2": (status["updateRevision"], "registry.k8s.io/pause:3.8")}
        # the ordinals below the partition were left alone, the one above it replaced
        assert [pods[f"part-{i}"]["metadata"]["uid"] == before[f"part-{i}"]
                for i in range(3)] == [True, True, False]

        await client.patch(STATEFUL_SETS, "part", {"spec": {"updateStrategy": {
            "rollingUpdate": {"partition": 0}}}}, ns)
        sts = await eventually(lambda: _settled(client, ns, "part"), within=SETTLE,
                               what="every ordinal updated")
        assert (sts["status"]["currentReplicas"], sts["status"]["currentRevision"]) == (
            3, status["updateRevision"])
