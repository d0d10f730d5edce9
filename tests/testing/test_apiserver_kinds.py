"""What kube-apiserver v1.28 does per built-in kind (registry strategies and validation).

Secrets fold ``stringData`` into ``data``; ConfigMaps and Secrets can be made
immutable; a Pod's spec barely changes after creation and a Pod bound to a
node is deleted gracefully; Leases, Namespaces and Events have rules of
their own. Expected messages are kube-apiserver's.
"""

from __future__ import annotations

import datetime
from typing import Any

from reconcilekit.testing import Cluster

from k8s_objects import configmap, pod

MERGE = "application/merge-patch+json"
IMMUTABLE = "Forbidden: field is immutable when `immutable` is set"


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    assert body["kind"] == "Status" and body["code"] == 422, body
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


def _secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def _seconds(stamp: str) -> float:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def test_secret_string_data_is_folded_into_data_and_type_defaults(
        apiserver: Cluster) -> None:
    secrets = f"/api/v1/namespaces/{apiserver.namespace}/secrets"
    made = await apiserver.request("POST", secrets, json=_secret(
        "s", data={"a": "YQ==", "n": "YWJj\n"}, stringData={"a": "override", "b": "é"}))
    assert made.status == 201, made
    assert "stringData" not in made.body
    # stringData wins over data; data is stored as Go re-encodes it (newline dropped).
    assert made.body["data"] == {"a": "b3ZlcnJpZGU=", "b": "w6k=", "n": "YWJj"}
    assert made.body["type"] == "Opaque"
    patched = await apiserver.request("PATCH", f"{secrets}/s", json={"stringData": {"c": "z"}},
                                      content_type=MERGE)
    assert patched.body["data"]["c"] == "eg==" and "stringData" not in patched.body
    retyped = await apiserver.request("PATCH", f"{secrets}/s", json={"type": "Other"},
                                      content_type=MERGE)
    assert retyped.status == 422
    assert _causes(retyped.body) == [("type", 'Invalid value: "Other": field is immutable')]
    bad = await apiserver.request("POST", secrets, json=_secret("b", data={"a": "not base64!"}))
    assert bad.status == 400
    assert bad.body["message"] == ('Secret in version "v1" cannot be handled as a Secret: '
                                   "illegal base64 data at input byte 3")


async def test_secret_types_require_their_keys(apiserver: Cluster) -> None:
    secrets = f"/api/v1/namespaces/{apiserver.namespace}/secrets"
    tls = await apiserver.request("POST", secrets, json=_secret(
        "t", type="kubernetes.io/tls", data={}))
    assert tls.status == 422
    assert _causes(tls.body) == [("data[tls.crt]", "Required value"),
                                 ("data[tls.key]", "Required value")]
    ok = await apiserver.request("POST", secrets, json=_secret(
        "t", type="kubernetes.io/tls", stringData={"tls.crt": "c", "tls.key": "k"}))
    assert ok.status == 201, ok
    docker = await apiserver.request("POST", secrets, json=_secret(
        "d", type="kubernetes.io/dockerconfigjson"))
    assert _causes(docker.body) == [("data[.dockerconfigjson]", "Required value")]


async def test_configmap_and_secret_keys_are_config_keys(apiserver: Cluster,
                                                         configmaps: str) -> None:
    got = await apiserver.request("POST", configmaps, json=configmap(
        "k", {"bad key": "v", "..a": "x", "ok": "y"}))
    assert got.status == 422
    assert sorted(_causes(got.body)) == [  # in Go's map order on kube-apiserver
        ("data[..a]", 'Invalid value: "..a": must not start with \'..\''),
        ("data[bad key]", 'Invalid value: "bad key": a valid config key must consist of '
         "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
         "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')")]
    dup = await apiserver.request("POST", configmaps, json=dict(
        configmap("d", {"a": "1"}), binaryData={"a": "YQ=="}))
    assert _causes(dup.body) == [("data[a]",
                                  'Invalid value: "a": duplicate of key present in binaryData')]
    secret = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/secrets",
        json=_secret("s", data={"bad key": "YQ=="}))
    assert secret.status == 422 and _causes(secret.body)[0][0] == "data[bad key]"


async def test_immutable_configmaps_and_secrets_keep_their_data(apiserver: Cluster,
                                                                configmaps: str) -> None:
    await apiserver.request("POST", configmaps, json=dict(configmap("i", {"a": "1"}),
                                                          immutable=True))
    changed = await apiserver.request("PATCH", f"{configmaps}/i", json={"data": {"a": "2"}},
                                      content_type=MERGE)
    assert changed.status == 422
    assert _causes(changed.body) == [("data", IMMUTABLE)]
    unfrozen = await apiserver.request("PATCH", f"{configmaps}/i", json={"immutable": False},
                                       content_type=MERGE)
    assert _causes(unfrozen.body) == [("immutable", IMMUTABLE)]
    labelled = await apiserver.request("PATCH", f"{configmaps}/i", json={
        "metadata": {"labels": {"x": "y"}}}, content_type=MERGE)
    assert labelled.status == 200  # metadata stays mutable
    secrets = f"/api/v1/namespaces/{apiserver.namespace}/secrets"
    await apiserver.request("POST", secrets, json=_secret("s", data={"a": "YQ=="},
                                                          immutable=True))
    changed = await apiserver.request("PATCH", f"{secrets}/s", json={"data": {"a": "Yg=="}},
                                      content_type=MERGE)
    assert _causes(changed.body) == [("data", IMMUTABLE)]


async def test_pod_containers_are_required_with_names_and_images(apiserver: Cluster,
                                                                 pods: str) -> None:
    none = await apiserver.request("POST", pods, json=dict(pod("a"), spec={}))
    assert none.status == 422
    assert _causes(none.body) == [("spec.containers", "Required value")]
    no_image = await apiserver.request("POST", pods, json=dict(pod("b"), spec={
        "containers": [{"name": "c"}, {"name": "c", "image": "x"}]}))
    assert sorted(_causes(no_image.body)) == [
        ("spec.containers[0].image", "Required value"),
        ("spec.containers[1].name", 'Duplicate value: "c"')]


async def test_a_pods_spec_changes_only_where_kube_allows(apiserver: Cluster, pods: str
                                                          ) -> None:
    body = pod("p")
    body["spec"]["activeDeadlineSeconds"] = 10
    made = await apiserver.request("POST", pods, json=body)
    assert made.status == 201
    assert "generation" not in made.body["metadata"]  # Pods have none in v1.28
    path = f"{pods}/p"
    image = await apiserver.request("PATCH", path, json={"spec": {"containers": [
        {"name": "main", "image": "busybox:2"}]}},
        content_type="application/strategic-merge-patch+json")
    assert image.status == 200 and image.body["spec"]["containers"][0]["image"] == "busybox:2"
    shorter = await apiserver.request("PATCH", path, json={"spec": {"activeDeadlineSeconds": 5}},
                                      content_type=MERGE)
    assert shorter.status == 200
    longer = await apiserver.request("PATCH", path, json={"spec": {"activeDeadlineSeconds": 20}},
                                     content_type=MERGE)
    assert _causes(longer.body) == [("spec.activeDeadlineSeconds",
                                     "Invalid value: 20: must be less than or equal to previous "
                                     "value")]
    moved = await apiserver.request("PATCH", path, json={"spec": {"nodeName": "n1"}},
                                    content_type=MERGE)
    assert moved.status == 422
    (field, message), = _causes(moved.body)
    assert field == "spec"
    # kube-apiserver appends a Go cmp.Diff of the two specs.
    assert message.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
        "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to "
        "be set to 1 if it was previously negative)\n")
    assert "NodeName" in message
    added = await apiserver.request("PATCH", path, json={"spec": {"containers": [
        {"name": "side", "image": "x"}]}}, content_type="application/strategic-merge-patch+json")
    assert _causes(added.body) == [("spec.containers",
                                    "Forbidden: pod updates may not add or remove containers")]


async def test_a_pod_bound_to_a_node_is_deleted_gracefully(apiserver: Cluster,
                                                           pods: str) -> None:
    # pod strategy CheckGracefulDelete + rest.BeforeDelete: the Pod stays, Terminating,
    # until its kubelet deletes it with a grace period of 0; only a shorter period counts.
    bound = pod("b")
    bound["spec"]["nodeName"] = "n1"
    await apiserver.request("POST", pods, json=bound)
    path = f"{pods}/b"
    first = await apiserver.request("DELETE", path)
    assert first.status == 200
    meta = first.body["metadata"]
    assert meta["deletionGracePeriodSeconds"] == 30
    again = await apiserver.request("DELETE", path, json={"gracePeriodSeconds": 60})
    assert again.body["metadata"] == meta  # a longer period changes nothing
    shorter = await apiserver.request("DELETE", path, json={"gracePeriodSeconds": 10})
    smeta = shorter.body["metadata"]
    assert smeta["deletionGracePeriodSeconds"] == 10
    assert _seconds(meta["deletionTimestamp"]) - _seconds(smeta["deletionTimestamp"]) == 20
    assert (await apiserver.request("GET", path)).status == 200
    final = await apiserver.request("DELETE", path, json={
        "gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}})
    assert final.status == 200 and final.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert (await apiserver.request("GET", path)).status == 404


async def test_an_unbound_pod_goes_at_once_and_a_pending_grace_period_outlives_finalizers(
        apiserver: Cluster, pods: str) -> None:
    await apiserver.request("POST", pods, json=pod("u"))
    gone = await apiserver.request("DELETE", f"{pods}/u")
    # The answer carries the deletion it made: now, with no grace period.
    assert gone.body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert gone.body["metadata"]["deletionTimestamp"]
    assert (await apiserver.request("GET", f"{pods}/u")).status == 404
    held = pod("h", finalizers=["x/y"])
    held["spec"]["nodeName"] = "n1"
    await apiserver.request("POST", pods, json=held)
    await apiserver.request("DELETE", f"{pods}/h")
    released = await apiserver.request("PATCH", f"{pods}/h", json={
        "metadata": {"finalizers": None}}, content_type=MERGE)
    assert released.status == 200
    # registry.Store.shouldDeleteDuringUpdate: not while a grace period is pending
    assert (await apiserver.request("GET", f"{pods}/h")).status == 200
    await apiserver.request("DELETE", f"{pods}/h", json={"gracePeriodSeconds": 0})
    assert (await apiserver.request("GET", f"{pods}/h")).status == 404


async def test_lease_spec_is_validated(apiserver: Cluster) -> None:
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases"
    got = await apiserver.request("POST", leases, json={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"},
        "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}})
    assert got.status == 422
    assert got.body["message"] == (
        'Lease.coordination.k8s.io "l" is invalid: [spec.leaseDurationSeconds: Invalid value: '
        "0: must be greater than 0, spec.leaseTransitions: Invalid value: -1: must be greater "
        "than or equal to 0]")


async def test_a_namespace_is_labelled_with_its_name(apiserver: Cluster) -> None:
    name = f"labelled-{apiserver.namespace}"
    made = await apiserver.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    try:
        assert made.body["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
        relabel = await apiserver.request("PATCH", f"/api/v1/namespaces/{name}", json={
            "metadata": {"labels": {"kubernetes.io/metadata.name": "other"}}},
            content_type=MERGE)
        assert relabel.body["metadata"]["labels"] == {"kubernetes.io/metadata.name": name}
        # nothing changed, so nothing was written
        assert relabel.body["metadata"]["resourceVersion"] == (
            made.body["metadata"]["resourceVersion"])
    finally:
        await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")


async def test_a_core_event_lives_in_its_objects_namespace(apiserver: Cluster) -> None:
    events = f"/api/v1/namespaces/{apiserver.namespace}/events"

    def event(name: str, namespace: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
                "reason": "Tested", "message": "m", "type": "Normal"}

    elsewhere = await apiserver.request("POST", events, json=event("e", "elsewhere"))
    assert elsewhere.status == 422
    assert _causes(elsewhere.body) == [("involvedObject.namespace",
                                        'Invalid value: "elsewhere": does not match '
                                        "event.namespace")]
    here = await apiserver.request("POST", events, json=event("e", apiserver.namespace))
    assert here.status == 201, here
