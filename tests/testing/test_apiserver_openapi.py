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
