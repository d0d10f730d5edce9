"""JSON merge patch, JSON patch and strategic merge patch for the test API server."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconcilekit.testing.apiserver.patching.json_patch import (
    INVALID_PATCH_MESSAGE,
    JSON,
    MalformedPatch,
    PatchError,
    PatchTestFailed,
    PatchTooLarge,
    UnmergeablePatch,
    json_patch,
    merge_patch,
)
from reconcilekit.testing.apiserver.patching.strategic_merge import (
    MergeList,
    PatchSchema,
    patch_schema_for,
    strategic_merge_patch,
)

_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False), st.text(max_size=3)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text("abc", max_size=2), inner, max_size=3)
    ),
    max_leaves=12,
)

# --- RFC 7386 JSON merge patch ---


@pytest.mark.parametrize(
    ("target", "patch", "result"),
    [  # RFC 7386 Appendix A
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_merge_patch_rfc7386_examples(target: JSON, patch: JSON, result: JSON) -> None:
    assert merge_patch(target, patch) == result


def test_merge_patch_keeps_nulls_inside_arrays() -> None:
    assert merge_patch({}, {"a": [None, {"b": None}]}) == {"a": [None, {"b": None}]}


@given(_json, _json)
def test_merge_patch_never_mutates_its_arguments(target: JSON, patch: JSON) -> None:
    before = copy.deepcopy((target, patch))
    merge_patch(target, patch)
    assert (target, patch) == before


@given(_json, _json)
def test_merge_patch_result_shares_nothing_with_its_arguments(target: JSON, patch: JSON) -> None:
    result = merge_patch(target, patch)
    before = copy.deepcopy((target, patch))
    _scribble(result)
    assert (target, patch) == before


@given(_json, _json)
def test_merge_patch_is_idempotent(target: JSON, patch: JSON) -> None:
    once = merge_patch(target, patch)
    assert merge_patch(once, patch) == once


def _scribble(value: JSON) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _scribble(item)
        value["__scribbled__"] = True
    elif isinstance(value, list):
        for item in value:
            _scribble(item)
        value.append("__scribbled__")


# --- RFC 6902 JSON patch ---

_RFC6902_EXAMPLES: list[tuple[str, JSON, list[Any], JSON]] = [  # RFC 6902 Appendix A
    (
        "A.1 add object member",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux"}],
        {"baz": "qux", "foo": "bar"},
    ),
    (
        "A.2 add array element",
        {"foo": ["bar", "baz"]},
        [{"op": "add", "path": "/foo/1", "value": "qux"}],
        {"foo": ["bar", "qux", "baz"]},
    ),
    (
        "A.3 remove object member",
        {"baz": "qux", "foo": "bar"},
        [{"op": "remove", "path": "/baz"}],
        {"foo": "bar"},
    ),
    (
        "A.4 remove array element",
        {"foo": ["bar", "qux", "baz"]},
        [{"op": "remove", "path": "/foo/1"}],
        {"foo": ["bar", "baz"]},
    ),
    (
        "A.5 replace value",
        {"baz": "qux", "foo": "bar"},
        [{"op": "replace", "path": "/baz", "value": "boo"}],
        {"baz": "boo", "foo": "bar"},
    ),
    (
        "A.6 move value",
        {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
        [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
        {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
    ),
    (
        "A.7 move array element",
        {"foo": ["all", "grass", "cows", "eat"]},
        [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
        {"foo": ["all", "cows", "eat", "grass"]},
    ),
    (
        "A.8 test value success",
        {"baz": "qux", "foo": ["a", 2, "c"]},
        [
            {"op": "test", "path": "/baz", "value": "qux"},
            {"op": "test", "path": "/foo/1", "value": 2},
        ],
        {"baz": "qux", "foo": ["a", 2, "c"]},
    ),
    (
        "A.10 add nested member object",
        {"foo": "bar"},
        [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
        {"foo": "bar", "child": {"grandchild": {}}},
    ),
    (
        "A.11 ignore unrecognized elements",
        {"foo": "bar"},
        [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
        {"foo": "bar", "baz": "qux"},
    ),
    (
        "A.14 escape ordering",
        {"/": 9, "~1": 10},
        [{"op": "test", "path": "/~01", "value": 10}],
        {"/": 9, "~1": 10},
    ),
    (
        "A.16 add array value",
        {"foo": ["bar"]},
        [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
        {"foo": ["bar", ["abc", "def"]]},
    ),
    (
        "copy",
        {"a": {"b": [1]}},
        [{"op": "copy", "from": "/a", "path": "/c"}],
        {"a": {"b": [1]}, "c": {"b": [1]}},
    ),
    (
        "replace the whole document",
        {"a": 1},
        [{"op": "replace", "path": "", "value": {"b": 2}}],
        {"b": 2},
    ),
    (
        "escaped slash in a member name",
        {"metadata": {"annotations": {"example.com/x": "1"}}},
        [{"op": "remove", "path": "/metadata/annotations/example.com~1x"}],
        {"metadata": {"annotations": {}}},
    ),
    (
        "test compares numbers by value",
        {"a": 1},
        [{"op": "test", "path": "/a", "value": 1.0}],
        {"a": 1},
    ),
]


@pytest.mark.parametrize(
    ("target", "ops", "result"),
    [case[1:] for case in _RFC6902_EXAMPLES],
    ids=[case[0] for case in _RFC6902_EXAMPLES],
)
def test_json_patch_rfc6902_examples(target: JSON, ops: list[Any], result: JSON) -> None:
    assert json_patch(target, ops) == result


@pytest.mark.parametrize(
    ("target", "ops"),
    [
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}]),  # A.15
        ({"a": True}, [{"op": "test", "path": "/a", "value": 1}]),
        ({"a": [1, 2]}, [{"op": "test", "path": "/a", "value": [2, 1]}]),
    ],
)
def test_json_patch_failed_test_raises_test_failed(target: JSON, ops: list[Any]) -> None:
    with pytest.raises(PatchTestFailed) as caught:
        json_patch(target, ops)
    assert caught.value.status == 422
    assert caught.value.reason == "Invalid"
    assert caught.value.api_message == INVALID_PATCH_MESSAGE


@pytest.mark.parametrize(
    ("target", "ops", "fragment"),
    [
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], "no member 'baz'"),
        ({"a": 1}, [{"op": "remove", "path": "/b"}], "no member 'b'"),
        ({"a": 1}, [{"op": "replace", "path": "/b", "value": 2}], "no member 'b'"),
        ({"a": [1]}, [{"op": "add", "path": "/a/2", "value": 2}], "out of range"),
        ({"a": [1]}, [{"op": "remove", "path": "/a/1"}], "out of range"),
        ({"a": [1]}, [{"op": "remove", "path": "/a/-"}], "not an array index"),
        ({"a": [1, 2]}, [{"op": "remove", "path": "/a/01"}], "not an array index"),
        ({"a": [1]}, [{"op": "remove", "path": "/a/-1"}], "not an array index"),
        ({"a": 1}, [{"op": "add", "path": "/a/b", "value": 2}], "not an object or array"),
        ({"a": 1}, [{"op": "frobnicate", "path": "/a"}], "unknown operation"),
        ({"a": 1}, [{"path": "/a"}], "unknown operation"),
        ({"a": 1}, [{"op": "remove"}], "'path'"),
        ({"a": 1}, [{"op": "add", "path": "/b"}], "needs a value"),
        ({"a": 1}, [{"op": "move", "path": "/b"}], "'from'"),
        ({"a": 1}, [{"op": "remove", "path": "a"}], "must be empty or start with '/'"),
        ({"a": 1}, [{"op": "remove", "path": "/~2"}], "'~' not followed"),
        ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/c"}], "its own children"),
        ({"a": 1}, [{"op": "remove", "path": ""}], "whole document"),
    ],
)
def test_json_patch_failures_are_invalid(target: JSON, ops: list[Any], fragment: str) -> None:
    with pytest.raises(PatchError) as caught:
        json_patch(target, ops)
    assert not isinstance(caught.value, PatchTestFailed)
    assert fragment in str(caught.value)
    assert (caught.value.status, caught.value.reason) == (422, "Invalid")


@pytest.mark.parametrize("ops", [{"op": "add"}, "add", [1], [[{"op": "add"}]], None])
def test_json_patch_that_is_not_a_list_of_objects_is_a_bad_request(ops: Any) -> None:
    with pytest.raises(MalformedPatch) as caught:
        json_patch({}, ops)
    assert (caught.value.status, caught.value.reason) == (400, "BadRequest")
    assert caught.value.api_message == str(caught.value)


def test_json_patch_with_too_many_operations_is_too_large() -> None:
    ops = [{"op": "test", "path": "", "value": {}}] * 10_001
    with pytest.raises(PatchTooLarge) as caught:
        json_patch({}, ops)
    assert caught.value.status == 413
    assert caught.value.api_message == (
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, "
        "got 10001"
    )


def test_json_patch_applies_all_or_nothing() -> None:
    target = {"a": 1}
    ops = [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/c"}]
    with pytest.raises(PatchError, match=r"operation 1 \(remove /c\)"):
        json_patch(target, ops)
    assert target == {"a": 1}


@given(
    st.dictionaries(st.text("abc/~", max_size=3), _json, max_size=4),
    st.text("abc/~", max_size=3),
    _json,
)
def test_json_patch_add_then_remove_round_trips(
    target: dict[str, JSON], key: str, value: JSON
) -> None:
    path = "/" + key.replace("~", "~0").replace("/", "~1")
    if key in target:
        return
    added = json_patch(target, [{"op": "add", "path": path, "value": value}])
    assert isinstance(added, dict) and added[key] == value
    assert json_patch(added, [{"op": "remove", "path": path}]) == target


@given(st.lists(_json, max_size=4), st.data())
def test_json_patch_array_insert_then_remove_round_trips(items: list[JSON], data: Any) -> None:
    index = data.draw(st.integers(0, len(items)))
    ops: list[JSON] = [{"op": "add", "path": f"/{index}", "value": "new"}]
    inserted = json_patch(items, ops)
    assert isinstance(inserted, list) and inserted[index] == "new"
    assert json_patch(inserted, [{"op": "remove", "path": f"/{index}"}]) == items


@given(
    _json,
    st.lists(st.fixed_dictionaries({"op": st.just("add"), "path": st.just("/x"), "value": _json})),
)
def test_json_patch_never_mutates_its_arguments(target: JSON, ops: list[Any]) -> None:
    before = copy.deepcopy((target, ops))
    try:
        result = json_patch(target, ops)
    except PatchError:
        result = None
    _scribble(result)
    assert (target, ops) == before


# --- strategic merge patch ---

POD = patch_schema_for("", "v1", "Pod")


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": "p",
            "finalizers": ["a.example.com/f", "b.example.com/f"],
            "ownerReferences": [
                {"uid": "u1", "kind": "ReplicaSet", "name": "rs1"},
                {"uid": "u2", "kind": "Job", "name": "j1"},
            ],
            "labels": {"app": "web", "tier": "front"},
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "side:1"},
            ],
            "tolerations": [{"key": "k1"}],
            **spec,
        },
    }


def test_smp_adding_a_finalizer_keeps_the_others() -> None:
    patched = strategic_merge_patch(_pod(), {"metadata": {"finalizers": ["c.example.com/f"]}}, POD)
    assert patched["metadata"]["finalizers"] == [
        "c.example.com/f",
        "a.example.com/f",
        "b.example.com/f",
    ]


def test_smp_repeating_a_finalizer_does_not_duplicate_it() -> None:
    patch = {"metadata": {"finalizers": ["b.example.com/f", "b.example.com/f"]}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["metadata"]["finalizers"] == ["a.example.com/f", "b.example.com/f"]


def test_smp_delete_from_primitive_list_removes_one_finalizer() -> None:
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f"]}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["metadata"]["finalizers"] == ["b.example.com/f"]


def test_smp_owner_references_merge_by_uid() -> None:
    patch = {
        "metadata": {
            "ownerReferences": [
                {"uid": "u2", "controller": True},
                {"uid": "u3", "kind": "Deployment", "name": "d"},
            ]
        }
    }
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["metadata"]["ownerReferences"] == [
        {"uid": "u1", "kind": "ReplicaSet", "name": "rs1"},
        {"uid": "u2", "kind": "Job", "name": "j1", "controller": True},
        {"uid": "u3", "kind": "Deployment", "name": "d"},
    ]


def test_smp_containers_merge_by_name_and_env_by_name() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]},
            ]
        }
    }
    patched = strategic_merge_patch(_pod(), patch, POD)
    containers = patched["spec"]["containers"]
    assert containers == [
        {
            "name": "app",
            "image": "app:2",
            "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}],
        },
        {"name": "sidecar", "image": "side:1"},
    ]


def test_smp_patch_delete_removes_a_list_item() -> None:
    patch = {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert [c["name"] for c in patched["spec"]["containers"]] == ["app"]


def test_smp_patch_replace_item_replaces_the_whole_list() -> None:
    patch = {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_smp_patch_replace_and_delete_on_objects() -> None:
    replaced = strategic_merge_patch(
        _pod(), {"metadata": {"labels": {"$patch": "replace", "new": "1"}}}, POD
    )
    assert replaced["metadata"]["labels"] == {"new": "1"}
    deleted = strategic_merge_patch(_pod(), {"metadata": {"labels": {"$patch": "delete"}}}, POD)
    assert deleted["metadata"]["labels"] == {}


def test_smp_null_deletes_map_keys_and_maps_merge() -> None:
    patch = {"metadata": {"labels": {"tier": None, "env": "prod"}, "annotations": {"a": "1"}}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["metadata"]["labels"] == {"app": "web", "env": "prod"}
    assert patched["metadata"]["annotations"] == {"a": "1"}


def test_smp_lists_without_a_strategy_are_replaced() -> None:
    patch = {"spec": {"tolerations": [{"key": "k2"}]}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["spec"]["tolerations"] == [{"key": "k2"}]
    assert strategic_merge_patch({"a": [1, 2]}, {"a": [3]}, {}) == {"a": [3]}


def test_smp_added_members_lose_nulls_and_directive_objects() -> None:
    patch = {"spec": {"nodeSelector": {"a": "1", "b": None}, "x": {"$patch": "delete"}}}
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["spec"]["nodeSelector"] == {"a": "1"}
    assert "x" not in patched["spec"]


def test_smp_set_element_order_orders_the_merged_list() -> None:
    patch = {
        "metadata": {
            "$setElementOrder/finalizers": [
                "b.example.com/f",
                "c.example.com/f",
                "a.example.com/f",
            ],
            "finalizers": ["c.example.com/f"],
        }
    }
    patched = strategic_merge_patch(_pod(), patch, POD)
    assert patched["metadata"]["finalizers"] == [
        "b.example.com/f",
        "c.example.com/f",
        "a.example.com/f",
    ]


def test_smp_set_element_order_of_maps_keeps_unnamed_items() -> None:
    patch = {
        "spec": {
            "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
            "containers": [{"name": "app", "image": "app:3"}],
        }
    }
    patched = strategic_merge_patch(_pod(), patch, POD)
    names = [c["name"] for c in patched["spec"]["containers"]]
    assert names == ["sidecar", "app"]
    assert patched["spec"]["containers"][1]["image"] == "app:3"


def test_smp_set_element_order_that_disagrees_with_the_patch_is_unmergeable() -> None:
    patch = {"metadata": {"$setElementOrder/finalizers": ["x"], "finalizers": ["y"]}}
    with pytest.raises(UnmergeablePatch, match="doesn't match"):
        strategic_merge_patch(_pod(), patch, POD)


def test_smp_retain_keys_drops_unlisted_members() -> None:
    target = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert strategic_merge_patch(target, patch, {}) == {"spec": {"strategy": {"type": "Recreate"}}}


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}},
        {"spec": {"strategy": {"$retainKeys": "type"}}},
        {"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}},
        {"metadata": {"$setElementOrder": ["a"]}},
        {"metadata": {"$frobnicate": 1}},
        {"metadata": {"new": {"$frobnicate": 1}}},
        [{"metadata": {}}],
    ],
)
def test_smp_badly_formed_directives_are_bad_requests(patch: Any) -> None:
    with pytest.raises(MalformedPatch) as caught:
        strategic_merge_patch({"spec": {"strategy": {}}, "metadata": {}}, patch, POD)
    assert (caught.value.status, caught.value.reason) == (400, "BadRequest")


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"spec": {"containers": [{"image": "x"}]}}, "does not contain declared merge key: name"),
        ({"spec": {"containers": [{"$patch": "delete"}]}}, "merge key: name"),
        ({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}, "cannot yet be specified"),
        ({"spec": {"containers": [{"name": "a", "$patch": "bogus"}]}}, "unknown patch type"),
        ({"metadata": {"labels": {"$patch": "bogus"}}}, "unknown patch type"),
        ({"metadata": {"finalizers": [1]}}, "not identical"),
    ],
)
def test_smp_unmergeable_patches_are_internal_errors(patch: Any, fragment: str) -> None:
    with pytest.raises(UnmergeablePatch) as caught:
        strategic_merge_patch(_pod(), patch, POD)
    assert fragment in str(caught.value)
    assert caught.value.status == 500
    assert caught.value.api_message == str(caught.value)


def test_smp_list_of_lists_is_invalid() -> None:
    schema = PatchSchema({"a": MergeList()})
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch({"a": [[1]]}, {"a": [[2]]}, schema)
    assert caught.value.status == 422


def test_smp_top_level_directives() -> None:
    assert strategic_merge_patch({"a": 1}, {"$patch": "delete"}, {}) == {}
    assert strategic_merge_patch({"a": 1}, {"$patch": "replace", "b": 2}, {}) == {"b": 2}


@pytest.mark.parametrize(("group", "kind"), [
    ("", "ConfigMap"), ("", "Secret"), ("", "Namespace"), ("", "Event"),
    ("coordination.k8s.io", "Lease"), ("", "Pod"), ("apps", "Deployment"), ("", "Service")])
def test_smp_uses_the_metadata_rules_for_every_builtin_kind(group: str, kind: str) -> None:
    meta = patch_schema_for(group, "v1", kind).root.child("metadata")
    assert meta.child("finalizers").rule == MergeList()
    assert meta.child("ownerReferences").rule == MergeList("uid")


def test_smp_schema_for_an_unknown_kind_keeps_the_metadata_rules() -> None:
    assert patch_schema_for("", "v1", "Pod") is POD
    schema = patch_schema_for("example.com", "v1", "Widget")
    patched = strategic_merge_patch(
        {"metadata": {"finalizers": ["a"]}, "spec": {"items": [1]}},
        {"metadata": {"finalizers": ["b"]}, "spec": {"items": [2]}},
        schema,
    )
    assert patched == {"metadata": {"finalizers": ["b", "a"]}, "spec": {"items": [2]}}


def test_smp_namespace_conditions_merge_by_type() -> None:
    target = {"status": {"conditions": [{"type": "A", "status": "True"}]}}
    patch = {"status": {"conditions": [{"type": "B", "status": "False"}]}}
    patched = strategic_merge_patch(target, patch, patch_schema_for("", "v1", "Namespace"))
    assert [c["type"] for c in patched["status"]["conditions"]] == ["B", "A"]


@given(
    st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "c"]), _json, max_size=3),
)
def test_smp_without_lists_or_directives_is_a_merge_patch(
    target: dict[str, JSON], patch: dict[str, JSON]
) -> None:
    if _has_lists_or_directives(target) or _has_lists_or_directives(patch):
        return
    assert strategic_merge_patch(target, patch, {}) == merge_patch(target, patch)


def _has_lists_or_directives(value: JSON) -> bool:
    if isinstance(value, list):
        return True
    if isinstance(value, dict):
        return any(k.startswith("$") or _has_lists_or_directives(v) for k, v in value.items())
    return False


@given(
    st.lists(st.sampled_from("abcde"), max_size=5, unique=True),
    st.lists(st.sampled_from("abcdef"), max_size=5),
)
def test_smp_primitive_merge_list_is_a_union_without_mutation(
    current: list[str], added: list[str]
) -> None:
    target: dict[str, JSON] = {"metadata": {"finalizers": list(current)}}
    patch: dict[str, JSON] = {"metadata": {"finalizers": list(added)}}
    before = copy.deepcopy((target, patch))
    patched = strategic_merge_patch(target, patch, POD)
    finalizers = patched["metadata"]["finalizers"]
    assert sorted(finalizers) == sorted(set(current) | set(added))
    assert len(finalizers) == len(set(finalizers))
    _scribble(patched)
    assert (target, patch) == before
