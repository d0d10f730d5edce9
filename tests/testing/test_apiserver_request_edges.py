"""Requests at the edges of what kube-apiserver accepts, answered as v1.28.7 answers them.

Each case was found by sending generated requests to both servers
(tests/fuzz) and is pinned here with kube-apiserver's exact answer: a custom
resource's metadata decoded as an ``ObjectMeta``, names that cannot be a path
segment, the field manager's rules on every write's options, and a DELETE
body that does not parse.
"""

from __future__ import annotations

from typing import Any

import pytest
from apiserver_helpers import GROUP

from reconcilekit.testing import Cluster

from k8s_objects import configmap

CANNOT = 'Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal '


def _widget(meta: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Widget", "metadata": meta}


@pytest.mark.parametrize(("meta", "message"), [
    ({"name": 5}, "number into Go struct field ObjectMeta.name of type string"),
    ({"name": ["x"]}, "array into Go struct field ObjectMeta.name of type string"),
    ({"generateName": 5}, "number into Go struct field ObjectMeta.generateName of type string"),
    ({"name": "a", "namespace": 5},
     "number into Go struct field ObjectMeta.namespace of type string"),
    ({"name": "a", "labels": {"a": 1}}, "number into Go struct field ObjectMeta.labels of type "
                                        "string"),
    ({"name": "a", "annotations": []}, "array into Go struct field ObjectMeta.annotations of "
                                       "type map[string]string"),
    ({"name": "a", "finalizers": "x"}, "string into Go struct field ObjectMeta.finalizers of "
                                       "type []string"),
    ({"name": "a", "ownerReferences": "x"}, "string into Go struct field "
                                            "ObjectMeta.ownerReferences of type "
                                            "[]v1.OwnerReference"),
    ({"name": "a", "ownerReferences": [{"uid": 5}]},
     "number into Go struct field OwnerReference.ownerReferences.uid of type types.UID"),
    ({"name": "a", "uid": 5}, "number into Go struct field ObjectMeta.uid of type types.UID"),
    ({"name": "a", "generation": "x"}, "string into Go struct field ObjectMeta.generation of "
                                       "type int64"),
    ({"name": "a", "managedFields": "x"}, "string into Go struct field ObjectMeta.managedFields "
                                          "of type []v1.ManagedFieldsEntry"),
    ("x", "string into Go value of type v1.ObjectMeta"),
], ids=lambda v: str(v)[:40])
async def test_a_custom_resource_metadata_of_the_wrong_type_is_400(
        apiserver: Cluster, widgets: str, meta: Any, message: str) -> None:
    got = await apiserver.request("POST", widgets, json=_widget(meta))
    assert (got.status, got.body.get("reason"), got.body.get("message")) == (
        400, "BadRequest", CANNOT + message), got.body


async def test_a_custom_resource_metadata_is_stored_as_an_object_meta(
        apiserver: Cluster, widgets: str) -> None:
    """Unknown fields dropped (a warning each, 400 under Strict), null label values made
    "", empty fields omitted."""
    got = await apiserver.request("POST", widgets, json=_widget({
        "name": "a", "foo": 1, "labels": {"x": None}, "annotations": None, "namespace": "",
        "finalizers": [], "generateName": ""}))
    assert got.status == 201, got.body
    meta = got.body["metadata"]
    assert "foo" not in meta and meta["labels"] == {"x": ""}
    assert not {"annotations", "finalizers", "generateName"} & set(meta)
    assert got.headers.getall("Warning", []) == ['299 - "unknown field \\"metadata.foo\\""']
    strict = await apiserver.request("POST", widgets, json=_widget({"name": "b", "foo": 1}),
                                     params={"fieldValidation": "Strict"})
    assert (strict.status, strict.body["message"]) == (
        400, 'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
             'unknown field "metadata.foo"')


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
async def test_a_name_that_cannot_be_a_path_segment_is_400(
        apiserver: Cluster, configmaps: str, widgets: str, method: str) -> None:
    """(A name ``.`` or ``..`` is refused the same way, but HTTP clients resolve those
    segments before sending.)"""
    for collection, body in ((configmaps, configmap("a%b")), (widgets, _widget({"name": "a%b"}))):
        got = await apiserver.request(method, f"{collection}/a%25b",
                                      json=body if method == "PUT" else None)
        assert (got.status, got.body.get("message")) == (
            400, "Name parameter invalid: \"a%b\": may not contain '%'"), (collection, got.body)


async def test_the_field_manager_is_checked_on_every_write(
        apiserver: Cluster, configmaps: str) -> None:
    made = await apiserver.request("POST", configmaps, json=configmap("a"))
    assert made.status == 201, made.body
    tab = 'fieldManager: Invalid value: "a\\tb": invalid character U+0009 (at position 1)'
    for method, path, kind, body, content_type in (
            ("POST", configmaps, "CreateOptions", configmap("b"), "application/json"),
            ("PUT", f"{configmaps}/a", "UpdateOptions", made.body, "application/json"),
            ("PATCH", f"{configmaps}/a", "PatchOptions", {}, "application/merge-patch+json"),
            ("PATCH", f"{configmaps}/a", "PatchOptions", {}, "application/apply-patch+yaml")):
        got = await apiserver.request(method, path, json=body, content_type=content_type,
                                      params={"fieldManager": "a\tb"})
        assert (got.status, got.body["message"]) == (
            422, f'{kind}.meta.k8s.io "" is invalid: {tab}'), (method, content_type)
        assert got.body["details"] == {"group": "meta.k8s.io", "kind": kind, "causes": [
            {"reason": "FieldValueInvalid", "field": "fieldManager",
             "message": tab.removeprefix("fieldManager: ")}]}
    every = await apiserver.request(
        "PATCH", f"{configmaps}/a", json={}, content_type="application/merge-patch+json",
        params={"fieldManager": "\u200b\t", "dryRun": "x", "fieldValidation": "y"})
    assert (every.status, every.body["message"]) == (422, (
        'PatchOptions.meta.k8s.io "" is invalid: ['
        'fieldManager: Invalid value: "\\u200b\\t": invalid character U+200B (at position 0), '
        'fieldManager: Invalid value: "\\u200b\\t": invalid character U+0009 (at position 3), '
        'dryRun: Unsupported value: []string{"x"}: supported values: "All", '
        'fieldValidation: Unsupported value: "y": supported values: "", "Ignore", "Strict", '
        '"Warn"]'))
    long = await apiserver.request("PATCH", f"{configmaps}/a", json={},
                                   content_type="application/merge-patch+json",
                                   params={"fieldManager": "x" * 129})
    assert (long.status, long.body["message"]) == (
        422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Too long: must have at '
             "most 128 bytes")
    applied = await apiserver.request("PATCH", f"{configmaps}/a", json={},
                                      content_type="application/apply-patch+yaml")
    assert (applied.status, applied.body["message"]) == (
        422, 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required '
             "for apply patch")


@pytest.mark.parametrize(("body", "content_type", "status", "message"), [
    (b"abc", "application/json", 500,
     "couldn't get version/kind; json parse error: invalid character 'a' looking for "
     "beginning of value"),
    (b'{"a":', "application/json", 500,
     "couldn't get version/kind; json parse error: unexpected end of JSON input"),
    (b"\xa6\x1el", "application/json", 500,
     "couldn't get version/kind; json parse error: invalid character '\u00a6' looking for "
     "beginning of value"),
    (b'{"a":1}x', "application/json", 500,
     "couldn't get version/kind; json parse error: invalid character 'x' after top-level "
     "value"),
    (b"{", "text/plain", 415,
     "the body of the request was in an unknown format - accepted media types include: "
     "application/json, application/yaml, application/vnd.kubernetes.protobuf"),
], ids=["word", "cut", "not-utf8", "trailing", "text"])
async def test_a_delete_body_that_does_not_parse(
        apiserver: Cluster, configmaps: str, body: bytes, content_type: str, status: int,
        message: str) -> None:
    made = await apiserver.request("POST", configmaps, json=configmap("a"))
    assert made.status == 201, made.body
    got = await apiserver.request("DELETE", f"{configmaps}/a", body=body,
                                  content_type=content_type)
    assert (got.status, got.body.get("message")) == (status, message)
    still = await apiserver.request("GET", f"{configmaps}/a")
    assert still.status == 200


async def test_a_deletecollection_reads_its_list_options_before_its_body(
        apiserver: Cluster, widgets: str) -> None:
    got = await apiserver.request("DELETE", widgets, json=_widget({"name": "a"}),
                                  params={"fieldSelector": "a!b"})
    assert (got.status, got.body.get("message")) == (
        400, "invalid selector: 'a!b'; can't understand 'a!b'")


@pytest.mark.parametrize(("method", "sub", "status"), [
    ("GET", "binding", 405), ("PUT", "binding", 405), ("DELETE", "binding", 405),
    ("POST", "status", 405), ("DELETE", "status", 405), ("POST", "ephemeral", 404)])
async def test_a_subresource_takes_the_verbs_discovery_lists(
        apiserver: Cluster, pods: str, method: str, sub: str, status: int) -> None:
    """pods/binding is create-only and pods/status get, patch and update, as kube-apiserver's
    discovery says; a subresource it does not list is a 404."""
    got = await apiserver.request(method, f"{pods}/p/{sub}", json={} if method in (
        "PUT", "POST") else None)
    assert got.status == status, got.body
    finalize = await apiserver.request("POST", f"/api/v1/namespaces/{apiserver.namespace}"
                                       "/finalize", json={})
    assert finalize.status == 405, finalize.body


async def test_a_null_label_or_data_value_is_the_empty_string(
        apiserver: Cluster, configmaps: str) -> None:
    """Go decodes ``null`` into a ``map[string]string`` value as ``""`` (it was a 500)."""
    got = await apiserver.request("POST", configmaps, json=configmap(
        "a", labels={"app": None}, data={"k": None}))
    assert got.status == 201, got.body
    assert (got.body["metadata"]["labels"], got.body["data"]) == ({"app": ""}, {"k": ""})
