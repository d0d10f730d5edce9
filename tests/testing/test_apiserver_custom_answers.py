"""Answers about custom resources (and the metadata rules every kind shares) worded as
kube-apiserver v1.28 words them; the expected values are its answers to the same requests."""

from __future__ import annotations

import re
from typing import Any

from reconcilekit.testing import Cluster

from k8s_objects import configmap, widget


async def test_a_custom_resource_deleted_at_once_answers_a_success_status(
        apiserver: Cluster, widgets: str) -> None:
    made = (await apiserver.request("POST", widgets, json=widget("w"))).body
    got = await apiserver.request("DELETE", f"{widgets}/w")
    assert got.status == 200
    assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success",
                        "details": {"name": "w", "group": "test.reconcilekit.dev",
                                    "kind": "widgets", "uid": made["metadata"]["uid"]}}
    # one kept by a finalizer answers the object, now deleting
    await apiserver.request("POST", widgets, json=widget("f", finalizers=["x.io/hold"]))
    held = await apiserver.request("DELETE", f"{widgets}/f")
    assert held.body["kind"] == "Widget" and held.body["metadata"]["deletionTimestamp"]


async def test_custom_resource_lists_carry_an_empty_continue(apiserver: Cluster,
                                                             widgets: str) -> None:
    await apiserver.request("POST", widgets, json=widget("a"))
    await apiserver.request("POST", widgets, json=widget("b"))
    full = await apiserver.request("GET", widgets)
    assert list(full.body["metadata"]) == ["continue", "resourceVersion"]
    assert full.body["metadata"]["continue"] == ""
    page = await apiserver.request("GET", widgets, params={"limit": "1"})
    assert page.body["metadata"]["continue"] != ""
    rest = await apiserver.request("GET", widgets, params={
        "limit": "1", "continue": page.body["metadata"]["continue"]})
    assert rest.body["metadata"]["continue"] == ""
    built_in = await apiserver.request("GET", f"/api/v1/namespaces/{apiserver.namespace}/"
                                       "configmaps")
    assert "continue" not in built_in.body["metadata"]


async def test_field_labels_a_custom_resource_lacks(apiserver: Cluster, widgets: str,
                                                    configmaps: str) -> None:
    got = await apiserver.request("GET", widgets, params={"fieldSelector": "spec.replicas=1"})
    assert (got.status, got.body["message"]) == (
        400, "field label not supported: spec.replicas")
    got = await apiserver.request("GET", configmaps, params={"fieldSelector": "spec.replicas=1"})
    assert got.body["message"] == ('"spec.replicas" is not a known field selector: only '
                                   '"metadata.name", "metadata.namespace"')


async def test_an_update_without_resource_version_names_the_resource(
        apiserver: Cluster, widgets: str) -> None:
    await apiserver.request("POST", widgets, json=widget("w"))
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{apiserver.namespace}/leases"
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}
    await apiserver.request("POST", leases, json=lease)
    cause = {"reason": "FieldValueInvalid", "field": "metadata.resourceVersion",
             "message": "Invalid value: 0x0: must be specified for an update"}
    for path, body, resource, group in ((f"{widgets}/w", widget("w"), "widgets",
                                         "test.reconcilekit.dev"),
                                        (f"{leases}/l", lease, "leases", "coordination.k8s.io")):
        got = await apiserver.request("PUT", path, json=body)
        assert got.status == 422
        assert got.body["message"] == (f'{resource}.{group} "{body["metadata"]["name"]}" is '
                                       "invalid: metadata.resourceVersion: Invalid value: 0x0: "
                                       "must be specified for an update")
        assert got.body["details"] == {"name": body["metadata"]["name"], "group": group,
                                       "kind": resource, "causes": [cause]}


async def test_a_second_controller_reference_is_printed_as_go_prints_the_list(
        apiserver: Cluster, configmaps: str) -> None:
    refs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u1", "controller": True},
        {"apiVersion": "v1", "kind": "Secret", "name": "y", "uid": "u2", "controller": True,
         "blockOwnerDeletion": True}]
    got = await apiserver.request("POST", configmaps,
                                  json=configmap("o", ownerReferences=refs))
    assert got.status == 422
    # Go's %#v: pointers print as addresses, which differ from run to run
    shown = re.sub(r"\(\*bool\)\(0xc[0-9a-f]+\)", "(*bool)(ADDR)",
                   got.body["details"]["causes"][0]["message"])
    assert shown == (
        'Invalid value: []v1.OwnerReference{v1.OwnerReference{APIVersion:"v1", '
        'Kind:"ConfigMap", Name:"x", UID:"u1", Controller:(*bool)(ADDR), '
        'BlockOwnerDeletion:(*bool)(nil)}, v1.OwnerReference{APIVersion:"v1", Kind:"Secret", '
        'Name:"y", UID:"u2", Controller:(*bool)(ADDR), BlockOwnerDeletion:(*bool)(ADDR)}}: '
        'Only one reference can have Controller set to true. Found "true" in references for '
        "ConfigMap/x and Secret/y")


async def test_a_finalizer_added_while_deleting_is_refused_with_both_causes(
        apiserver: Cluster, configmaps: str, widgets: str) -> None:
    forbidden = ("Forbidden: no new finalizers can be added if the object is being deleted, "
                 'found new finalizers []string{"b.io/y"}')
    for path, kind, body in ((configmaps, "ConfigMap", configmap("f", finalizers=["a.io/x"])),
                             (widgets, "Widget.test.reconcilekit.dev",
                              widget("f", finalizers=["a.io/x"]))):
        await apiserver.request("POST", path, json=body)
        await apiserver.request("DELETE", f"{path}/f")
        got = await apiserver.request(
            "PATCH", f"{path}/f", json={"metadata": {"finalizers": ["a.io/x", "b.io/y"]}},
            content_type="application/merge-patch+json")
        assert got.status == 422
        assert got.body["message"] == f'{kind} "f" is invalid: metadata.finalizers: {forbidden}'
        cause = {"reason": "FieldValueForbidden", "message": forbidden,
                 "field": "metadata.finalizers"}
        assert got.body["details"]["causes"] == [cause, cause], kind


async def test_writes_a_status_subresource_does_not_take_name_the_resource(
        apiserver: Cluster, widgets: str) -> None:
    await apiserver.request("POST", widgets, json=widget("w"))
    for method, verb in (("DELETE", "delete"), ("POST", "create")):
        got = await apiserver.request(method, f"{widgets}/w/status", json={})
        assert got.body == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{verb} is not supported on resources of kind '
                       '"widgets.test.reconcilekit.dev"',
            "reason": "MethodNotAllowed",
            "details": {"group": "test.reconcilekit.dev", "kind": "widgets"}, "code": 405}
