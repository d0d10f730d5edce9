"""PodDisruptionBudgets' status played by the cluster's disruption controller, on every
backend (the in-process server and kube-apiserver with kube-controller-manager, a
:class:`NodeSimulator` playing the kubelet on both)."""

from __future__ import annotations

from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import DEPLOYMENTS, POD_DISRUPTION_BUDGETS
from reconcilekit.testing import Cluster, NodeSimulator, eventually

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


def _budget(name: str, app: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": app}}, **spec}}


def _deployment(app: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": app},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": app}},
                     "template": {"metadata": {"labels": {"app": app}}, "spec": {
                         "containers": [{"name": "app", "image": IMAGE}]}}}}


async def test_budgets_count_healthy_pods_against_what_their_controllers_expect(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    ready = {"unready": False}
    async with NodeSimulator(client, nodes=2, namespace=ns, ready=lambda pod: not ready.get(
            "unready") or pod["metadata"]["name"] != ready.get("name")) as nodes:
        # one budget per Pod: kube-controller-manager wakes only one budget of a Pod that
        # several select ("Pod matches multiple PodDisruptionBudgets")
        for app in ("web", "api"):
            await client.create(DEPLOYMENTS, _deployment(app), ns)
        await client.create(POD_DISRUPTION_BUDGETS, _budget("min", "web", minAvailable=2), ns)
        await client.create(POD_DISRUPTION_BUDGETS, _budget("max", "api", maxUnavailable="50%"),
                            ns)

        async def status(name: str, allowed: int, healthy: int) -> dict[str, Any] | None:
            got = await client.get(POD_DISRUPTION_BUDGETS, name, ns)
            found = got.get("status") or {}
            done = (found.get("disruptionsAllowed") == allowed
                    and found.get("currentHealthy") == healthy
                    and found.get("observedGeneration") == got["metadata"]["generation"])
            return found if done else None
        low = await eventually(lambda: status("min", 1, 3), within=SETTLE, what="min: 1 allowed")
        assert (low["desiredHealthy"], low["expectedPods"]) == (2, 3)
        [condition] = low["conditions"]
        assert (condition["type"], condition["status"], condition["reason"]) == (
            "DisruptionAllowed", "True", "SufficientPods")
        high = await eventually(lambda: status("max", 2, 3), within=SETTLE, what="max: 2 allowed")
        # 50% of the Deployment's 3 replicas may be unavailable, rounded up: 1 must stay
        assert (high["desiredHealthy"], high["expectedPods"]) == (1, 3)

        pods = await client.request("GET", f"/api/v1/namespaces/{ns}/pods",
                                    params={"labelSelector": "app=web"})
        ready.update(unready=True, name=pods["items"][0]["metadata"]["name"])
        nodes.refresh()
        low = await eventually(lambda: status("min", 0, 2), within=SETTLE, what="min: none")
        [condition] = low["conditions"]
        assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")
