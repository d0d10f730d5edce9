"""A workload's status, as the controllers write it, validated as kube-apiserver v1.28.7
validates it; PVCs and a StatefulSet's claim templates defaulted as it defaults them (the
``kubernetes.io/pvc-protection`` finalizer kube-apiserver's admission adds is not added
in-process: nothing there would remove it).

A test that plays a controller (writing a StatefulSet's status itself) gets the
422 a real controller would: ``readyReplicas`` above ``replicas`` is refused on
both backends alike.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit.testing import Cluster

TEMPLATE = {"metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
SELECTOR = {"matchLabels": {"app": "a"}}
# No replicas: on a real cluster the controllers then write only zeros, so the status a
# test patches is the same on both backends whenever the controllers get to it.
KINDS = {
    "statefulsets": ("StatefulSet", {"serviceName": "x", "replicas": 0}),
    "deployments": ("Deployment", {"replicas": 0}),
    "replicasets": ("ReplicaSet", {"replicas": 0}),
    "daemonsets": ("DaemonSet", {}),
}
GT = "cannot be greater than"
NEG = "must be greater than or equal to 0"


@pytest.mark.parametrize(("plural", "status", "causes"), [
    ("statefulsets", {"replicas": 1, "readyReplicas": 2},
     ["status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"]),
    ("statefulsets", {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2,
                      "currentReplicas": 3, "updatedReplicas": 3},
     [f"status.currentReplicas: Invalid value: 3: {GT} status.replicas",
      f"status.updatedReplicas: Invalid value: 3: {GT} status.replicas",
      f"status.availableReplicas: Invalid value: 2: {GT} status.readyReplicas"]),
    ("deployments", {"replicas": 1, "readyReplicas": 2, "availableReplicas": 3,
                     "updatedReplicas": 4, "unavailableReplicas": -1},
     [f"status.unavailableReplicas: Invalid value: -1: {NEG}",
      f"status.updatedReplicas: Invalid value: 4: {GT} status.replicas",
      f"status.readyReplicas: Invalid value: 2: {GT} status.replicas",
      f"status.availableReplicas: Invalid value: 3: {GT} status.replicas",
      f"status.availableReplicas: Invalid value: 3: {GT} readyReplicas"]),
    ("replicasets", {"replicas": -1, "observedGeneration": -1},
     [f"status.replicas: Invalid value: -1: {NEG}",
      f"status.observedGeneration: Invalid value: -1: {NEG}",
      f"status.fullyLabeledReplicas: Invalid value: 0: {GT} status.replicas",
      f"status.readyReplicas: Invalid value: 0: {GT} status.replicas",
      f"status.availableReplicas: Invalid value: 0: {GT} status.replicas"]),
    ("daemonsets", {"numberReady": -1, "collisionCount": -1},
     [f"status.numberReady: Invalid value: -1: {NEG}",
      f"status.collisionCount: Invalid value: -1: {NEG}"]),
], ids=["sts-ready", "sts-several", "deployment", "replicaset", "daemonset"])
async def test_a_status_the_controllers_could_not_write_is_refused(
        apiserver: Cluster, plural: str, status: dict[str, Any], causes: list[str]) -> None:
    kind, spec = KINDS[plural]
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/{plural}"
    made = await apiserver.request("POST", path, json={
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "x"},
        "spec": {"selector": SELECTOR, "template": TEMPLATE, **spec}})
    assert made.status == 201, made.body
    got = await apiserver.request("PATCH", f"{path}/x/status", json={"status": status},
                                  content_type="application/merge-patch+json")
    shown = causes[0] if len(causes) == 1 else "[" + ", ".join(causes) + "]"
    assert (got.status, got.body["message"]) == (
        422, f'{kind}.apps "x" is invalid: {shown}')
    fine = await apiserver.request("PATCH", f"{path}/x/status", json={"status": {}},
                                   content_type="application/merge-patch+json")
    assert fine.status == 200, fine.body


async def test_a_claim_and_a_statefulsets_claim_templates_are_defaulted(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    claim_spec = {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": "1Gi"}}}
    claim = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims",
                                    json={"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                          "metadata": {"name": "data"}, "spec": claim_spec})
    assert claim.status == 201, claim.body
    assert claim.body["spec"]["volumeMode"] == "Filesystem"
    assert claim.body["status"] == {"phase": "Pending"}
    if not apiserver.in_process:  # kube-apiserver's pvc-protection finalizer would outlive it
        await apiserver.request("PATCH", f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data",
                                json={"metadata": {"finalizers": None}},
                                content_type="application/merge-patch+json")
    sts = await apiserver.request("POST", f"/apis/apps/v1/namespaces/{ns}/statefulsets", json={
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"selector": SELECTOR, "template": TEMPLATE, "serviceName": "db",
                 "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}]}})
    assert sts.status == 201, sts.body
    assert sts.body["spec"]["volumeClaimTemplates"] == [{
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "creationTimestamp": None},
        "spec": {**claim_spec, "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}]
