"""``/openapi/v2`` and ``/openapi/v3``: kube-apiserver's documents, built-in ones as it
publishes them and a CRD's as it generates them (measured on v1.28.7), and how clients
cache them by their ``?hash=``."""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Any

import pytest
from apiserver_helpers import GROUP, crd

from reconcilekit.testing import Cluster, eventually

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
GV = f"/apis/{GROUP}/v1"
# a scale and no status; a field that may be null, and an embedded resource
DIAL_CRD = crd("Dial", {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["replicas", "maybe"], "properties": {
        "replicas": {"type": "integer"},
        "maybe": {"type": "string", "nullable": True},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "properties": {"data": {"type": "string"}}}}},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}})
DIAL_CRD["spec"]["versions"][0]["subresources"] = {"scale": {
    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}


@pytest.fixture
async def dials(apiserver: Cluster) -> None:
    await apiserver.install_crd(DIAL_CRD)


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
    assert len(definitions) >= 497
    for name in ("io.k8s.apimachinery.pkg.version.Info", f"{META}.APIGroupList"):
        assert name in definitions  # the discovery documents' kinds


async def test_openapi_v2_as_json_has_kube_apiservers_paths_and_each_crds(
        apiserver: Cluster, probes: str, widgets: str, dials: None) -> None:
    async def published() -> dict[str, Any] | None:
        got = await apiserver.request("GET", "/openapi/v2",
                                      headers={"Accept": "application/json"})
        assert got.status == 200, got
        return dict(got.body) if all(f"{GV}/namespaces/{{namespace}}/{p}" in got.body[
            "paths"] for p in ("widgets/{name}/status", "dials/{name}/scale")) else None

    document = await eventually(published, what="the Widget CRD's paths in /openapi/v2")
    assert len(document["paths"]) >= 367
    deployments = "/apis/apps/v1/namespaces/{namespace}/deployments"
    for path in (f"{deployments}/{{name}}/scale", "/apis/apps/v1/watch/deployments",
                 "/api/v1/namespaces/{namespace}/pods/{name}/log"):
        assert path in document["paths"], path
    post = document["paths"][deployments]["post"]
    assert post["operationId"] == "createAppsV1NamespacedDeployment"
    assert post["parameters"][0]["schema"] == {
        "$ref": "#/definitions/io.k8s.api.apps.v1.Deployment"}
    read = document["paths"][f"{GV}/namespaces/{{namespace}}/probes/{{name}}"]["get"]
    assert read["operationId"] == "readTestReconcilekitDevV1NamespacedProbe"
    assert read["tags"] == ["testReconcilekitDev_v1"]
    shared = [p["$ref"].removeprefix("#/parameters/") for p in read["parameters"]]
    assert shared and all(name in document["parameters"] for name in shared)
    definitions = document["definitions"]
    spec = definitions["dev.reconcilekit.test.v1.Probe"]["properties"]["spec"]["properties"]
    # kube-apiserver's v2 of a CRD: no type where unknown fields are kept or null allowed
    assert spec["free"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert spec["nullable"] == {}
    assert spec["port"] == {"x-kubernetes-int-or-string": True}
    assert definitions["dev.reconcilekit.test.v1.Widget"] == {  # its root keeps them all
        "type": "object", "x-kubernetes-group-version-kind": [
            {"group": GROUP, "kind": "Widget", "version": "v1"}]}
    dial = definitions["dev.reconcilekit.test.v1.Dial"]["properties"]["spec"]
    assert dial["required"] == ["replicas"]  # a field that may be null is not required
    assert dial["properties"]["maybe"] == {}
    template = dial["properties"]["template"]
    assert template["required"] == ["kind", "apiVersion"]
    assert template["properties"]["metadata"]["$ref"] == f"#/definitions/{META}.ObjectMeta"


def _operations(document: dict[str, Any], word: str) -> dict[str, dict[str, str]]:
    """Each path naming ``word``, with its operations' IDs by method."""
    return {path: {method: op["operationId"] for method, op in item.items()
                   if method != "parameters"}
            for path, item in document["paths"].items() if f"/{word}" in path}


async def test_a_built_in_group_versions_document_is_kube_apiservers_whole(
        apiserver: Cluster) -> None:
    got = await apiserver.request("GET", "/openapi/v3/apis/apps/v1")
    assert got.status == 200, got
    document = got.body
    assert (len(document["paths"]), len(document["components"]["schemas"])) == (38, 152)
    base, ns = "/apis/apps/v1", "/apis/apps/v1/namespaces/{namespace}"
    assert _operations(document, "deployments") == {
        f"{base}/deployments": {"get": "listAppsV1DeploymentForAllNamespaces"},
        f"{ns}/deployments": {"delete": "deleteAppsV1CollectionNamespacedDeployment",
                              "get": "listAppsV1NamespacedDeployment",
                              "post": "createAppsV1NamespacedDeployment"},
        f"{ns}/deployments/{{name}}": {"delete": "deleteAppsV1NamespacedDeployment",
                                       "get": "readAppsV1NamespacedDeployment",
                                       "patch": "patchAppsV1NamespacedDeployment",
                                       "put": "replaceAppsV1NamespacedDeployment"},
        f"{ns}/deployments/{{name}}/scale": {"get": "readAppsV1NamespacedDeploymentScale",
                                             "patch": "patchAppsV1NamespacedDeploymentScale",
                                             "put": "replaceAppsV1NamespacedDeploymentScale"},
        f"{ns}/deployments/{{name}}/status": {
            "get": "readAppsV1NamespacedDeploymentStatus",
            "patch": "patchAppsV1NamespacedDeploymentStatus",
            "put": "replaceAppsV1NamespacedDeploymentStatus"},
        f"{base}/watch/deployments": {"get": "watchAppsV1DeploymentListForAllNamespaces"},
        f"{base}/watch/namespaces/{{namespace}}/deployments": {
            "get": "watchAppsV1NamespacedDeploymentList"},
        f"{base}/watch/namespaces/{{namespace}}/deployments/{{name}}": {
            "get": "watchAppsV1NamespacedDeployment"}}
    collection = document["paths"][f"{ns}/deployments"]
    assert [p["name"] for p in collection["parameters"]] == ["namespace", "pretty"]
    assert [p["name"] for p in collection["get"]["parameters"]] == [
        "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
        "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds",
        "watch"]
    schemas = document["components"]["schemas"]
    for name in ("io.k8s.api.apps.v1.DeploymentList", "io.k8s.api.autoscaling.v1.Scale",
                 f"{META}.Status", f"{META}.DeleteOptions", f"{META}.WatchEvent",
                 f"{META}.Patch"):
        assert name in schemas, name
    assert document["components"]["securitySchemes"]["BearerToken"]["type"] == "apiKey"


async def test_a_crds_document_is_generated_as_kube_apiserver_generates_it(
        apiserver: Cluster, gadgets: str, probes: str, dials: None) -> None:
    async def published() -> dict[str, Any] | None:
        got = await apiserver.request("GET", f"/openapi/v3{GV}")
        return dict(got.body) if got.status == 200 and f"{GV}/dials" in got.body[
            "paths"] else None

    document = await eventually(published, what="the Dial CRD's document")
    assert document["info"] == {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}
    ns, op = f"{GV}/namespaces/{{namespace}}", "TestReconcilekitDevV1"
    assert _operations(document, "dials") == {  # no watch paths, a scale and no status
        f"{GV}/dials": {"get": f"list{op}DialForAllNamespaces"},
        f"{ns}/dials": {"delete": f"delete{op}CollectionNamespacedDial",
                        "get": f"list{op}NamespacedDial", "post": f"create{op}NamespacedDial"},
        f"{ns}/dials/{{name}}": {"delete": f"delete{op}NamespacedDial",
                                 "get": f"read{op}NamespacedDial",
                                 "patch": f"patch{op}NamespacedDial",
                                 "put": f"replace{op}NamespacedDial"},
        f"{ns}/dials/{{name}}/scale": {"get": f"read{op}NamespacedDialScale",
                                       "patch": f"patch{op}NamespacedDialScale",
                                       "put": f"replace{op}NamespacedDialScale"}}
    assert _operations(document, "gadgets") == {
        f"{GV}/gadgets": {"delete": f"delete{op}CollectionGadget", "get": f"list{op}Gadget",
                          "post": f"create{op}Gadget"},
        f"{GV}/gadgets/{{name}}": {"delete": f"delete{op}Gadget", "get": f"read{op}Gadget",
                                   "patch": f"patch{op}Gadget", "put": f"replace{op}Gadget"}}
    scale = document["paths"][f"{ns}/dials/{{name}}/scale"]["get"]
    assert scale["tags"] == ["testReconcilekitDev_v1"]
    assert scale["description"] == "read scale of the specified Dial"
    assert scale["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    schemas = document["components"]["schemas"]
    for name in ("dev.reconcilekit.test.v1.DialList", "io.k8s.api.autoscaling.v1.Scale",
                 f"{META}.Status", f"{META}.DeleteOptions", f"{META}.Patch"):
        assert name in schemas, name
    assert f"{META}.WatchEvent" not in schemas
    spec = schemas["dev.reconcilekit.test.v1.Dial"]["properties"]["spec"]
    assert spec["required"] == ["replicas", "maybe"]
    assert spec["properties"]["maybe"] == {"type": "string", "nullable": True}
    template = spec["properties"]["template"]  # an embedded resource's fields, added
    assert sorted(template["properties"]) == ["apiVersion", "data", "kind", "metadata"]
    assert template["properties"]["kind"]["description"].startswith("kind is a string value")
    assert template["required"] == ["kind", "apiVersion"]
    port = schemas["dev.reconcilekit.test.v1.Probe"]["properties"]["spec"]["properties"]["port"]
    assert port == {"x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}]}
    # a CRD's document names DeleteOptions' kinds as apiextensions-apiserver knows them
    apps = await apiserver.request("GET", "/openapi/v3/apis/apps/v1")
    builtin = apps.body["components"]["schemas"][f"{META}.DeleteOptions"]
    assert schemas[f"{META}.DeleteOptions"]["description"] == builtin["description"]
    assert schemas[f"{META}.DeleteOptions"] != builtin


async def _index(apiserver: Cluster) -> dict[str, str]:
    root = await apiserver.request("GET", "/openapi/v3")
    assert root.status == 200, root
    assert root.headers["Content-Type"] == "text/plain; charset=utf-8"  # as kube-apiserver
    return {gv: entry["serverRelativeURL"] for gv, entry in root.body["paths"].items()}


async def test_a_document_is_cached_by_the_hash_the_index_gives(apiserver: Cluster) -> None:
    index = await _index(apiserver)
    for path in ("api", "apis", "version", "apis/apps", "apis/apps/v1", "api/v1"):
        assert re.fullmatch(rf"/openapi/v3/{path}\?hash=[0-9A-F]{{128}}", index[path]), index
    url = index["apis/apps/v1"]
    digest = url.partition("?hash=")[2]
    got = await apiserver.request("GET", url)
    assert got.status == 200 and got.headers["ETag"] == f'"{digest}"', got.headers
    assert got.headers["Cache-Control"] == "public, immutable"
    assert "Expires" in got.headers and got.headers["Vary"] == "Accept"
    again = await apiserver.request("GET", url, headers={"If-None-Match": f'"{digest}"'})
    assert again.status == 304 and again.body is None, again
    plain = await apiserver.request("GET", "/openapi/v3/apis/apps/v1")
    assert plain.headers["ETag"] == f'"{digest}"'
    assert "immutable" not in plain.headers.get("Cache-Control", "")
    # another hash is answered 301 to the current URL, which the client follows
    stale = await apiserver.request("GET", "/openapi/v3/apis/apps/v1?hash=ABC")
    assert (stale.status, stale.headers["ETag"]) == (200, f'"{digest}"'), stale.headers
    assert stale.headers["Cache-Control"] == "public, immutable"
    refused = await apiserver.request("GET", url, headers={"Accept": "application/yaml"})
    assert refused.status == 406
    missing = await apiserver.request("GET", "/openapi/v3/apis/apps/v9")
    assert missing.status == 404 and missing.body is None


async def test_a_crds_hash_changes_when_its_group_version_does(apiserver: Cluster) -> None:
    group = "hashes.reconcilekit.dev"
    first = crd("Bell", {"type": "object"})
    second = crd("Horn", {"type": "object"})
    for made in (first, second):
        made["metadata"]["name"] = made["metadata"]["name"].replace(GROUP, group)
        made["spec"]["group"] = group
    await apiserver.install_crd(first)

    async def url(plural: str) -> str | None:
        """The index's URL of the group-version, once it gives the document serving
        ``plural`` (kube-apiserver's index may lag its documents a moment)."""
        found = (await _index(apiserver)).get(f"apis/{group}/v1")
        if found is None:
            return None
        got = await apiserver.request("GET", found)
        current = got.headers["ETag"] == f'"{found.partition("?hash=")[2]}"'
        return found if current and any(
            p.endswith(f"/{plural}") for p in got.body["paths"]) else None

    before = await eventually(lambda: url("bells"), what="the Bell CRD's document")
    await apiserver.install_crd(second)
    after = await eventually(lambda: url("horns"), what="the Horn CRD's document")
    assert after != before
    old = await apiserver.request("GET", before)  # redirected to the current document
    assert old.headers["ETag"] == f'"{after.partition("?hash=")[2]}"', old.headers
    assert any(path.endswith("/horns") for path in old.body["paths"])


def test_the_documents_are_read_when_first_asked_for_not_when_a_server_starts() -> None:
    script = (
        "import asyncio\n"
        "from reconcilekit.testing import APIServer, Cluster\n"
        "from reconcilekit.testing.apiserver.endpoints import openapi_data as data\n"
        "def read():\n"
        "    return (data._documents.cache_info().currsize,\n"
        "            data.published_schemas.cache_info().currsize)\n"
        "async def main():\n"
        "    async with APIServer() as server:\n"
        "        cluster = Cluster(server.configuration(), server=server)\n"
        "        await cluster.request('POST', '/api/v1/namespaces/default/configmaps',\n"
        "            json={'metadata': {'name': 'a'}, 'data': {'k': 'v'}})\n"
        "        assert read() == (0, 0), read()\n"
        "        got = await cluster.request('GET', '/openapi/v3/apis/apps/v1')\n"
        "        assert got.status == 200 and read() == (1, 1), read()\n"
        "        await cluster.close()\n"
        "asyncio.run(main())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
