"""Store: compact storage, fresh copies on read, and indexes that never go stale."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reconcilekit import ObjectKey
from reconcilekit.lowlevel import Store


def _pod(ns: str, name: str, node: str = "", app: str = "") -> dict[str, Any]:
    labels = {"app": app} if app else {}
    return {"metadata": {"namespace": ns, "name": name, "labels": labels},
            "spec": {"nodeName": node}}


def _by_node(obj: Mapping[str, Any]) -> Iterable[str]:
    node = obj["spec"].get("nodeName")
    return [node] if node else []


def test_get_returns_a_fresh_copy_that_cannot_corrupt_the_store() -> None:
    store = Store()
    store.put(_pod("a", "p", node="n1"))
    got = store.get(ObjectKey("a", "p"))
    assert got is not None
    got["spec"]["nodeName"] = "hacked"
    got["metadata"]["labels"]["x"] = "y"
    again = store.get(ObjectKey("a", "p"))
    assert again is not None and again["spec"]["nodeName"] == "n1"
    assert again["metadata"]["labels"] == {}


def test_nbytes_is_the_json_held_through_puts_replacements_and_deletes() -> None:
    store = Store()
    a = {"metadata": {"name": "a", "namespace": "x"}, "data": {"k": "v"}}
    store.put(a)
    store.put({"metadata": {"name": "b", "namespace": "x"}})
    store._check_invariants()
    store.put({**a, "data": {"k": "a much longer value than before"}})
    store._check_invariants()
    store.delete(ObjectKey("x", "b"))
    store._check_invariants()
    assert store.nbytes == len(orjson.dumps(store.get(ObjectKey("x", "a"))))
    store.clear()
    assert store.nbytes == 0


def test_namespace_index_is_built_in() -> None:
    store = Store()
    store.put(_pod("a", "p1"))
    store.put(_pod("b", "p2"))
    assert [o["metadata"]["name"] for o in store.list("a")] == ["p1"]
    assert len(store.list()) == 2


def test_index_follows_updates_and_deletes() -> None:
    store = Store({"node": _by_node})
    store.put(_pod("a", "p", node="n1"))
    assert store.index_keys("node", "n1") == {ObjectKey("a", "p")}
    store.put(_pod("a", "p", node="n2"))
    assert store.index_keys("node", "n1") == set()
    assert store.index_keys("node", "n2") == {ObjectKey("a", "p")}
    store.delete(ObjectKey("a", "p"))
    assert store.index_keys("node", "n2") == set()
    store._check_invariants()


def test_index_added_late_covers_existing_objects() -> None:
    store = Store()
    store.put(_pod("a", "p", node="n1"))
    store.add_index("node", _by_node)
    assert [o["metadata"]["name"] for o in store.by_index("node", "n1")] == ["p"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_index("node", _by_node)
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.by_index("nope", "x")


class StoreMachine(RuleBasedStateMachine):
    """Random puts and deletes: indexes always equal a brute-force scan."""

    def __init__(self) -> None:
        super().__init__()
        self.store = Store({"node": _by_node})
        self.model: dict[ObjectKey, dict[str, Any]] = {}

    names = st.sampled_from(["p1", "p2", "p3", "p4"])
    namespaces = st.sampled_from(["a", "b"])
    nodes = st.sampled_from(["", "n1", "n2"])

    @rule(ns=namespaces, name=names, node=nodes)
    def put(self, ns: str, name: str, node: str) -> None:
        obj = _pod(ns, name, node)
        self.store.put(obj)
        self.model[ObjectKey(ns, name)] = obj

    @rule(ns=namespaces, name=names)
    def delete(self, ns: str, name: str) -> None:
        self.store.delete(ObjectKey(ns, name))
        self.model.pop(ObjectKey(ns, name), None)

    @rule()
    def relist(self) -> None:
        self.store.clear()
        for obj in self.model.values():
            self.store.put(obj)

    @invariant()
    def indexes_match_a_scan(self) -> None:
        self.store._check_invariants()
        for node in ("n1", "n2"):
            expected = {k for k, o in self.model.items() if o["spec"]["nodeName"] == node}
            assert self.store.index_keys("node", node) == expected
        for ns in ("a", "b"):
            expected = {k for k in self.model if k.namespace == ns}
            assert self.store.index_keys("namespace", ns) == expected
        assert len(self.store) == len(self.model)


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


def test_first_index_keys_are_the_smallest_and_stable() -> None:
    store = Store({"node": _by_node})
    for name in ("p5", "p1", "p4", "p2", "p3"):
        store.put(_pod("a", name, node="n1"))
    assert store.first_index_keys("node", "n1", 2) == [ObjectKey("a", "p1"), ObjectKey("a", "p2")]
    store.put(_pod("a", "p9", node="n1"))  # more keys elsewhere in the order: same answer
    assert store.first_index_keys("node", "n1", 2) == [ObjectKey("a", "p1"), ObjectKey("a", "p2")]
    assert store.first_index_keys("node", "none", 3) == []


def test_a_prepared_object_is_indexed_by_indexes_added_after_it() -> None:
    store = Store()
    obj = {"metadata": {"namespace": "ns", "name": "p"}, "spec": {"nodeName": "n1"}}
    prepared = store.prepare(obj)
    store.add_index("node", lambda o: [o["spec"]["nodeName"]])
    store.put_prepared(ObjectKey("ns", "p"), prepared)
    assert store.index_keys("node", "n1") == {ObjectKey("ns", "p")}
    assert store.get(ObjectKey("ns", "p")) == obj
    store._check_invariants()


def test_equal_index_values_are_held_once() -> None:
    store = Store({"node": _by_node})
    for i in range(3):  # values decoded apart are equal strings, not the same object
        store.put(orjson.loads(orjson.dumps(_pod("ns", f"p{i}", node="node-1"))))
    values = store._values["node"].values()
    assert len({id(v[0]) for v in values}) == 1

