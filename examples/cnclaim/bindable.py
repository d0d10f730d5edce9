"""Bindable Pods per pool, kept in binding order: the oldest first.

A claim takes "the Pod it held last, else the oldest" bindable Pod of its
pool. Reading the pool's Pods from the cache and sorting them on every
reconcile decodes every Pod of the pool each time: O(pool) per bind, which
a storm of N claims turns into O(N^2). This tracker follows the Pod
informer's events instead and keeps, per (namespace, pool), the bindable
Pods sorted by creation order, plus who held each last. Asking for the
candidates costs O(candidates); only the Pods actually tried are decoded.

Invariant: a Pod is listed exactly when its last event showed it bindable
(Idle, unclaimed, Running, not being deleted) in that pool; a relist
replays the differences, so the tracker converges with the cache.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from typing import Any

from reconcilekit import EventHandler

from .resources import (
    LAST_OWNER_ANNOTATION,
    POOL_LABEL,
    annotations_of,
    bindable,
    creation_order,
    labels,
    name_of,
    namespace_of,
)

__all__ = ["BindablePods"]

Obj = Mapping[str, Any]
_Order = tuple[str, str]  # (creationTimestamp, name)


class BindablePods:
    """Bindable Pods by (namespace, pool) in creation order, fed by Pod events."""

    def __init__(self) -> None:
        self._sorted: dict[tuple[str, str], list[_Order]] = {}
        self._last_owner: dict[tuple[str, str], dict[str, set[str]]] = {}
        # (namespace, pod) -> (pool, order, last owner) while listed
        self._entries: dict[tuple[str, str], tuple[str, _Order, str]] = {}

    def handler(self) -> EventHandler:
        return EventHandler(on_add=self._seen, on_update=lambda _, new: self._seen(new),
                            on_delete=self._gone)

    def _seen(self, pod: Obj) -> None:
        self._gone(pod)
        pool = labels(pod).get(POOL_LABEL, "")
        if not pool or not bindable(pod):
            return
        ns, name = namespace_of(pod), name_of(pod)
        order = creation_order(pod)
        owner = annotations_of(pod).get(LAST_OWNER_ANNOTATION, "")
        bisect.insort(self._sorted.setdefault((ns, pool), []), order)
        if owner:
            self._last_owner.setdefault((ns, pool), {}).setdefault(owner, set()).add(name)
        self._entries[(ns, name)] = (pool, order, owner)

    def _gone(self, pod: Obj) -> None:
        ns, name = namespace_of(pod), name_of(pod)
        entry = self._entries.pop((ns, name), None)
        if entry is None:
            return
        pool, order, owner = entry
        listed = self._sorted[(ns, pool)]
        del listed[bisect.bisect_left(listed, order)]
        if owner:
            held = self._last_owner[(ns, pool)][owner]
            held.discard(name)
            if not held:
                del self._last_owner[(ns, pool)][owner]

    def holds(self, namespace: str, pool: str, pod: str) -> bool:
        """Whether ``pod`` is bindable in ``pool`` now (as of the latest event)."""
        entry = self._entries.get((namespace, pod))
        return entry is not None and entry[0] == pool

    def count(self, namespace: str, pool: str) -> int:
        """How many bindable Pods ``pool`` has."""
        return len(self._sorted.get((namespace, pool), ()))

    def candidates(self, namespace: str, pool: str, claim: str) -> Iterator[str]:
        """Pod names to try for ``claim``: those it held last, then the oldest first.

        Iterates a snapshot (events may change the tracker while the caller
        awaits between candidates); the caller re-checks each Pod it tries.
        """
        mine = sorted(self._last_owner.get((namespace, pool), {}).get(claim, ()))
        yield from mine
        for _, name in list(self._sorted.get((namespace, pool), ())):
            if name not in mine:
                yield name
