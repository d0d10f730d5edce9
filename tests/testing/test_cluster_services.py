"""Services' Endpoints and EndpointSlices played by the cluster's controllers, on every
backend: the same test runs against the in-process server and against kube-apiserver with
kube-controller-manager, a :class:`NodeSimulator` playing the kubelet (and registering
its Nodes) on both."""

from __future__ import annotations

from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import ENDPOINTS, PODS, SERVICES
from reconcilekit.testing import Cluster, NodeSimulator, eventually

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing
SLICES = "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "app", "image": IMAGE, "ports": [
                {"name": "http", "containerPort": 8080}]}], **spec}}


def _addresses(endpoints: dict[str, Any], field: str) -> list[str]:
    return sorted(a["targetRef"]["name"] for s in endpoints.get("subsets") or ()
                  for a in s.get(field) or ())


async def _slice_endpoints(client: Client, ns: str, service: str) -> dict[str, Any]:
    found = await client.request("GET", SLICES.format(ns=ns), params={
        "labelSelector": f"kubernetes.io/service-name={service}"})
    return {e["targetRef"]["name"]: e["conditions"] for s in found["items"]
            for e in s.get("endpoints") or ()}


async def test_endpoints_and_slices_follow_pod_readiness(apiserver: Cluster,
                                                         client: Client) -> None:
    ns = apiserver.namespace
    ready = {"web-0": True, "web-1": False}
    async with NodeSimulator(client, nodes=2, namespace=ns,
                             ready=lambda pod: ready.get(pod["metadata"]["name"], True)) as nodes:
        service = await client.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "ports": [
                {"name": "http", "port": 80, "targetPort": "http"},
                {"name": "metrics", "port": 9000, "targetPort": 9090}]}}, ns)
        for name in ready:
            await client.create(PODS, _pod(name), ns)

        async def split(want_ready: list[str], want_not: list[str]) -> dict[str, Any] | None:
            got = await client.get(ENDPOINTS, "web", ns)
            return got if (_addresses(got, "addresses"), _addresses(
                got, "notReadyAddresses")) == (want_ready, want_not) else None
        endpoints = await eventually(lambda: split(["web-0"], ["web-1"]), within=SETTLE,
                                     what="web-0 ready, web-1 not")
        assert endpoints["metadata"]["labels"] == {"team": "a"}
        # the trigger time, when the controller knows one (a sync with no Pod or Service
        # change since the last clears it): nothing else
        assert set(endpoints["metadata"].get("annotations") or {}) <= {
            "endpoints.kubernetes.io/last-change-trigger-time"}
        [subset] = endpoints["subsets"]
        # in kube-controller-manager's order (by a hash of each port), not the Service's
        assert subset["ports"] == [{"name": "metrics", "port": 9090, "protocol": "TCP"},
                                   {"name": "http", "port": 8080, "protocol": "TCP"}]
        address = subset["addresses"][0]
        assert set(address) == {"ip", "nodeName", "targetRef"}
        assert address["nodeName"].startswith("sim-node-")

        async def slices(want: dict[str, bool]) -> bool:
            got = await _slice_endpoints(client, ns, "web")
            return {name: c["ready"] for name, c in got.items()} == want
        await eventually(lambda: slices({"web-0": True, "web-1": False}), within=SETTLE,
                         what="the slice's conditions")
        found = await client.request("GET", SLICES.format(ns=ns), params={
            "labelSelector": "kubernetes.io/service-name=web"})
        [web] = found["items"]
        assert web["metadata"]["name"].startswith("web-")
        assert web["metadata"]["labels"] == {
            "team": "a", "kubernetes.io/service-name": "web",
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
        assert web["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "Service", "name": "web",
            "uid": service["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
        assert web["addressType"] == "IPv4"
        assert web["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080},
                                {"name": "metrics", "protocol": "TCP", "port": 9090}]

        ready["web-1"] = True
        nodes.refresh()
        await eventually(lambda: split(["web-0", "web-1"], []), within=SETTLE,
                         what="both ready")
        await eventually(lambda: slices({"web-0": True, "web-1": True}), within=SETTLE,
                         what="both ready in the slice")
        await client.delete(PODS, "web-0", ns)
        await eventually(lambda: split(["web-1"], []), within=SETTLE, what="web-0 gone")
        await eventually(lambda: slices({"web-1": True}), within=SETTLE,
                         what="web-0 gone from the slice")


async def test_a_headless_service_publishes_hostnames_and_an_empty_one_a_placeholder(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=1, namespace=ns):
        await client.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "db"},
            "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}},
            ns)
        await client.create(SERVICES, {
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": "nobody"},
            "spec": {"selector": {"app": "none"}, "ports": [{"port": 80}]}}, ns)
        await client.create(PODS, _pod("db-0", hostname="db-0", subdomain="db"), ns)

        async def published() -> dict[str, Any] | None:
            got = await client.get(ENDPOINTS, "db", ns)
            return got if _addresses(got, "addresses") == ["db-0"] else None
        endpoints = await eventually(published, within=SETTLE, what="db-0 published")
        assert endpoints["metadata"]["labels"] == {"service.kubernetes.io/headless": ""}
        assert endpoints["subsets"][0]["addresses"][0]["hostname"] == "db-0"
        assert endpoints["subsets"][0]["ports"] == [{"port": 80, "protocol": "TCP"}]

        async def placeholder() -> dict[str, Any] | None:
            found = await client.request("GET", SLICES.format(ns=ns), params={
                "labelSelector": "kubernetes.io/service-name=nobody"})
            return found["items"][0] if found["items"] else None
        empty = await eventually(placeholder, within=SETTLE, what="the placeholder slice")
        assert (empty["endpoints"], empty["ports"]) == (None, None)
        nobody = await eventually(lambda: _exists(client, "nobody", ns), within=SETTLE,
                                  what="the empty Endpoints")
        assert "subsets" not in nobody


async def _exists(client: Client, name: str, ns: str) -> dict[str, Any] | None:
    found = await client.list(ENDPOINTS, ns, field_selector=f"metadata.name={name}")
    return found["items"][0] if found["items"] else None


async def test_a_service_without_a_selector_keeps_the_endpoints_it_is_given(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(SERVICES, {"apiVersion": "v1", "kind": "Service",
                                   "metadata": {"name": "external"},
                                   "spec": {"ports": [{"port": 5432}]}}, ns)
    subsets = [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 5432,
                                                                "protocol": "TCP"}]}]
    await client.create(ENDPOINTS, {"apiVersion": "v1", "kind": "Endpoints",
                                    "metadata": {"name": "external"}, "subsets": subsets}, ns)
    await client.create(SERVICES, {"apiVersion": "v1", "kind": "Service",
                                   "metadata": {"name": "witness"},
                                   "spec": {"selector": {"app": "x"}, "ports": [{"port": 1}]}},
                        ns)
    # once the witness's Endpoints are made, the controllers have seen both Services
    await eventually(lambda: _exists(client, "witness", ns), within=SETTLE,
                     what="the witness's Endpoints")
    kept = await client.get(ENDPOINTS, "external", ns)
    assert kept["subsets"] == subsets
    assert "annotations" not in kept["metadata"]


async def test_the_kubernetes_service_is_in_default(client: Client) -> None:
    service = await client.get(SERVICES, "kubernetes", "default")
    assert service["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    [port] = service["spec"]["ports"]
    assert (port["name"], port["port"], port["protocol"]) == ("https", 443, "TCP")
    assert service["spec"]["clusterIP"] == "10.0.0.1"
