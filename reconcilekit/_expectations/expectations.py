"""Expectations: "do not act on this key again until the cache has seen my own writes".

A controller that creates or deletes objects and then reads the cache again
before the cache has caught up would see too few (or too many) objects and act
twice. Expectations remember what it is waiting for. Each record has a
timeout, so a lost event never freezes a key (the CloneSet expectations incident,
docs/reliability.md).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Final, Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter

from .._foundations.clock import Clock, SystemClock
from .._foundations.metric_families import FamiliesPerRegistry

__all__ = [
    "ExpectationMetrics",
    "Expectations",
    "PrometheusExpectationMetrics",
]

K = TypeVar("K", bound=Hashable)

logger = logging.getLogger("reconcilekit.expectations")

DEFAULT_TIMEOUT: Final = 300.0
_SYSTEM_CLOCK: Final = SystemClock()


class ExpectationMetrics:
    """The hook expectations call when a record times out; it does nothing here."""

    __slots__ = ()

    def on_timeout(self) -> None:
        """A record timed out and was treated as satisfied."""


def _timeouts_counter(registry: CollectorRegistry) -> Counter:
    return Counter(
        "reconcilekit_expectation_timeouts_total",
        "Expectations that timed out before the cache observed them "
        "and were treated as satisfied",
        ("controller",),
        registry=registry,
    )


# One counter per registry: every controller's expectations share the manager's registry.
_TIMEOUTS: Final = FamiliesPerRegistry(_timeouts_counter, "expectations")


class PrometheusExpectationMetrics(ExpectationMetrics):
    """Counts timeouts in ``reconcilekit_expectation_timeouts_total{controller}`` on ``registry``.

    Any number of instances (one per controller, or one shared by a
    controller's :class:`Expectations` and
    :class:`~reconcilekit.ResourceVersionExpectations`) may use one registry.
    """

    __slots__ = ("_child", "controller")

    def __init__(self, registry: CollectorRegistry, controller: str) -> None:
        self.controller = controller
        self._child = _TIMEOUTS.of(registry).labels(controller)

    def on_timeout(self) -> None:
        self._child.inc()

    def __repr__(self) -> str:
        return f"PrometheusExpectationMetrics(controller={self.controller!r})"


class TimedRecord(Protocol):
    started: float
    deadline: float


R = TypeVar("R", bound=TimedRecord)


class TimedRecords(Generic[K, R]):
    """Records that each expire ``timeout`` seconds after they started.

    Kept in deadline order (one timeout for all, a restarted record moves to
    the end), so expiry only ever looks at the front. Every public method of
    the users starts with :meth:`expire`; a record leaves either through the
    user (satisfied, deleted) or through :meth:`expire`, which logs and counts
    it, so each timeout is reported exactly once and never depends on when
    something else happened to purge it.
    """

    __slots__ = ("_clock", "_metrics", "_what", "name", "records", "timeout")

    def __init__(
        self,
        *,
        what: str,
        name: str,
        timeout: float,
        clock: Clock,
        metrics: ExpectationMetrics | None,
    ) -> None:
        if not timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, not {timeout!r}")
        self._what = what
        self.name = name
        self.timeout = float(timeout)
        self._clock = clock
        self._metrics = metrics
        self.records: OrderedDict[K, R] = OrderedDict()

    def expire(self) -> float:
        """Drop, log and count every record past its deadline; returns now."""
        now = self._clock.monotonic()
        records = self.records
        while records:
            key = next(iter(records))
            record = records[key]
            if record.deadline > now:
                break
            del records[key]
            logger.warning(
                "%s%s for %r timed out after %.3fs, treated as satisfied; still expected: %r",
                f"{self.name}: " if self.name else "",
                self._what,
                key,
                now - record.started,
                record,
                extra={"key": key, "age": now - record.started, "controller": self.name},
            )
            if self._metrics is not None:
                self._metrics.on_timeout()
        return now

    def pending(self, key: K) -> bool:
        """Whether ``key`` still has a record after expiring the overdue ones."""
        self.expire()
        return key in self.records

    def forget(self, key: K) -> None:
        """Drop ``key``'s record without counting a timeout (it was settled or deleted)."""
        self.expire()
        self.records.pop(key, None)

    def time_until_expiry(self, key: K) -> float | None:
        self.expire()
        record = self.records.get(key)
        return None if record is None else record.deadline - self._clock.monotonic()

    def _check_invariants(self) -> None:
        deadlines = [r.deadline for r in self.records.values()]
        assert deadlines == sorted(deadlines), "records out of deadline order"
        for record in self.records.values():
            assert record.deadline == record.started + self.timeout


class _Counts:
    """What one key still waits for; the counts change only through its methods, and
    never go below zero."""

    __slots__ = ("creations", "deadline", "deletions", "started", "uids")

    def __init__(self, now: float, timeout: float) -> None:
        self.started = now
        self.deadline = now + timeout
        self.creations = 0
        self.deletions = 0
        self.uids: set[str] = set()

    def expect(self, *, creations: int = 0, deletions: int = 0,
               uids: Iterable[str] = ()) -> None:
        """Wait for ``creations`` and ``deletions`` more, and for the deletion of ``uids``."""
        self.creations += creations
        self.deletions += deletions
        self.uids |= set(uids)

    def creation_observed(self) -> bool:
        """Cross off one expected creation; False (nothing changed) if none was."""
        if self.creations <= 0:
            return False
        self.creations -= 1
        return True

    def deletion_observed(self) -> bool:
        """Cross off one counted deletion; False (nothing changed) if none was."""
        if self.deletions <= 0:
            return False
        self.deletions -= 1
        return True

    def uid_observed(self, uid: str) -> bool:
        """Cross off the deletion of ``uid``; False (nothing changed) if it was not expected."""
        if uid not in self.uids:
            return False
        self.uids.discard(uid)
        return True

    def pending(self) -> bool:
        return self.creations > 0 or self.deletions > 0 or bool(self.uids)

    def __repr__(self) -> str:
        return f"<creations={self.creations} deletions={self.deletions} uids={sorted(self.uids)}>"


class Expectations(Generic[K]):
    """Creations and deletions a controller has issued and not yet seen in its cache.

    Expected flow, for a controller that owns objects (a ReplicaSet-like
    controller; ``key`` is the owner's key):

    1. ``reconcile(key)`` starts with ``if not exp.satisfied(key):`` and then
       returns ``Result.requeue_after(exp.time_until_expiry(key))``: the
       writes of the last pass are not in the cache yet, so the cache cannot
       be trusted for this key, and the key is retried exactly when the
       expectations would time out.
    2. Before writing, it records what it is about to do:
       ``exp.expect_creations(key, n)``, ``exp.expect_deletions(key, n)`` or,
       better for deletions, ``exp.expect_deletions_of(key, uids)``.
    3. It issues the writes. Each write that fails will never be observed:
       it calls ``creation_observed(key)`` / ``deletion_observed(key)`` /
       ``deletion_observed_uid(key, uid)`` for it.
    4. The cache's event handlers call ``creation_observed(owner)`` for
       each added object, ``deletion_observed_uid(owner, uid)`` for each
       object deleted or marked for deletion (and ``deletion_observed`` for
       counted deletions), and enqueue the owner.

    Guarantees:
      * ``satisfied(key)`` is True once everything expected for ``key`` has
        been observed, if nothing was expected, or once ``timeout`` seconds
        (default 300) have passed since the record started. A timed-out
        record is removed, logged once at WARNING on the
        ``reconcilekit.expectations`` logger with the key and its age, and
        counted once with ``metrics.on_timeout()``. No key waits forever for
        an event that was lost (the CloneSet expectations incident).
      * Deletions expected by UID are crossed off by UID: the update that
        sets ``deletionTimestamp`` and the final delete event of the same
        object count once.
      * Observations beyond what was expected are ignored; counts never go
        below zero, and an observation never satisfies a later expectation.
      * A record starts with the first expectation on a satisfied key; more
        expectations added before it is satisfied join it and keep its
        deadline.

    Assumptions: one event loop (no locking); the ``clock`` is the one the
    reconciler uses to requeue; keys are hashable and stable.

    Caveats:
      * Counted expectations trust the caller's attribution: any creation
        the handlers map to ``key`` satisfies one expected creation, even if
        another actor made it. Expect deletions by UID where you can.
      * Timeouts are noticed lazily, by the next call of any method (which
        is why step 1 requeues at ``time_until_expiry``); the log line and
        the metric come then, with the true age.
    """

    __slots__ = ("_records",)

    def __init__(
        self,
        *,
        name: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock = _SYSTEM_CLOCK,
        metrics: ExpectationMetrics | None = None,
    ) -> None:
        self._records: TimedRecords[K, _Counts] = TimedRecords(
            what="expectations", name=name, timeout=timeout, clock=clock, metrics=metrics
        )

    def _record(self, key: K) -> _Counts:
        now = self._records.expire()
        record = self._records.records.get(key)
        if record is None:
            record = self._records.records[key] = _Counts(now, self._records.timeout)
        return record

    def expect_creations(self, key: K, count: int) -> None:
        """Expect ``count`` more creations for ``key``."""
        if count < 0:
            raise ValueError(f"count must be >= 0, not {count!r}")
        if count:
            self._record(key).expect(creations=count)

    def expect_deletions(self, key: K, count: int) -> None:
        """Expect ``count`` more deletions for ``key``, observed by count."""
        if count < 0:
            raise ValueError(f"count must be >= 0, not {count!r}")
        if count:
            self._record(key).expect(deletions=count)

    def expect_deletions_of(self, key: K, uids: Iterable[str]) -> None:
        """Expect the deletion of each object in ``uids`` for ``key``, observed by UID."""
        uids = set(uids)
        if uids:
            self._record(key).expect(uids=uids)

    def _observe(self, key: K) -> _Counts | None:
        self._records.expire()
        return self._records.records.get(key)

    def _settle(self, key: K, record: _Counts) -> None:
        if not record.pending():
            del self._records.records[key]

    def creation_observed(self, key: K) -> None:
        """One expected creation for ``key`` happened (or failed and never will)."""
        record = self._observe(key)
        if record is not None and record.creation_observed():
            self._settle(key, record)

    def deletion_observed(self, key: K) -> None:
        """One counted deletion for ``key`` happened (or failed and never will)."""
        record = self._observe(key)
        if record is not None and record.deletion_observed():
            self._settle(key, record)

    def deletion_observed_uid(self, key: K, uid: str) -> None:
        """The object ``uid`` expected deleted for ``key`` is gone or going; repeats are no-ops."""
        record = self._observe(key)
        if record is not None and record.uid_observed(uid):
            self._settle(key, record)

    def satisfied(self, key: K) -> bool:
        """True if nothing is expected for ``key`` any more (observed, or timed out)."""
        return not self._records.pending(key)

    def time_until_expiry(self, key: K) -> float | None:
        """Seconds until ``key``'s expectations time out, or None if it is satisfied."""
        return self._records.time_until_expiry(key)

    def delete(self, key: K) -> None:
        """Forget ``key``'s expectations (its owner is gone). Not a timeout: not logged."""
        self._records.forget(key)

    def __len__(self) -> int:
        """Keys with pending expectations (expired ones included until the next call)."""
        return len(self._records.records)

    def __repr__(self) -> str:
        return f"<Expectations {self._records.name!r} keys={len(self._records.records)}>"

    def _check_invariants(self) -> None:
        self._records._check_invariants()
        for record in self._records.records.values():
            assert record.pending(), "a satisfied record was kept"
            assert record.creations >= 0 and record.deletions >= 0
