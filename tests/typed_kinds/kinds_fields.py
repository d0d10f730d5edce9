"""Kept for tests/test_kinds.py: ``mypy --strict`` must reject exactly the lines that end
with ``# rejected``, and accept the rest. Never imported or run."""

from __future__ import annotations

from reconcilekit import Cache, Client, kinds
from reconcilekit.kinds import DEPLOYMENTS, PODS, Deployment, Pod
from reconcilekit.kinds.policy_v1 import PodDisruptionBudgetStatus


async def image_of(cache: Cache, name: str) -> str:
    pod = await cache.get(PODS, name, "default")
    return pod["spec"]["containers"][0]["image"]


async def misspelled(cache: Cache, name: str) -> str:
    pod = await cache.get(PODS, name, "default")
    return pod["spec"]["containres"][0]["image"]  # rejected


async def replicas(client: Client, name: str) -> int:
    deployment = await client.get(DEPLOYMENTS, name, "default")
    return deployment["spec"].get("replicas", 1)


async def wrong_type(client: Client, name: str) -> str:
    deployment = await client.get(DEPLOYMENTS, name, "default")
    return deployment["spec"]["replicas"]  # rejected


def a_pod() -> Pod:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}


def a_pod_without_a_container_name() -> Pod:
    return {"spec": {"containers": [{"image": "nginx"}]}}  # rejected


def a_deployment_with_a_typo() -> Deployment:
    return {"spec": {"replica": 2, "selector": {}, "template": {}}}  # rejected


async def nodes(cache: Cache) -> list[str]:
    return [pod["spec"].get("nodeName", "") for pod in await cache.list(PODS)]


def expected_pods(status: PodDisruptionBudgetStatus) -> int:
    return status["expectedPods"]


def only_kinds_at_the_top(status: kinds.PodDisruptionBudgetStatus) -> None:  # rejected
    """``reconcilekit.kinds`` names each kind; the shapes within one are in its module."""
