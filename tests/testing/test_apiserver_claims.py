"""PersistentVolumeClaims, PersistentVolumes and a StatefulSet's claim templates: what
kube-apiserver 1.28 fills in, and the claim spec it keeps fixed after creation.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on
both backends (``dryRun=All`` where kube-controller-manager would otherwise
change the answer).
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster, eventually

MERGE = {"Content-Type": "application/merge-patch+json"}
CLAIM_SPEC = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}


def _claims(apiserver: Cluster) -> str:
    return f"/api/v1/namespaces/{apiserver.namespace}/persistentvolumeclaims"


async def test_a_claim_is_defaulted_to_a_filesystem_volume_pending(apiserver: Cluster) -> None:
    created = await apiserver.request(
        "POST", f"{_claims(apiserver)}?dryRun=All", json={
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": CLAIM_SPEC})
    assert created.status == 201, created
    assert created.body["spec"] == {**CLAIM_SPEC, "volumeMode": "Filesystem"}
    assert created.body["status"] == {"phase": "Pending"}


async def test_a_claim_spec_is_immutable_after_creation(apiserver: Cluster) -> None:
    created = await apiserver.request("POST", _claims(apiserver), json={
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": CLAIM_SPEC})
    assert created.status == 201, created
    changed = await apiserver.request(
        "PATCH", f"{_claims(apiserver)}/data", headers=MERGE,
        json={"spec": {"accessModes": ["ReadWriteMany"]}})
    assert changed.status == 422, changed
    assert changed.body["message"].replace("\u00a0", " ") == (
        'PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after '
        "creation except resources.requests for bound claims\n"
        "  core.PersistentVolumeClaimSpec{\n"
        '- \tAccessModes: []core.PersistentVolumeAccessMode{"ReadWriteOnce"},\n'
        '+ \tAccessModes: []core.PersistentVolumeAccessMode{"ReadWriteMany"},\n'
        "  \tSelector:    nil,\n"
        '  \tResources:   {Requests: {s"storage": {i: {...}, s: "1Gi", Format: "BinarySI"}}},\n'
        "  \t... // 5 identical fields\n"
        "  }\n")
    grown = await apiserver.request(
        "PATCH", f"{_claims(apiserver)}/data", headers=MERGE,
        json={"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    assert grown.status == 422, grown  # only a bound claim's request may grow
    named = await apiserver.request(
        "PATCH", f"{_claims(apiserver)}/data", headers=MERGE,
        json={"metadata": {"labels": {"a": "b"}}})
    assert named.status == 200, named


async def test_a_statefulset_claim_template_is_defaulted_as_a_claim(apiserver: Cluster) -> None:
    template: dict[str, Any] = {"metadata": {"labels": {"app": "db"}},
                                "spec": {"containers": [{"name": "db", "image": "postgres"}]}}
    created = await apiserver.request(
        "POST", f"/apis/apps/v1/namespaces/{apiserver.namespace}/statefulsets?dryRun=All",
        json={"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
              "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": template,
                       "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                                 "spec": CLAIM_SPEC}]}})
    assert created.status == 201, created
    assert created.body["spec"]["volumeClaimTemplates"] == [{
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"creationTimestamp": None, "name": "data"},
        "spec": {**CLAIM_SPEC, "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}]


async def test_a_persistent_volume_is_defaulted_to_retain_a_filesystem_pending(
        apiserver: Cluster) -> None:
    created = await apiserver.request("POST", "/api/v1/persistentvolumes?dryRun=All", json={
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "claims-pv"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                 "hostPath": {"path": "/tmp/pv"}},
        "status": {"phase": "Bound"}})
    assert created.status == 201, created
    assert created.body["spec"] == {
        "capacity": {"storage": "5Gi"}, "hostPath": {"path": "/tmp/pv", "type": ""},
        "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem"}
    assert created.body["status"] == {"phase": "Pending"}


async def test_a_claim_an_unscheduled_pod_mounts_is_not_in_use(apiserver: Cluster) -> None:
    await apiserver.request("POST", _claims(apiserver), json={
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "idle"},
        "spec": CLAIM_SPEC})
    pod = await apiserver.request("POST", f"/api/v1/namespaces/{apiserver.namespace}/pods",
                                  json={"apiVersion": "v1", "kind": "Pod",
                                        "metadata": {"name": "pending"},
                                        "spec": {"containers": [{"name": "c", "image": "x"}],
                                                 "volumes": [{"name": "data",
                                                              "persistentVolumeClaim": {
                                                                  "claimName": "idle"}}]}})
    assert pod.status == 201, pod
    await apiserver.request("DELETE", f"{_claims(apiserver)}/idle")

    async def claim_gone() -> bool:
        return (await apiserver.request("GET", f"{_claims(apiserver)}/idle")).status == 404
    await eventually(claim_gone, what="the claim removed: no node runs its Pod")


async def test_a_claim_in_use_is_kept_until_its_pod_goes(apiserver: Cluster) -> None:
    """StorageObjectInUseProtection adds the finalizer; the pvc-protection controller
    removes it once no scheduled, unfinished Pod mounts the claim being deleted."""
    created = await apiserver.request("POST", _claims(apiserver), json={
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "used"},
        "spec": CLAIM_SPEC})
    assert created.status == 201, created
    assert created.body["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    pods = f"/api/v1/namespaces/{apiserver.namespace}/pods"
    pod = await apiserver.request("POST", pods, json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}], "nodeName": "n1",
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "used"}}]}})
    assert pod.status == 201, pod
    deleted = await apiserver.request("DELETE", f"{_claims(apiserver)}/used")
    assert deleted.status == 200, deleted
    assert deleted.body["metadata"]["deletionTimestamp"]
    still = await apiserver.request("GET", f"{_claims(apiserver)}/used")
    assert still.status == 200, still
    assert still.body["metadata"]["finalizers"] == ["kubernetes.io/pvc-protection"]
    gone = await apiserver.request("DELETE", f"{pods}/user", json={"gracePeriodSeconds": 0})
    assert gone.status == 200, gone

    async def claim_gone() -> bool:
        return (await apiserver.request("GET", f"{_claims(apiserver)}/used")).status == 404
    await eventually(claim_gone, what="the claim removed once its Pod went")


async def test_a_volume_needs_access_modes_a_capacity_and_a_source(apiserver: Cluster) -> None:
    refused = await apiserver.request("POST", "/api/v1/persistentvolumes", json={
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": f"pv-{apiserver.namespace}"}, "spec": {}})
    assert refused.status == 422, refused
    assert sorted((c["field"], c["message"]) for c in refused.body["details"]["causes"]) == [
        ("spec", "Required value: must specify a volume type"),
        ("spec.accessModes", "Required value"), ("spec.capacity", "Required value"),
        ("spec.capacity",
         'Unsupported value: core.ResourceList(nil): supported values: "storage"')]


async def test_a_storage_class_is_defaulted_and_fixed_once_created(apiserver: Cluster) -> None:
    name = f"sc-{apiserver.namespace}"
    created = await apiserver.request("POST", "/apis/storage.k8s.io/v1/storageclasses", json={
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": "example.com/slow"})
    assert created.status == 201, created
    try:
        assert (created.body["reclaimPolicy"], created.body["volumeBindingMode"]) == (
            "Delete", "Immediate")
        changed = await apiserver.request(
            "PATCH", f"/apis/storage.k8s.io/v1/storageclasses/{name}", headers=MERGE,
            json={"provisioner": "example.com/other", "volumeBindingMode": "WaitForFirstConsumer",
                  "parameters": {"a": "b"}})
        assert changed.status == 422, changed
        assert sorted((c["field"], c["message"]) for c in changed.body["details"]["causes"]) == [
            ("parameters", "Forbidden: updates to parameters are forbidden."),
            ("provisioner", "Forbidden: updates to provisioner are forbidden."),
            ("volumeBindingMode", 'Invalid value: "WaitForFirstConsumer": field is immutable')]
    finally:
        await apiserver.request("DELETE", f"/apis/storage.k8s.io/v1/storageclasses/{name}")
    refused = await apiserver.request("POST", "/apis/storage.k8s.io/v1/storageclasses", json={
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": "", "reclaimPolicy": "Keep"})
    assert refused.status == 422, refused
    assert sorted((c["field"], c["message"]) for c in refused.body["details"]["causes"]) == [
        ("provisioner", "Required value"),
        ("reclaimPolicy", 'Unsupported value: "Keep": supported values: "Delete", "Retain"')]
