"""A namespace's lifecycle as kube-apiserver and kube-controller-manager play it.

Measured on kube-apiserver v1.28.7 with kube-controller-manager: the
namespace controller's writes, in order, as a watch on the namespace sees
them; what envtest (no namespace controller) cannot show.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import anyio

from reconcilekit.testing import Cluster, eventually

from k8s_objects import configmap

# seconds; a bound on kube-controller-manager (whose namespace controller comes back
# to a namespace with content left only after a delay), not a timing
AWAIT_CONTROLLERS = 120.0

OK = [("NamespaceDeletionDiscoveryFailure", "False", "ResourcesDiscovered",
       "All resources successfully discovered"),
      ("NamespaceDeletionGroupVersionParsingFailure", "False", "ParsedGroupVersions",
       "All legacy kube types successfully parsed"),
      ("NamespaceDeletionContentFailure", "False", "ContentDeleted",
       "All content successfully deleted, may be waiting on finalization")]
HELD = [*OK,
        ("NamespaceContentRemaining", "True", "SomeResourcesRemain",
         "Some resources are remaining: configmaps. has 1 resource instances"),
        ("NamespaceFinalizersRemaining", "True", "SomeFinalizersRemain",
         "Some content in the namespace has finalizers remaining: x/y in 1 resource instances")]
EMPTY = [*OK,
         ("NamespaceContentRemaining", "False", "ContentRemoved",
          "All content successfully removed"),
         ("NamespaceFinalizersRemaining", "False", "ContentHasNoFinalizers",
          "All content-preserving finalizers finished")]


def _state(event: dict[str, Any]) -> tuple[Any, ...]:
    """What an event on a namespace says of its lifecycle."""
    ns = event["object"]
    conditions = [(c["type"], c["status"], c["reason"], c["message"])
                  for c in ns["status"].get("conditions", [])]
    return (event["type"], ns["status"]["phase"], bool(ns["metadata"].get("deletionTimestamp")),
            ns["spec"].get("finalizers"), conditions)


async def _until(events: AsyncIterator[dict[str, Any]], last: tuple[Any, ...]
                 ) -> list[tuple[Any, ...]]:
    """The events' states up to and including ``last`` (bounded, not timed)."""
    seen = []
    with anyio.fail_after(AWAIT_CONTROLLERS):
        async for event in events:
            seen.append(_state(event))
            if seen[-1] == last:
                return seen
    raise AssertionError(f"the watch ended before {last}: {seen}")


async def _namespace(apiserver: Cluster, prefix: str) -> tuple[str, dict[str, Any]]:
    name = f"{prefix}-{apiserver.namespace}"
    made = await apiserver.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    assert made.status == 201, made
    return name, made.body


async def test_namespace_terminates_through_the_controllers_writes(apiserver: Cluster) -> None:
    name, made = await _namespace(apiserver, "doomed")
    assert made["spec"] == {"finalizers": ["kubernetes"]}
    assert made["status"] == {"phase": "Active"}
    path = f"/api/v1/namespaces/{name}/configmaps"
    await apiserver.request("POST", path, json=configmap("plain"))
    await apiserver.request("POST", path, json=configmap("held", finalizers=["x/y"]))
    async with apiserver.watch("/api/v1/namespaces", {
            "fieldSelector": f"metadata.name={name}",
            "resourceVersion": made["metadata"]["resourceVersion"]}) as events:
        deleting = await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")
        assert deleting.status == 200, deleting
        meta = deleting.body["metadata"]
        # the namespace storage sets no grace period, and the controller has not acted yet
        assert meta["deletionTimestamp"] and "deletionGracePeriodSeconds" not in meta
        assert deleting.body["status"] == {"phase": "Terminating"}
        assert deleting.body["spec"] == {"finalizers": ["kubernetes"]}

        refused = await apiserver.request("POST", path, json=configmap("new"))
        assert refused.status == 403
        assert refused.body == {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": 'configmaps "new" is forbidden: unable to create new content in '
                       f"namespace {name} because it is being terminated",
            "reason": "Forbidden", "code": 403,
            "details": {"name": "new", "kind": "configmaps", "causes": [{
                "reason": "NamespaceTerminating", "message": f"namespace {name} is being "
                "terminated", "field": "metadata.namespace"}]}}

        terminating = ("MODIFIED", "Terminating", True, ["kubernetes"])
        assert await _until(events, (*terminating, HELD)) == [
            (*terminating, []), (*terminating, HELD)]
        assert (await apiserver.request("GET", f"{path}/plain")).status == 404
        held = await apiserver.request("GET", f"{path}/held")
        assert held.body["metadata"]["deletionTimestamp"], held

        await apiserver.request("PATCH", f"{path}/held", json={"metadata": {"finalizers": None}},
                                content_type="application/merge-patch+json")
        # finalized: the DELETED event carries the namespace as it was before that write
        assert await _until(events, ("DELETED", "Terminating", True, ["kubernetes"], EMPTY)) == [
            (*terminating, EMPTY), ("DELETED", "Terminating", True, ["kubernetes"], EMPTY)]
    assert (await apiserver.request("GET", f"/api/v1/namespaces/{name}")).status == 404


async def test_namespace_finalizers_hold_it_after_the_controller(apiserver: Cluster) -> None:
    name = f"kept-{apiserver.namespace}"
    made = await apiserver.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": name, "finalizers": ["example.com/hold"]}})
    async with apiserver.watch("/api/v1/namespaces", {
            "fieldSelector": f"metadata.name={name}",
            "resourceVersion": made.body["metadata"]["resourceVersion"]}) as events:
        await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")
        finalized = ("MODIFIED", "Terminating", True, None, EMPTY)
        seen = await _until(events, finalized)
        assert seen[-2] == ("MODIFIED", "Terminating", True, ["kubernetes"], EMPTY)
        await apiserver.request("PATCH", f"/api/v1/namespaces/{name}",
                                json={"metadata": {"finalizers": None}},
                                content_type="application/merge-patch+json")
        gone = await _until(events, ("DELETED", "Terminating", True, None, EMPTY))
        assert gone[-1][0] == "DELETED"


async def test_namespace_finalize_subresource(apiserver: Cluster) -> None:
    name, _ = await _namespace(apiserver, "fin")
    path = f"/api/v1/namespaces/{name}"
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
            "spec": {"finalizers": []}, "status": {"phase": "Bogus"}}
    finalized = await apiserver.request("PUT", f"{path}/finalize", json=body)
    assert finalized.status == 200, finalized
    assert finalized.body["spec"] == {} and finalized.body["status"] == {"phase": "Active"}
    assert (await apiserver.request("GET", f"{path}/finalize")).status == 405
    # spec.finalizers change only through finalize
    updated = await apiserver.request("PUT", path, json={
        **finalized.body, "spec": {"finalizers": ["kubernetes"]}})
    assert updated.status == 200 and updated.body["spec"] == {}
    bad = await apiserver.request("PUT", f"{path}/finalize", json={
        **body, "spec": {"finalizers": ["bad name!"]}})
    assert bad.status == 422, bad
    assert [(c["field"], c["message"].split(":")[-1].strip()) for c in
            bad.body["details"]["causes"]] == [
        ("spec.finalizers[0]", "name part must consist of alphanumeric characters, '-', '_' or "
         "'.', and must start and end with an alphanumeric character (e.g. 'MyName',  or "
         "'my.name',  or '123-abc', regex used for validation is "
         "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("spec.finalizers[0]", "name is neither a standard finalizer name nor is it fully "
         "qualified")]
    # the first DELETE only starts the lifecycle; finalized already, nothing finishes it
    first = await apiserver.request("DELETE", path)
    assert first.status == 200 and first.body["status"]["phase"] == "Terminating"
    assert (await apiserver.request("GET", path)).status == 200
    second = await apiserver.request("DELETE", path)
    assert second.status == 200, second

    async def gone() -> bool:
        return (await apiserver.request("GET", path)).status == 404

    await eventually(gone, within=AWAIT_CONTROLLERS, what=f"namespace {name} gone")


async def test_a_namespace_s_creator_owns_what_it_sent_and_its_default_label(
        apiserver: Cluster) -> None:
    """The field manager runs after defaulting (the ``kubernetes.io/metadata.name`` label)
    and before the strategy (``spec.finalizers``, ``status``), which belong to no one."""
    name = f"owned-{secrets.token_hex(3)}"
    made = await apiserver.request("POST", "/api/v1/namespaces", json={
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"a": "b"}}})
    try:
        assert made.status == 201, made
        assert made.body["spec"] == {"finalizers": ["kubernetes"]}
        assert [(m["operation"], m["fieldsV1"]) for m in made.body["metadata"]["managedFields"]
                ] == [("Update", {"f:metadata": {"f:labels": {
                    ".": {}, "f:a": {}, "f:kubernetes.io/metadata.name": {}}}})]
    finally:
        await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")
