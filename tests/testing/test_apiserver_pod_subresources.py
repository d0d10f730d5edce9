"""Pods' ``ephemeralcontainers`` and the ``bindings`` collection, and the component
statuses: as kube-apiserver 1.28 serves them.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on
both backends.
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster

SMP = "application/strategic-merge-patch+json"


async def _pod(apiserver: Cluster, name: str) -> str:
    pods = f"/api/v1/namespaces/{apiserver.namespace}/pods"
    made = await apiserver.request("POST", pods, json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    assert made.status == 201, made
    return f"{pods}/{name}"


async def test_ephemeral_containers_are_only_added(apiserver: Cluster) -> None:
    pod = await _pod(apiserver, "debugged")
    path = f"{pod}/ephemeralcontainers"
    got = await apiserver.request("GET", path)
    assert got.status == 200 and got.body["kind"] == "Pod", got
    added = await apiserver.request("PATCH", path, content_type=SMP, json={"spec": {
        "ephemeralContainers": [{"name": "debug", "image": "busybox", "stdin": True}],
        "containers": [{"name": "c", "image": "ignored"}]}})
    assert added.status == 200, added
    assert added.body["spec"]["ephemeralContainers"] == [{
        "name": "debug", "image": "busybox", "stdin": True, "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}]
    assert added.body["spec"]["containers"][0]["image"] == "nginx"  # the rest is kept

    def refused(got: Any) -> tuple[str, str]:
        assert got.status == 422, got
        cause = got.body["details"]["causes"][0]
        return cause["field"], cause["message"]
    removed = await apiserver.request("PATCH", path, json={"spec": {"ephemeralContainers": [
        {"name": "other", "image": "alpine"}]}}, content_type="application/merge-patch+json")
    assert refused(removed) == ("spec.ephemeralContainers", 'Forbidden: existing ephemeral '
                                'containers "debug" may not be removed\n')
    changed = await apiserver.request("PATCH", path, content_type=SMP, json={"spec": {
        "ephemeralContainers": [{"name": "debug", "image": "alpine"}]}})
    field, message = refused(changed)
    assert field == "spec.ephemeralContainers"
    assert message.startswith('Forbidden: existing ephemeral containers "debug" may not be '
                              "changed\n")
    imageless = await apiserver.request("PATCH", path, content_type=SMP, json={"spec": {
        "ephemeralContainers": [{"name": "bad"}]}})
    assert refused(imageless) == ("spec.ephemeralContainers[0].image", "Required value")
    post = await apiserver.request("POST", path, json={})
    assert post.status == 405, post


async def test_the_bindings_collection_binds_the_pod_it_names(apiserver: Cluster) -> None:
    pod = await _pod(apiserver, "bound")
    bindings = f"/api/v1/namespaces/{apiserver.namespace}/bindings"

    def binding(name: str, node: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
    made = await apiserver.request("POST", bindings, json=binding("bound", "n1"))
    assert made.status == 201, made
    assert made.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                         "status": "Success", "code": 201}
    assert (await apiserver.request("GET", pod)).body["spec"]["nodeName"] == "n1"
    again = await apiserver.request("POST", bindings, json=binding("bound", "n2"))
    assert again.status == 409, again
    assert again.body["message"] == ('Operation cannot be fulfilled on pods/binding "bound": '
                                     'pod bound is already assigned to node "n1"')
    missing = await apiserver.request("POST", bindings, json=binding("missing", "n1"))
    assert missing.status == 404 and missing.body["message"] == 'pods "missing" not found'
    listed = await apiserver.request("GET", bindings)
    assert listed.status == 405, listed


async def test_component_statuses_name_the_scheduler_controller_manager_and_etcd(
        apiserver: Cluster) -> None:
    listed = await apiserver.request("GET", "/api/v1/componentstatuses")
    assert listed.status == 200, listed
    assert listed.body["kind"] == "ComponentStatusList"
    names = [i["metadata"]["name"] for i in listed.body["items"]]
    assert sorted(names) == ["controller-manager", "etcd-0", "scheduler"]
    etcd = await apiserver.request("GET", "/api/v1/componentstatuses/etcd-0")
    assert etcd.status == 200, etcd
    assert etcd.body["conditions"] == [{"type": "Healthy", "status": "True", "message": "ok"}]
    scheduler = next(i for i in listed.body["items"] if i["metadata"]["name"] == "scheduler")
    assert scheduler["conditions"][0]["status"] == "False"  # none runs beside the server
