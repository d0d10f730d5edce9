"""Server-side apply's field ownership, as kube-apiserver v1.28 keeps it.

``managedFields`` per manager (``fieldsV1`` sets), conflicts with other
managers (409 naming each field), ``force``, and the removal of fields an
applier stops applying. The expected values are kube-apiserver's answers to
the same requests; entries are compared by manager, since kube-apiserver
orders entries with the same timestamp arbitrarily.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from reconcilekit.testing import Cluster

APPLY = "application/apply-patch+yaml"


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(e["manager"], e["operation"]): e["fieldsV1"]
            for e in obj["metadata"].get("managedFields") or ()}


async def apply(apiserver: Cluster, path: str, obj: dict[str, Any], manager: str,
                force: bool = False) -> Any:
    params = {"fieldManager": manager, **({"force": "true"} if force else {})}
    return await apiserver.request("PATCH", path, json=obj, content_type=APPLY, params=params)


def configmap(data: dict[str, str], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", **meta},
            "data": data}


def conflicts(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["field"], c["message"]) for c in body["details"]["causes"]}


async def test_apply_owns_fields_conflicts_forces_and_removes(apiserver: Cluster,
                                                               configmaps: str) -> None:
    created = await apiserver.request("POST", configmaps, params={"fieldManager": "creator"},
                                      json=configmap({"a": "1", "b": "1"}, labels={"l": "1"}))
    assert created.status == 201, created
    creator = {"f:data": {".": {}, "f:a": {}, "f:b": {}},
               "f:metadata": {"f:labels": {".": {}, "f:l": {}}}}
    assert owners(created.body) == {("creator", "Update"): creator}
    path = f"{configmaps}/c"

    got = await apply(apiserver, path, configmap({"x": "1", "y": "1"}), "a1")
    assert got.status == 200, got
    assert owners(got.body) == {("creator", "Update"): creator,
                                ("a1", "Apply"): {"f:data": {"f:x": {}, "f:y": {}}}}

    got = await apply(apiserver, path, configmap({"x": "2", "a": "2"}), "a2")
    assert got.status == 409 and got.body["reason"] == "Conflict", got
    assert got.body["message"] == ('Apply failed with 2 conflicts: conflicts with "a1":\n'
                                   '- .data.x\nconflicts with "creator" using v1:\n- .data.a')
    assert conflicts(got.body) == {(".data.x", 'conflict with "a1"'),
                                   (".data.a", 'conflict with "creator" using v1')}

    # the same value is no conflict: both own it
    got = await apply(apiserver, path, configmap({"x": "1"}), "a2")
    assert got.status == 200, got
    assert owners(got.body)[("a2", "Apply")] == {"f:data": {"f:x": {}}}
    assert owners(got.body)[("a1", "Apply")] == {"f:data": {"f:x": {}, "f:y": {}}}

    got = await apply(apiserver, path, configmap({"x": "3", "a": "3"}), "a2", force=True)
    assert got.status == 200, got
    assert got.body["data"] == {"a": "3", "b": "1", "x": "3", "y": "1"}
    assert owners(got.body) == {
        ("creator", "Update"): {"f:data": {".": {}, "f:b": {}},
                                "f:metadata": {"f:labels": {".": {}, "f:l": {}}}},
        ("a1", "Apply"): {"f:data": {"f:y": {}}},
        ("a2", "Apply"): {"f:data": {"f:a": {}, "f:x": {}}}}

    # a field its applier no longer applies, owned by no one else, goes
    got = await apply(apiserver, path, configmap({"z": "1"}), "a1")
    assert got.status == 200, got
    assert got.body["data"] == {"a": "3", "b": "1", "x": "3", "z": "1"}
    assert owners(got.body)[("a1", "Apply")] == {"f:data": {"f:z": {}}}

    # an update owns what it changes, taking it from the others
    got = await apiserver.request("PATCH", path, json={"data": {"b": "9", "q": "1"}},
                                  content_type="application/merge-patch+json",
                                  params={"fieldManager": "editor"})
    assert got.status == 200, got
    assert owners(got.body)[("editor", "Update")] == {"f:data": {"f:b": {}, "f:q": {}}}
    assert owners(got.body)[("creator", "Update")] == {
        "f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}}

    got = await apply(apiserver, path, configmap({"z": "1", "b": "7"}), "a1")
    assert got.status == 409, got
    assert got.body["message"] == ('Apply failed with 1 conflict: conflict with "editor" '
                                   'using v1: .data.b')


async def test_an_apply_that_creates_owns_only_its_configuration(apiserver: Cluster,
                                                                  configmaps: str) -> None:
    got = await apply(apiserver, f"{configmaps}/c", configmap({"m": "1"}, labels={"k": "v"}),
                      "a3")
    assert got.status == 201, got
    assert owners(got.body) == {("a3", "Apply"): {"f:data": {"f:m": {}},
                                                  "f:metadata": {"f:labels": {"f:k": {}}}}}
    body = configmap({"m": "1", "n": "2"}, labels={"k": "v"})
    body["metadata"]["resourceVersion"] = got.body["metadata"]["resourceVersion"]
    put = await apiserver.request("PUT", f"{configmaps}/c", json=body,
                                  params={"fieldManager": "putter"})
    assert put.status == 200, put
    assert owners(put.body)[("putter", "Update")] == {"f:data": {"f:n": {}}}


def probe(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Probe",
            "metadata": {"name": "s"}, "spec": spec}


async def test_list_map_and_set_elements_are_owned_one_by_one(apiserver: Cluster,
                                                              probes: str) -> None:
    path = f"{probes}/s"
    got = await apply(apiserver, path, probe(
        {"size": 3, "tags": ["a", "b"], "items": [{"key": "k1", "v": "x"}]}), "m1")
    assert got.status == 201, got
    assert owners(got.body) == {("m1", "Apply"): {"f:spec": {
        "f:items": {'k:{"key":"k1"}': {".": {}, "f:key": {}, "f:v": {}}}, "f:size": {},
        "f:tags": {'v:"a"': {}, 'v:"b"': {}}}}}  # the defaults are nobody's
    assert got.body["spec"]["maxSize"] == 50

    got = await apply(apiserver, path, probe({"size": 3, "items": [{"key": "k1", "v": "y"},
                                                                   {"key": "k2"}]}), "m2")
    assert got.status == 409, got
    assert got.body["message"] == ('Apply failed with 1 conflict: conflict with "m1": '
                                   '.spec.items[key="k1"].v')

    got = await apply(apiserver, path, probe({"size": 3, "items": [{"key": "k2"}]}), "m2")
    assert got.status == 200, got
    assert [i["key"] for i in got.body["spec"]["items"]] == ["k1", "k2"]

    # m1 stops applying k1 and its tags: they go; k2 is m2's and stays
    got = await apply(apiserver, path, probe({"size": 3}), "m1")
    assert got.status == 200, got
    assert got.body["spec"]["items"] == [{"key": "k2", "v": "dv"}]
    assert "tags" not in got.body["spec"]
    assert owners(got.body)[("m1", "Apply")] == {"f:spec": {"f:size": {}}}


async def next_second() -> None:
    """Until the wall clock's second changes: managedFields times have whole seconds."""
    now = time.time()
    await asyncio.sleep(math.ceil(now) - now + 0.01)


async def test_an_apply_that_changes_nothing_writes_nothing(apiserver: Cluster,
                                                            configmaps: str) -> None:
    # fieldmanager's managedFieldsUpdater stamps the applier's time only when its apply
    # changed the object: repeated a second later, the object stays byte-identical (no new
    # resourceVersion, no event), and a new applier of the same values gets no time.
    path = f"{configmaps}/c"
    made = await apply(apiserver, path, configmap({"x": "1"}), "a1")
    assert made.status == 201, made
    rv = made.body["metadata"]["resourceVersion"]
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        await next_second()
        again = await apply(apiserver, path, configmap({"x": "1"}), "a1")
        assert again.status == 200 and again.body == made.body
        other = await apply(apiserver, path, configmap({"x": "1"}), "a2")
        first = await anext(events)
    assert first["type"] == "MODIFIED"
    assert first["object"]["metadata"]["resourceVersion"] == (
        other.body["metadata"]["resourceVersion"])
    entries = other.body["metadata"]["managedFields"]
    assert [(e["manager"], "time" in e) for e in entries] == [("a2", False), ("a1", True)]
    assert entries[1] == made.body["metadata"]["managedFields"][0]


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


async def test_kubectl_takes_over_fields_last_applied_client_side(apiserver: Cluster,
                                                                  configmaps: str) -> None:
    last = '{"apiVersion":"v1","data":{"a":"1"},"kind":"ConfigMap","metadata":{"name":"c"}}\n'
    created = await apiserver.request(
        "POST", configmaps, params={"fieldManager": "kubectl-client-side-apply"},
        json=configmap({"a": "1"}, annotations={LAST_APPLIED: last}))
    assert created.status == 201, created
    path = f"{configmaps}/c"

    # another manager gets the conflict; kubectl's own server-side apply does not
    got = await apply(apiserver, path, configmap({"a": "2"}), "other")
    assert got.status == 409, got
    got = await apply(apiserver, path, configmap({"a": "2", "b": "<&>"}), "kubectl")
    assert got.status == 200, got
    assert got.body["data"] == {"a": "2", "b": "<&>"}
    assert got.body["metadata"]["annotations"][LAST_APPLIED] == (
        '{"apiVersion":"v1","data":{"a":"2","b":"\\u003c\\u0026\\u003e"},"kind":"ConfigMap",'
        '"metadata":{"name":"c"}}\n')
    assert owners(got.body)[("kubectl", "Apply")] == {"f:data": {"f:a": {}, "f:b": {}}}
