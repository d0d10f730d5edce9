"""Keys waiting for a deadline: the heap behind ``WorkQueue.add_after``."""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Any, Final, Generic, TypeVar

__all__ = ["DelayHeap"]

K = TypeVar("K", bound=Hashable)

# Entry layout: [deadline, seq, key, rate_limited, priority]. ``seq`` is unique, so two
# entries never compare their keys. A cancelled entry keeps its place in the
# heap with its key slot overwritten by _CANCELLED: it can never fire, it does
# not hold on to the key object, and no index refers to it.
_DEADLINE: Final = 0
_KEY: Final = 2
_RATE_LIMITED: Final = 3
_PRIORITY: Final = 4
_CANCELLED: Final = object()
_COMPACT_MIN: Final = 64


class DelayHeap(Generic[K]):
    """Keys with a deadline, earliest first, at most one live deadline per key, each
    with the priority it is to be pending at (the highest it was scheduled with).

    Invariants (whenever no method is running):
      * ``index`` maps every waiting key to its one live entry in ``_heap``.
      * every other entry in ``_heap`` is cancelled: its key slot is
        ``_CANCELLED``; ``_cancelled`` counts them.
      * a cancelled entry never fires, never counts as waiting and never
        keeps a later ``schedule`` of the same key from taking effect
        (the KWOK delayed-work incident, docs/reliability.md): the index forgets a key the moment
        its entry is cancelled or fires.
      * cancelled entries are at most ``max(_COMPACT_MIN, live entries)``, so
        the heap is never more than about twice the number of waiting keys.
    """

    __slots__ = ("_cancelled", "_heap", "_seq", "index")

    def __init__(self) -> None:
        self._heap: list[list[Any]] = []
        self.index: dict[K, list[Any]] = {}
        self._seq = 0
        self._cancelled = 0

    def __len__(self) -> int:
        return len(self.index)

    def __contains__(self, key: object) -> bool:
        return key in self.index

    def schedule(self, key: K, deadline: float, *, rate_limited: bool = False,
                 priority: int = 0) -> bool:
        """Make ``key`` due at ``deadline`` unless it is already due earlier.

        The earlier deadline wins, and the higher priority. ``rate_limited``
        is sticky: once a waiting key has been scheduled by a rate-limited add
        it stays marked until it fires or is cancelled. Returns True if the
        key's deadline changed.
        """
        entry = self.index.get(key)
        if entry is not None:
            if rate_limited:
                entry[_RATE_LIMITED] = True
            if entry[_PRIORITY] > priority:
                priority = entry[_PRIORITY]
            else:
                entry[_PRIORITY] = priority
            if entry[_DEADLINE] <= deadline:
                return False
            rate_limited = rate_limited or entry[_RATE_LIMITED]
            self._cancel_entry(entry)
        self._seq += 1
        entry = [deadline, self._seq, key, rate_limited, priority]
        self.index[key] = entry
        heapq.heappush(self._heap, entry)
        return True

    def raise_priority(self, key: K, priority: int) -> None:
        """Raise waiting ``key``'s priority to ``priority`` if that is higher."""
        entry = self.index[key]
        if entry[_PRIORITY] < priority:
            entry[_PRIORITY] = priority

    def is_rate_limited(self, key: K) -> bool:
        """True if ``key`` is waiting because of a rate-limited add."""
        entry = self.index.get(key)
        return entry is not None and bool(entry[_RATE_LIMITED])

    def cancel(self, key: K) -> int | None:
        """Forget ``key``'s deadline. Returns its priority if it was waiting, else None."""
        entry = self.index.pop(key, None)
        if entry is None:
            return None
        entry[_KEY] = _CANCELLED
        self._cancelled += 1
        self._maybe_compact()
        return int(entry[_PRIORITY])

    def pop_due(self, now: float) -> list[tuple[K, float, int]]:
        """Remove the keys due at ``now``; return them with their deadlines and
        priorities, earliest first."""
        heap = self._heap
        due: list[tuple[K, float, int]] = []
        while heap and heap[0][_DEADLINE] <= now:
            deadline, _, key, _, priority = heapq.heappop(heap)
            if key is _CANCELLED:
                self._cancelled -= 1
            else:
                del self.index[key]
                due.append((key, deadline, priority))
        if due:
            self._maybe_compact()
        return due

    def next_deadline(self) -> float | None:
        """The earliest live deadline, or None if no key is waiting."""
        heap = self._heap
        while heap and heap[0][_KEY] is _CANCELLED:
            heapq.heappop(heap)
            self._cancelled -= 1
        return heap[0][_DEADLINE] if heap else None

    def deadline(self, key: K) -> float | None:
        """``key``'s deadline, or None if it is not waiting."""
        entry = self.index.get(key)
        return None if entry is None else float(entry[_DEADLINE])

    def priority(self, key: K) -> int | None:
        """The priority ``key`` will be pending at, or None if it is not waiting."""
        entry = self.index.get(key)
        return None if entry is None else int(entry[_PRIORITY])

    def clear(self) -> None:
        self._heap.clear()
        self.index.clear()
        self._cancelled = 0

    def _cancel_entry(self, entry: list[Any]) -> None:
        del self.index[entry[_KEY]]
        entry[_KEY] = _CANCELLED
        self._cancelled += 1
        self._maybe_compact()

    def _maybe_compact(self) -> None:
        if self._cancelled > _COMPACT_MIN and self._cancelled > len(self.index):
            self._heap = [e for e in self._heap if e[_KEY] is not _CANCELLED]
            heapq.heapify(self._heap)
            self._cancelled = 0

    def _check_invariants(self) -> None:
        heap = self._heap
        live = [e for e in heap if e[_KEY] is not _CANCELLED]
        assert len(live) == len(self.index), (len(live), len(self.index))
        for entry in live:
            assert self.index[entry[_KEY]] is entry, entry
        assert len(heap) - len(live) == self._cancelled, (len(heap), len(live), self._cancelled)
        assert self._cancelled <= max(_COMPACT_MIN, len(self.index)), self._cancelled
        for i in range(1, len(heap)):
            parent = heap[(i - 1) // 2]
            assert parent[:2] <= heap[i][:2], "heap order"
