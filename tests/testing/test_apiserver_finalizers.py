"""Finalizers and graceful deletion, as kube-apiserver's generic registry does them."""

from __future__ import annotations

from reconcilekit.testing import Cluster

from k8s_objects import configmap, widget


async def test_delete_with_finalizers_sets_deletion_timestamp_and_keeps_the_object(
        apiserver: Cluster, widgets: str) -> None:
    # registry.Store.Delete -> BeforeDelete/updateForGracefulDeletionAndFinalizers.
    await apiserver.request("POST", widgets, json=widget("w", finalizers=["a/b"]))
    path = f"{widgets}/w"
    deleted = await apiserver.request("DELETE", path)
    assert deleted.status == 200
    meta = deleted.body["metadata"]
    assert meta["deletionTimestamp"] and meta["finalizers"] == ["a/b"]
    # BeforeDelete bumps generation when it sets the deletion timestamp.
    assert meta["generation"] == 2
    assert (await apiserver.request("GET", path)).status == 200


async def test_removing_the_last_finalizer_emits_only_deleted(apiserver: Cluster,
                                                              widgets: str) -> None:
    # registry.Store.Update deletes in the same storage op once deletionTimestamp is
    # set and no finalizers remain (deleteWithoutFinalizers path): a single DELETED.
    made = (await apiserver.request("POST", widgets,
                                    json=widget("w", finalizers=["a/b", "c/d"]))).body
    path = f"{widgets}/w"
    deleting = (await apiserver.request("DELETE", path)).body
    async with apiserver.watch(widgets, {
            "resourceVersion": deleting["metadata"]["resourceVersion"]}) as events:
        one = await apiserver.request(
            "PATCH", path, json=[{"op": "remove", "path": "/metadata/finalizers/0"}],
            content_type="application/json-patch+json")
        assert one.body["metadata"]["finalizers"] == ["c/d"]
        await apiserver.request("PATCH", path, json={"metadata": {"finalizers": None}},
                                content_type="application/merge-patch+json")
        first, second = await anext(events), await anext(events)
    assert first["type"] == "MODIFIED"
    assert second["type"] == "DELETED"
    assert second["object"]["metadata"]["uid"] == made["metadata"]["uid"]
    assert (await apiserver.request("GET", path)).status == 404


async def test_no_new_finalizers_on_an_object_being_deleted(apiserver: Cluster,
                                                            widgets: str) -> None:
    await apiserver.request("POST", widgets, json=widget("w", finalizers=["a/b"]))
    path = f"{widgets}/w"
    await apiserver.request("DELETE", path)
    refused = await apiserver.request(
        "PATCH", path, json={"metadata": {"finalizers": ["a/b", "new/one"]}},
        content_type="application/merge-patch+json")
    assert refused.status == 422 and refused.body["reason"] == "Invalid"
    # Message of ValidateObjectMetaUpdate in apimachinery's objectmeta validation.
    assert "no new finalizers can be added if the object is being deleted" in (
        refused.body["message"])
    cause = refused.body["details"]["causes"][0]
    assert cause["field"] == "metadata.finalizers"


async def test_deletion_timestamp_can_never_be_cleared(apiserver: Cluster,
                                                       widgets: str) -> None:
    # rest.BeforeUpdate: "an update can never remove/change a deletion timestamp".
    await apiserver.request("POST", widgets, json=widget("w", finalizers=["a/b"]))
    path = f"{widgets}/w"
    deleting = (await apiserver.request("DELETE", path)).body
    cleared = dict(deleting, metadata={k: v for k, v in deleting["metadata"].items()
                                       if k != "deletionTimestamp"})
    got = await apiserver.request("PUT", path, json=cleared)
    assert got.status == 200
    assert got.body["metadata"]["deletionTimestamp"] == deleting["metadata"]["deletionTimestamp"]


async def test_deleting_again_while_finalizers_pend_changes_nothing(
        apiserver: Cluster, configmaps: str) -> None:
    # A repeated DELETE of a terminating object returns it unchanged.
    await apiserver.request("POST", configmaps, json=configmap("c", finalizers=["a/b"]))
    first = (await apiserver.request("DELETE", f"{configmaps}/c")).body
    second = await apiserver.request("DELETE", f"{configmaps}/c")
    assert second.status == 200
    assert second.body["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


async def test_the_last_finalizer_removed_deletes_the_object_as_stored(
        apiserver: Cluster, configmaps: str) -> None:
    # Store.Update deletes instead of writing: the DELETED event carries the stored object
    # (its finalizers still there) at a new resourceVersion; the answer is the update's
    # object at the resourceVersion it was made from.
    made = await apiserver.request("POST", configmaps, json={
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "f", "finalizers": ["x.io/hold"]}})
    async with apiserver.watch(configmaps, {
            "resourceVersion": made.body["metadata"]["resourceVersion"]}) as events:
        await apiserver.request("DELETE", f"{configmaps}/f")
        deleting = await anext(events)
        released = await apiserver.request(
            "PATCH", f"{configmaps}/f", json={"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json")
        deleted = await anext(events)
    assert deleting["type"] == "MODIFIED"
    rv = deleting["object"]["metadata"]["resourceVersion"]
    assert released.status == 200 and "finalizers" not in released.body["metadata"]
    assert released.body["metadata"]["resourceVersion"] == rv
    assert deleted["type"] == "DELETED"
    assert deleted["object"]["metadata"]["finalizers"] == ["x.io/hold"]
    assert int(deleted["object"]["metadata"]["resourceVersion"]) > int(rv)
