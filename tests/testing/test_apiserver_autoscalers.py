"""HorizontalPodAutoscalers: stored as autoscaling/v2, read in either version.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on
both backends (``dryRun=All`` where the HPA controller would otherwise write
the status).
"""

from __future__ import annotations

from reconcilekit.testing import Cluster

TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}


def _hpas(apiserver: Cluster, version: str) -> str:
    return (f"/apis/autoscaling/{version}/namespaces/{apiserver.namespace}"
            "/horizontalpodautoscalers")


async def test_a_v1_autoscaler_is_read_as_v2_and_back(apiserver: Cluster) -> None:
    created = await apiserver.request("POST", _hpas(apiserver, "v1"), json={
        "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "a"},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 4,
                 "targetCPUUtilizationPercentage": 60}})
    assert created.status == 201, created
    assert created.body["spec"] == {"scaleTargetRef": TARGET, "minReplicas": 1,
                                    "maxReplicas": 4, "targetCPUUtilizationPercentage": 60}
    as_v2 = await apiserver.request("GET", f"{_hpas(apiserver, 'v2')}/a")
    assert as_v2.body["apiVersion"] == "autoscaling/v2"
    assert as_v2.body["spec"] == {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 4,
                                  "metrics": [{"type": "Resource", "resource": {
                                      "name": "cpu", "target": {"type": "Utilization",
                                                                "averageUtilization": 60}}}]}


async def test_a_v2_autoscaler_is_defaulted_and_read_as_v1(apiserver: Cluster) -> None:
    behavior = {"scaleDown": {"selectPolicy": "Disabled"}}
    created = await apiserver.request("POST", f"{_hpas(apiserver, 'v2')}?dryRun=All", json={
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "b"}, "spec": {"scaleTargetRef": TARGET, "maxReplicas": 3}})
    assert created.status == 201, created
    assert created.body["spec"]["minReplicas"] == 1
    assert created.body["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert created.body["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    stored = await apiserver.request("POST", _hpas(apiserver, "v2"), json={
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "b"},
        "spec": {"scaleTargetRef": TARGET, "maxReplicas": 3, "behavior": behavior}})
    assert stored.status == 201, stored
    as_v1 = await apiserver.request("GET", f"{_hpas(apiserver, 'v1')}/b")
    assert as_v1.body["spec"] == {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 3,
                                  "targetCPUUtilizationPercentage": 80}
    annotations = as_v1.body["metadata"].get("annotations") or {}
    assert annotations == {"autoscaling.alpha.kubernetes.io/behavior": (
        '{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":['
        '{"Type":"Pods","Value":4,"PeriodSeconds":15},{"Type":"Percent","Value":100,'
        '"PeriodSeconds":15}]},"ScaleDown":{"StabilizationWindowSeconds":null,'
        '"SelectPolicy":"Disabled","Policies":[{"Type":"Percent","Value":100,'
        '"PeriodSeconds":15}]}}')}
    assert as_v1.body["status"] == {"currentReplicas": 0, "desiredReplicas": 0}
    back = await apiserver.request("GET", f"{_hpas(apiserver, 'v2')}/b")
    assert back.body["spec"]["behavior"]["scaleDown"] == {
        "selectPolicy": "Disabled", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]}


async def test_replica_bounds_are_validated(apiserver: Cluster) -> None:
    refused = await apiserver.request("POST", _hpas(apiserver, "v2"), json={
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "c"},
        "spec": {"scaleTargetRef": TARGET, "minReplicas": 5, "maxReplicas": 2}})
    assert refused.status == 422, refused
    assert refused.body["message"] == (
        'HorizontalPodAutoscaler.autoscaling "c" is invalid: spec.maxReplicas: Invalid value: '
        "2: must be greater than or equal to `minReplicas`")
