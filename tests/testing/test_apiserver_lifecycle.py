"""Namespaces, CRD deletion and garbage collection on a bare API server."""

from __future__ import annotations

import pytest

from reconcilekit.testing import Cluster

from k8s_objects import configmap, widget


@pytest.mark.in_process_only
async def test_deleting_a_namespace_removes_its_objects_then_itself(apiserver: Cluster) -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
    made = await apiserver.request("POST", "/api/v1/namespaces", json=ns)
    assert made.body["status"]["phase"] == "Active"
    path = "/api/v1/namespaces/doomed/configmaps"
    await apiserver.request("POST", path, json=configmap("plain"))
    await apiserver.request("POST", path, json=configmap("held", finalizers=["x/y"]))
    deleting = await apiserver.request("DELETE", "/api/v1/namespaces/doomed")
    assert deleting.body["status"]["phase"] == "Terminating"
    assert (await apiserver.request("GET", f"{path}/plain")).status == 404
    refused = await apiserver.request("POST", path, json=configmap("new"))
    assert refused.status == 403 and "being terminated" in refused.body["message"]
    assert (await apiserver.request("GET", "/api/v1/namespaces/doomed")).status == 200
    await apiserver.request("PATCH", f"{path}/held", json={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
    assert (await apiserver.request("GET", "/api/v1/namespaces/doomed")).status == 404


@pytest.mark.in_process_only
async def test_garbage_collector_deletes_dependents_of_a_deleted_owner(
        apiserver: Cluster, configmaps: str, widgets: str) -> None:
    owner = (await apiserver.request("POST", widgets, json=widget("owner"))).body
    ref = {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget", "name": "owner",
           "uid": owner["metadata"]["uid"], "controller": True}
    await apiserver.request("POST", configmaps, json=configmap("dep", ownerReferences=[ref]))
    await apiserver.request("POST", configmaps, json=configmap("free"))
    await apiserver.request("DELETE", f"{widgets}/owner")
    assert (await apiserver.request("GET", f"{configmaps}/dep")).status == 404
    assert (await apiserver.request("GET", f"{configmaps}/free")).status == 200


@pytest.mark.in_process_only
async def test_orphan_propagation_keeps_dependents(apiserver: Cluster, configmaps: str,
                                                   widgets: str) -> None:
    owner = (await apiserver.request("POST", widgets, json=widget("owner"))).body
    ref = {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget", "name": "owner",
           "uid": owner["metadata"]["uid"]}
    await apiserver.request("POST", configmaps, json=configmap("dep", ownerReferences=[ref]))
    await apiserver.request("DELETE", f"{widgets}/owner", json={"propagationPolicy": "Orphan"})
    dep = await apiserver.request("GET", f"{configmaps}/dep")
    assert dep.status == 200 and "ownerReferences" not in dep.body["metadata"]


@pytest.mark.in_process_only
async def test_deleting_a_crd_removes_its_objects_and_stops_serving_it(
        apiserver: Cluster, widgets: str) -> None:
    await apiserver.request("POST", widgets, json=widget("w"))
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    await apiserver.request("DELETE", f"{crds}/widgets.test.reconcilekit.dev")
    assert (await apiserver.request("GET", f"{crds}/widgets.test.reconcilekit.dev")).status == 404
    assert (await apiserver.request("GET", widgets)).status == 404


async def test_cluster_scoped_custom_resources(apiserver: Cluster, gadgets: str) -> None:
    got = await apiserver.request("POST", gadgets, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Gadget",
        "metadata": {"name": f"g-{apiserver.namespace}"}, "spec": {"a": 1}})
    assert got.status == 201 and "namespace" not in got.body["metadata"]
    listed = await apiserver.request("GET", gadgets)
    assert listed.body["kind"] == "GadgetList"
    assert listed.body["items"][0]["kind"] == "Gadget"  # custom resource items keep kind
    await apiserver.request("DELETE", f"{gadgets}/g-{apiserver.namespace}")
