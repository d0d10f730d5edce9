"""Bad input gets a clear Status with kube-apiserver's code, never a traceback or a hang."""

from __future__ import annotations

from reconcilekit.testing import Cluster

from k8s_objects import configmap


async def test_malformed_json_is_400(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("POST", configmaps, body=b"{not json",
                                  content_type="application/json")
    assert got.status == 400 and got.body["kind"] == "Status"
    assert got.body["reason"] == "BadRequest"


async def test_body_kind_or_api_version_not_matching_the_url_is_400(
        apiserver: Cluster, configmaps: str) -> None:
    wrong_version = dict(configmap("a"), apiVersion="v2")
    got = await apiserver.request("POST", configmaps, json=wrong_version)
    assert got.status == 400
    assert got.body["message"] == (
        'ConfigMap in version "v2" cannot be handled as a ConfigMap: no kind "ConfigMap" is '
        'registered for version "v2" in scheme "pkg/runtime/scheme.go:100"')
    wrong_kind = dict(configmap("a"), kind="Secret")
    got = await apiserver.request("POST", configmaps, json=wrong_kind)
    assert got.status == 400
    assert got.body["message"] == (
        'Secret in version "v1" cannot be handled as a ConfigMap: converting (v1.Secret) to '
        "(core.ConfigMap): unknown conversion")


async def test_missing_name_is_422(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("POST", configmaps, json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert got.status == 422 and got.body["reason"] == "Invalid"
    assert got.body["details"]["causes"][0]["field"] == "metadata.name"
    assert "name or generateName is required" in got.body["message"]


async def test_invalid_name_is_422(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("POST", configmaps, json=configmap("Not_Valid"))
    assert got.status == 422
    assert "RFC 1123" in got.body["message"]


async def test_unknown_resource_is_404(apiserver: Cluster) -> None:
    got = await apiserver.request("GET", "/api/v1/namespaces/default/nonsense")
    assert got.status == 404 and got.body["kind"] == "Status"
    got = await apiserver.request("GET", "/apis/nope.example.com/v1/things")
    assert got.status == 404


async def test_wrong_method_is_405(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("POST", f"{configmaps}/a", json=configmap("a"))
    assert got.status == 405 and got.body["reason"] == "MethodNotAllowed"
    got = await apiserver.request("PUT", configmaps, json=configmap("a"))
    assert got.status == 405


async def test_invalid_crd_is_422_naming_the_fields(apiserver: Cluster) -> None:
    got = await apiserver.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json={
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "scope": "Somewhere",
                     "names": {"plural": "stuff", "kind": "Thing"},
                     "versions": [{"name": "v1", "served": True, "storage": False,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    assert got.status == 422 and got.body["reason"] == "Invalid"
    fields = {c["field"] for c in got.body["details"]["causes"]}
    assert {"metadata.name", "spec.scope", "spec.versions"} <= fields


async def test_bad_query_parameters_are_400(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("GET", configmaps, params={"limit": "many"})
    assert got.status == 400
    got = await apiserver.request("GET", configmaps, params={"continue": "garbage!"})
    assert got.status == 400


async def test_unknown_patch_type_is_415(apiserver: Cluster, configmaps: str) -> None:
    await apiserver.request("POST", configmaps, json=configmap("a"))
    got = await apiserver.request("PATCH", f"{configmaps}/a", body=b"{}",
                                  content_type="text/plain")
    assert got.status == 415 and got.body["reason"] == "UnsupportedMediaType"


async def test_update_body_name_must_match_the_url(apiserver: Cluster, configmaps: str) -> None:
    made = (await apiserver.request("POST", configmaps, json=configmap("a"))).body
    got = await apiserver.request("PUT", f"{configmaps}/a",
                                  json=dict(made, metadata=dict(made["metadata"], name="b")))
    assert got.status == 400
    assert "does not match the name on the URL" in got.body["message"]


async def test_subresources_are_served_where_discovery_lists_them(
        apiserver: Cluster, configmaps: str) -> None:
    await apiserver.request("POST", configmaps, json=configmap("c"))
    namespace = f"/api/v1/namespaces/{apiserver.namespace}"
    # pods/binding is create-only, namespaces/finalize update-only; neither on ConfigMaps
    for method, path in (("POST", f"{configmaps}/c/binding"),
                         ("PUT", f"{configmaps}/c/finalize"),
                         ("GET", f"{configmaps}/c/scale")):
        got = await apiserver.request(method, path, json={})
        assert got.status == 404, (method, path, got)
    for method, path in (("GET", f"{namespace}/pods/p/binding"),
                         ("PUT", f"{namespace}/pods/p/binding"),
                         ("GET", f"{namespace}/finalize"),
                         ("POST", f"{namespace}/finalize")):
        got = await apiserver.request(method, path, json={})
        assert got.status == 405, (method, path, got)
