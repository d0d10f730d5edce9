"""NodeSimulator and pods/binding: the scheduler's and kubelet's part, on every backend."""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit import Client, NotFound
from reconcilekit.kinds import NODES, PODS
from reconcilekit.testing import Cluster, FakeClock, NodeSimulator, eventually

SPEC = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {**SPEC, **spec}}


async def _running(client: Client, ns: str, name: str) -> dict[str, Any] | None:
    pod = await client.get(PODS, name, ns)
    return pod if (pod.get("status") or {}).get("phase") == "Running" else None


async def test_binding_sets_the_node_once_and_marks_the_pod_scheduled(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, _pod("p"), ns)
    path = f"/api/v1/namespaces/{ns}/pods/p/binding"
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}}
    bound = await apiserver.request("POST", path, json=binding)
    assert bound.status == 201 and bound.body["status"] == "Success", bound
    pod = await client.get(PODS, "p", ns)
    assert pod["spec"]["nodeName"] == "n1"
    assert [(c["type"], c["status"]) for c in pod["status"]["conditions"]] == [
        ("PodScheduled", "True")]
    again = await apiserver.request("POST", path, json=dict(
        binding, target={"apiVersion": "v1", "kind": "Node", "name": "n2"}))
    assert again.status == 409, again
    assert again.body["message"] == ('Operation cannot be fulfilled on pods/binding "p": '
                                     'pod p is already assigned to node "n1"')
    missing = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/pods/nope/binding",
                                      json=dict(binding, metadata={"name": "nope"}))
    assert missing.status == 404 and missing.body["message"] == 'pods "nope" not found'


async def test_a_binding_with_another_uid_is_a_conflict(apiserver: Cluster,
                                                        client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, _pod("p"), ns)
    answer = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/pods/p/binding", json={
        "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p", "uid": "other"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
    assert answer.status == 409 and "Precondition failed: UID in precondition: other" in (
        answer.body["message"]), answer
    assert "nodeName" not in (await client.get(PODS, "p", ns))["spec"]


async def test_simulated_nodes_schedule_run_and_finish_deleting_pods(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns) as nodes:
        for i in range(4):
            await client.create(PODS, _pod(f"p{i}"), ns)
        await client.create(PODS, _pod("placed", nodeName="elsewhere"), ns)
        pods = [await eventually(lambda i=i: _running(client, ns, f"p{i}"),
                                 what=f"p{i} Running") for i in range(4)]
        assert {p["spec"]["nodeName"] for p in pods} <= {"sim-node-0", "sim-node-1"}
        addresses = {}
        for node in nodes.nodes:
            [internal] = [a["address"] for a in (await client.get(NODES, node))["status"][
                "addresses"] if a["type"] == "InternalIP"]
            addresses[node] = internal
        assert len(set(addresses.values())) == 2
        for pod in pods:
            status = pod["status"]
            assert status["podIP"] and status["startTime"]
            host_ip = addresses[pod["spec"]["nodeName"]]
            assert (status["hostIP"], status["hostIPs"]) == (host_ip, [{"ip": host_ip}])
            assert {c["type"] for c in status["conditions"] if c["status"] == "True"} >= {
                "Ready", "PodScheduled"}
            assert [s["ready"] for s in status["containerStatuses"]] == [True]
        placed = await eventually(lambda: _running(client, ns, "placed"), what="placed Running")
        assert placed["spec"]["nodeName"] == "elsewhere"  # bound by its maker: left there
        assert "hostIP" not in placed["status"]  # no Node "elsewhere", no address
        await client.delete(PODS, "p0", ns)  # graceful: the kubelet finishes it
        await eventually(lambda: _gone(client, ns, "p0"), what="p0 deleted for good")
    assert nodes.bound == 4 and nodes.started >= 5


@pytest.mark.in_process_only
async def test_a_deletion_whose_event_was_lost_is_finished_after_the_next_relist(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()
    async with NodeSimulator(client, nodes=1, namespace=ns, relist_period=30.0,
                             clock=clock) as nodes:
        await client.create(PODS, _pod("p"), ns)
        await eventually(lambda: _running(client, ns, "p"), what="p Running")
        apiserver.faults.drop_events("pods", 1)
        await client.delete(PODS, "p", ns)  # graceful; the simulator never hears of it
        lists = nodes.informer.statistics().lists
        clock.advance(30.0)
        apiserver.faults.close_watches()  # the watch ends and a list is due: it lists
        await eventually(lambda: _gone(client, ns, "p"), what="p deleted for good")
    assert nodes.informer.statistics().lists == lists + 1


async def _gone(client: Client, ns: str, name: str) -> bool:
    try:
        await client.get(PODS, name, ns)
    except NotFound:
        return True
    return False


async def test_node_simulator_refuses_no_nodes(client: Client) -> None:
    with pytest.raises(ValueError, match="at least one node"):
        NodeSimulator(client, nodes=0)


async def test_a_container_crash_loops_with_backoff_until_told_otherwise(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()
    crashing = {"now": False}
    async with NodeSimulator(client, nodes=1, namespace=ns, clock=clock,
                             crash=lambda _pod: crashing["now"]) as nodes:
        await client.create(PODS, _pod("p"), ns)
        await eventually(lambda: _running(client, ns, "p"), what="p Running")
        crashing["now"] = True
        nodes.refresh()

        async def restarts(count: int) -> dict[str, Any] | None:
            pod = await client.get(PODS, "p", ns)
            [status] = pod["status"]["containerStatuses"]
            return status if status["restartCount"] == count else None
        status = await eventually(lambda: restarts(1), what="the first crash")
        assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
        assert status["lastState"]["terminated"]["exitCode"] == 1
        assert not status["ready"]
        # Exactly the back-off's deadline: the watchers' own timers (60 s and more) are
        # parked on this clock too, and advancing before the back-off's wait is would
        # leave it 10 s ahead, never reached.
        await eventually(lambda: clock.monotonic() + 10 in clock.deadlines(),
                         what="the back-off's wait parked")
        clock.advance(10)
        await eventually(lambda: restarts(2), what="restarted after 10 s, crashed again")
        crashing["now"] = False
        nodes.refresh()
        await eventually(lambda: restarts(2), what="still two restarts")

        async def running_again() -> bool:
            pod = await client.get(PODS, "p", ns)
            [status] = pod["status"]["containerStatuses"]
            return "running" in status["state"] and status["ready"]
        await eventually(running_again, what="running again once the crashes stop")


async def test_a_simulated_node_goes_not_ready_and_back(apiserver: Cluster,
                                                        client: Client) -> None:
    async with NodeSimulator(client, nodes=1, namespace=apiserver.namespace) as nodes:
        def ready_status(node: dict[str, Any]) -> str:
            return next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")
        node = await client.get(NODES, "sim-node-0")
        assert ready_status(node) == "True"
        assert not any(t["key"] == "node.kubernetes.io/not-ready"
                       for t in (node.get("spec") or {}).get("taints") or ())
        await nodes.set_node_ready("sim-node-0", False)
        assert ready_status(await client.get(NODES, "sim-node-0")) == "Unknown"
        await nodes.set_node_ready("sim-node-0", True)
        assert ready_status(await client.get(NODES, "sim-node-0")) == "True"
        with pytest.raises(ValueError, match="not one of the simulated nodes"):
            await nodes.set_node_ready("elsewhere", True)
    with pytest.raises(NotFound):  # the Nodes it registered go with it
        await client.get(NODES, "sim-node-0")


async def test_a_pod_that_ignores_sigterm_terminates_after_its_grace_period(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()
    async with NodeSimulator(client, nodes=1, namespace=ns, clock=clock,
                             stops=lambda pod: pod["metadata"]["name"] != "stubborn"):
        await client.create(PODS, _pod("stubborn", terminationGracePeriodSeconds=20), ns)
        await client.create(PODS, _pod("polite", terminationGracePeriodSeconds=20), ns)
        for name in ("stubborn", "polite"):
            await eventually(lambda n=name: _running(client, ns, n), what=f"{name} Running")
            await client.delete(PODS, name, ns)
        await eventually(lambda: _gone(client, ns, "polite"), what="polite gone at once")
        assert (await client.get(PODS, "stubborn", ns))["metadata"]["deletionTimestamp"]
        await eventually(lambda: any(d >= clock.monotonic() + 19 for d in clock.deadlines()),
                         what="the grace period's wait parked")
        clock.advance(20)
        await eventually(lambda: _gone(client, ns, "stubborn"), what="stubborn gone after 20 s")
