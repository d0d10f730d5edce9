"""The Website operator: a Deployment and a Service per Website, kept, updated and collected."""

from __future__ import annotations

from typing import Any

import anyio
import yaml

from examples.website import WEBSITE_CRD, WEBSITES, build
from reconcilekit import Client, NotFound, Resource
from reconcilekit.__main__ import generate_manifests
from reconcilekit.conditions import is_status_condition_true
from reconcilekit.kinds import DEPLOYMENTS, SERVICES
from reconcilekit.testing import Cluster, eventually

# kube-controller-manager's garbage collector acts a moment later (once its discovery
# knows the new Website kind); the in-process server collects at once
AWAIT_CONTROLLERS = 60.0  # seconds; a bound on kube-controller-manager, not a timing


async def _get(client: Client, resource: Resource, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, ns)
    except NotFound:
        return None


async def test_a_website_runs_as_a_deployment_behind_a_service(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    await apiserver.install_crd(WEBSITE_CRD)
    async with Client(apiserver.configuration) as client:
        manager = build(client, namespace=ns, http_addr=None)
        async with anyio.create_task_group() as tg:
            await tg.start(manager.run)
            site = await client.create(WEBSITES, {
                "apiVersion": WEBSITES.api_version, "kind": "Website",
                "metadata": {"name": "blog"}, "spec": {"image": "nginx:1.25"}}, ns)

            async def image_is(image: str) -> bool:
                got = await _get(client, DEPLOYMENTS, "blog", ns)
                return got is not None and got["spec"]["template"]["spec"]["containers"][0][
                    "image"] == image

            async def ready() -> bool:
                got = await client.get(WEBSITES, "blog", ns)
                return is_status_condition_true(got.get("status", {}).get("conditions"),
                                                "Ready")

            await eventually(lambda: image_is("nginx:1.25"), what="the Deployment made")
            await eventually(ready, what="the Website Ready")
            service = await client.get(SERVICES, "blog", ns)
            assert service["spec"]["ports"][0]["targetPort"] == 8080
            assert service["metadata"]["ownerReferences"][0]["uid"] == site["metadata"]["uid"]

            await client.delete(DEPLOYMENTS, "blog", ns)  # repaired through owns()
            await eventually(lambda: image_is("nginx:1.25"), what="the Deployment remade")

            await client.patch(WEBSITES, "blog", {"spec": {"image": "nginx:1.26",
                                                           "replicas": 3}}, ns)
            await eventually(lambda: image_is("nginx:1.26"), what="the Deployment updated")
            deployment = await client.get(DEPLOYMENTS, "blog", ns)
            assert deployment["spec"]["replicas"] == 3
            manager.stop()

        await client.delete(WEBSITES, "blog", ns)

        async def collected() -> bool:
            return (await _get(client, DEPLOYMENTS, "blog", ns) is None
                    and await _get(client, SERVICES, "blog", ns) is None)

        await eventually(collected, within=AWAIT_CONTROLLERS,
                         what="the children garbage-collected")


def test_the_generated_rbac_grants_the_cache_its_reads_and_the_reconciler_its_writes() -> None:
    """``python -m reconcilekit manifests examples.website.operator:build``: list and watch
    for what ``for_`` and ``owns`` cache; the children's reads and writes and the status
    patch as ``WebsiteReconciler.permissions`` declares them (create_or_patch reads the
    child, then creates or patches it); nothing owns() would not need."""
    files = generate_manifests("examples.website.operator:build", command="test",
                               namespace="website-system")
    assert sorted(files) == ["crds.yaml", "deployment.yaml", "kustomization.yaml",
                             "rbac.yaml"]  # no webhook
    assert [d for d in yaml.safe_load_all(files["crds.yaml"]) if d] == [WEBSITE_CRD]
    docs = [d for d in yaml.safe_load_all(files["rbac.yaml"]) if d]
    [role] = [d for d in docs if d["kind"] == "ClusterRole"]
    grants = {(group, resource): rule["verbs"] for rule in role["rules"]
              for group in rule["apiGroups"] for resource in rule["resources"]}
    assert grants == {
        ("example.reconcilekit.dev", "websites"): ["list", "watch"],
        ("example.reconcilekit.dev", "websites/status"): ["patch"],
        ("example.reconcilekit.dev", "websites/finalizers"): ["update"],
        ("apps", "deployments"): ["get", "list", "watch", "create", "patch"],
        ("", "services"): ["get", "list", "watch", "create", "patch"],
    }
    assert [d["kind"] for d in docs] == ["Namespace", "ServiceAccount", "ClusterRole",
                                         "ClusterRoleBinding"]
