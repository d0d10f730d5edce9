"""ResourceQuota on every backend: its status filled and replenished by the cluster's
resourcequota controller, creates over it refused by kube-apiserver's admission plugin."""

from __future__ import annotations

from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import RESOURCE_QUOTAS
from reconcilekit.testing import Cluster, eventually

SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


def _pod(name: str, cpu: str | None) -> dict[str, Any]:
    resources = {"requests": {"cpu": cpu}} if cpu else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9",
                                     "resources": resources}]}}


async def test_a_quota_counts_refuses_and_gives_back(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    pods = f"/api/v1/namespaces/{ns}/pods"
    await client.create(RESOURCE_QUOTAS, {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}}}, ns)

    async def used(want: dict[str, str]) -> dict[str, Any] | None:
        status = (await client.get(RESOURCE_QUOTAS, "q", ns)).get("status") or {}
        return status if status.get("used") == want else None
    status = await eventually(lambda: used({"pods": "0", "requests.cpu": "0",
                                            "requests.memory": "0"}),
                              within=SETTLE, what="the quota's status")
    assert status["hard"] == {"pods": "2", "requests.cpu": "1", "requests.memory": "1Gi"}

    # the ResourceQuota plugin reads quotas from an informer, which sees the status (the
    # hard limits it enforces) a moment after a GET does; until then the Pod is admitted
    async def refused_bare() -> Any:
        bare = await apiserver.request("POST", pods, json=_pod("bare", None),
                                       params={"dryRun": "All"})
        assert bare.status in (201, 403), bare
        return bare if bare.status == 403 else None
    bare = await eventually(refused_bare, within=SETTLE, interval=0.05,
                            what="the quota's limits enforced")
    assert (bare.status, bare.body["reason"], bare.body["message"]) == (
        403, "Forbidden", 'pods "bare" is forbidden: failed quota: q: must specify '
        "requests.cpu for: app; requests.memory for: app")
    for name in ("a", "b"):
        body = _pod(name, "400m")
        body["spec"]["containers"][0]["resources"]["requests"]["memory"] = "256Mi"
        made = await apiserver.request("POST", pods, json=body)
        assert made.status == 201, made
    status = await eventually(lambda: used({"pods": "2", "requests.cpu": "800m",
                                            "requests.memory": "512Mi"}),
                              within=SETTLE, what="two Pods counted")
    third = _pod("c", "400m")
    third["spec"]["containers"][0]["resources"]["requests"]["memory"] = "256Mi"
    refused = await apiserver.request("POST", pods, json=third)
    assert (refused.status, refused.body["message"]) == (
        403, 'pods "c" is forbidden: exceeded quota: q, requested: pods=1,requests.cpu=400m, '
        "used: pods=2,requests.cpu=800m, limited: pods=2,requests.cpu=1")
    dry = await apiserver.request("POST", pods, json=third, params={"dryRun": "All"})
    assert dry.status == 403, dry

    gone = await apiserver.request("DELETE", f"{pods}/a", json={"gracePeriodSeconds": 0})
    assert gone.status == 200, gone
    await eventually(lambda: used({"pods": "1", "requests.cpu": "400m",
                                   "requests.memory": "256Mi"}),
                     within=SETTLE, what="the deleted Pod's share given back")

    # kube-apiserver's quota admission reads quotas from its own informer, which sees the
    # given-back status a moment after a GET does; until then it refuses as it did above
    async def admitted() -> bool:
        again = await apiserver.request("POST", pods, json=third)
        assert again.status in (201, 403), again
        assert again.status == 201 or "exceeded quota: q" in again.body["message"], again
        return again.status == 201
    await eventually(admitted, within=SETTLE, interval=0.05, what="the third Pod admitted")


async def test_a_limit_range_defaults_and_bounds_a_pods_resources(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/limitranges", json={
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"},
                             "min": {"memory": "16Mi"}, "default": {"memory": "128Mi"}}]}})
    assert made.status == 201, made
    # SetDefaults_LimitRangeItem: default from max, defaultRequest from default then min
    assert made.body["spec"]["limits"] == [{
        "type": "Container", "max": {"cpu": "1"}, "min": {"memory": "16Mi"},
        "default": {"memory": "128Mi", "cpu": "1"},
        "defaultRequest": {"memory": "128Mi", "cpu": "1"}}]
    pods = f"/api/v1/namespaces/{ns}/pods"
    plain = _pod("plain", None)
    got = await apiserver.request("POST", pods, json=plain)
    assert got.status == 201, got
    assert got.body["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "1", "memory": "128Mi"}, "requests": {"cpu": "1", "memory": "128Mi"}}
    assert got.body["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container app; "
        "cpu, memory limit for container app")
    big = _pod("big", None)
    big["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "2", "memory": "8Mi"}}
    refused = await apiserver.request("POST", pods, json=big)
    assert (refused.status, refused.body["message"]) == (
        403, 'pods "big" is forbidden: [minimum memory usage per Container is 16Mi, but '
        "request is 8Mi, maximum cpu usage per Container is 1, but limit is 2]")


async def test_a_claim_without_a_class_gets_the_default_one(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", "/apis/storage.k8s.io/v1/storageclasses", json={
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": f"{ns}-standard", "annotations": {
            "storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "example.com/none"})
    assert made.status == 201, made
    claims = f"/api/v1/namespaces/{ns}/persistentvolumeclaims"
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}

    async def defaulted() -> bool:  # DefaultStorageClass reads classes from an informer
        dry = await apiserver.request("POST", claims, params={"dryRun": "All"}, json={
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "dry"},
            "spec": spec})
        assert dry.status == 201, dry
        return bool(dry.body["spec"].get("storageClassName") == f"{ns}-standard")
    try:
        await eventually(defaulted, within=SETTLE, interval=0.05,
                         what="the default StorageClass seen by admission")
        plain = await apiserver.request("POST", claims, json={
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "plain"},
            "spec": spec})
        assert plain.body["spec"]["storageClassName"] == f"{ns}-standard", plain
        static = await apiserver.request("POST", claims, json={
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "static"},
            "spec": {**spec, "storageClassName": ""}})
        assert static.body["spec"]["storageClassName"] == "", static
    finally:
        await apiserver.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{ns}-standard")
