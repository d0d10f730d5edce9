"""The client's ``scale`` subresource methods on a built-in kind: read, replace
(conditional on the resourceVersion) and patch, and what a resource without one answers.
(A custom kind's scale subresource: ``examples/test_kvstore.py``.)"""

from __future__ import annotations

import pytest

from reconcilekit import Client, Conflict, NotFound, retry_on_conflict
from reconcilekit.kinds import CONFIG_MAPS, DEPLOYMENTS
from reconcilekit.kinds.autoscaling_v1 import Scale
from reconcilekit.testing import Cluster

DEPLOYMENT = {"metadata": {"name": "web"}, "spec": {
    "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
    "template": {"metadata": {"labels": {"app": "web"}},
                 "spec": {"containers": [{"name": "web", "image": "registry.k8s.io/pause:3.9"}]}}}}


async def test_a_deployments_scale_is_read_replaced_and_patched(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    async with Client(apiserver.configuration) as client:
        await client.create(DEPLOYMENTS, DEPLOYMENT, ns)
        scale = await client.get_scale(DEPLOYMENTS, "web", ns)
        assert (scale["apiVersion"], scale["kind"]) == ("autoscaling/v1", "Scale")
        assert (scale["metadata"]["name"], scale["spec"].get("replicas")) == ("web", 2)
        assert scale["status"].get("selector") == "app=web"

        async def replace() -> Scale:  # the deployment controller writes meanwhile, too
            current = await client.get_scale(DEPLOYMENTS, "web", ns)
            current["spec"]["replicas"] = 3
            return await client.update_scale(DEPLOYMENTS, current)
        replaced = await retry_on_conflict(replace)
        assert replaced["spec"].get("replicas") == 3
        with pytest.raises(Conflict):  # ``scale`` carries the resourceVersion it was read at
            await client.update_scale(DEPLOYMENTS, scale)

        patched = await client.patch_scale(DEPLOYMENTS, "web", {"spec": {"replicas": 5}}, ns)
        assert patched["spec"].get("replicas") == 5
        assert (await client.get(DEPLOYMENTS, "web", ns))["spec"].get("replicas") == 5
        assert patched["metadata"].get("resourceVersion") == client.last_written_rv(
            DEPLOYMENTS, ns, "web")


async def test_a_resource_without_a_scale_subresource_answers_not_found(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    async with Client(apiserver.configuration) as client:
        await client.create(CONFIG_MAPS, {"metadata": {"name": "c"}}, ns)
        with pytest.raises(NotFound):
            await client.get_scale(CONFIG_MAPS, "c", ns)
        with pytest.raises(ValueError, match="server-side apply of a Scale"):
            await client.patch_scale(DEPLOYMENTS, "web", {"spec": {"replicas": 1}}, ns,
                                     type="apply")
