"""Store: compact storage, fresh copies on read, and indexes that never go stale."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Mapping
from typing import Any

import orjson
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from reconcilekit import LabelSelector, ObjectKey, object_key
from reconcilekit._cache.store import DECODED_BYTES_PER_JSON_BYTE
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



def _labelled(ns: str, name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name, "labels": labels}, "spec": {}}


def test_a_shared_read_is_the_same_object_until_the_object_changes() -> None:
    store = Store()
    store.put(_pod("a", "p", node="n1"))
    key = ObjectKey("a", "p")
    first = store.get(key, shared=True)
    assert first is not None and store.get(key, shared=True) is first
    assert store.list("a", shared=True)[0] is first
    copy = store.get(key)
    assert copy == first and copy is not first  # the default read is the caller's own
    store.put(_pod("a", "p", node="n2"))
    second = store.get(key, shared=True)
    assert second is not first and second is not None and second["spec"]["nodeName"] == "n2"
    assert first["spec"]["nodeName"] == "n1"  # a reader holding the old one keeps it
    store.delete(key)
    assert store.get(key, shared=True) is None
    store._check_invariants()


def test_a_shared_read_of_a_bucket_is_kept_until_one_of_its_objects_changes() -> None:
    store = Store({"node": _by_node})
    for name in ("p1", "p2", "p3"):
        store.put(_pod("a", name, node="n1"))
    first = store.read(namespace="a", shared=True)
    again = store.read(namespace="a", shared=True)
    assert again == first and again is not first
    assert all(x is y for x, y in zip(first, again, strict=True))
    store.put(_pod("a", "p2", node="n2"))  # changes, and leaves the node's bucket
    after = store.read(namespace="a", shared=True)
    assert after[0] is first[0] and after[2] is first[2]
    assert after[1] is not first[1] and after[1]["spec"]["nodeName"] == "n2"
    assert [o["metadata"]["name"] for o in store.read(index=("node", "n1"), shared=True)] == [
        "p1", "p3"]
    store._check_invariants()


def test_shared_objects_stay_within_their_memory_budget() -> None:
    sizes = []
    for name in ("p0", "p1", "p2", "p3", "p4", "p5"):
        sizes.append(len(orjson.dumps(_pod("a", name))) * DECODED_BYTES_PER_JSON_BYTE)
    budget = 2 * (2 * max(sizes))  # each generation holds two objects
    store = Store(shared_read_memory=budget)
    for name in ("p0", "p1", "p2", "p3", "p4", "p5"):
        store.put(_pod("a", name))
    read = store.list(shared=True)
    assert store.shared_nbytes <= budget
    # the last read are kept, the first were dropped: read again, they are decoded anew
    assert store.get(object_key(read[-1]), shared=True) is read[-1]
    again = store.get(object_key(read[0]), shared=True)
    assert again == read[0] and again is not read[0]
    assert store.shared_nbytes <= budget
    store._check_invariants()
    none = Store(shared_read_memory=0)
    none.put(_pod("a", "p"))
    once = none.get(ObjectKey("a", "p"), shared=True)
    assert once == none.get(ObjectKey("a", "p"), shared=True) and none.shared_nbytes == 0
    with pytest.raises(ValueError, match="shared_read_memory must be >= 0 bytes, got -1"):
        Store(shared_read_memory=-1)


def test_a_label_selector_decodes_only_the_objects_it_selects() -> None:
    store = Store()
    store.put(_labelled("a", "web-1", app="web"))
    store.put(_labelled("a", "db-1", app="db"))
    store.put(_labelled("b", "web-2", app="web", tier="front"))
    # An object the selector does not match cannot even be decoded: a read that decoded
    # it would fail.
    store._objects[ObjectKey("a", "db-1")] = b"not JSON"
    web = LabelSelector.parse("app=web")
    assert list(store.select(labels=web)) == [ObjectKey("a", "web-1"), ObjectKey("b", "web-2")]
    assert [o["metadata"]["name"] for o in store.objects(store.select(labels=web))] == [
        "web-1", "web-2"]
    assert list(store.select(namespace="b", labels=LabelSelector.parse("tier"))) == [
        ObjectKey("b", "web-2")]
    assert store.labels_of(ObjectKey("b", "web-2")) == {"app": "web", "tier": "front"}
    # Equal label sets are held once, whichever object brought them.
    store.put(_labelled("c", "web-3", app="web"))
    assert store.labels_of(ObjectKey("c", "web-3")) is store.labels_of(ObjectKey("a", "web-1"))


def test_labels_seen_lately_are_filed_by_what_they_are_whatever_their_order() -> None:
    """Labels met again (in any order) are filed with one lookup; what they are, not the
    order they came in, decides the label set; a value that cannot be a label's is left
    out as before."""
    store = Store()
    store.put(_labelled("a", "p1", app="web", tier="front"))
    store.put({"metadata": {"namespace": "a", "name": "p2",
                            "labels": {"tier": "front", "app": "web"}}})
    store.put(_labelled("a", "p3", app="web", tier="front"))
    assert store.labels_of(ObjectKey("a", "p2")) is store.labels_of(ObjectKey("a", "p1"))
    assert store.labels_of(ObjectKey("a", "p3")) is store.labels_of(ObjectKey("a", "p1"))
    store.put(_labelled("a", "p3", app="web", tier="back"))  # changed: another set
    assert store.labels_of(ObjectKey("a", "p3")) == {"app": "web", "tier": "back"}
    store.put({"metadata": {"namespace": "a", "name": "p4",
                            "labels": {"app": "web", "bad": ["x"], "n": 1}}})
    assert store.labels_of(ObjectKey("a", "p4")) == {"app": "web"}
    store._check_invariants()


@pytest.mark.parametrize("enabled", [True, False])
def test_decoding_many_objects_leaves_the_garbage_collector_as_it_found_it(
        enabled: bool) -> None:
    store = Store()
    for i in range(100):
        store.put(_pod("a", f"p{i:03d}"))
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        for shared in (False, True):
            assert len(store.list(shared=shared)) == 100
            assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


class LabelledStoreMachine(RuleBasedStateMachine):
    """Random puts, deletes and reads: label selections, sorted keys and shared objects
    always equal a brute-force scan of a model."""

    def __init__(self) -> None:
        super().__init__()
        one = len(orjson.dumps(_labelled("a", "p1", app="web", tier="db")))
        self.store = Store({"node": _by_node},
                           shared_read_memory=3 * one * DECODED_BYTES_PER_JSON_BYTE)
        self.model: dict[ObjectKey, dict[str, Any]] = {}

    keys = st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["p1", "p2", "p3", "p4"]))
    labels = st.dictionaries(st.sampled_from(["app", "tier"]), st.sampled_from(["web", "db"]),
                             max_size=2)
    selectors = st.sampled_from(["app=web", "app!=web", "tier", "!tier", "app in (web,db)",
                                 "app=web,tier=db", ""])

    @rule(key=keys, labels=labels, node=st.sampled_from(["", "n1"]))
    def put(self, key: tuple[str, str], labels: dict[str, str], node: str) -> None:
        obj = {**_labelled(*key, **labels), "spec": {"nodeName": node}}
        self.store.put(obj)
        self.model[ObjectKey(*key)] = obj

    @rule(key=keys)
    def delete(self, key: tuple[str, str]) -> None:
        self.store.delete(ObjectKey(*key))
        self.model.pop(ObjectKey(*key), None)

    @rule(text=selectors, namespace=st.sampled_from([None, "a"]),
          node=st.sampled_from([None, "n1"]), shared=st.booleans())
    def read(self, text: str, namespace: str | None, node: str | None, shared: bool) -> None:
        selector = LabelSelector.parse(text)
        keys = self.store.select(namespace=namespace, labels=selector,
                                 index=None if node is None else ("node", node))
        expected = sorted(
            k for k, o in self.model.items()
            if (namespace is None or k.namespace == namespace)
            and (node is None or o["spec"]["nodeName"] == node)
            and selector.matches(o["metadata"]["labels"]))
        assert list(keys) == expected
        assert self.store.objects(keys, shared=shared) == [self.model[k] for k in expected]
        index = None if node is None else ("node", node)
        for _ in range(2):  # the second shared read of a whole bucket is its kept list
            got = self.store.read(namespace=namespace, index=index, labels=selector,
                                  shared=shared)
            assert got == [self.model[k] for k in expected]
            got.clear()  # the caller's list: the store's stays whole

    @invariant()
    def consistent(self) -> None:
        self.store._check_invariants()


TestLabelledStoreMachine = LabelledStoreMachine.TestCase
TestLabelledStoreMachine.settings = settings(max_examples=80, stateful_step_count=40,
                                             deadline=None)
