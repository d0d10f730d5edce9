"""Services: the cluster IP an update may not change, and a node port that is taken.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on
both backends.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit.testing import Cluster

MERGE = {"Content-Type": "application/merge-patch+json"}


def _services(apiserver: Cluster) -> str:
    return f"/api/v1/namespaces/{apiserver.namespace}/services"


async def _free_ip(apiserver: Cluster, wanted: str) -> str:
    """``wanted`` if no Service holds it, else the highest free address of the range: on
    a shared cluster another test's Service may hold any address (the allocator picks at
    random, and a test's namespace goes a moment after it)."""
    listed = await apiserver.request("GET", "/api/v1/services")
    taken = {ip for s in listed.body["items"] for ip in s["spec"].get("clusterIPs") or ()}
    if wanted not in taken:
        return wanted
    return next(f"10.0.0.{n}" for n in range(254, 1, -1) if f"10.0.0.{n}" not in taken)


@pytest.mark.parametrize(("ip", "change"), [
    ("10.0.0.97", {"clusterIP": "10.0.0.99"}),
    ("10.0.0.96", {"clusterIPs": ["10.0.0.99"]}),
    ("10.0.0.95", {"clusterIP": "10.0.0.99", "clusterIPs": ["10.0.0.99"]})],
    ids=["clusterIP", "clusterIPs", "both"])
async def test_a_service_cluster_ip_may_not_change(apiserver: Cluster, ip: str,
                                                   change: dict[str, Any]) -> None:
    ip = await _free_ip(apiserver, ip)
    created = await apiserver.request("POST", _services(apiserver), json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"clusterIP": ip, "ports": [{"port": 80}]}})
    assert created.status == 201, created
    moved = await apiserver.request("PATCH", f"{_services(apiserver)}/web", headers=MERGE,
                                    json={"spec": change})
    assert moved.status == 422, moved
    shown = '[]string{"10.0.0.99"}'
    assert moved.body["message"] == (
        f'Service "web" is invalid: spec.clusterIPs: Invalid value: {shown}: first value must '
        "match `clusterIP`" if "clusterIP" not in change else
        f'Service "web" is invalid: spec.clusterIPs[0]: Invalid value: {shown}: may not change '
        "once set")


@pytest.mark.parametrize(("spec", "message"), [
    ({"clusterIP": "10.0.0.94", "ports": [{"port": 80}]},
     'spec.clusterIPs: Invalid value: []string{"10.0.0.94"}: failed to allocate IP '
     "10.0.0.94: provided IP is already allocated"),
    ({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30081}]},
     "spec.ports[0].nodePort: Invalid value: 30081: provided port is already allocated"),
], ids=["cluster-ip", "node-port"])
async def test_an_address_in_use_is_refused(apiserver: Cluster, spec: dict[str, Any],
                                            message: str) -> None:
    if "clusterIP" in spec:
        ip = await _free_ip(apiserver, spec["clusterIP"])
        spec = {**spec, "clusterIP": ip}
        message = message.replace("10.0.0.94", ip)
    body = {"apiVersion": "v1", "kind": "Service", "spec": spec}
    first = await apiserver.request("POST", _services(apiserver),
                                    json={**body, "metadata": {"name": "first"}})
    assert first.status == 201, first
    clash = await apiserver.request("POST", _services(apiserver),
                                    json={**body, "metadata": {"name": "clash"}})
    assert clash.status == 422, clash
    assert clash.body["message"] == f'Service "clash" is invalid: {message}'


async def test_an_ingress_has_a_load_balancer_status_and_absolute_paths(
        apiserver: Cluster) -> None:
    ingresses = f"/apis/networking.k8s.io/v1/namespaces/{apiserver.namespace}/ingresses"

    def ingress(name: str, path: str) -> dict[str, Any]:
        backend = {"service": {"name": "web", "port": {"number": 80}}}
        return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
                "metadata": {"name": name},
                "spec": {"rules": [{"http": {"paths": [
                    {"path": path, "pathType": "Prefix", "backend": backend}]}}]}}
    created = await apiserver.request("POST", f"{ingresses}?dryRun=All",
                                      json=ingress("good", "/"))
    assert created.status == 201, created
    assert created.body["status"] == {"loadBalancer": {}}
    relative = await apiserver.request("POST", ingresses, json=ingress("bad", "relative"))
    assert relative.status == 422, relative
    assert relative.body["message"] == (
        'Ingress.networking.k8s.io "bad" is invalid: spec.rules[0].http.paths[0].path: '
        'Invalid value: "relative": must be an absolute path')


async def test_endpoint_slice_ports_default_and_need_distinct_names(apiserver: Cluster) -> None:
    path = f"/apis/discovery.k8s.io/v1/namespaces/{apiserver.namespace}/endpointslices"
    slice_: dict[str, Any] = {
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.1"]}]}
    created = await apiserver.request("POST", path, json={**slice_, "ports": [
        {"port": 80}, {"name": "dns", "port": 53, "protocol": "UDP"}]})
    assert created.status == 201, created
    assert created.body["ports"] == [{"name": "", "protocol": "TCP", "port": 80},
                                     {"name": "dns", "protocol": "UDP", "port": 53}]
    refused = await apiserver.request("POST", path, json={
        **slice_, "metadata": {"name": "twice"}, "ports": [{"port": 80}, {"port": 81}]})
    assert refused.status == 422, refused
    assert refused.body["details"]["causes"] == [{
        "reason": "FieldValueDuplicate", "message": 'Duplicate value: ""',
        "field": "ports[1].name"}]
