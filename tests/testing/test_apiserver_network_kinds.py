"""Endpoints, EndpointSlices, NetworkPolicies, a Service's session affinity and ports, and
a Node's pod CIDRs: what kube-apiserver 1.28 fills in and refuses.

Every expectation was recorded on kube-apiserver v1.28.7; the tests run on both
backends.
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster

MERGE = "application/merge-patch+json"


def _causes(answer: Any) -> list[tuple[str, str]]:
    assert answer.status == 422, answer
    return sorted((c["field"], c["message"]) for c in answer.body["details"]["causes"])


async def test_endpoints_ports_default_to_tcp_and_addresses_must_be_usable_ips(
        apiserver: Cluster) -> None:
    endpoints = f"/api/v1/namespaces/{apiserver.namespace}/endpoints"
    created = await apiserver.request("POST", endpoints, json={
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "external"},
        "subsets": [{"addresses": [{"ip": "192.168.10.1"}],
                     "ports": [{"name": "http", "port": 80}]}]})
    assert created.status == 201, created
    assert created.body["subsets"][0]["ports"] == [{"name": "http", "port": 80,
                                                    "protocol": "TCP"}]
    refused = await apiserver.request("POST", endpoints, json={
        "apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "broken"},
        "subsets": [{"addresses": [{"ip": "not-an-ip"}, {"ip": "127.0.0.1"}],
                     "ports": [{"port": 70000}]}]})
    assert _causes(refused) == [
        ("subsets[0].addresses[0].ip", 'Invalid value: "not-an-ip": must be a valid IP address'),
        ("subsets[0].addresses[0].ip", 'Invalid value: "not-an-ip": must be a valid IP address, '
                                       "(e.g. 10.9.8.7 or 2001:db8::ffff)"),
        ("subsets[0].addresses[1].ip", 'Invalid value: "127.0.0.1": may not be in the loopback '
                                       "range (127.0.0.0/8, ::1/128)"),
        ("subsets[0].ports[0].port", "Invalid value: 70000: must be between 1 and 65535, "
                                     "inclusive")]


async def test_an_endpoint_slices_addresses_are_of_its_fixed_address_type(
        apiserver: Cluster) -> None:
    slices = f"/apis/discovery.k8s.io/v1/namespaces/{apiserver.namespace}/endpointslices"
    created = await apiserver.request("POST", slices, json={
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "s"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.168.10.1"]}]})
    assert created.status == 201, created
    changed = await apiserver.request("PATCH", f"{slices}/s", json={"addressType": "IPv6"},
                                      content_type=MERGE)
    assert _causes(changed) == [
        ("addressType", 'Invalid value: "IPv6": field is immutable'),
        ("endpoints[0].addresses[0]", 'Invalid value: "192.168.10.1": must be a valid IPv6 '
                                      "address")]
    refused = await apiserver.request("POST", slices, json={
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "broken"}, "addressType": "IPv4",
        "endpoints": [{"addresses": ["fe80::1"]}]})
    assert _causes(refused) == [
        ("endpoints[0].addresses[0]", 'Invalid value: "fe80::1": may not be in the link-local '
                                      "range (169.254.0.0/16, fe80::/10)"),
        ("endpoints[0].addresses[0]", 'Invalid value: "fe80::1": must be a valid IPv4 address')]


async def test_network_policies_default_their_policy_types_and_protocols(
        apiserver: Cluster) -> None:
    policies = (f"/apis/networking.k8s.io/v1/namespaces/{apiserver.namespace}"
                "/networkpolicies")
    created = await apiserver.request("POST", policies, json={
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "p"},
        "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}],
                 "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}})
    assert created.status == 201, created
    assert created.body["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert created.body["spec"]["ingress"] == [{"ports": [{"port": 80, "protocol": "TCP"}]}]
    refused = await apiserver.request("PATCH", f"{policies}/p", content_type=MERGE, json={
        "spec": {"ingress": [{"ports": [{"port": 80, "protocol": "HTTP"}],
                              "from": [{"ipBlock": {"cidr": "10.0.0.1"}}]}]}})
    assert _causes(refused) == sorted(2 * [  # an update's spec is checked twice
        ("spec.ingress[0].from[0].ipBlock.cidr", 'Invalid value: "10.0.0.1": not a valid CIDR'),
        ("spec.ingress[0].ports[0].protocol",
         'Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"')])


async def test_a_services_client_ip_affinity_gets_its_timeout_and_ports_are_required(
        apiserver: Cluster) -> None:
    services = f"/api/v1/namespaces/{apiserver.namespace}/services"
    created = await apiserver.request("POST", services, json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"ports": [{"port": 80}], "sessionAffinity": "ClientIP"}})
    assert created.status == 201, created
    assert created.body["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
    emptied = await apiserver.request(
        "PATCH", f"{services}/web", json={"spec": {"$patch": "delete"}},
        content_type="application/strategic-merge-patch+json")
    assert _causes(emptied) == [("spec.ports", "Required value")]


async def test_a_nodes_pod_cidrs_follow_its_pod_cidr_and_may_not_change(
        apiserver: Cluster) -> None:
    name = f"node-{apiserver.namespace}"
    created = await apiserver.request("POST", "/api/v1/nodes", json={
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
        "spec": {"podCIDR": "10.244.1.0/24"}})
    assert created.status == 201, created
    try:
        assert created.body["spec"]["podCIDRs"] == ["10.244.1.0/24"]
        changed = await apiserver.request(
            "PATCH", f"/api/v1/nodes/{name}", json={"spec": {"podCIDR": "10.244.2.0/24"}},
            content_type=MERGE)
        assert _causes(changed) == [
            ("spec.podCIDRs", 'Forbidden: node updates may not change podCIDR except from "" '
                              "to valid")]
    finally:
        await apiserver.request("DELETE", f"/api/v1/nodes/{name}")
