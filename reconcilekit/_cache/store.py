"""``Store``: the objects an informer has seen, held compactly, with named indexes.

Objects are kept as their compact JSON bytes (what the API server sent, after
the informer's transform), not as dicts: a cached Pod costs about its JSON
size instead of 4-5 times that. Every read decodes a fresh dict, so a caller
that mutates what it got can never corrupt the cache, and nothing needs
copying defensively.

Indexes map an index value to the set of object keys that produce it. They
are computed once, when an object is stored, from the decoded object, so
``by_index`` costs O(matches), independent of how many objects are stored.

An object can also be prepared (:meth:`Store.prepare`: encoded and indexed
while its dict is at hand) and stored later with :meth:`Store.put_prepared`: an
informer's relist prepares each page as it arrives, drops the dicts, and
stores the whole list at the end, so it never holds more than a page of
decoded objects. Index values are strings; equal ones are held once
(interned), as the same few namespaces and node names recur in every object.
"""

from __future__ import annotations

import heapq
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from .._foundations.objects import Obj, ObjectKey, object_key

__all__ = ["NAMESPACE_INDEX", "IndexFunc", "Prepared", "Store"]

Objs = list[Obj]  # spelled once here: the class below has a method named ``list``
Names = list[str]
Keys = list[ObjectKey]
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
NAMESPACE_INDEX = "namespace"


def _namespace_index(obj: Mapping[str, Any]) -> Iterable[str]:
    return ((obj.get("metadata") or {}).get("namespace") or "",)



def encode(obj: Mapping[str, Any]) -> bytes:
    """``obj`` as JSON, for the store.

    orjson writes at most 255 levels of nesting, fewer than it reads (1024)
    and than kube-apiserver stores; a deeper object is written by the
    standard library's encoder instead (slower, and only for such objects).
    One too deep for that too raises ValueError naming it: the watcher then
    counts the answer as unreadable, one log line, and lists again.
    """
    try:
        return orjson.dumps(obj)
    except orjson.JSONEncodeError:
        try:
            return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
        except (RecursionError, ValueError, TypeError):
            key = object_key(obj)
            raise ValueError(f"object {key} is nested too deeply to be cached") from None


def _intern(value: str) -> str:
    return sys.intern(value) if type(value) is str else value


class Prepared:
    """An object ready to be stored: its JSON and its index values (see :meth:`Store.prepare`)."""

    __slots__ = ("_generation", "_values", "raw")

    def __init__(self, raw: bytes, values: tuple[tuple[str, ...], ...], generation: int) -> None:
        self.raw = raw
        self._values = values  # per index, in the order of the store's indexes
        self._generation = generation  # the store's indexes it was computed for


class Store:
    """Objects by :class:`ObjectKey`, as compact JSON, with named indexes.

    Invariants (whenever no method is running):
      * for every index ``name`` and every stored key ``k``,
        ``k in self._indexes[name][v]`` exactly for the values ``v`` in
        ``self._values[name][k]``, which are what the index function returned
        for the object stored under ``k``;
      * no index holds an empty set or a key that is not stored.
    Not thread-safe: one event loop owns a store.
    """

    __slots__ = ("_funcs", "_generation", "_indexes", "_nbytes", "_objects", "_values")

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None) -> None:
        self._objects: dict[ObjectKey, bytes] = {}
        self._nbytes = 0  # sum of len() of _objects' values
        self._funcs: dict[str, IndexFunc] = {NAMESPACE_INDEX: _namespace_index}
        self._indexes: dict[str, dict[str, set[ObjectKey]]] = {NAMESPACE_INDEX: {}}
        self._values: dict[str, dict[ObjectKey, tuple[str, ...]]] = {NAMESPACE_INDEX: {}}
        self._generation = 0  # counts add_index: a Prepared of an older one is re-indexed
        for name, fn in (indexers or {}).items():
            self.add_index(name, fn)

    # -- indexes ------------------------------------------------------------------------

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Add an index; it is built over the objects already stored.

        Raises ValueError if ``name`` is taken: silently replacing an index
        another controller relies on would change its answers.
        """
        if name in self._funcs:
            raise ValueError(f"index {name!r} already exists on this store")
        self._funcs[name] = fn
        self._indexes[name] = {}
        self._values[name] = {}
        self._generation += 1
        for key, raw in self._objects.items():
            self._index_one(name, key, self._values_of(fn, orjson.loads(raw)))

    def index_names(self) -> Names:
        return list(self._funcs)

    @staticmethod
    def _values_of(fn: IndexFunc, obj: Mapping[str, Any]) -> tuple[str, ...]:
        return tuple(map(_intern, dict.fromkeys(fn(obj))))

    def _index_one(self, name: str, key: ObjectKey, values: tuple[str, ...]) -> None:
        if not values:
            return
        self._values[name][key] = values
        index = self._indexes[name]
        for value in values:
            bucket = index.get(value)
            if bucket is None:
                index[value] = {key}
            else:
                bucket.add(key)

    def _unindex(self, key: ObjectKey) -> None:
        for name, values_by_key in self._values.items():
            values = values_by_key.pop(key, None)
            if not values:
                continue
            index = self._indexes[name]
            for value in values:
                bucket = index[value]
                bucket.discard(key)
                if not bucket:
                    del index[value]

    # -- writes ---------------------------------------------------------------------------

    def put(self, obj: Mapping[str, Any], raw: bytes | None = None) -> bytes | None:
        """Store ``obj`` (its JSON is ``raw`` if already encoded); returns the previous JSON."""
        return self.put_prepared(object_key(obj), self.prepare(obj, raw))

    def prepare(self, obj: Mapping[str, Any], raw: bytes | None = None) -> Prepared:
        """``obj``'s JSON (``raw`` if already encoded) and index values, to store later
        with :meth:`put_prepared` without ``obj`` (an index added in between is computed
        then, from the JSON). Raises ValueError as :func:`encode` does."""
        # A right-sized copy: orjson's output (and a slice of a read buffer)
        # can hold three times the bytes it shows.
        encoded = bytes(memoryview(raw if raw is not None else encode(obj)))
        values = tuple(self._values_of(fn, obj) for fn in self._funcs.values())
        return Prepared(encoded, values, self._generation)

    def put_prepared(self, key: ObjectKey, prepared: Prepared) -> bytes | None:
        """Store what :meth:`prepare` made under ``key``; returns the previous JSON."""
        encoded = prepared.raw
        values = prepared._values
        if prepared._generation != self._generation:  # an index was added since
            obj = orjson.loads(encoded)
            values = tuple(self._values_of(fn, obj) for fn in self._funcs.values())
        previous = self._objects.get(key)
        if previous is not None:
            self._unindex(key)
            self._nbytes -= len(previous)
        self._objects[key] = encoded
        self._nbytes += len(encoded)
        for name, name_values in zip(self._funcs, values, strict=True):
            self._index_one(name, key, name_values)
        return previous

    def delete(self, key: ObjectKey) -> bytes | None:
        """Forget ``key``; returns its last JSON, or None if it was not stored."""
        previous = self._objects.pop(key, None)
        if previous is not None:
            self._unindex(key)
            self._nbytes -= len(previous)
        return previous

    def clear(self) -> None:
        self._objects.clear()
        self._nbytes = 0
        for name in self._funcs:
            self._indexes[name] = {}
            self._values[name] = {}

    # -- reads ------------------------------------------------------------------------------

    def get(self, key: ObjectKey) -> Obj | None:
        """A fresh decoded copy of the object, or None."""
        raw = self._objects.get(key)
        return orjson.loads(raw) if raw is not None else None

    def get_raw(self, key: ObjectKey) -> bytes | None:
        """The stored JSON bytes (no decoding), or None."""
        return self._objects.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    @property
    def nbytes(self) -> int:
        """The JSON bytes held for the stored objects (what the cache keeps of them)."""
        return self._nbytes

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[ObjectKey]:
        """The stored keys, as a snapshot: the store may change while iterating."""
        return iter(list(self._objects))

    def items_raw(self) -> Iterator[tuple[ObjectKey, bytes]]:
        return iter(list(self._objects.items()))

    def list(self, namespace: str | None = None) -> Objs:
        """Fresh copies of every object (of ``namespace``), sorted by key."""
        keys = self.index_keys(NAMESPACE_INDEX, namespace) if namespace is not None else (
            self._objects.keys())
        return [orjson.loads(self._objects[k]) for k in sorted(keys)]

    def index_keys(self, name: str, value: str) -> set[ObjectKey]:
        """The keys whose object produced ``value`` for index ``name`` (a copy)."""
        index = self._indexes.get(name)
        if index is None:
            raise KeyError(f"no index named {name!r} (known: {', '.join(self._funcs)})")
        return set(index.get(value, ()))

    def first_index_keys(self, name: str, value: str, limit: int) -> Keys:
        """The ``limit`` smallest keys of :meth:`index_keys`, sorted, without copying the rest.

        A stable choice: while the index holds the same keys, the answer is
        the same, whatever was added or removed in between elsewhere.
        """
        index = self._indexes.get(name)
        if index is None:
            raise KeyError(f"no index named {name!r} (known: {', '.join(self._funcs)})")
        return heapq.nsmallest(max(limit, 0), index.get(value, ()))

    def by_index(self, name: str, value: str) -> Objs:
        """Fresh copies of the objects whose index ``name`` includes ``value``, by key."""
        return [orjson.loads(self._objects[k]) for k in sorted(self.index_keys(name, value))]

    def index_values(self, name: str) -> Names:
        """Every value index ``name`` currently holds."""
        return list(self._indexes[name])

    def _check_invariants(self) -> None:
        assert self._nbytes == sum(map(len, self._objects.values())), "nbytes drifted"
        for name, index in self._indexes.items():
            values_by_key = self._values[name]
            for value, keys in index.items():
                assert keys, f"index {name}: empty bucket for {value!r}"
                for key in keys:
                    assert key in self._objects, f"index {name}: stale key {key}"
                    assert value in values_by_key[key]
            for key, values in values_by_key.items():
                assert key in self._objects
                expected = tuple(dict.fromkeys(self._funcs[name](orjson.loads(
                    self._objects[key]))))
                assert values == expected, f"index {name}: {key} has {values} not {expected}"
                for value in values:
                    assert key in index[value]
