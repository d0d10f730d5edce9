"""Server-side printing: the Tables ``kubectl get`` asks for, as kube-apiserver v1.28 answers.

Columns are compared by name, type and priority; cells as they are, but for
ages (they depend on the clock).
"""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit.testing import Cluster
from reconcilekit.testing.apiserver.endpoints.tables import human_duration

from conftest import PROBE_CRD

KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                  "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
PRINTED_CRD: dict[str, Any] = {
    **PROBE_CRD, "metadata": {"name": "printeds.test.reconcilekit.dev"},
    "spec": {**PROBE_CRD["spec"], "names": {"plural": "printeds", "kind": "Printed"},
             "versions": [{**PROBE_CRD["spec"]["versions"][0], "additionalPrinterColumns": [
                 {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                 {"name": "Mode", "type": "string", "jsonPath": ".spec.mode"},
                 {"name": "Tag", "type": "string", "jsonPath": ".spec.tags[0]", "priority": 1},
                 {"name": "Made", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]},
}


async def printed(apiserver: Cluster, path: str) -> dict[str, Any]:
    got = await apiserver.request("GET", path, headers={"Accept": KUBECTL_ACCEPT})
    assert got.status == 200, got
    assert (got.body["kind"], got.body["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    return dict(got.body)


def columns(body: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(c["name"], c["type"], c["priority"]) for c in body["columnDefinitions"]]


def cells(body: dict[str, Any], *, skip: int) -> list[list[Any]]:
    return [[c for i, c in enumerate(row["cells"]) if i != skip] for row in body["rows"]]


async def test_namespaces_configmaps_and_pods_print_their_kinds_columns(
        apiserver: Cluster, configmaps: str, pods: str) -> None:
    ns = apiserver.namespace
    one = await printed(apiserver, f"/api/v1/namespaces/{ns}")
    assert columns(one) == [("Name", "string", 0), ("Status", "string", 0),
                            ("Age", "string", 0)]
    assert one["rows"][0]["cells"][:2] == [ns, "Active"]
    assert one["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert one["rows"][0]["object"]["metadata"]["name"] == ns

    await apiserver.request("POST", configmaps, json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"},
        "data": {"a": "1"}, "binaryData": {"b": "AA=="}})
    listed = await printed(apiserver, f"{configmaps}?labelSelector=")
    assert columns(listed) == [("Name", "string", 0), ("Data", "string", 0),
                               ("Age", "string", 0)]
    assert ["two", 2] in cells(listed, skip=2)

    await apiserver.request("POST", pods, json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]}})
    table = await printed(apiserver, pods)
    assert columns(table) == [
        ("Name", "string", 0), ("Ready", "string", 0), ("Status", "string", 0),
        ("Restarts", "string", 0), ("Age", "string", 0), ("IP", "string", 1),
        ("Node", "string", 1), ("Nominated Node", "string", 1),
        ("Readiness Gates", "string", 1)]
    assert cells(table, skip=4) == [["p", "0/1", "Pending", "0", "<none>", "<none>",
                                     "<none>", "<none>"]]


async def test_custom_resources_print_their_printer_columns_or_age(apiserver: Cluster,
                                                                   probes: str) -> None:
    await apiserver.request("POST", probes, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Probe", "metadata": {"name": "a"},
        "spec": {"size": 3}})
    bare = await printed(apiserver, probes)
    assert columns(bare) == [("Name", "string", 0), ("Age", "date", 0)]
    assert cells(bare, skip=1) == [["a"]]

    await apiserver.install_crd(PRINTED_CRD)
    path = f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/printeds"
    await apiserver.request("POST", path, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Printed", "metadata": {"name": "b"},
        "spec": {"size": 4, "tags": ["x"]}})
    table = await printed(apiserver, path)
    assert columns(table) == [("Name", "string", 0), ("Size", "integer", 0),
                              ("Mode", "string", 0), ("Tag", "string", 1), ("Made", "date", 0)]
    assert cells(table, skip=4) == [["b", 4, None, "x"]]
    one = await printed(apiserver, f"{path}/b")
    assert cells(one, skip=4) == [["b", 4, None, "x"]]


@pytest.mark.parametrize(("seconds", "shown"), [
    (-5, "<invalid>"), (-1, "0s"), (0, "0s"), (119, "119s"), (120, "2m"), (150, "2m30s"),
    (600, "10m"), (3 * 3600 - 1, "179m"), (3 * 3600, "3h"), (3 * 3600 + 60, "3h1m"),
    (8 * 3600, "8h"), (48 * 3600, "2d"), (50 * 3600, "2d2h"), (9 * 86400, "9d"),
    (2 * 365 * 86400, "2y"), (2 * 365 * 86400 + 86400, "2y1d"), (9 * 365 * 86400, "9y"),
])
def test_ages_read_as_kubectl_shows_them(seconds: int, shown: str) -> None:
    assert human_duration(seconds) == shown
