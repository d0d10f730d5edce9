"""Writes to ``metadata.managedFields`` itself, as kube-apiserver v1.28 takes them.

An update (PUT, or a JSON, merge or strategic merge patch) of the main
resource that sends managedFields other than the stored ones replaces them
with the entries it sends; ``[]`` (or one empty entry) resets them, and an
object left without any is then not tracked by updates, only by an apply
(``before-first-apply`` owning what it held). Entries that do not decode
are ignored, a value of the wrong type is refused by the decoder, and an
apply may not carry managedFields at all. The expected values are
kube-apiserver's answers to the same requests.
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster

APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"


def configmap(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def entry(manager: str, operation: str, fields: Any, **more: Any) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": fields, **more}


def owners(obj: dict[str, Any]) -> dict[tuple[str, str], Any]:
    return {(e["manager"], e["operation"]): e["fieldsV1"]
            for e in obj["metadata"].get("managedFields") or ()}


async def create(apiserver: Cluster, configmaps: str, data: dict[str, str]) -> dict[str, Any]:
    made = await apiserver.request("POST", configmaps, json=configmap(data),
                                   params={"fieldManager": "creator"})
    assert made.status == 201, made
    assert owners(made.body) == {("creator", "Update"): {
        "f:data": {".": {}, **{f"f:{k}": {} for k in data}}}}
    body: dict[str, Any] = made.body
    return body


async def replace_managed_fields(apiserver: Cluster, path: str, value: Any,
                                 manager: str = "patcher") -> Any:
    return await apiserver.request(
        "PATCH", path, json=[{"op": "replace", "path": "/metadata/managedFields",
                              "value": value}],
        content_type=JSON_PATCH, params={"fieldManager": manager})


async def test_a_put_replaces_managed_fields_with_the_ones_it_sends(apiserver: Cluster,
                                                                   configmaps: str) -> None:
    obj = await create(apiserver, configmaps, {"x": "1"})
    path = f"{configmaps}/c"
    sent = entry("someone", "Apply", {"f:data": {"f:x": {}}})
    obj["metadata"]["managedFields"] = [sent]
    got = await apiserver.request("PUT", path, json=obj, params={"fieldManager": "putter"})
    assert got.status == 200, got
    assert got.body["metadata"]["managedFields"] == [sent]  # as sent: no time added
    assert got.body["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]

    # with a change of its own: the sent entries, and the writer owning what it changed
    obj = got.body
    other = entry("other", "Update", {"f:data": {"f:x": {}}}, time="2020-01-01T00:00:00Z")
    obj["metadata"]["managedFields"] = [other]
    obj["data"]["y"] = "2"
    got = await apiserver.request("PUT", path, json=obj, params={"fieldManager": "putter"})
    assert got.status == 200, got
    entries = got.body["metadata"]["managedFields"]
    assert entries[0] == other
    assert owners(got.body) == {("other", "Update"): {"f:data": {"f:x": {}}},
                                ("putter", "Update"): {"f:data": {"f:y": {}}}}

    # without managedFields, the stored ones stay
    obj = got.body
    del obj["metadata"]["managedFields"]
    obj["data"]["z"] = "3"
    got = await apiserver.request("PUT", path, json=obj, params={"fieldManager": "third"})
    assert got.status == 200, got
    assert got.body["metadata"]["managedFields"][:2] == entries
    assert owners(got.body)[("third", "Update")] == {"f:data": {"f:z": {}}}


async def test_a_json_patch_replaces_managed_fields(apiserver: Cluster,
                                                    configmaps: str) -> None:
    await create(apiserver, configmaps, {"x": "1"})
    path = f"{configmaps}/c"
    first = entry("b", "Update", {"f:data": {"f:x": {}}})
    applied = entry("a", "Apply", {"f:data": {"f:x": {}}})
    later = entry("b", "Update", {"f:data": {".": {}, "f:x": {}}})
    got = await replace_managed_fields(apiserver, path, [first, applied, later])
    assert got.status == 200, got
    # one entry per manager, operation, apiVersion and subresource (the later one), in
    # kube-apiserver's order: operation, time, manager
    assert got.body["metadata"]["managedFields"] == [applied, later]


async def test_an_empty_list_resets_managed_fields_until_an_apply(apiserver: Cluster,
                                                                  configmaps: str) -> None:
    await create(apiserver, configmaps, {"x": "1", "y": "2"})
    path = f"{configmaps}/c"
    got = await apiserver.request(
        "PATCH", path, json=[{"op": "replace", "path": "/metadata/managedFields", "value": []},
                             {"op": "add", "path": "/data/z", "value": "3"}],
        content_type=JSON_PATCH, params={"fieldManager": "patcher"})
    assert got.status == 200, got
    assert got.body["data"] == {"x": "1", "y": "2", "z": "3"}
    assert "managedFields" not in got.body["metadata"]  # the patcher's change not tracked

    # an update of an object no one manages stays untracked
    got = await apiserver.request("PATCH", path, json={"data": {"w": "4"}},
                                  content_type=MERGE_PATCH, params={"fieldManager": "later"})
    assert got.status == 200, got
    assert "managedFields" not in got.body["metadata"]

    # an apply gives what the object held to "before-first-apply", an update manager
    got = await apiserver.request("PATCH", path, json=configmap({"x": "10"}),
                                  content_type=APPLY, params={"fieldManager": "applier"})
    assert got.status == 409, got
    assert got.body["message"] == ('Apply failed with 1 conflict: conflict with '
                                   '"before-first-apply" using v1: .data.x')
    got = await apiserver.request("PATCH", path, json=configmap({"x": "1"}),
                                  content_type=APPLY, params={"fieldManager": "applier"})
    assert got.status == 200, got
    assert owners(got.body) == {
        ("applier", "Apply"): {"f:data": {"f:x": {}}},
        ("before-first-apply", "Update"): {
            "f:data": {".": {}, **{f"f:{k}": {} for k in "wxyz"}}}}
    # the applier changed nothing: it gets no time
    assert [(e["manager"], "time" in e) for e in got.body["metadata"]["managedFields"]] == [
        ("applier", False), ("before-first-apply", True)]


async def test_an_object_created_owning_nothing_stays_untracked(apiserver: Cluster,
                                                                configmaps: str) -> None:
    made = await apiserver.request("POST", configmaps, json={"metadata": {"name": "c"}},
                                   params={"fieldManager": "creator"})
    assert made.status == 201, made
    assert "managedFields" not in made.body["metadata"]
    got = await apiserver.request("PATCH", f"{configmaps}/c", json={"data": {"x": "1"}},
                                  content_type=MERGE_PATCH, params={"fieldManager": "later"})
    assert got.status == 200 and got.body["data"] == {"x": "1"}, got
    assert "managedFields" not in got.body["metadata"]


async def test_one_empty_entry_resets_managed_fields_too(apiserver: Cluster,
                                                         configmaps: str) -> None:
    await create(apiserver, configmaps, {"x": "1"})
    got = await apiserver.request(
        "PATCH", f"{configmaps}/c", json={"metadata": {"managedFields": [{}]}},
        content_type=MERGE_PATCH, params={"fieldManager": "patcher"})
    assert got.status == 200, got
    assert "managedFields" not in got.body["metadata"]


async def test_managed_fields_that_do_not_decode_are_ignored(apiserver: Cluster,
                                                             configmaps: str) -> None:
    made = await create(apiserver, configmaps, {"x": "1"})
    path = f"{configmaps}/c"
    stored = made["metadata"]["managedFields"]
    undecodable = {
        "operation": entry("m", "Bogus", {"f:data": {}}),
        "apiVersion": {**entry("m", "Update", {"f:data": {}}), "apiVersion": ""},
        "fieldsType": {**entry("m", "Update", {"f:data": {}}), "fieldsType": "FieldsV2"},
        "no fieldsType": {k: v for k, v in entry("m", "Update", {}).items()
                          if k != "fieldsType"},
        "fieldsV1 key": entry("m", "Update", {"bogus": {}}),
        "fieldsV1 keys": entry("m", "Update", {"k:[1]": {}}),
        "fieldsV1 value": entry("m", "Update", {"f:data": 1}),
        "fieldsV1 string": entry("m", "Update", "f:data"),
    }
    for why, value in undecodable.items():
        got = await replace_managed_fields(apiserver, path, [entry("ok", "Update", {}), value])
        assert got.status == 200, (why, got)
        assert got.body["metadata"]["managedFields"] == stored, why


async def test_managed_fields_of_the_wrong_type_are_refused(apiserver: Cluster,
                                                            configmaps: str) -> None:
    made = await create(apiserver, configmaps, {"x": "1"})
    path = f"{configmaps}/c"
    got = await replace_managed_fields(apiserver, path, "x")
    assert got.status == 422 and got.body["reason"] == "Invalid", got
    assert got.body["message"].endswith(
        "json: cannot unmarshal string into Go struct field "
        "ObjectMeta.metadata.managedFields of type []v1.ManagedFieldsEntry")
    made["metadata"]["managedFields"] = [1]
    got = await apiserver.request("PUT", path, json=made)
    assert got.status == 400 and got.body["reason"] == "BadRequest", got
    assert got.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ObjectMeta.metadata.managedFields of type "
        "v1.ManagedFieldsEntry")


async def test_an_apply_may_not_carry_managed_fields(apiserver: Cluster,
                                                     configmaps: str) -> None:
    for value in ([entry("m", "Update", {"f:data": {}})], []):
        config = configmap({"x": "1"})
        config["metadata"]["managedFields"] = value
        got = await apiserver.request("PATCH", f"{configmaps}/c", json=config,
                                      content_type=APPLY, params={"fieldManager": "applier"})
        assert got.status == 400 and got.body["reason"] == "BadRequest", got
        assert got.body["message"] == "metadata.managedFields must be nil"


async def test_a_create_and_a_status_write_ignore_sent_managed_fields(
        apiserver: Cluster, configmaps: str, widgets: str) -> None:
    config = configmap({"x": "1"})
    config["metadata"]["managedFields"] = [entry("given", "Apply", {"f:data": {"f:x": {}}})]
    made = await apiserver.request("POST", configmaps, json=config,
                                   params={"fieldManager": "creator"})
    assert made.status == 201, made
    assert owners(made.body) == {("creator", "Update"): {"f:data": {".": {}, "f:x": {}}}}

    widget = {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget",
              "metadata": {"name": "w"}, "spec": {"size": 1}}
    made = await apiserver.request("POST", widgets, json=widget,
                                   params={"fieldManager": "creator"})
    assert made.status == 201, made
    got = await replace_managed_fields(
        apiserver, f"{widgets}/w/status",
        [{**entry("given", "Update", {"f:spec": {}}), "apiVersion": "test.reconcilekit.dev/v1"}])
    assert got.status == 200, got
    assert got.body["metadata"]["managedFields"] == made.body["metadata"]["managedFields"]


async def test_fields_moved_to_an_applier_go_when_it_stops_applying_them(
        apiserver: Cluster, configmaps: str) -> None:
    # kubectl's switch from client-side to server-side apply: the client-side manager's
    # fields are moved to the server-side applier, whose next apply drops what it no
    # longer applies
    made = await create(apiserver, configmaps, {"a": "1", "b": "2"})
    path = f"{configmaps}/c"
    moved = entry("applier", "Apply", {"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    got = await apiserver.request(
        "PATCH", path, content_type=JSON_PATCH, params={"fieldManager": "applier"},
        json=[{"op": "test", "path": "/metadata/resourceVersion",
               "value": made["metadata"]["resourceVersion"]},
              {"op": "replace", "path": "/metadata/managedFields", "value": [moved]}])
    assert got.status == 200, got
    assert got.body["metadata"]["managedFields"] == [moved]
    got = await apiserver.request("PATCH", path, json=configmap({"a": "1"}),
                                  content_type=APPLY, params={"fieldManager": "applier"})
    assert got.status == 200, got
    assert got.body["data"] == {"a": "1"}
    assert owners(got.body) == {("applier", "Apply"): {"f:data": {"f:a": {}}}}
