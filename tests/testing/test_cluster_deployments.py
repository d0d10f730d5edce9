"""Deployments and ReplicaSets played by the cluster's controllers, on every backend.

The same test, unchanged, runs against the in-process server (its own
deployment and replicaset controllers) and against kube-apiserver with
kube-controller-manager; a :class:`NodeSimulator` plays the kubelet on both.
The tests at the end drive the in-process server's clock, or choose its
controllers, and make their own servers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import pytest

from reconcilekit import Client, NotFound
from reconcilekit.kinds import DEPLOYMENTS, PODS, REPLICA_SETS
from reconcilekit.testing import APIServer, Cluster, FakeClock, NodeSimulator, eventually

from cluster_events import events_of

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing
HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def _deployment(name: str, replicas: int, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": IMAGE}]}},
                     **spec}}


def _nodes(apiserver: Cluster, client: Client) -> NodeSimulator:
    return NodeSimulator(client, nodes=2, namespace=apiserver.namespace)


async def _rolled_out(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    """The Deployment once ``kubectl rollout status`` would call it rolled out."""
    d = await client.get(DEPLOYMENTS, name, ns)
    status, want = d.get("status") or {}, d["spec"]["replicas"]
    progressing = next((c for c in status.get("conditions") or ()
                        if c["type"] == "Progressing"), {})
    done = (status.get("observedGeneration", 0) >= d["metadata"]["generation"]
            and status.get("updatedReplicas", 0) == want == status.get("replicas", 0)
            and status.get("availableReplicas", 0) == want
            and progressing.get("reason") == "NewReplicaSetAvailable")
    return d if done else None


async def _replica_sets(client: Client, ns: str, app: str) -> list[dict[str, Any]]:
    found = (await client.list(REPLICA_SETS, ns, label_selector=f"app={app}"))["items"]
    return sorted(found, key=lambda rs: int(rs["metadata"]["annotations"][REVISION]))


async def test_a_deployment_rolls_out_updates_and_rolls_back(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with _nodes(apiserver, client):
        made = await client.create(DEPLOYMENTS, _deployment("web", 3), ns)
        d = await eventually(lambda: _rolled_out(client, ns, "web"), within=SETTLE,
                             what="revision 1 rolled out")
        assert d["metadata"]["annotations"][REVISION] == "1"
        assert [(c["type"], c["status"], c["reason"]) for c in d["status"]["conditions"]] == [
            ("Available", "True", "MinimumReplicasAvailable"),
            ("Progressing", "True", "NewReplicaSetAvailable")]
        [first] = await _replica_sets(client, ns, "web")
        hash_ = first["metadata"]["labels"][HASH]
        assert first["metadata"]["name"] == f"web-{hash_}"
        assert first["spec"]["selector"]["matchLabels"] == {"app": "web", HASH: hash_}
        assert first["metadata"]["annotations"] == {
            REVISION: "1", "deployment.kubernetes.io/desired-replicas": "3",
            "deployment.kubernetes.io/max-replicas": "4"}
        [ref] = first["metadata"]["ownerReferences"]
        assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
            "Deployment", made["metadata"]["uid"], True, True)
        pods = (await client.list(PODS, ns, label_selector=f"{HASH}={hash_}"))["items"]
        assert len(pods) == 3 and all(p["metadata"]["name"].startswith(f"web-{hash_}-")
                                      for p in pods)

        await client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"spec": {"containers": [
            {"name": "app", "image": "registry.k8s.io/pause:3.8"}]}}}}, ns)
        d = await eventually(lambda: _rolled_out(client, ns, "web"), within=SETTLE,
                             what="revision 2 rolled out")
        assert d["metadata"]["annotations"][REVISION] == "2"
        old, new = await _replica_sets(client, ns, "web")
        assert old["metadata"]["uid"] == first["metadata"]["uid"] and old["spec"]["replicas"] == 0
        assert new["spec"]["replicas"] == 3 and new["metadata"]["annotations"][REVISION] == "2"
        await events_of(client, ns, "web", having=[
            f"Scaled up replica set {first['metadata']['name']} to 3",
            f"Scaled down replica set {first['metadata']['name']} to 0 from 1"])

        # kubectl rollout undo: the template of revision 1, without its hash label
        template = old["spec"]["template"]
        del template["metadata"]["labels"][HASH]
        await client.patch(DEPLOYMENTS, "web", [
            {"op": "replace", "path": "/spec/template", "value": template}], ns, type="json")

        async def revision_3() -> dict[str, Any] | None:
            d = await _rolled_out(client, ns, "web")
            return d if d is not None and d["metadata"]["annotations"][REVISION] == "3" else None
        await eventually(revision_3, within=SETTLE, what="rolled back to revision 1's template")
        back, gone = await _replica_sets(client, ns, "web")
        assert back["metadata"]["uid"] == new["metadata"]["uid"] and back["spec"]["replicas"] == 0
        assert gone["metadata"]["uid"] == first["metadata"]["uid"]
        assert gone["spec"]["replicas"] == 3
        assert gone["metadata"]["annotations"][REVISION] == "3"
        assert gone["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"


def _ready(pod: dict[str, Any]) -> bool:
    return not pod["metadata"].get("deletionTimestamp") and any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in (pod.get("status") or {}).get("conditions") or ())


async def test_a_rolling_update_stays_within_its_surge_and_unavailability(
        apiserver: Cluster, client: Client) -> None:
    """maxSurge 1, maxUnavailable 0: every state a watch shows holds at most replicas+1
    Pods wanted by the ReplicaSets and at least replicas ready Pods."""
    ns = apiserver.namespace
    async with _nodes(apiserver, client):
        await client.create(DEPLOYMENTS, _deployment("surge", 3, strategy={
            "type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}), ns)
        await eventually(lambda: _rolled_out(client, ns, "surge"), within=SETTLE,
                         what="revision 1")
        [first] = await _replica_sets(client, ns, "surge")
        old_hash = first["metadata"]["labels"][HASH]
        pod_list = await client.list(PODS, ns, label_selector="app=surge")
        rs_list = await client.list(REPLICA_SETS, ns, label_selector="app=surge")
        pods = {p["metadata"]["name"]: p for p in pod_list["items"]}
        wanted = {rs["metadata"]["name"]: rs["spec"]["replicas"] for rs in rs_list["items"]}
        ready_seen, wanted_seen = [sum(map(_ready, pods.values()))], [sum(wanted.values())]

        async def follow(path: str, listed: dict[str, Any],
                         seen: Callable[[str, dict[str, Any]], bool]) -> None:
            """Every event after ``listed`` to ``seen`` (type, object) until it says done."""
            async with apiserver.watch(path, {
                    "resourceVersion": listed["metadata"]["resourceVersion"],
                    "labelSelector": "app=surge"}) as events:
                async for event in events:
                    if seen(event["type"], event["object"]):
                        return

        def pod_seen(kind: str, pod: dict[str, Any]) -> bool:
            if kind == "DELETED":
                pods.pop(pod["metadata"]["name"], None)
            else:
                pods[pod["metadata"]["name"]] = pod
            ready_seen.append(sum(map(_ready, pods.values())))
            return len(pods) == ready_seen[-1] == 3 and all(
                p["metadata"]["labels"][HASH] != old_hash for p in pods.values())

        def replica_set_seen(kind: str, rs: dict[str, Any]) -> bool:
            wanted[rs["metadata"]["name"]] = rs["spec"]["replicas"]
            wanted_seen.append(sum(wanted.values()))
            return len(wanted) == 2 and wanted[first["metadata"]["name"]] == 0

        with anyio.fail_after(SETTLE):  # a bound on the controllers' pace, not a timing
            async with anyio.create_task_group() as tg:
                tg.start_soon(follow, f"/api/v1/namespaces/{ns}/pods", pod_list, pod_seen)
                tg.start_soon(follow, f"/apis/apps/v1/namespaces/{ns}/replicasets", rs_list,
                              replica_set_seen)
                await client.patch(DEPLOYMENTS, "surge", {"spec": {"template": {"spec": {
                    "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.8"}]}}}},
                    ns)
        assert max(wanted_seen) == 4 and min(ready_seen) == 3, (wanted_seen, ready_seen)
        assert sorted(wanted.values()) == [0, 3]
        await eventually(lambda: _rolled_out(client, ns, "surge"), within=SETTLE,
                         what="revision 2")


async def test_a_recreate_deployment_stops_the_old_pods_before_starting_new_ones(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with _nodes(apiserver, client):
        await client.create(DEPLOYMENTS, _deployment("db", 2, strategy={"type": "Recreate"}), ns)
        await eventually(lambda: _rolled_out(client, ns, "db"), within=SETTLE, what="revision 1")
        [first] = await _replica_sets(client, ns, "db")
        await client.patch(DEPLOYMENTS, "db", {"spec": {"template": {"metadata": {
            "annotations": {"restarted": "1"}}}}}, ns)
        await eventually(lambda: _rolled_out(client, ns, "db"), within=SETTLE, what="revision 2")
        old, new = await _replica_sets(client, ns, "db")
        assert (old["spec"]["replicas"], new["spec"]["replicas"]) == (0, 2)
        said_down = f"Scaled down replica set {first['metadata']['name']} to 0 from 2"
        said_up = f"Scaled up replica set {new['metadata']['name']} to 2"
        events = await events_of(client, ns, "db", having=[said_down, said_up])
        down, up = events.index(said_down), events.index(said_up)
        assert down < up, events


async def test_a_paused_deployment_only_scales_until_resumed(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with _nodes(apiserver, client):
        await client.create(DEPLOYMENTS, _deployment("api", 2), ns)
        await eventually(lambda: _rolled_out(client, ns, "api"), within=SETTLE, what="revision 1")
        await client.patch(DEPLOYMENTS, "api", {"spec": {
            "paused": True, "replicas": 3,
            "template": {"metadata": {"annotations": {"restarted": "1"}}}}}, ns)

        async def paused_and_scaled() -> bool:
            d = await client.get(DEPLOYMENTS, "api", ns)
            conditions = {c["type"]: c for c in d["status"].get("conditions") or ()}
            return (conditions.get("Progressing", {}).get("reason") == "DeploymentPaused"
                    and d["status"].get("availableReplicas") == 3
                    and d["status"].get("observedGeneration") == d["metadata"]["generation"])
        await eventually(paused_and_scaled, within=SETTLE, what="paused, scaled to 3")
        [only] = await _replica_sets(client, ns, "api")
        assert only["spec"]["replicas"] == 3
        progressing = next(c for c in (await client.get(DEPLOYMENTS, "api", ns))["status"][
            "conditions"] if c["type"] == "Progressing")
        assert (progressing["status"], progressing["message"]) == (
            "Unknown", "Deployment is paused")

        await client.patch(DEPLOYMENTS, "api", {"spec": {"paused": False}}, ns)
        await eventually(lambda: _rolled_out(client, ns, "api"), within=SETTLE, what="resumed")
        assert [rs["spec"]["replicas"] for rs in await _replica_sets(client, ns, "api")] == [0, 3]


async def test_a_replicaset_keeps_its_pods_adopting_and_replacing(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with _nodes(apiserver, client):
        orphan = await client.create(PODS, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "orphan", "labels": {"app": "q"}},
            "spec": {"containers": [{"name": "app", "image": IMAGE}]}}, ns)
        rs = await client.create(REPLICA_SETS, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "q"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "q"}},
                     "template": {"metadata": {"labels": {"app": "q"}},
                                  "spec": {"containers": [{"name": "app", "image": IMAGE}]}}}}, ns)

        async def ready(count: int) -> tuple[dict[str, Any], ...] | None:
            got = await client.get(REPLICA_SETS, "q", ns)
            status = got.get("status") or {}
            pods = (await client.list(PODS, ns, label_selector="app=q"))["items"]
            live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
            if (status.get("readyReplicas", 0) == status.get("availableReplicas", 0) == count
                    == status.get("replicas") == len(live)
                    and status.get("observedGeneration") == got["metadata"]["generation"]):
                return (*live, {})  # truthy when no Pod is left too
            return None
        pods = await eventually(lambda: ready(2), within=SETTLE, what="two ready Pods")
        adopted = await client.get(PODS, "orphan", ns)
        assert adopted["metadata"]["uid"] == orphan["metadata"]["uid"]
        assert [r["uid"] for r in adopted["metadata"]["ownerReferences"]] == [rs["metadata"]["uid"]]
        [made] = [p for p in pods[:-1] if p["metadata"]["name"] != "orphan"]
        assert made["metadata"]["name"].startswith("q-")
        await events_of(client, ns, "q", having=[f"Created pod: {made['metadata']['name']}"])

        await client.delete(PODS, made["metadata"]["name"], ns)
        pods = await eventually(lambda: ready(2), within=SETTLE, what="the Pod replaced")
        assert made["metadata"]["name"] not in {p["metadata"]["name"] for p in pods[:-1]}

        await client.patch(REPLICA_SETS, "q", {"spec": {"replicas": 0}}, ns)
        await eventually(lambda: ready(0), within=SETTLE, what="scaled to zero")

        async def orphan_gone() -> bool:
            try:
                await client.get(PODS, "orphan", ns)
            except NotFound:
                return True
            return False
        await eventually(orphan_gone, within=SETTLE, what="the adopted Pod deleted")



async def test_a_replicaset_replaces_a_pod_while_it_is_still_terminating(
        apiserver: Cluster, client: Client) -> None:
    """A Pod marked for deletion no longer counts: the ReplicaSet makes its replacement
    at once, not once the kubelet has let the old one go."""
    ns = apiserver.namespace
    template = {"metadata": {"labels": {"app": "t"}},
                "spec": {"terminationGracePeriodSeconds": 600,
                         "containers": [{"name": "app", "image": IMAGE}]}}
    async with NodeSimulator(client, nodes=2, namespace=ns, stops=lambda pod: False):
        await client.create(REPLICA_SETS, {
            "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "t"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "t"}},
                     "template": template}}, ns)

        async def live() -> list[str]:  # bound and running: an unbound Pod goes at once
            pods = (await client.list(PODS, ns, label_selector="app=t"))["items"]
            return sorted(p["metadata"]["name"] for p in pods
                          if not p["metadata"].get("deletionTimestamp")
                          and (p.get("status") or {}).get("phase") == "Running")

        first = await eventually(lambda: _two(live), within=SETTLE, what="two Pods")
        await client.delete(PODS, first[0], ns)  # ignores SIGTERM: Terminating for 600 s
        replaced = await eventually(
            lambda: _two(live, without=first[0]), within=SETTLE, what="a replacement")
        old = await client.get(PODS, first[0], ns)
        assert old["metadata"]["deletionTimestamp"] and first[1] in replaced
        # no kubelet lets a Pod with 600 s of grace go when the namespace does: the test
        # lets its own go at once
        await client.delete(REPLICA_SETS, "t", ns, propagation_policy="Orphan")
        for name in {first[0], *replaced}:
            await client.delete(PODS, name, ns, grace_period_seconds=0)


async def _two(live: Callable[[], Any], without: str | None = None) -> list[str] | None:
    names: list[str] = await live()
    return names if len(names) == 2 and without not in names else None

# -- deadlines on the server's clock (in-process: a FakeClock drives the controllers) -------

async def test_a_stuck_rollout_exceeds_its_progress_deadline_on_the_servers_clock() -> None:
    clock = FakeClock()
    ready = False
    async with APIServer(clock=clock) as server, Client(server.configuration()) as client, \
            NodeSimulator(client, nodes=1, namespace="default", clock=clock,
                          ready=lambda _pod: ready) as nodes:
        await client.create(DEPLOYMENTS, _deployment("slow", 2, progressDeadlineSeconds=30),
                            "default")

        async def progressing(reason: str) -> dict[str, Any] | None:
            d = await client.get(DEPLOYMENTS, "slow", "default")
            cond = next((c for c in (d.get("status") or {}).get("conditions") or ()
                         if c["type"] == "Progressing"), None)
            return cond if cond is not None and cond["reason"] == reason else None
        await eventually(lambda: progressing("ReplicaSetUpdated"), what="Pods made, not ready")
        # the controller waits for the deadline on the clock: 30 s after the last progress
        await eventually(lambda: any(d >= 30 for d in clock.deadlines()),
                         what="the deadline's wait parked")
        clock.advance(31)
        cond = await eventually(lambda: progressing("ProgressDeadlineExceeded"),
                                what="the deadline exceeded")
        [rs] = await _replica_sets(client, "default", "slow")
        assert (cond["status"], cond["message"]) == (
            "False", f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.')
        ready = True
        nodes.refresh()
        cond = await eventually(lambda: progressing("NewReplicaSetAvailable"),
                                what="progress again once the Pods are ready")
        assert cond["status"] == "True"


async def test_min_ready_seconds_count_on_the_servers_clock() -> None:
    clock = FakeClock()
    async with APIServer(clock=clock) as server, Client(server.configuration()) as client, \
            NodeSimulator(client, nodes=1, namespace="default", clock=clock):
        await client.create(DEPLOYMENTS, _deployment("warm", 1, minReadySeconds=10), "default")

        async def status() -> dict[str, Any]:
            return (await client.get(DEPLOYMENTS, "warm", "default")).get("status") or {}
        await eventually(lambda: _ready_count(status, 1), what="the Pod ready")
        assert (await status()).get("availableReplicas") is None
        await eventually(lambda: any(d >= 10 for d in clock.deadlines()),
                         what="the replicaset controller waiting for minReadySeconds")
        clock.advance(11)
        await eventually(lambda: _available_count(status, 1), what="available after 10 s")


async def _ready_count(status: Any, count: int) -> bool:
    return bool((await status()).get("readyReplicas") == count)


async def _available_count(status: Any, count: int) -> bool:
    return bool((await status()).get("availableReplicas") == count)


def test_controllers_are_chosen_as_kube_controller_managers_flag_chooses_them() -> None:
    every = APIServer().controller_manager.names
    assert {"deployment", "replicaset"} <= set(every)
    less = APIServer(controllers=("*", "-deployment")).controller_manager.names
    assert less == [name for name in every if name != "deployment"]
    assert APIServer(controllers=("replicaset",)).controller_manager.names == ["replicaset"]
    assert APIServer(controllers=()).controller_manager.names == []
    with pytest.raises(ValueError, match=r"unknown controller\(s\) statefulsets"):
        APIServer(controllers=("statefulsets",))


@pytest.mark.controllers("*", "-deployment")
async def test_a_controller_switched_off_leaves_its_kind_to_the_test(client: Client) -> None:
    await client.create(DEPLOYMENTS, _deployment("mine", 1), "default")
    await client.create(REPLICA_SETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "theirs"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "theirs"}},
                 "template": {"metadata": {"labels": {"app": "theirs"}},
                              "spec": {"containers": [{"name": "app", "image": IMAGE}]}}}},
        "default")
    # the replicaset controller runs (it made the Pod); the deployment one did nothing
    await eventually(lambda: _pods_of(client, "theirs"), what="the ReplicaSet's Pod")
    mine = await client.list(REPLICA_SETS, "default", label_selector="app=mine")
    assert mine["items"] == []
    assert (await client.get(DEPLOYMENTS, "mine", "default")).get("status") in (None, {})


async def _pods_of(client: Client, app: str) -> bool:
    return bool((await client.list(PODS, "default", label_selector=f"app={app}"))["items"])


@pytest.mark.controllers("*", "-garbagecollector", "-serviceaccount")
async def test_the_lifecycle_loops_are_chosen_by_their_names_too(apiserver: Cluster,
                                                                 client: Client) -> None:
    # no serviceaccount controller: the test makes the account its Pods run as
    await apiserver.request("POST", "/api/v1/namespaces/default/serviceaccounts", json={
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
    owner = await client.create(REPLICA_SETS, {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "owner"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "owner"}},
                 "template": {"metadata": {"labels": {"app": "owner"}},
                              "spec": {"containers": [{"name": "app", "image": IMAGE}]}}}},
        "default")
    await eventually(lambda: _pods_of(client, "owner"), what="the ReplicaSet's Pod")
    await client.delete(REPLICA_SETS, "owner", "default")
    # no garbage collector: the Pod outlives its owner, as with --controllers=*,-garbagecollector
    [pod] = (await client.list(PODS, "default", label_selector="app=owner"))["items"]
    assert pod["metadata"]["ownerReferences"][0]["uid"] == owner["metadata"]["uid"]
    made = await apiserver.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}})
    assert made.status == 201, made
    accounts = await apiserver.request("GET", "/api/v1/namespaces/fresh/serviceaccounts")
    assert accounts.body["items"] == []  # no serviceaccount controller: no default account
    roots = await apiserver.request("GET", "/api/v1/namespaces/fresh/configmaps")
    assert [c["metadata"]["name"] for c in roots.body["items"]] == ["kube-root-ca.crt"]
