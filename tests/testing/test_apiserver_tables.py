"""Server-side printing: the Tables ``kubectl get`` asks for, as kube-apiserver v1.28 answers.

Columns are compared by name, type and priority; cells as they are, but for
ages (they depend on the clock).
"""

from __future__ import annotations

from typing import Any

import pytest
from apiserver_helpers import ANYTHING, PROBE_CRD

from reconcilekit.testing import Cluster
from reconcilekit.testing.apiserver.registry.table_convertor import human_duration

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


# Each column's jsonPath as client-go's util/jsonpath evaluates it (missing keys allowed), the
# first value it finds printed (string columns) or kept if of the column's type, and no cell
# where the path fails (an index out of range, a comparison of different kinds).
JSONPATH_COLUMNS = [
    ("Ready", "string", '.status.conditions[?(@.type=="Ready")].status', "False", None),
    ("NotReady", "string", '.status.conditions[?(@.type!="Ready")].reason', "Ok", None),
    ("First", "string", ".spec.items[0].key", "a", "a"),
    ("Last", "string", ".spec.items[-1].key", "c", "a"),
    ("Slice", "string", ".spec.items[1:].key", "b", None),
    ("Step", "string", ".spec.items[0:3:2].key", "a", None),
    ("All", "string", ".spec.items[*].key", "a", "a"),
    ("Union", "string", ".spec.items[0,1].key", "a", None),
    ("OutOfRange", "string", ".spec.items[5].key", None, None),
    ("Bracket", "string", ".spec.items[0]['key']", "a", "a"),
    ("Recursive", "string", "..key", "a", "a"),
    ("Gt", "string", ".spec.items[?(@.n > 1)].key", "b", None),
    ("Lt", "string", ".spec.items[?(@.n < 2)].key", "a", None),
    ("Ge", "string", ".spec.items[?(@.n >= 2)].key", "b", None),
    ("StringLt", "string", '.spec.items[?(@.key < "b")].key', "a", "a"),
    ("Mismatch", "string", '.spec.items[?(@.n == "1")].key', None, None),
    ("Exists", "string", ".spec.items[?(@.v)].key", "b", None),
    ("Current", "string", '.spec.tags[?(@ == "b")]', "b", None),
    ("Escaped", "string", ".spec.dotted\\.key", "dk", None),
    ("Map", "string", ".spec.labels", '{"a":"2","z":"1"}', "{}"),
    ("List", "string", ".spec.items",
     '[{"key":"a","n":1},{"key":"b","n":2,"v":"x"},{"key":"c","n":3}]',
     '[{"key":"a","n":1.5}]'),
    ("Null", "string", ".spec.nothing", "<no value>", None),
    ("NullInteger", "integer", ".spec.nothing", None, None),
    ("Count", "integer", ".spec.count", 3, None),
    ("CountText", "string", ".spec.count", "3", None),
    ("Ratio", "number", ".spec.ratio", 1.5, None),
    ("RatioText", "string", ".spec.ratio", "1.5", None),
    ("Big", "string", ".spec.big", "1.000000005e+08", None),
    ("Flag", "boolean", ".spec.flag", True, None),
    ("FlagText", "string", ".spec.flag", "true", None),
    ("IntegerOfText", "integer", ".spec.name", None, None),
    ("Html", "string", ".spec.html", "<a&b>", None),
    ("BadDate", "date", ".spec.name", "<invalid>", None),
]
COLUMNS_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "columns.test.reconcilekit.dev"},
    "spec": {"group": "test.reconcilekit.dev", "scope": "Namespaced",
             "names": {"plural": "columns", "singular": "column", "kind": "Column"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": ANYTHING},
                           "additionalPrinterColumns": [
                               {"name": n, "type": t, "jsonPath": p}
                               for n, t, p, _, _ in JSONPATH_COLUMNS]}]}}


async def test_printer_columns_evaluate_jsonpath_as_client_go_does(apiserver: Cluster) -> None:
    await apiserver.install_crd(COLUMNS_CRD)
    path = f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/columns"
    full = {"items": [{"key": "a", "n": 1}, {"key": "b", "n": 2, "v": "x"}, {"key": "c", "n": 3}],
            "count": 3, "labels": {"z": "1", "a": "2"}, "nothing": None, "ratio": 1.5,
            "big": 1e8 + 0.5, "flag": True, "name": "nm", "tags": ["a", "b"],
            "html": "<a&b>", "dotted.key": "dk"}
    conditions = [{"type": "Synced", "status": "True", "reason": "Ok"},
                  {"type": "Ready", "status": "False", "reason": "NotYet"}]
    for name, spec, status in (("full", full, {"conditions": conditions}),
                               ("bare", {"items": [{"key": "a", "n": 1.5}], "labels": {}}, {})):
        made = await apiserver.request("POST", path, json={
            "apiVersion": "test.reconcilekit.dev/v1", "kind": "Column",
            "metadata": {"name": name}, "spec": spec, "status": status})
        assert made.status == 201, made
    for name, expected in (("full", [c[3] for c in JSONPATH_COLUMNS]),
                           ("bare", [c[4] for c in JSONPATH_COLUMNS])):
        table = await printed(apiserver, f"{path}/{name}")
        shown = dict(zip([c["name"] for c in table["columnDefinitions"]],
                         table["rows"][0]["cells"], strict=True))
        assert {n: shown[n] for n, *_ in JSONPATH_COLUMNS} == dict(
            zip([c[0] for c in JSONPATH_COLUMNS], expected, strict=True)), name
