"""Discovery, /version, health endpoints and authentication."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver_helpers import WIDGET_CRD

from reconcilekit.testing import APIServer, Cluster, HTTPResult
from reconcilekit.testing._discovery import served_resources
from reconcilekit.testing._leftovers import snapshot


async def test_version_and_health_are_open_to_anonymous_clients(apiserver: Cluster) -> None:
    # system:public-info-viewer grants /version, /healthz, /livez, /readyz to
    # system:unauthenticated (plugin/pkg/auth/authorizer/rbac/bootstrappolicy).
    for path in ("/version", "/healthz", "/livez", "/readyz"):
        got = await apiserver.request("GET", path, headers={"Authorization": ""})
        assert got.status == 200, path
    version = await apiserver.request("GET", "/version")
    assert {"major", "minor", "gitVersion", "platform"} <= set(version.body)


async def test_core_discovery_lists_builtin_resources(apiserver: Cluster) -> None:
    api = await apiserver.request("GET", "/api")
    assert api.status == 200
    assert api.body["kind"] == "APIVersions" and "v1" in api.body["versions"]
    v1 = await apiserver.request("GET", "/api/v1")
    assert v1.body["kind"] == "APIResourceList" and v1.body["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in v1.body["resources"]}
    for plural, kind in [("namespaces", "Namespace"), ("pods", "Pod"),
                         ("configmaps", "ConfigMap"), ("secrets", "Secret"),
                         ("events", "Event")]:
        assert by_name[plural]["kind"] == kind
        assert {"get", "list", "watch", "create", "update", "patch", "delete"} <= set(
            by_name[plural]["verbs"])
    assert by_name["pods"]["namespaced"] is True
    assert by_name["namespaces"]["namespaced"] is False
    assert "pods/status" in by_name


async def test_group_discovery_lists_leases_events_and_crds(apiserver: Cluster) -> None:
    groups = await apiserver.request("GET", "/apis")
    assert groups.body["kind"] == "APIGroupList"
    names = {g["name"]: g for g in groups.body["groups"]}
    for group in ("coordination.k8s.io", "events.k8s.io", "apiextensions.k8s.io"):
        assert names[group]["preferredVersion"]["version"] == "v1"
    leases = await apiserver.request("GET", "/apis/coordination.k8s.io/v1")
    assert [r["name"] for r in leases.body["resources"]] == ["leases"]
    group = await apiserver.request("GET", "/apis/coordination.k8s.io")
    assert group.body["kind"] == "APIGroup"
    crds = await apiserver.request("GET", "/apis/apiextensions.k8s.io/v1")
    entry = next(r for r in crds.body["resources"] if r["name"] == "customresourcedefinitions")
    assert entry["namespaced"] is False and entry["kind"] == "CustomResourceDefinition"


async def test_a_created_crd_is_served_at_once(apiserver: Cluster) -> None:
    # A group of this test's own: CRDs are cluster-wide, and a real cluster keeps
    # those other tests installed.
    group = f"discovery{apiserver.namespace.rsplit('-', 1)[-1]}.test.reconcilekit.dev"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}"
    missing = await apiserver.request("GET", f"/apis/{group}/v1")
    assert missing.status == 404
    try:
        crd = await apiserver.install_crd({
            **WIDGET_CRD, "metadata": {"name": f"widgets.{group}"},
            "spec": {**WIDGET_CRD["spec"], "group": group}})
        assert {c["type"] for c in crd["status"]["conditions"]} >= {
            "Established", "NamesAccepted"}
        found = await apiserver.request("GET", f"/apis/{group}/v1")
        assert found.status == 200, found
        resources = {r["name"]: r for r in found.body["resources"]}
        widgets = dict(resources["widgets"])
        assert widgets.pop("storageVersionHash")
        assert widgets == {  # kube-apiserver 1.28's entry, its verbs in its order
            "name": "widgets", "singularName": "widget", "namespaced": True, "kind": "Widget",
            "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update",
                      "watch"],
            "shortNames": ["wdg"]}
        assert resources["widgets/status"] == {
            "name": "widgets/status", "singularName": "", "namespaced": True, "kind": "Widget",
            "verbs": ["get", "patch", "update"]}
        groups = await apiserver.request("GET", "/apis")
        assert group in {g["name"] for g in groups.body["groups"]}
    finally:
        await apiserver.request("DELETE", crd_path)


async def test_wrong_token_gets_401_and_no_token_is_anonymous_and_forbidden(
        apiserver: Cluster, pods: str) -> None:
    wrong = await apiserver.request("GET", pods, headers={"Authorization": "Bearer nope"})
    assert wrong.status == 401
    assert wrong.body["kind"] == "Status" and wrong.body["reason"] == "Unauthorized"
    anonymous = await apiserver.request("GET", pods, headers={"Authorization": ""})
    assert anonymous.status == 403
    assert anonymous.body["reason"] == "Forbidden"
    # Message format of k8s.io/apiserver/pkg/endpoints/handlers/responsewriters.forbiddenMessage.
    assert 'User "system:anonymous" cannot list resource "pods"' in anonymous.body["message"]
    discovery = await apiserver.request("GET", "/api/v1", headers={"Authorization": ""})
    assert discovery.status == 403


async def test_kubeconfig_file_works_with_kubernetes_asyncio(tmp_path: object) -> None:
    async with APIServer() as server:
        path = server.write_kubeconfig(f"{tmp_path}/kubeconfig")
        from kubernetes_asyncio import client, config

        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(path), client_configuration=cfg)
        async with client.ApiClient(cfg) as api:
            namespaces = await client.CoreV1Api(api).list_namespace()
        assert "default" in {ns.metadata.name for ns in namespaces.items}


def _answer(status: int, body: Any) -> HTTPResult:
    return HTTPResult(status, {}, body)


class _Scripted:
    """A cluster whose discovery and lists answer from a table: ``/apis`` still names a
    group version that is gone, as kube-apiserver's does a moment after its last CRD is
    deleted."""

    def __init__(self, answers: dict[str, HTTPResult]) -> None:
        self.answers = answers

    async def request(self, method: str, path: str, *, json: Any = None,
                      content_type: str | None = None,
                      headers: Mapping[str, str] | None = None) -> HTTPResult:
        return self.answers.get(path, _answer(404, "404 page not found"))


def _resources(*names: str) -> HTTPResult:
    return _answer(200, {"resources": [
        {"name": n, "kind": n.title(), "namespaced": False, "verbs": ["list"]} for n in names]})


async def test_a_group_version_removed_since_apis_named_it_is_not_a_failure() -> None:
    gone, down = "example.com/v1", "metrics.example.com/v1"
    cluster = _Scripted({
        "/apis": _answer(200, {"groups": [
            {"preferredVersion": {"groupVersion": gv}, "versions": [{"groupVersion": gv}]}
            for gv in (gone, down)]}),
        "/api/v1": _resources("namespaces", "nodes"),
        f"/apis/{down}": _answer(503, "service unavailable"),
        "/api/v1/namespaces": _answer(200, {"items": [{"metadata": {"name": "default"}}]}),
    })
    served = await served_resources(cluster)
    assert [str(r) for r in served.resources] == ["namespaces", "nodes"]
    assert list(served.failed) == [down]  # a backend down is still named
    # nodes answers 404 to its list (gone since discovery): nothing left, no failure
    shot = await snapshot(cluster)
    assert list(shot.objects) == [("namespaces|Namespaces", "default")]
    assert list(shot.failed) == [down]
