"""``/metrics``: kube-apiserver's ``apiserver_request_total``, counted per request with
its labels. The expected values are what kube-apiserver v1.28.7 counts for the same
requests."""

from __future__ import annotations

import re

from reconcilekit.testing import Cluster
from reconcilekit.testing.apiserver.endpoints.request_metrics import go_sample_value

from k8s_objects import configmap


def _count(text: str, **labels: str) -> float:
    """The sum of ``apiserver_request_total`` over the series with ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}", 1)[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


async def _metrics(apiserver: Cluster) -> str:
    api = await apiserver._client()
    async with api.rest_client.pool_manager.get(
            apiserver.configuration.host + "/metrics",
            headers=await apiserver._headers({"Accept": "text/plain"})) as resp:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
        return await resp.text()


async def test_requests_are_counted_by_verb_resource_scope_and_code(
        apiserver: Cluster, configmaps: str) -> None:
    ns = apiserver.namespace
    before = await _metrics(apiserver)
    await apiserver.request("POST", configmaps, json=configmap("c"))
    await apiserver.request("POST", configmaps, json=configmap("c"))  # 409
    await apiserver.request("GET", f"{configmaps}/c")
    await apiserver.request("GET", f"{configmaps}/missing")
    await apiserver.request("GET", configmaps)
    await apiserver.request("PATCH", f"{configmaps}/c", json={"data": {"a": "1"}},
                            content_type="application/merge-patch+json")
    await apiserver.request("POST", configmaps, json=configmap("d"),
                            params={"dryRun": "All"})
    after = await _metrics(apiserver)
    base = {"component": "apiserver", "group": "", "version": "v1",
            "resource": "configmaps", "subresource": ""}
    for labels, more in (
            ({"verb": "POST", "scope": "resource", "code": "201", "dry_run": ""}, 1),
            ({"verb": "POST", "scope": "resource", "code": "409", "dry_run": ""}, 1),
            ({"verb": "POST", "scope": "resource", "code": "201", "dry_run": "All"}, 1),
            ({"verb": "GET", "scope": "resource", "code": "200"}, 1),
            ({"verb": "GET", "scope": "resource", "code": "404"}, 1),
            ({"verb": "LIST", "scope": "namespace", "code": "200"}, 1),
            ({"verb": "PATCH", "scope": "resource", "code": "200"}, 1)):
        got = _count(after, **base, **labels) - _count(before, **base, **labels)
        # other clients (kube-controller-manager) share kube-apiserver's counters
        assert got >= more if not apiserver.in_process else got == more, (labels, got, ns)
    assert _count(after, verb="LIST", resource="namespaces", scope="cluster") >= 0


async def test_metrics_are_refused_to_anonymous_users(apiserver: Cluster) -> None:
    api = await apiserver._client()
    async with api.rest_client.pool_manager.get(
            apiserver.configuration.host + "/metrics",
            headers={"Accept": "application/json"}) as resp:
        assert resp.status == 403, await resp.text()
        body = await resp.json()
    assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": 'forbidden: User "system:anonymous" cannot get path "/metrics"',
                    "reason": "Forbidden", "details": {}, "code": 403}


async def test_the_exposition_is_written_as_kube_apiservers_go_client_writes_it(
        apiserver: Cluster, configmaps: str) -> None:
    await apiserver.request("GET", f"{configmaps}/missing")
    text = await _metrics(apiserver)
    assert ("# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out "
            "for each verb, dry run value, group, version, resource, scope, component, and "
            "HTTP response code.\n# TYPE apiserver_request_total counter\n") in text
    series = [line for line in text.splitlines()
              if line.startswith("apiserver_request_total{") and 'code="404"' in line
              and 'resource="configmaps"' in line and 'verb="GET"' in line]
    assert series, text[:2000]
    labels, value = series[0].rsplit(" ", 1)
    assert re.fullmatch(r"[1-9]\d*", value), series  # Go's %g of a count: 1, not 1.0
    assert labels.startswith('apiserver_request_total{code="404",component="apiserver",'
                             'dry_run="",group="",resource="configmaps",scope="resource",'
                             'subresource="",verb="GET",version="v1"}'), labels
    assert "apiserver_request_created" not in text


def test_sample_values_are_printed_as_gos_strconv_g() -> None:
    assert [go_sample_value(v) for v in (0, 1, 12, 999999, 1e6, 1234567, 0.5, 1.5e-5,
                                         0.0001, -3, float("inf"), float("nan"))] == [
        "0", "1", "12", "999999", "1e+06", "1.234567e+06", "0.5", "1.5e-05", "0.0001", "-3",
        "+Inf", "NaN"]
