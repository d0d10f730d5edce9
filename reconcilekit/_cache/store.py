"""``Store``: the objects an informer has seen, held compactly, with named indexes.

Objects are kept as their compact JSON bytes (what the API server sent, after
the informer's transform), not as dicts: a cached Pod costs about its JSON
size instead of 4-5 times that. A read answers in one of two ways:

* a copy (the default): a fresh dict decoded from the JSON, which the caller
  may change freely;
* shared (``shared=True``): the store's own decoded object, the same for every
  reader until the object changes, handed out without copying (what
  client-go's listers do). Shared objects are kept for the recently read part
  of the store, bounded by ``shared_read_memory`` (estimated as
  :data:`DECODED_BYTES_PER_JSON_BYTE` times their JSON): a read decodes only
  on a miss. The caller must not change them; a :class:`MutationDetector`
  given to the store proves it in tests.

Indexes map an index value to the set of object keys that produce it. They
are computed once, when an object is stored, from the decoded object, so
``by_index`` costs O(matches), independent of how many objects are stored.
Labels are kept beside the JSON, one dict per distinct set of labels shared
by every object that carries it, so a label selector is evaluated once per
distinct label set and decodes only the objects it selects. The sorted keys
of an index value are kept until a key joins or leaves it, so a read does not
sort what it sorted before.

An object can also be prepared (:meth:`Store.prepare`: encoded and indexed
while its dict is at hand) and stored later with :meth:`Store.put_prepared`: an
informer's relist prepares each page as it arrives, drops the dicts, and
stores the whole list at the end, so it never holds more than a page of
decoded objects. Index values are strings; equal ones are held once
(interned), as the same few namespaces and node names recur in every object.

Many objects decoded at once (a list, a miss of many shared objects) are
decoded with the garbage collector paused: decoding allocates only acyclic
dicts and lists, and a collection triggered part-way through would traverse
the heap again and again for nothing (measured: four times the cost of the
decoding itself for 30,000 Pods).
"""

from __future__ import annotations

import heapq
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

import orjson

from .._foundations.collector import collector_paused
from .._foundations.objects import Obj, ObjectKey, object_key
from .._foundations.selectors import LabelSelector
from .mutation_detector import MutationDetector

__all__ = ["DECODED_BYTES_PER_JSON_BYTE", "DEFAULT_SHARED_READ_MEMORY", "NAMESPACE_INDEX",
           "IndexFunc", "Prepared", "Store"]

Objs = list[Obj]  # spelled once here: the class below has a method named ``list``
Names = list[str]
Keys = list[ObjectKey]
IndexFunc = Callable[[Mapping[str, Any]], Iterable[str]]
LabelItems = tuple[str, ...]  # key, value, key, value, ... sorted by key
NAMESPACE_INDEX = "namespace"
# What a decoded object costs in memory for each byte of its JSON (a realistic Pod:
# 2,698 bytes of JSON, 13,164 bytes of dicts, lists and strings).
DECODED_BYTES_PER_JSON_BYTE: Final = 5
DEFAULT_SHARED_READ_MEMORY: Final = 64 * 1024**2
_PAUSE_GC_FROM: Final = 64  # objects decoded at once
_CANONICAL_MAX: Final = 4096  # distinct tuples remembered to hold equal ones once


_NAMESPACE_ONLY: Final[tuple[tuple[str, ...], ...]] = ((),)  # a store's values, no index but it


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


def _label_items(obj: Mapping[str, Any]) -> LabelItems:
    labels = (obj.get("metadata") or {}).get("labels")
    if not labels or not isinstance(labels, Mapping):
        return ()
    flat: list[str] = []
    for k in sorted(k for k in labels if type(k) is str):
        v = labels[k]
        if type(v) is str:
            flat += (_intern(k), _intern(v))
    return tuple(flat)


def decode_many(raws: Iterable[bytes], count: int) -> Objs:
    """``raws`` decoded (``count`` of them; see :func:`_gc_paused`)."""
    return _gc_paused(count, lambda: [orjson.loads(raw) for raw in raws])


def _gc_paused(count: int, decode: Callable[[], Objs]) -> Objs:
    """``decode()``, with the garbage collector paused when it makes ``count`` objects,
    many (see the module docstring): decoded objects are acyclic, freed by reference
    counting. A collector paused by someone else stays paused."""
    if count < _PAUSE_GC_FROM:
        return decode()
    with collector_paused():
        return decode()


class _LabelSet:
    """One distinct set of labels and the keys of the objects carrying it."""

    __slots__ = ("items", "keys", "labels", "sorted_keys")

    def __init__(self, items: LabelItems) -> None:
        self.items = items
        self.labels: Mapping[str, str] = dict(zip(items[::2], items[1::2], strict=True))
        self.keys: set[ObjectKey] = set()
        self.sorted_keys: tuple[ObjectKey, ...] | None = None  # None: not sorted since a change

    def add(self, key: ObjectKey) -> None:
        self.keys.add(key)
        self.sorted_keys = None

    def discard(self, key: ObjectKey) -> None:
        self.keys.discard(key)
        self.sorted_keys = None

    def in_order(self) -> tuple[ObjectKey, ...]:
        """The keys, sorted (kept until one joins or leaves)."""
        if self.sorted_keys is None:
            self.sorted_keys = tuple(sorted(self.keys))
        return self.sorted_keys


Prepared = tuple[bytes, tuple[tuple[str, ...], ...], LabelItems, int]
"""An object ready to be stored (see :meth:`Store.prepare`): its JSON, its values for
each index (in the order of the store's indexes), its label items, and the store's
index generation they were computed for. A plain tuple of strings, bytes and ints:
the garbage collector stops tracking it at its first collection, so the 100,000
objects of a list, prepared before they are stored, add nothing to the collections
that run meanwhile (an instance of a class of its own would be walked by each)."""


class Store:
    """Objects by :class:`ObjectKey`, as compact JSON, with named indexes and labels.

    Invariants (whenever no method is running):
      * for every index ``name`` and every stored key ``k``,
        ``k in self._indexes[name][v]`` exactly for the values ``v`` in
        ``self._values[name][k]``, which are what the index function returned
        for the object stored under ``k`` (for the namespace index, not held:
        ``(k.namespace,)``, one dict entry less per object);
      * no index holds an empty set or a key that is not stored;
      * every stored key is in exactly one label set, the one of its object's
        labels, and no label set is empty;
      * a sorted key list kept for an index value (or for every key) holds
        exactly that bucket's keys, in order;
      * a shared object is held only for a stored key and equals the decoding
        of its JSON unless a reader mutated it (what a detector catches); the
        estimated memory of the newer generation stays within half of
        ``shared_read_memory`` (plus one object).
    Not thread-safe: one event loop owns a store.
    """

    __slots__ = ("_canonical", "_detector", "_funcs", "_generation", "_hot", "_hot_bytes",
                 "_hot_limit", "_indexes", "_label_memo", "_label_of", "_label_sets", "_lists",
                 "_name",
                 "_nbytes", "_objects", "_old", "_old_bytes", "_rotations", "_sorted",
                 "_values")

    def __init__(self, indexers: Mapping[str, IndexFunc] | None = None, *,
                 shared_read_memory: int = DEFAULT_SHARED_READ_MEMORY,
                 detector: MutationDetector | None = None, name: str = "objects") -> None:
        """``shared_read_memory``: bytes the objects kept for shared reads may take
        (estimated; 0 keeps none: each shared read decodes). ``detector`` records every
        object handed out shared; ``name`` names the store's resource in its messages."""
        if shared_read_memory < 0:
            raise ValueError(f"shared_read_memory must be >= 0 bytes, got {shared_read_memory}")
        self._objects: dict[ObjectKey, bytes] = {}
        self._nbytes = 0  # sum of len() of _objects' values
        self._funcs: dict[str, IndexFunc] = {NAMESPACE_INDEX: _namespace_index}
        self._indexes: dict[str, dict[str, set[ObjectKey]]] = {NAMESPACE_INDEX: {}}
        self._values: dict[str, dict[ObjectKey, tuple[str, ...]]] = {NAMESPACE_INDEX: {}}
        self._generation = 0  # counts add_index: a Prepared of an older one is re-indexed
        self._label_sets: dict[LabelItems, _LabelSet] = {}
        self._label_of: dict[ObjectKey, _LabelSet] = {}
        # Label and index value tuples seen lately, to hold equal ones once (bounded).
        self._canonical: dict[tuple[str, ...], tuple[str, ...]] = {}
        # Labels as objects carry them (item pairs, in their order) -> their items (bounded).
        self._label_memo: dict[tuple[tuple[Any, Any], ...], LabelItems] = {}
        # (index, value) -> its keys sorted; None -> every key sorted
        self._sorted: dict[tuple[str, str] | None, tuple[ObjectKey, ...]] = {}
        # The same buckets' shared objects, in that order, while each is unchanged and kept.
        self._lists: dict[tuple[str, str] | None, Objs] = {}
        # Shared objects, in two generations: a hit in the old one moves to the new one;
        # when the new one is full it becomes the old one, and the old one is dropped.
        self._hot: dict[ObjectKey, Obj] = {}
        self._old: dict[ObjectKey, Obj] = {}
        self._hot_bytes = self._old_bytes = 0
        self._hot_limit = shared_read_memory // 2
        self._rotations = 0
        self._detector = detector
        self._name = name
        for index_name, fn in (indexers or {}).items():
            self.add_index(index_name, fn)

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
        if name != NAMESPACE_INDEX:
            self._values[name][key] = values
        index, stale, lists = self._indexes[name], self._sorted, self._lists
        for value in values:
            bucket = index.get(value)
            if bucket is None:
                index[value] = {key}
            else:
                bucket.add(key)
            if stale:
                stale.pop((name, value), None)
            if lists:
                lists.pop((name, value), None)

    def _unindex_one(self, name: str, key: ObjectKey) -> None:
        """(Only for a stored key.)"""
        values = ((key.namespace,) if name == NAMESPACE_INDEX
                  else self._values[name].pop(key, None))
        if not values:
            return
        index, stale, lists = self._indexes[name], self._sorted, self._lists
        for value in values:
            bucket = index[value]
            bucket.discard(key)
            if not bucket:
                del index[value]
            if stale:
                stale.pop((name, value), None)
            if lists:
                lists.pop((name, value), None)

    def _label(self, key: ObjectKey, items: LabelItems) -> None:
        """File ``key`` under the label set ``items`` (leaving the one it was in)."""
        held = self._label_of.get(key)
        if held is not None:
            if held.items == items:
                return
            self._unlabel(key, held)
        label_set = self._label_sets.get(items)
        if label_set is None:
            label_set = self._label_sets[items] = _LabelSet(items)
        label_set.add(key)
        self._label_of[key] = label_set

    def _unlabel(self, key: ObjectKey, label_set: _LabelSet) -> None:
        label_set.discard(key)
        if not label_set.keys:
            del self._label_sets[label_set.items]
        del self._label_of[key]

    # -- writes ---------------------------------------------------------------------------

    def put(self, obj: Mapping[str, Any], raw: bytes | None = None) -> bytes | None:
        """Store ``obj`` (its JSON is ``raw`` if already encoded); returns the previous JSON."""
        return self.put_prepared(object_key(obj), self.prepare(obj, raw))

    def prepare(self, obj: Mapping[str, Any], raw: bytes | None = None) -> Prepared:
        """``obj``'s JSON (``raw`` if already encoded), index values and labels, to store
        later with :meth:`put_prepared` without ``obj`` (an index added in between is
        computed then, from the JSON). Raises ValueError as :func:`encode` does."""
        # A right-sized copy: orjson's output (and a slice of a read buffer)
        # can hold three times the bytes it shows.
        encoded = bytes(memoryview(raw if raw is not None else encode(obj)))
        return encoded, self._index_values(obj), self._labels_held(obj), self._generation

    def _labels_held(self, obj: Mapping[str, Any]) -> LabelItems:
        """``obj``'s label items, held once: the labels as they come (in their order)
        are remembered with their items, so a set of labels seen lately costs one
        lookup instead of a sort and an interning of each key and value."""
        labels = (obj.get("metadata") or {}).get("labels")
        if not labels or type(labels) is not dict:
            return self._held_once(_label_items(obj))
        try:
            seen = tuple(labels.items())
            held = self._label_memo.get(seen)
        except TypeError:  # a value that cannot be hashed (no label of a valid object)
            return self._held_once(_label_items(obj))
        if held is None:
            held = self._held_once(_label_items(obj))
            memo = self._label_memo
            if len(memo) >= _CANONICAL_MAX:
                memo.clear()
            memo[seen] = held
        return held

    def _index_values(self, obj: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
        """``obj``'s values for each index, equal ones held once; none for the namespace
        index (the key's namespace is its value)."""
        if len(self._funcs) == 1:  # the namespace index alone (held by the keys)
            return _NAMESPACE_ONLY
        return tuple(() if name == NAMESPACE_INDEX else self._held_once(self._values_of(fn, obj))
                     for name, fn in self._funcs.items())

    def _held_once(self, values: tuple[str, ...]) -> tuple[str, ...]:
        """An equal tuple already held, if one was seen lately, else ``values`` (a relist
        prepares a whole list before storing any of it: its tuples would be held apart)."""
        if not values:
            return ()
        canonical = self._canonical
        held = canonical.get(values)
        if held is not None:
            return held
        if len(canonical) >= _CANONICAL_MAX:
            canonical.clear()
        canonical[values] = values
        return values

    def put_prepared(self, key: ObjectKey, prepared: Prepared) -> bytes | None:
        """Store what :meth:`prepare` made under ``key``; returns the previous JSON."""
        encoded, values, labels, generation = prepared
        if generation != self._generation:  # an index was added since
            values = self._index_values(orjson.loads(encoded))
        previous = self._objects.get(key)
        if previous is not None:
            self._nbytes -= len(previous)
            self._drop_shared(key, previous)
        else:
            self._sorted.pop(None, None)
            self._lists.pop(None, None)
        self._objects[key] = encoded
        self._nbytes += len(encoded)
        held = self._values
        for name, name_values in zip(self._funcs, values, strict=True):
            if name == NAMESPACE_INDEX:
                if previous is None:
                    self._index_one(name, key, (key.namespace,))
                continue
            if previous is not None:
                if held[name].get(key, ()) == name_values:
                    continue  # most updates change no index value: the sorted lists stay
                self._unindex_one(name, key)
            self._index_one(name, key, name_values)
        self._label(key, labels)
        return previous

    def delete(self, key: ObjectKey) -> bytes | None:
        """Forget ``key``; returns its last JSON, or None if it was not stored."""
        previous = self._objects.pop(key, None)
        if previous is not None:
            for name in self._funcs:
                self._unindex_one(name, key)
            self._unlabel(key, self._label_of[key])
            self._nbytes -= len(previous)
            self._drop_shared(key, previous)
            self._sorted.pop(None, None)
            self._lists.pop(None, None)
        return previous

    def clear(self) -> None:
        self._objects.clear()
        self._nbytes = 0
        for name in self._funcs:
            self._indexes[name] = {}
            self._values[name] = {}
        self._label_sets.clear()
        self._label_of.clear()
        self._canonical.clear()
        self._label_memo.clear()
        self._sorted.clear()
        self._lists.clear()
        self._hot, self._old = {}, {}
        self._hot_bytes = self._old_bytes = 0

    # -- reads ------------------------------------------------------------------------------

    def get(self, key: ObjectKey | tuple[str, str], *, shared: bool = False) -> Obj | None:
        """The object, or None: a fresh decoded copy, or with ``shared`` the store's own
        (which the caller must not change). ``key`` may be a plain ``(namespace, name)``
        tuple: an :class:`ObjectKey` is one, equal and hashed alike."""
        key = cast(ObjectKey, key)  # found as one; stored as one by _miss
        raw = self._objects.get(key)
        if raw is None:
            return None
        if not shared:
            return orjson.loads(raw)  # type: ignore[no-any-return]
        obj = self._hot.get(key)
        return obj if obj is not None else self._miss(key, raw)

    def get_raw(self, key: ObjectKey) -> bytes | None:
        """The stored JSON bytes (no decoding), or None."""
        return self._objects.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    @property
    def nbytes(self) -> int:
        """The JSON bytes held for the stored objects (what the cache keeps of them)."""
        return self._nbytes

    @property
    def shared_nbytes(self) -> int:
        """The estimated memory of the objects kept for shared reads."""
        return self._hot_bytes + self._old_bytes

    def __len__(self) -> int:
        return len(self._objects)

    def __iter__(self) -> Iterator[ObjectKey]:
        """The stored keys, as a snapshot: the store may change while iterating."""
        return iter(list(self._objects))

    def items_raw(self) -> Iterator[tuple[ObjectKey, bytes]]:
        return iter(list(self._objects.items()))

    def list(self, namespace: str | None = None, *, shared: bool = False) -> Objs:
        """Every object (of ``namespace``), sorted by key: fresh copies, or with ``shared``
        the store's own."""
        return self.read(namespace=namespace, shared=shared)

    def by_index(self, name: str, value: str, *, shared: bool = False) -> Objs:
        """The objects whose index ``name`` includes ``value``, by key (copies, or shared)."""
        return self.read(index=(name, value), shared=shared)

    def read(self, *, namespace: str | None = None, index: tuple[str, str] | None = None,
             labels: LabelSelector | None = None, shared: bool = False) -> Objs:
        """The objects :meth:`select` selects, in its order: copies, or the store's own.

        A shared read of one whole bucket (an index value, a namespace, or
        everything) keeps its list of objects until one of them changes,
        leaves or is dropped from the kept objects: read again, it is a copy
        of that list, with no lookup per object.
        """
        if not shared:
            return self.objects(self.select(namespace=namespace, index=index, labels=labels))
        whole = labels is None or labels.is_empty
        if whole and index is not None and namespace is None:
            bucket: tuple[str, str] | None = index
        elif whole and index is None and namespace is not None:
            bucket = (NAMESPACE_INDEX, namespace)
        elif whole and index is None:
            bucket = None
        else:
            return self.objects(self.select(namespace=namespace, index=index, labels=labels),
                                shared=True)
        kept = self._lists.get(bucket)
        if kept is not None:
            return list(kept)
        rotations = self._rotations
        found = self.objects(self.select(namespace=namespace, index=index), shared=True)
        if found and rotations == self._rotations and self._hot_limit:  # each one is kept
            self._lists[bucket] = found
            return list(found)
        return found

    def select(self, *, namespace: str | None = None, index: tuple[str, str] | None = None,
               labels: LabelSelector | None = None) -> Sequence[ObjectKey]:
        """The keys of the objects in ``namespace``, holding ``index[1]`` in the index
        named ``index[0]`` and matching ``labels``, sorted; decodes nothing.

        Raises KeyError for an index that does not exist. Costs O(matches) for an
        index value or namespace read again unchanged, and a label selector's
        O(distinct label sets or candidates, whichever is fewer).
        """
        if index is not None:
            keys: Sequence[ObjectKey] = self._sorted_bucket(*index)
            if namespace is not None:
                keys = [k for k in keys if k.namespace == namespace]
        elif namespace is not None:
            keys = self._sorted_bucket(NAMESPACE_INDEX, namespace)
        elif labels is not None and not labels.is_empty:
            return self._labelled(labels)
        else:
            keys = self._sorted.get(None) or ()
            if len(keys) != len(self._objects):
                keys = self._sorted[None] = tuple(sorted(self._objects))
        if labels is None or labels.is_empty:
            return keys
        label_of = self._label_of
        if len(self._label_sets) <= len(keys):
            matching = {id(s) for s in self._label_sets.values() if labels.matches(s.labels)}
            return [k for k in keys if id(label_of[k]) in matching]
        return [k for k in keys if labels.matches(label_of[k].labels)]

    def _sorted_bucket(self, name: str, value: str) -> tuple[ObjectKey, ...]:
        index = self._indexes.get(name)
        if index is None:
            raise KeyError(f"no index named {name!r} (known: {', '.join(self._funcs)})")
        got = self._sorted.get((name, value))
        if got is None:
            got = tuple(sorted(index.get(value, ())))
            if got:
                self._sorted[name, value] = got
        return got

    def _labelled(self, labels: LabelSelector) -> Sequence[ObjectKey]:
        """Every key whose labels ``labels`` matches, sorted."""
        parts = []
        for label_set in self._label_sets.values():
            if labels.matches(label_set.labels):
                parts.append(label_set.in_order())
        if len(parts) == 1:
            return parts[0]
        # Sorted runs: the sort merges them.
        return sorted(k for part in parts for k in part)

    def objects(self, keys: Sequence[ObjectKey], *, shared: bool = False) -> Objs:
        """The objects of ``keys`` (each stored), in that order: fresh copies, or with
        ``shared`` the store's own (decoding only those not kept)."""
        raws = self._objects
        if not shared:
            return decode_many((raws[k] for k in keys), len(keys))
        hot, miss = self._hot, self._miss
        return _gc_paused(len(keys), lambda: [
            o if (o := hot.get(k)) is not None else miss(k, raws[k]) for k in keys])

    def _miss(self, key: ObjectKey, raw: bytes) -> Obj:
        """The shared object of ``key`` (stored as ``raw``), not in the newer generation."""
        if type(key) is tuple:  # a plain tuple looked up by get: keys held are ObjectKeys
            key = ObjectKey(*key)
        obj = self._old.pop(key, None)
        size = len(raw) * DECODED_BYTES_PER_JSON_BYTE
        if obj is not None:
            self._old_bytes -= size
        else:
            obj = orjson.loads(raw)
            if self._detector is not None:
                self._detector.record(self._name, key, raw, obj)
        if self._hot_limit == 0:
            return obj
        if self._hot_bytes + size > self._hot_limit and self._hot:
            self._old, self._old_bytes = self._hot, self._hot_bytes
            self._hot, self._hot_bytes = {}, 0
            self._rotations += 1
            self._lists.clear()  # they may hold what the old generation drops
        self._hot[key] = obj
        self._hot_bytes += size
        return obj

    def _drop_shared(self, key: ObjectKey, raw: bytes) -> None:
        """``key``'s object changed or left (it was stored as ``raw``): forget its shared
        object (readers holding it keep theirs)."""
        size = len(raw) * DECODED_BYTES_PER_JSON_BYTE
        if self._hot.pop(key, None) is not None:
            self._hot_bytes -= size
        elif self._old.pop(key, None) is not None:
            self._old_bytes -= size
        else:
            return  # no shared object: no list holds it
        if self._lists:  # the lists of the buckets holding it
            self._lists.pop(None, None)
            self._lists.pop((NAMESPACE_INDEX, key.namespace), None)
            for name, values_by_key in self._values.items():
                for value in values_by_key.get(key, ()):
                    self._lists.pop((name, value), None)

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

    def index_values(self, name: str) -> Names:
        """Every value index ``name`` currently holds."""
        return list(self._indexes[name])

    def labels_of(self, key: ObjectKey) -> Mapping[str, str] | None:
        """The labels of the stored object ``key`` (read-only: shared with every object
        carrying the same ones), or None if it is not stored."""
        label_set = self._label_of.get(key)
        return None if label_set is None else label_set.labels

    def _check_invariants(self) -> None:
        assert self._nbytes == sum(map(len, self._objects.values())), "nbytes drifted"
        for name, index in self._indexes.items():
            values_by_key = self._values[name]
            if name == NAMESPACE_INDEX:
                assert not values_by_key, "namespace index values are not held"
                values_by_key = {k: (k.namespace,) for k in self._objects}
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
        assert self._label_of.keys() == self._objects.keys(), "label sets drifted"
        for items, label_set in self._label_sets.items():
            assert label_set.keys and label_set.items == items
            for key in label_set.keys:
                assert self._label_of[key] is label_set
                assert _label_items(orjson.loads(self._objects[key])) == items
            if label_set.sorted_keys is not None:
                assert list(label_set.sorted_keys) == sorted(label_set.keys)
        for which, held in self._sorted.items():
            bucket = self._objects.keys() if which is None else self._indexes[which[0]].get(
                which[1], set())
            assert list(held) == sorted(bucket), f"sorted keys of {which} are stale"
        for which, objs in self._lists.items():
            in_order = self._sorted.get(which)
            assert in_order is not None and len(in_order) == len(objs), f"kept list of {which}"
            for key, obj in zip(in_order, objs, strict=True):
                assert obj is self._hot.get(key, self._old.get(key)), f"{which}: {key} stale"
        for generation in (self._hot, self._old):
            for key, obj in generation.items():
                assert key in self._objects and obj == orjson.loads(self._objects[key])
        assert self._hot_bytes == sum(len(self._objects[k]) for k in self._hot) * \
            DECODED_BYTES_PER_JSON_BYTE
        assert self._old_bytes == sum(len(self._objects[k]) for k in self._old) * \
            DECODED_BYTES_PER_JSON_BYTE
        assert not (self._hot.keys() & self._old.keys())
