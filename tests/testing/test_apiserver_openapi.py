"""``/openapi/v3``: what kubectl reads to learn that the server validates fields itself."""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster, eventually


async def test_openapi_v3_names_each_kinds_paths_and_write_parameters(apiserver: Cluster,
                                                                      probes: str) -> None:
    async def published() -> dict[str, Any] | None:  # kube-apiserver adds a CRD's soon after
        root = await apiserver.request("GET", "/openapi/v3")
        assert root.status == 200, root
        paths: dict[str, Any] = root.body["paths"]
        return paths if "apis/test.reconcilekit.dev/v1" in paths else None

    paths = await eventually(published, what="the Probe CRD's group-version published")
    for gv in ("api/v1", "apis/test.reconcilekit.dev/v1"):
        assert paths[gv]["serverRelativeURL"].startswith(f"/openapi/v3/{gv}?hash=")
    core = await apiserver.request("GET", "/openapi/v3/api/v1")
    assert core.status == 200 and core.body["openapi"] == "3.0.0", core
    assert core.body["info"] == {"title": "Kubernetes", "version": "v1.28.7"}
    patch = core.body["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1",
                                                        "kind": "ConfigMap"}
    assert patch["x-kubernetes-action"] == "patch"
    assert [(p["name"], p["in"]) for p in patch["parameters"]
            if p.get("name") in ("dryRun", "fieldManager", "fieldValidation", "force")] == [
        ("dryRun", "query"), ("fieldManager", "query"), ("fieldValidation", "query"),
        ("force", "query")]
    custom = await apiserver.request("GET", "/openapi/v3/apis/test.reconcilekit.dev/v1")
    assert custom.status == 200, custom
    path = "/apis/test.reconcilekit.dev/v1/namespaces/{namespace}/probes/{name}"
    assert custom.body["paths"][path]["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "test.reconcilekit.dev", "version": "v1", "kind": "Probe"}
    missing = await apiserver.request("GET", "/openapi/v3/apis/nothing.example.com/v1")
    assert missing.status == 404


async def test_openapi_v3_documents_each_kind_as_kube_apiserver_publishes_it(
        apiserver: Cluster, probes: str) -> None:
    """What ``kubectl explain`` reads: a built-in kind's schema with its descriptions and
    every schema it refers to; a custom resource's with apiVersion, kind and metadata."""
    apps = await apiserver.request("GET", "/openapi/v3/apis/apps/v1")
    assert apps.status == 200, apps
    schemas = apps.body["components"]["schemas"]
    deployment = schemas["io.k8s.api.apps.v1.Deployment"]
    assert deployment["x-kubernetes-group-version-kind"] == [
        {"group": "apps", "kind": "Deployment", "version": "v1"}]
    spec_ref = deployment["properties"]["spec"]["allOf"][0]["$ref"]
    assert spec_ref == "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
    replicas = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"]
    assert replicas["type"] == "integer"
    assert replicas["description"].startswith("Number of desired pods.")
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas

    async def custom() -> dict[str, Any] | None:
        got = await apiserver.request("GET", "/openapi/v3/apis/test.reconcilekit.dev/v1")
        return dict(got.body) if got.status == 200 else None
    document = await eventually(custom, what="the Probe CRD's document")
    probe = document["components"]["schemas"]["dev.reconcilekit.test.v1.Probe"]
    assert {"apiVersion", "kind", "metadata", "spec"} <= set(probe["properties"])
    assert probe["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]
    assert probe["properties"]["kind"]["description"].startswith("Kind is a string value")
    assert probe["x-kubernetes-group-version-kind"] == [
        {"group": "test.reconcilekit.dev", "kind": "Probe", "version": "v1"}]
    assert document["components"]["schemas"]["dev.reconcilekit.test.v1.ProbeList"][
        "properties"]["items"]["items"] == {
            "$ref": "#/components/schemas/dev.reconcilekit.test.v1.Probe"}
    assert "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in document["components"][
        "schemas"]


async def test_openapi_v2_as_json_has_every_kinds_definition(apiserver: Cluster) -> None:
    got = await apiserver.request("GET", "/openapi/v2", headers={"Accept": "application/json"})
    assert got.status == 200, got
    assert got.body["swagger"] == "2.0"
    definitions = got.body["definitions"]
    deployment = definitions["io.k8s.api.apps.v1.Deployment"]
    assert deployment["properties"]["spec"] == {
        "description": "Specification of the desired behavior of the Deployment.",
        "$ref": "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"}
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used "
                       "in JSON or YAML marshalling and unmarshalling, it produces or "
                       "consumes the inner type.  This allows you to have, for example, a "
                       "JSON field that can accept a name or number.",
        "type": "string", "format": "int-or-string"}
    port = definitions["io.k8s.api.core.v1.ContainerPort"]["properties"]["protocol"]
    assert "default" not in port and port["type"] == "string"
    assert len(definitions) >= 491
