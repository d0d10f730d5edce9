"""A custom resource's ``scale`` subresource and its deprecated versions' warnings, as
kube-apiserver v1.28 answers them (measured on v1.28.7)."""

from __future__ import annotations

from typing import Any

from apiserver_helpers import GROUP

from reconcilekit.testing import Cluster

SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 10},
                                              "n": {"type": "integer"}}},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                "sel": {"type": "string"}}}}}}
SCALED_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"scaleds.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "scaleds", "kind": "Scaled"},
             "versions": [
                 {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
                  "schema": SCHEMA},
                 {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                  "deprecationWarning": "v1beta1 goes away", "schema": SCHEMA},
                 {"name": "v1", "served": True, "storage": True, "schema": SCHEMA,
                  "subresources": {"status": {}, "scale": {
                      "specReplicasPath": ".spec.replicas",
                      "statusReplicasPath": ".status.replicas",
                      "labelSelectorPath": ".status.sel"}}},
                 {"name": "v2", "served": True, "storage": False, "schema": SCHEMA}]}}
OLD = f'299 - "{GROUP}/v1alpha1 Scaled is deprecated; use {GROUP}/v2 Scaled"'


def _scale(body: dict[str, Any]) -> tuple[Any, Any]:
    assert (body["kind"], body["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert sorted(body["metadata"]) == ["creationTimestamp", "name", "namespace",
                                        "resourceVersion", "uid"]
    return body["spec"], body["status"]


async def test_every_answer_about_a_deprecated_version_carries_its_warning(
        apiserver: Cluster) -> None:
    await apiserver.install_crd(SCALED_CRD)
    old = f"/apis/{GROUP}/v1alpha1/namespaces/{apiserver.namespace}/scaleds"
    made = await apiserver.request("POST", old, json={
        "apiVersion": f"{GROUP}/v1alpha1", "kind": "Scaled", "metadata": {"name": "a"},
        "spec": {}, "extra": 1})
    assert made.status == 201, made
    assert made.headers.getall("Warning") == [OLD, '299 - "unknown field \\"extra\\""']
    for method, path in (("GET", old), ("GET", f"{old}/a"), ("DELETE", f"{old}/missing"),
                         ("GET", f"/apis/{GROUP}/v1alpha1/scaleds")):
        got = await apiserver.request(method, path)
        assert got.headers.getall("Warning", []) == [OLD], (method, path, got)
    beta = await apiserver.request("GET", old.replace("v1alpha1", "v1beta1"))
    assert beta.headers.getall("Warning", []) == ['299 - "v1beta1 goes away"']
    current = await apiserver.request("GET", old.replace("v1alpha1", "v1"))
    assert current.headers.getall("Warning", []) == []


async def test_a_custom_resources_scale_reads_and_writes_its_crds_paths(
        apiserver: Cluster) -> None:
    await apiserver.install_crd(SCALED_CRD)
    path = f"/apis/{GROUP}/v1/namespaces/{apiserver.namespace}/scaleds"
    made = await apiserver.request("POST", path, json={
        "apiVersion": f"{GROUP}/v1", "kind": "Scaled", "metadata": {"name": "a"}, "spec": {}})
    assert made.status == 201, made
    scale = f"{path}/a/scale"
    missing = await apiserver.request("GET", scale)
    assert (missing.status, missing.body["message"]) == (
        500, 'Internal error occurred: the spec replicas field ".spec.replicas" does not exist')
    put = await apiserver.request("PUT", scale, json={
        "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "a"},
        "spec": {"replicas": 3}})
    assert put.status == 200, put
    assert _scale(put.body) == ({"replicas": 3}, {"replicas": 0})
    zero = await apiserver.request("PATCH", scale, json={"spec": {"replicas": 0}},
                                   content_type="application/merge-patch+json")
    assert _scale(zero.body) == ({}, {"replicas": 0})
    too_many = await apiserver.request("PATCH", scale, json={"spec": {"replicas": 11}},
                                       content_type="application/merge-patch+json")
    assert too_many.status == 422, too_many
    assert too_many.body["message"] == (
        f'Scaled.{GROUP} "a" is invalid: spec.replicas: Invalid value: 11: spec.replicas in '
        "body should be less than or equal to 10")
    await apiserver.request("PATCH", f"{path}/a/status",
                            json={"status": {"replicas": 2, "sel": "x=y"}},
                            content_type="application/merge-patch+json")
    got = await apiserver.request("GET", scale)
    assert _scale(got.body) == ({}, {"replicas": 2, "selector": "x=y"})
    obj = await apiserver.request("GET", f"{path}/a")
    assert obj.body["spec"] == {"replicas": 0}
    gone = await apiserver.request("GET", f"{path}/missing/scale")
    assert (gone.status, gone.body["message"]) == (404, f'scaleds.{GROUP} "missing" not found')


async def test_a_custom_resources_replicas_must_be_a_non_negative_int32(
        apiserver: Cluster) -> None:
    """ValidateScaleSpec and ValidateScaleStatus: after the schema's own errors, the
    replicas at the scale paths, as NestedInt64 reads them."""
    await apiserver.install_crd(SCALED_CRD)
    path = f"/apis/{GROUP}/v1/namespaces/{apiserver.namespace}/scaleds"

    async def causes(spec: dict[str, Any]) -> list[tuple[str, str]]:
        got = await apiserver.request("POST", f"{path}?dryRun=All", json={
            "apiVersion": f"{GROUP}/v1", "kind": "Scaled", "metadata": {"name": "s"},
            "spec": spec})
        assert got.status == 422, got
        return [(c["field"], c["message"]) for c in got.body["details"]["causes"]]
    assert await causes({"replicas": -1}) == [
        (".spec.replicas", "Invalid value: -1: should be a non-negative integer")]
    assert await causes({"replicas": 2 ** 31}) == [
        ("spec.replicas", "Invalid value: 2147483648: spec.replicas in body should be less "
                          "than or equal to 10"),
        (".spec.replicas", "Invalid value: 2147483648: should be less than or equal to "
                           "2147483647")]
    assert await causes({"replicas": "x"}) == [
        ("spec.replicas", 'Invalid value: "string": spec.replicas in body must be of type '
                          'integer: "string"'),
        (".spec.replicas", "Invalid value: 0: .spec.replicas accessor error: x is of the "
                           "type string, expected int64")]
    made = await apiserver.request("POST", path, json={
        "apiVersion": f"{GROUP}/v1", "kind": "Scaled", "metadata": {"name": "s"}, "spec": {}})
    assert made.status == 201, made
    status = await apiserver.request("PATCH", f"{path}/s/status",
                                     json={"status": {"replicas": -2}},
                                     content_type="application/merge-patch+json")
    assert status.status == 422, status
    assert [(c["field"], c["message"]) for c in status.body["details"]["causes"]] == [
        (".status.replicas", "Invalid value: -2: should be a non-negative integer")]
