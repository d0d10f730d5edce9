"""DaemonSets played by the cluster's daemonset controller, on every backend: a Pod per
simulated Node (the in-process server, or kube-apiserver with kube-controller-manager,
a :class:`NodeSimulator` registering the Nodes and running the Pods on both)."""

from __future__ import annotations

from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import DAEMON_SETS, NODES, PODS
from reconcilekit.testing import Cluster, NodeSimulator, eventually

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


def _daemonset(name: str, **pod_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "agent", "image": IMAGE}], **pod_spec}}}}


async def _placed(client: Client, ns: str, name: str, nodes: list[str]
                  ) -> dict[str, Any] | None:
    ds = await client.get(DAEMON_SETS, name, ns)
    status = ds.get("status") or {}
    pods = [p for p in (await client.list(PODS, ns, label_selector=f"app={name}"))["items"]
            if not p["metadata"].get("deletionTimestamp")]
    done = (sorted(p["spec"].get("nodeName", "") for p in pods) == nodes
            and status.get("desiredNumberScheduled") == len(nodes)
            and status.get("numberReady") == len(nodes)
            and status.get("observedGeneration") == ds["metadata"]["generation"])
    return status if done else None


async def test_a_daemonset_runs_a_pod_per_node_it_may_run_on(apiserver: Cluster,
                                                             client: Client) -> None:
    ns = apiserver.namespace
    everywhere = ["sim-node-0", "sim-node-1", "sim-node-2"]
    async with NodeSimulator(client, nodes=3, namespace=ns):
        await client.create(DAEMON_SETS, _daemonset("agent"), ns)
        await client.create(DAEMON_SETS, _daemonset(
            "pinned", nodeSelector={"kubernetes.io/hostname": "sim-node-1"}), ns)
        status = await eventually(lambda: _placed(client, ns, "agent", everywhere),
                                  within=SETTLE, what="a Pod on each node")
        assert (status["currentNumberScheduled"], status["numberMisscheduled"],
                status["numberAvailable"]) == (3, 0, 3)
        await eventually(lambda: _placed(client, ns, "pinned", ["sim-node-1"]), within=SETTLE,
                         what="one Pod on sim-node-1")
        pods = (await client.list(PODS, ns, label_selector="app=agent"))["items"]
        for pod in pods:
            terms = pod["spec"]["affinity"]["nodeAffinity"][
                "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                               "values": [pod["spec"]["nodeName"]]}]}]
            assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                    "effect": "NoExecute"} in pod["spec"]["tolerations"]
            assert pod["metadata"]["labels"]["pod-template-generation"] == "1"

        # a NoExecute taint the Pods do not tolerate takes them off that node
        await client.patch(NODES, "sim-node-2", {"spec": {"taints": [
            {"key": "maintenance", "value": "yes", "effect": "NoExecute"}]}})
        await eventually(lambda: _placed(client, ns, "agent", everywhere[:2]), within=SETTLE,
                         what="the tainted node left")


async def test_a_new_node_is_tainted_not_ready_until_something_says_otherwise(
        client: Client) -> None:
    name = "rk-test-fresh-node"
    made = await client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                       "metadata": {"name": name}})
    try:
        assert made["spec"]["taints"] == [{"key": "node.kubernetes.io/not-ready",
                                           "effect": "NoSchedule"}]
    finally:
        await client.delete(NODES, name)
