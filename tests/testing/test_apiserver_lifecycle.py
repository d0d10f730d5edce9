"""Namespaces, CRD deletion and garbage collection on a bare API server."""

from __future__ import annotations

from typing import Any

import pytest
from apiserver_helpers import WIDGET_CRD

from reconcilekit.testing import Cluster, eventually

from k8s_objects import configmap, widget

# kube-apiserver leaves namespace deletion and garbage collection to
# kube-controller-manager, which does them a moment later; the in-process
# server does them at once. So each outcome is awaited, not assumed.
AWAIT_CONTROLLERS = 60.0  # seconds; a bound on kube-controller-manager, not a timing


async def _status(apiserver: Cluster, path: str) -> int:
    return (await apiserver.request("GET", path)).status


async def test_deleting_a_namespace_removes_its_objects_then_itself(apiserver: Cluster) -> None:
    name = f"doomed-{apiserver.namespace}"
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    made = await apiserver.request("POST", "/api/v1/namespaces", json=ns)
    assert made.body["status"]["phase"] == "Active"
    path = f"/api/v1/namespaces/{name}/configmaps"
    await apiserver.request("POST", path, json=configmap("plain"))
    await apiserver.request("POST", path, json=configmap("held", finalizers=["x/y"]))
    deleting = await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")
    assert deleting.body["status"]["phase"] == "Terminating"
    refused = await apiserver.request("POST", path, json=configmap("new"))
    assert refused.status == 403 and "being terminated" in refused.body["message"]
    await eventually(lambda: _gone(apiserver, f"{path}/plain"), within=AWAIT_CONTROLLERS,
                     what="plain deleted with its namespace")
    held = await eventually(
        lambda: _deletion_started(apiserver, f"{path}/held"), within=AWAIT_CONTROLLERS,
        what="held being deleted, kept by its finalizer")
    assert held["metadata"]["finalizers"] == ["x/y"]
    assert await _status(apiserver, f"/api/v1/namespaces/{name}") == 200  # waits for held
    await apiserver.request("PATCH", f"{path}/held", json={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
    await eventually(lambda: _gone(apiserver, f"/api/v1/namespaces/{name}"),
                     within=AWAIT_CONTROLLERS, what=f"namespace {name} gone")


async def _gone(apiserver: Cluster, path: str) -> bool:
    return await _status(apiserver, path) == 404


async def _deletion_started(apiserver: Cluster, path: str) -> dict[str, Any] | None:
    got = await apiserver.request("GET", path)
    return got.body if got.status == 200 and got.body["metadata"].get(
        "deletionTimestamp") else None


async def test_garbage_collector_deletes_dependents_of_a_deleted_owner(
        apiserver: Cluster, configmaps: str, widgets: str) -> None:
    owner = (await apiserver.request("POST", widgets, json=widget("owner"))).body
    ref = {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget", "name": "owner",
           "uid": owner["metadata"]["uid"], "controller": True}
    await apiserver.request("POST", configmaps, json=configmap("dep", ownerReferences=[ref]))
    await apiserver.request("POST", configmaps, json=configmap("free"))
    await apiserver.request("DELETE", f"{widgets}/owner")
    await eventually(lambda: _gone(apiserver, f"{configmaps}/dep"), within=AWAIT_CONTROLLERS,
                     what="the dependent collected")
    assert await _status(apiserver, f"{configmaps}/free") == 200


async def test_orphan_propagation_keeps_dependents(apiserver: Cluster, configmaps: str,
                                                   widgets: str) -> None:
    owner = (await apiserver.request("POST", widgets, json=widget("owner"))).body
    ref = {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    await apiserver.request("POST", configmaps, json=configmap("dep", ownerReferences=[ref]))
    deleting = await apiserver.request("DELETE", f"{widgets}/owner",
                                       json={"propagationPolicy": "Orphan"})
    assert deleting.status == 200, deleting  # still there: the orphan finalizer holds it
    assert deleting.body["metadata"]["finalizers"] == ["orphan"]
    assert deleting.body["metadata"]["deletionTimestamp"]

    async def orphaned() -> dict[str, Any] | None:
        dep = await apiserver.request("GET", f"{configmaps}/dep")
        assert dep.status == 200, dep
        return None if "ownerReferences" in dep.body["metadata"] else dep.body

    await eventually(orphaned, within=AWAIT_CONTROLLERS, what="dep orphaned")
    await eventually(lambda: _gone(apiserver, f"{widgets}/owner"), within=AWAIT_CONTROLLERS,
                     what="the owner gone once its dependents are orphaned")


async def test_foreground_deletion_waits_for_blocking_dependents(
        apiserver: Cluster, configmaps: str) -> None:
    owner = (await apiserver.request("POST", configmaps, json=configmap("owner"))).body
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    await apiserver.request("POST", configmaps, json=configmap(
        "blocker", ownerReferences=[{**ref, "blockOwnerDeletion": True}],
        finalizers=["test.reconcilekit.dev/hold"]))
    await apiserver.request("POST", configmaps, json=configmap("loose", ownerReferences=[ref]))
    deleting = await apiserver.request("DELETE", f"{configmaps}/owner",
                                       json={"propagationPolicy": "Foreground"})
    assert deleting.status == 200, deleting
    assert deleting.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await eventually(lambda: _gone(apiserver, f"{configmaps}/loose"), within=AWAIT_CONTROLLERS,
                     what="the non-blocking dependent deleted")

    async def blocker_deleting() -> bool:
        got = await apiserver.request("GET", f"{configmaps}/blocker")
        return bool(got.body["metadata"].get("deletionTimestamp"))

    await eventually(blocker_deleting, within=AWAIT_CONTROLLERS, what="the blocker deleting")
    held = await apiserver.request("GET", f"{configmaps}/owner")
    assert held.status == 200 and held.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    await apiserver.request("PATCH", f"{configmaps}/blocker",
                            json={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
    await eventually(lambda: _gone(apiserver, f"{configmaps}/owner"), within=AWAIT_CONTROLLERS,
                     what="the owner gone once its blocking dependent is")


async def test_foreground_deletion_of_an_owner_whose_dependents_go_at_once(
        apiserver: Cluster, configmaps: str) -> None:
    """Dependents without finalizers, blocking or not, are deleted and the owner follows
    (in-process, removing a blocking dependent used to finish the owner from within the
    deletion and then fail it with a 500)."""
    owner = (await apiserver.request("POST", configmaps, json=configmap("owner"))).body
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    for name, extra in (("blocks", {"blockOwnerDeletion": True}),
                        ("also-blocks", {"blockOwnerDeletion": True}),
                        ("does-not", {"blockOwnerDeletion": False}), ("unsaid", {})):
        made = await apiserver.request("POST", configmaps, json=configmap(
            name, ownerReferences=[{**ref, **extra}]))
        assert made.status == 201, made
    deleting = await apiserver.request("DELETE", f"{configmaps}/owner",
                                       json={"propagationPolicy": "Foreground"})
    assert deleting.status == 200, deleting
    assert deleting.body["metadata"]["finalizers"] == ["foregroundDeletion"]
    for name in ("blocks", "also-blocks", "does-not", "unsaid", "owner"):
        await eventually(lambda name=name: _gone(apiserver, f"{configmaps}/{name}"),
                         within=AWAIT_CONTROLLERS, what=f"{name} gone")
@pytest.mark.parametrize("policy", ["Foreground", "Background", "Orphan"])
async def test_an_owner_of_several_dependents_and_a_nested_owner_is_deleted_by_each_policy(
        apiserver: Cluster, configmaps: str, policy: str) -> None:
    owner = (await apiserver.request("POST", configmaps, json=configmap("owner"))).body
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    for name, block in (("b1", True), ("b2", True), ("l1", False), ("l2", None)):
        extra = {} if block is None else {"blockOwnerDeletion": block}
        made = await apiserver.request("POST", configmaps, json=configmap(
            name, ownerReferences=[{**ref, **extra}]))
        assert made.status == 201, made
    middle = (await apiserver.request("POST", configmaps, json=configmap(
        "middle", ownerReferences=[{**ref, "blockOwnerDeletion": True}]))).body
    for name in ("leaf1", "leaf2"):
        await apiserver.request("POST", configmaps, json=configmap(name, ownerReferences=[{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "middle",
            "uid": middle["metadata"]["uid"], "blockOwnerDeletion": name == "leaf1"}]))
    deleting = await apiserver.request("DELETE", f"{configmaps}/owner",
                                       json={"propagationPolicy": policy})
    assert deleting.status == 200, deleting
    await eventually(lambda: _gone(apiserver, f"{configmaps}/owner"), within=AWAIT_CONTROLLERS,
                     what="the owner gone")
    dependents = ("b1", "b2", "l1", "l2", "middle", "leaf1", "leaf2")
    if policy == "Orphan":
        for name in dependents:
            async def orphaned(name: str = name) -> bool:
                got = await apiserver.request("GET", f"{configmaps}/{name}")
                assert got.status == 200, got
                refs = got.body["metadata"].get("ownerReferences") or ()
                return all(r["uid"] != ref["uid"] for r in refs)

            await eventually(orphaned, within=AWAIT_CONTROLLERS, what=f"{name} orphaned")
        return
    for name in dependents:
        await eventually(lambda name=name: _gone(apiserver, f"{configmaps}/{name}"),
                         within=AWAIT_CONTROLLERS, what=f"{name} collected")


async def test_deleting_a_crd_removes_its_objects_and_stops_serving_it(
        apiserver: Cluster) -> None:
    plural = f"gizmos{apiserver.namespace.rsplit('-', 1)[-1]}"  # a CRD of this test's own
    group = "lifecycle.test.reconcilekit.dev"
    crd = {**WIDGET_CRD, "metadata": {"name": f"{plural}.{group}"},
           "spec": {**WIDGET_CRD["spec"], "group": group,
                    "names": {"plural": plural, "singular": plural[:-1], "kind": "Gizmo"}}}
    await apiserver.install_crd(crd)
    gizmos = f"/apis/{group}/v1/namespaces/{apiserver.namespace}/{plural}"
    made = await apiserver.request("POST", gizmos, json={
        "apiVersion": f"{group}/v1", "kind": "Gizmo", "metadata": {"name": "g"}})
    assert made.status == 201, made
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    await apiserver.request("DELETE", f"{crds}/{plural}.{group}")
    await eventually(lambda: _gone(apiserver, f"{crds}/{plural}.{group}"),
                     within=AWAIT_CONTROLLERS, what="the CRD gone once its objects are")
    # kube-apiserver drops the CRD's handler a moment after the CRD itself
    await eventually(lambda: _gone(apiserver, gizmos), within=AWAIT_CONTROLLERS,
                     what="its resource no longer served")


async def test_cluster_scoped_custom_resources(apiserver: Cluster, gadgets: str) -> None:
    got = await apiserver.request("POST", gadgets, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Gadget",
        "metadata": {"name": f"g-{apiserver.namespace}"}, "spec": {"a": 1}})
    assert got.status == 201 and "namespace" not in got.body["metadata"]
    listed = await apiserver.request("GET", gadgets)
    assert listed.body["kind"] == "GadgetList"
    assert listed.body["items"][0]["kind"] == "Gadget"  # custom resource items keep kind
    await apiserver.request("DELETE", f"{gadgets}/g-{apiserver.namespace}")


async def _warnings(apiserver: Cluster, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await apiserver.request("GET", f"/api/v1/namespaces/{namespace}/events",
                                     params={"fieldSelector": f"involvedObject.name={name}"})
    return [e for e in listed.body["items"] if e["reason"] == "OwnerRefInvalidNamespace"]


async def test_garbage_collector_deletes_dependents_whose_owners_do_not_exist(
        apiserver: Cluster, configmaps: str) -> None:
    # GarbageCollector.isDangling: the owner is looked up by kind and name in the
    # dependent's namespace and must carry the reference's uid.
    other = f"elsewhere-{apiserver.namespace}"
    await apiserver.request("POST", "/api/v1/namespaces", json={"metadata": {"name": other}})
    owner = (await apiserver.request("POST", f"/api/v1/namespaces/{other}/configmaps",
                                     json=configmap("owner"))).body
    here = (await apiserver.request("POST", configmaps, json=configmap("here"))).body

    def ref(name: str, uid: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}

    ghost = ref("ghost", "00000000-0000-0000-0000-000000000001")
    elsewhere = ref("owner", owner["metadata"]["uid"])
    real = ref("here", here["metadata"]["uid"])
    dependents = {"ghost-child": [ghost], "stray-child": [elsewhere],
                  "wrong-uid-child": [ref("here", "00000000-0000-0000-0000-000000000002")],
                  "kept-child": [real], "mixed-child": [ghost, real]}
    for name, refs in dependents.items():
        made = await apiserver.request("POST", configmaps,
                                       json=configmap(name, ownerReferences=refs))
        assert made.status == 201, made
    for name in ("ghost-child", "stray-child", "wrong-uid-child"):
        await eventually(lambda n=name: _gone(apiserver, f"{configmaps}/{n}"),  # type: ignore[misc]
                         within=AWAIT_CONTROLLERS, what=f"{name} collected")

    async def mixed_refs() -> list[Any] | None:
        got = (await apiserver.request("GET", f"{configmaps}/mixed-child")).body
        refs = got["metadata"]["ownerReferences"]
        return refs if refs == [real] else None

    await eventually(mixed_refs, within=AWAIT_CONTROLLERS, what="the absent owner's ref dropped")
    assert (await apiserver.request("GET", f"{configmaps}/kept-child")).status == 200
    # the owner living in another namespace is reported on the dependent (the collector's
    # events are written apart from its deletes)
    [event] = await eventually(lambda: _warnings(apiserver, apiserver.namespace, "stray-child"),
                               within=AWAIT_CONTROLLERS, what="the stray reference reported")
    assert (event["type"], event["message"], event["source"], event["reportingComponent"],
            event["count"]) == (
        "Warning", f"ownerRef [v1/ConfigMap, namespace: {apiserver.namespace}, name: owner, "
        f"uid: {owner['metadata']['uid']}] does not exist in namespace "
        f'"{apiserver.namespace}"', {"component": "garbage-collector-controller"},
        "garbage-collector-controller", 1)
    assert await _warnings(apiserver, apiserver.namespace, "ghost-child") == []
    await apiserver.request("DELETE", f"/api/v1/namespaces/{other}")


async def test_garbage_collector_keeps_a_cluster_scoped_dependent_of_a_namespaced_owner(
        apiserver: Cluster, configmaps: str, gadgets: str) -> None:
    # isDangling refuses the reference (namespacedOwnerOfClusterScopedObjectErr): the
    # dependent stays, and the collector reports it in the default namespace.
    owner = (await apiserver.request("POST", configmaps, json=configmap("owner"))).body
    name = f"dependent-{apiserver.namespace}"
    made = await apiserver.request("POST", gadgets, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Gadget",
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
            "uid": owner["metadata"]["uid"]}]}})
    assert made.status == 201, made
    [event] = await eventually(lambda: _warnings(apiserver, "default", name),
                               within=AWAIT_CONTROLLERS, what="the invalid reference reported")
    assert event["message"] == (
        f"ownerRef [v1/ConfigMap, namespace: , name: owner, uid: {owner['metadata']['uid']}] "
        'does not exist in namespace ""')
    assert "namespace" not in event["involvedObject"]
    kept = await apiserver.request("GET", f"{gadgets}/{name}")
    assert kept.status == 200 and kept.body["metadata"]["ownerReferences"]
    await apiserver.request("DELETE", f"{gadgets}/{name}")
