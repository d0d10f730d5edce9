"""The de-duplicating, delaying, rate-limited, fair priority queue of keys that feeds workers."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Generic, TypeVar

import anyio

from .._foundations.clock import Clock, SystemClock
from .delay_heap import DelayHeap
from .fair_order import DEFAULT_AGING, FairOrder, LaneOf
from .parking import ParkingLot
from .queue_metrics import QueueMetrics
from .rate_limiters import RateLimiter, default_controller_rate_limiter

__all__ = ["LOW_PRIORITY", "QueueShutDown", "QueueStatistics", "WorkQueue"]

K = TypeVar("K", bound=Hashable)

_SYSTEM_CLOCK: Final = SystemClock()

LOW_PRIORITY: Final = -100
"""The priority of keys from an initial list or a resync (controller-runtime's
``handler.LowPriority``); keys of other events are added at 0."""


class QueueShutDown(Exception):
    """Raised by :meth:`WorkQueue.get` once the queue is shut down and nothing is pending."""


@dataclass(frozen=True, slots=True)
class QueueStatistics:
    """A snapshot of a :class:`WorkQueue`.

    ``depth``: keys pending, that is ready to be handed out, or held and
    added again (they are handed out once their holder calls ``done``);
    equals ``len(queue)``. ``held``: keys handed out and not yet done.
    ``waiting``: keys in the delay heap, not pending until their deadline.
    """

    depth: int
    held: int
    waiting: int


class WorkQueue(Generic[K]):
    """Fair priority queue of keys for N workers: de-duplicating, delayed and rate-limited adds.

    Expected flow, per worker::

        while True:
            try:
                async with queue.item() as key:      # get(), and done() on exit
                    try:
                        await reconcile(key)
                    except Exception:
                        queue.add_rate_limited(key)  # retry with backoff
                    else:
                        queue.forget(key)            # success resets the backoff
            except QueueShutDown:
                return

    Guarantees:
      * A key is held by at most one worker. ``add(k)`` while k is held marks
        it pending; it is handed out again after ``done(k)``, exactly once
        however many adds came in between.
      * A pending key is pending once: adds of a pending key change nothing
        but its priority, which an add with a higher one raises (never
        lowers; a ready key moves up, to the end of its lane at the new
        priority).
      * Order (every add takes a ``priority``, an int, default 0; higher is
        served first): a key of the highest priority pending is handed out,
        except for aging: after ``aging`` keys in a row from the highest
        priority while keys of a lower one are ready, the next key comes
        from a lower priority (the one served least recently), so a steady
        stream of high-priority keys never starves the low ones. Within one
        priority keys are served fairly across ``fairness(key)`` (a key's
        lane, e.g. its namespace): each lane is a FIFO, and the lanes take
        turns one key each, so a key that becomes ready in a lane of its own
        waits behind at most one key of each other lane of its priority,
        however many keys those lanes hold. ``fairness=None`` (or a constant)
        is one lane: plain FIFO, keys handed out in the order they became
        ready. Every operation is O(1) amortized (see :class:`FairOrder`).
      * ``add_after(k, s)`` makes k pending ``s`` seconds from now on the
        queue's clock. A waiting key is not pending: it is not in ``len()``
        and ``add`` or an earlier deadline replaces its wait. Of two waits for
        the same key the earlier deadline wins, and the higher priority. When a
        waiting key becomes pending (its deadline passed, or ``add``), its wait
        is gone without a trace: nothing left behind can delay, duplicate or
        suppress a later ``add_after`` of the same key (the KWOK delayed-work
        incident, docs/reliability.md); an ``add`` makes it pending at the
        higher of the two priorities. ``add_after`` of a key that is already
        pending does nothing (but raise its priority); the run that follows
        can ask again. ``s <= 0`` is ``add``.
      * ``add_rate_limited(k)`` is ``add_after(k, rate_limiter.when(k))`` but
        counts at most one failure per attempt (see the method).
      * No background task: ``get`` waits, on the queue's clock, for a
        pending key or for the next deadline, and is woken early by ``add``,
        ``add_after``, ``done`` and shutdown. While any getter waits and a
        key waits for a deadline, some getter wakes at that deadline,
        whichever getters were cancelled, woken or re-parked in between (one
        getter keeps the deadline and hands it on when it leaves; see
        the parking lot in ``_parking.py``). When a key is pending ``get``
        returns at once, without yielding to the event loop. A waiting key
        becomes ready when the queue next reads the clock at or after its
        deadline (a waiting ``get`` wakes for it; otherwise the next ``get``,
        ``add_after`` or ``add_rate_limited``), behind keys of its lane and
        priority that became ready before that; until then ``statistics()``
        counts it as waiting.
      * Shutdown stops intake: afterwards every add is a no-op and waiting
        keys are dropped. ``shutdown()`` also drops pending keys and makes
        ``get`` raise :class:`QueueShutDown` at once; ``shutdown_with_drain()``
        keeps handing out what is pending and returns when all of it is done.
        (client-go's ``ShutDown`` is the latter without the wait.) Dropped
        keys are not lost to a level-triggered controller: its next start
        lists everything again.

    Assumptions: every key ``get`` returned is passed to ``done`` exactly once
    (``item()`` does it). Keys are immutable and hashable, and ``fairness``
    gives a key the same hashable value every time. All methods are called
    from tasks of one running event loop (waking a getter needs it).

    Invariants (whenever no method is running):
      * every key in ``_ready`` is in ``_dirty``, at the priority ``_dirty``
        gives it, and not in ``_held``; no key is twice in ``_ready``.
      * a key in ``_dirty`` and not in ``_held`` is in ``_ready``; a key in
        both is re-queued by ``done``, at its ``_dirty`` priority.
      * no key is both in ``_dirty`` and waiting in ``_delays``.
      * a key is held by at most one worker (``_held`` is a mapping).
      * with metrics, ``_pending_since`` has the keys of ``_dirty`` and
        ``_held_since`` those of ``_held``; without, both are empty.
      * after ``shutdown()`` nothing is dirty or waiting; after shutdown of
        either kind nothing is waiting.
    """

    __slots__ = ("_clock", "_closed", "_delays", "_dirty", "_drained", "_draining", "_held",
                 "_held_since", "_limiter", "_metrics", "_parking", "_pending_since", "_ready",
                 "name")  # fmt: skip

    def __init__(
        self,
        *,
        name: str = "",
        rate_limiter: RateLimiter[K] | None = None,
        clock: Clock = _SYSTEM_CLOCK,
        metrics: QueueMetrics | None = None,
        fairness: LaneOf[K] | None = None,
        aging: int = DEFAULT_AGING,
        lanes_change: bool = False,
    ) -> None:
        """``rate_limiter`` defaults to ``default_controller_rate_limiter(clock=clock)``;
        ``metrics=None`` skips metric hooks and the clock reads they need.

        ``fairness(key)``: the value keys of one priority are served fairly
        across (a controller's queue: the request's namespace); None: FIFO.
        ``aging`` (>= 1): how many keys in a row the highest priority gets
        while lower ones wait, before one of a lower priority.
        ``lanes_change``: ``fairness`` may answer differently for a key over
        time (it reads state that changes); each ready key's lane is then kept
        until it is handed out. Without it ``fairness`` must answer the same
        for a key every time.
        """
        if fairness is not None and not callable(fairness):
            raise TypeError(f"fairness must be a function of a key or None, not {fairness!r}")
        if type(aging) is not int or aging < 1:
            raise ValueError(f"aging must be an int >= 1 (keys in a row), got {aging!r}")
        self.name = name
        self._clock = clock
        self._limiter: RateLimiter[K] = (
            default_controller_rate_limiter(clock=clock) if rate_limiter is None else rate_limiter
        )
        self._dirty: dict[K, int] = {}  # key -> priority it is pending at
        self._ready: FairOrder[K] = FairOrder(fairness, aging=aging, lanes_change=lanes_change)
        self._held: dict[K, int] = {}  # key -> priority it was handed out at
        # with metrics: key -> monotonic time it became pending, was handed out
        self._pending_since: dict[K, float] = {}
        self._held_since: dict[K, float] = {}
        self._delays: DelayHeap[K] = DelayHeap()
        self._parking = ParkingLot(clock, self._delays.next_deadline)
        self._closed = False
        self._draining = False
        self._drained: anyio.Event | None = None
        if metrics is None or type(metrics) is QueueMetrics:
            self._metrics: QueueMetrics | None = None
        else:
            self._metrics = metrics
            metrics.bind(depth=self.__len__, unfinished=self._unfinished_work)

    @property
    def fairness(self) -> LaneOf[K] | None:
        """What keys of one priority are served fairly across; None: FIFO."""
        return self._ready.lane_of

    def set_fairness(self, fairness: LaneOf[K] | None, *, lanes_change: bool = False
                     ) -> None:
        """Serve keys of one priority fairly across ``fairness(key)`` from now on (None:
        FIFO; ``lanes_change`` as for the constructor). Only while no key is ready
        (RuntimeError otherwise), as a builder does before the controller's watches
        start."""
        if fairness is not None and not callable(fairness):
            raise TypeError(f"fairness must be a function of a key or None, not {fairness!r}")
        self._ready.set_lane_of(fairness, lanes_change=lanes_change)

    # -- adding ---------------------------------------------------------------

    def add(self, key: K, priority: int = 0) -> None:
        """Mark ``key`` pending at ``priority``; if it already is, raise its priority
        to ``priority`` if that is higher, and nothing else. No-op after shutdown."""
        if type(priority) is not int:
            _bad_priority(priority)
        if self._closed:
            return
        current = self._dirty.get(key)
        if current is not None:
            if priority > current:
                self._raise(key, current, priority)
            return
        if self._delays.index:
            waited = self._delays.cancel(key)
            if waited is not None and waited > priority:
                priority = waited
        self._dirty[key] = priority
        metrics = self._metrics
        if metrics is not None:
            self._pending_since[key] = self._clock.monotonic()
            metrics.on_add()
        if key not in self._held:
            self._ready.push(key, priority)
            self._parking.wake_one()

    def _raise(self, key: K, current: int, priority: int) -> None:
        self._dirty[key] = priority
        if key not in self._held:
            self._ready.promote(key, current, priority)

    def add_after(self, key: K, seconds: float, priority: int = 0) -> None:
        """Make ``key`` pending at ``priority`` ``seconds`` from now; the earliest
        deadline wins, and the highest priority.

        See the class docstring. ``seconds <= 0`` is :meth:`add`; NaN raises ValueError.
        """
        if type(priority) is not int:
            _bad_priority(priority)
        if self._closed:
            return
        if self._delays.index:
            self._promote_due()  # so that "pending" includes keys whose deadline passed
        if self._metrics is not None:
            self._metrics.on_retry()
        self._add_after(key, seconds, priority, rate_limited=False)

    def add_rate_limited(self, key: K, priority: int = 0) -> float | None:
        """``add_after(key, rate_limiter.when(key), priority)``, counting at most one
        failure per attempt.

        Returns the delay the key was scheduled with, or None when nothing was
        added (the cases below).

        Does nothing, and records no failure, after shutdown, when ``key`` is
        pending (ready, or added while held), or when it is waiting from an
        earlier rate-limited add that has not been handed out yet (either
        way its priority is raised to ``priority`` if that is higher).
        client-go counts every call, so repeated rate-limited adds of a key
        that has not run again (from event handlers, say) push its backoff to
        the cap with no failed attempt behind them. A key waiting from a plain
        ``add_after`` (a requeue) does count, and the earlier deadline wins.
        """
        if type(priority) is not int:
            _bad_priority(priority)
        if self._closed:
            return None
        if self._delays.index:
            self._promote_due()
        current = self._dirty.get(key)
        if current is not None:
            if priority > current:
                self._raise(key, current, priority)
            return None
        if self._delays.is_rate_limited(key):
            self._delays.raise_priority(key, priority)
            return None
        if self._metrics is not None:
            self._metrics.on_retry()
        delay = self._limiter.when(key)
        self._add_after(key, delay, priority, rate_limited=True)
        return delay

    def _add_after(self, key: K, seconds: float, priority: int, *, rate_limited: bool) -> None:
        if seconds <= 0:
            self.add(key, priority)
        elif seconds > 0:
            current = self._dirty.get(key)
            if current is not None:
                if priority > current:
                    self._raise(key, current, priority)
                return
            delays = self._delays
            before = delays.next_deadline() if self._parking else None
            deadline = self._clock.monotonic() + seconds
            changed = delays.schedule(key, deadline, rate_limited=rate_limited,
                                      priority=priority)
            if changed and (before is None or deadline < before):
                self._parking.deadline_moved(deadline)
        else:
            raise ValueError(f"delay must be a number of seconds, not {seconds!r}")

    def forget(self, key: K) -> None:
        """Tell the rate limiter that ``key`` succeeded: its backoff starts over."""
        self._limiter.forget(key)

    def num_requeues(self, key: K) -> int:
        """How many failures the rate limiter has recorded for ``key``."""
        return self._limiter.num_requeues(key)

    # -- handing out ----------------------------------------------------------

    def get_nowait(self) -> K:
        """Hand out the next pending key without waiting.

        Raises :class:`anyio.WouldBlock` if no key is pending, or
        :class:`QueueShutDown` if the queue is shut down and nothing is pending.
        """
        if self._take():
            return self._hand_out()
        raise anyio.WouldBlock

    async def get(self) -> K:
        """Wait for a pending key and hand it out; the caller must call :meth:`done` with it.

        Returns at once, without a checkpoint, if a key is pending. Raises
        :class:`QueueShutDown` once the queue is shut down and nothing is
        pending. Cancellation while waiting takes nothing off the queue and
        loses no wake-up: a key another getter should now take, or the next
        deadline, is passed to a getter still waiting.
        """
        if self._ready.size and not self._delays.index:
            return self._hand_out()  # the hot path
        await self._parking.wait_until(self._take)
        return self._hand_out()

    async def get_with_priority(self) -> tuple[K, int]:
        """:meth:`get`, and the priority the key was pending at (controller-runtime's
        ``GetWithPriority``: a retry or requeue of the key goes in at it)."""
        key = await self.get()
        return key, self._held[key]

    def _take(self) -> bool:
        """Promote due delayed keys; True if a key is ready to hand out.

        Raises :class:`QueueShutDown` once the queue is shut down and nothing is pending.
        """
        if self._delays.index:
            self._promote_due()
        if self._ready.size:
            return True
        if self._closed and not self._dirty:
            raise QueueShutDown(self.name)
        return False

    def _hand_out(self) -> K:
        key = self._ready.pop()
        self._held[key] = self._dirty.pop(key)
        metrics = self._metrics
        if metrics is not None:
            now = self._held_since[key] = self._clock.monotonic()
            metrics.on_get(now - self._pending_since.pop(key))
        if self._closed and not self._dirty:
            self._parking.wake_all()  # nothing more will come: let waiting getters raise
        return key

    def _promote_due(self) -> None:
        now = self._clock.monotonic()
        due = self._delays.pop_due(now)
        if not due:
            return
        metrics = self._metrics
        for key, deadline, priority in due:
            self._dirty[key] = priority
            if metrics is not None:
                # pending since its deadline, not since this (lazy) promotion
                self._pending_since[key] = deadline
                metrics.on_add()
            if key not in self._held:
                self._ready.push(key, priority)
                self._parking.wake_one()

    def done(self, key: K) -> None:
        """Release ``key``; if it was added while held, it becomes ready again.

        Raises ValueError if ``key`` is not held.
        """
        try:
            del self._held[key]
        except KeyError:
            raise ValueError(f"{key!r} is not held by a worker of this queue") from None
        if self._metrics is not None:
            self._metrics.on_done(self._clock.monotonic() - self._held_since.pop(key))
        priority = self._dirty.get(key)
        if priority is not None:
            self._ready.push(key, priority)
            self._parking.wake_one()
        if self._drained is not None and not self._held and not self._dirty:
            self._drained.set()

    def item(self) -> _HeldKey[K]:
        """``async with queue.item() as key:`` gets a key and calls ``done(key)`` on exit."""
        return _HeldKey(self)

    # -- shutting down --------------------------------------------------------

    def shutdown(self) -> None:
        """Stop intake, drop pending and waiting keys, make ``get`` raise :class:`QueueShutDown`.

        Every ``get``, waiting or future, raises. Held keys stay held until
        ``done`` (which then re-queues nothing). Idempotent. Ends a running
        :meth:`shutdown_with_drain`.
        """
        self._closed = True
        self._draining = False
        self._dirty.clear()
        self._pending_since.clear()
        self._ready.clear()
        self._delays.clear()
        self._parking.wake_all()
        if self._drained is not None:
            self._drained.set()

    async def shutdown_with_drain(self) -> None:
        """Stop intake, drop waiting keys, hand out what is pending; return when all are done.

        Pending keys, including keys added while held before the shutdown,
        are still handed out; ``get`` raises :class:`QueueShutDown` once
        nothing is pending. Returns when nothing is pending or held, or when
        :meth:`shutdown` is called (at once if it was). Workers must keep
        calling ``done`` or this never returns: bound it with a timeout, then
        call ``shutdown()``.
        """
        if not self._closed:
            if self._delays.index:
                self._promote_due()  # already due: pending, not waiting
            self._closed = True
            self._draining = True
            self._delays.clear()
            if not self._dirty:
                self._parking.wake_all()
        if not self._draining or (not self._dirty and not self._held):
            return
        if self._drained is None:
            self._drained = anyio.Event()
        await self._drained.wait()

    @property
    def shutting_down(self) -> bool:
        """True once either shutdown has been called."""
        return self._closed

    # -- introspection --------------------------------------------------------

    def __len__(self) -> int:
        return len(self._dirty)

    def statistics(self) -> QueueStatistics:
        return QueueStatistics(len(self._dirty), len(self._held), len(self._delays))

    def _unfinished_work(self) -> tuple[float, float]:
        """(total, longest) seconds the held keys have been held."""
        if not self._held_since:
            return 0.0, 0.0
        now = self._clock.monotonic()
        ages = [now - started for started in self._held_since.values()]
        return sum(ages), max(ages)

    def __repr__(self) -> str:
        s, state = self.statistics(), " shut down" if self._closed else ""
        return f"<WorkQueue {self.name!r} depth={s.depth} held={s.held} waiting={s.waiting}{state}>"

    def _check_invariants(self) -> None:
        self._ready._check_invariants()
        ready, dirty, held = self._ready.entries(), self._dirty, self._held
        ready_keys = {key for key, _ in ready}
        assert len(ready_keys) == len(ready), "a key is twice in _ready"
        for key, priority in ready:
            assert dirty.get(key) == priority, f"{key!r} ready at {priority}, not {dirty.get(key)}"
            assert key not in held, f"{key!r} ready and held"
        for key in dirty:
            assert key in held or key in ready_keys, f"{key!r} dirty, neither held nor ready"
            assert key not in self._delays, f"{key!r} dirty and waiting"
        assert len(dirty) == len(ready) + sum(1 for key in dirty if key in held)
        if self._metrics is None:
            assert not self._pending_since and not self._held_since
        else:
            assert self._pending_since.keys() == dirty.keys(), "_pending_since"
            assert self._held_since.keys() == held.keys(), "_held_since"
        self._delays._check_invariants()
        if self._closed:
            assert not self._delays, "waiting keys after shutdown"
            if not self._draining:
                assert not dirty and not ready, "pending keys after shutdown()"
        if not self._draining:
            assert self._drained is None or self._drained.is_set()
        self._parking._check_invariants()


def _bad_priority(priority: object) -> None:
    raise TypeError(f"a priority is an int (higher is served first), not {priority!r}")


class _HeldKey(Generic[K]):
    __slots__ = ("_key", "_queue")

    def __init__(self, queue: WorkQueue[K]) -> None:
        self._queue = queue

    async def __aenter__(self) -> K:
        self._key = await self._queue.get()
        return self._key

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._queue.done(self._key)
