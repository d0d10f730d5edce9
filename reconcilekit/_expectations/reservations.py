"""``Reservations``: in-process exclusive holds on keys, for work in flight.

Several workers of one controller reconcile different keys at once, but two
of them can still reach for the same *other* object: two claims binding the
oldest free Pod, two jobs taking the same slot. One of the two writes loses
with a 409 Conflict, a retry, and a request the API server served for
nothing; with more workers there are more such races, so more concurrency
gets slower. Optimistic concurrency stays the guarantee across processes;
reservations remove the races inside one.

Expected flow::

    reservations: Reservations[tuple[str, str]] = Reservations()

    for candidate in candidates:
        if not reservations.try_reserve(candidate, me):
            continue                  # another worker of this process is on it
        try:
            ...                       # read, decide, write with its resourceVersion
        finally:
            reservations.release(candidate, me)

Guarantees:
  * at most one holder per key at a time; a holder may reserve the same key
    again (re-entrant) and one ``release`` frees it;
  * a hold never outlives ``ttl`` seconds on the injected clock: a task that
    dies without releasing blocks nobody for longer than that;
  * releasing a key one does not hold is a no-op (a late release after
    expiry cannot free another holder's reservation);
  * nothing is awaited: every operation is O(1) and safe between awaits of
    tasks on one event loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from contextlib import contextmanager
from typing import Final, Generic, TypeVar

from .._foundations.clock import Clock, SystemClock

__all__ = ["Reservations"]

K = TypeVar("K", bound=Hashable)

_SYSTEM_CLOCK: Final = SystemClock()


class Reservations(Generic[K]):
    """Exclusive, expiring holds on keys within one process."""

    def __init__(self, *, ttl: float = 30.0, clock: Clock = _SYSTEM_CLOCK) -> None:
        if ttl <= 0:
            raise ValueError(f"ttl must be > 0 seconds, got {ttl}")
        self.ttl = ttl
        self.clock = clock
        self._holds: dict[K, tuple[Hashable, float]] = {}  # key -> (holder, deadline)
        self.contended = 0  # how many try_reserve calls found the key held by another

    def try_reserve(self, key: K, holder: Hashable) -> bool:
        """Hold ``key`` for ``holder`` unless another holder has it; True if held now."""
        now = self.clock.monotonic()
        current = self._holds.get(key)
        if current is not None and current[0] != holder and current[1] > now:
            self.contended += 1
            return False
        self._holds[key] = (holder, now + self.ttl)
        return True

    def release(self, key: K, holder: Hashable) -> None:
        """Free ``key`` if ``holder`` holds it."""
        current = self._holds.get(key)
        if current is not None and current[0] == holder:
            del self._holds[key]

    def holder(self, key: K) -> Hashable | None:
        """Who holds ``key`` now, or None (an expired hold is nobody's)."""
        current = self._holds.get(key)
        if current is None or current[1] <= self.clock.monotonic():
            return None
        return current[0]

    @contextmanager
    def holding(self, key: K, holder: Hashable) -> Iterator[bool]:
        """``with reservations.holding(key, me) as held:`` reserve, and release on exit."""
        held = self.try_reserve(key, holder)
        try:
            yield held
        finally:
            if held:
                self.release(key, holder)

    def __len__(self) -> int:
        now = self.clock.monotonic()
        for key in [k for k, (_, deadline) in self._holds.items() if deadline <= now]:
            del self._holds[key]
        return len(self._holds)

    def __repr__(self) -> str:
        return f"Reservations(held={len(self)}, ttl={self.ttl})"
