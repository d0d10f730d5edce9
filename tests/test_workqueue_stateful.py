"""Model-based tests of WorkQueue under random operations, priorities, workers,
cancellations and time, and of the order it hands keys out in (FairOrder) against the
documented rules written the naive way.

Each machine runs its own asyncio event loop. Synchronous workers use
``get_nowait``; asynchronous getters are real tasks blocked in ``get`` that
steps may cancel; every step ends by letting the loop settle. A small model
tracks, per key, the time by which a run is owed ("obligation"), and the
failures the rate limiter should have counted.

Checked after every step:
  * ``_check_invariants()``;
  * no key is held by two workers, and the queue's held set is the model's;
  * a key is handed out only if a run is owed and due (no early, duplicate
    or stale delivery), and every handout settles the obligation;
  * waiting deadlines are exactly the model's (earliest wins, no stale
    entry delays or suppresses a later one);
  * no getter sleeps while a key it could take is due, and while getters
    wait some getter sleeps until at most the next deadline, whichever
    getters were cancelled, woken or re-parked before (no lost wakeup);
  * failures counted by ``add_rate_limited`` are exactly the model's;
  * every key is handed out at the highest priority any of its adds gave it
    since it was last handed out (a key added again higher moves up);
  * order, at each hand-out (the model's due keys not held are then exactly
    the queue's ready keys): a key of the highest priority ready, except
    that after ``AGING`` of those in a row while a lower one was ready the
    next comes from a lower priority (no starvation); within one priority,
    a lane is not served twice while another lane had a key ready all along.
At the end time runs past every deadline, everything held is finished and
the queue is drained: every owed run must have happened exactly once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import anyio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from prometheus_client import CollectorRegistry

from reconcilekit._workqueue.fair_order import FairOrder
from reconcilekit.metrics import PrometheusQueueMetrics
from reconcilekit.testing import FakeClock
from reconcilekit.workqueue import (
    LOW_PRIORITY,
    ItemExponentialFailureRateLimiter,
    QueueShutDown,
    WorkQueue,
)

KEYS = st.sampled_from("abcde")
PRIORITIES = st.sampled_from([LOW_PRIORITY, 0, 0, 3])
LANES = {"a": "x", "b": "x", "c": "y", "d": "y", "e": "z"}
AGING = 2
DELAYS = st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 5.0])
SYNC_WORKERS = 3
MAX_GETTERS = 3
BASE, CAP = 1.0, 8.0
T = TypeVar("T")


class WorkQueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.queue: WorkQueue[str] = WorkQueue(
            name="machine",
            clock=self.clock,
            rate_limiter=ItemExponentialFailureRateLimiter(BASE, CAP),
            metrics=PrometheusQueueMetrics(CollectorRegistry(), "machine"),
            fairness=LANES.__getitem__,
            aging=AGING,
        )
        self.owed: dict[str, float] = {}  # key -> time a run is owed from
        self.priority: dict[str, int] = {}  # key -> priority of the run owed
        self.streak = 0  # hand-outs in a row at the top while a lower key was ready
        self.passed: dict[tuple[int, str], set[str]] = {}  # (priority, lane) -> lanes owed a turn
        self.counted: set[str] = set()  # keys waiting on a counted failure
        self.failures: dict[str, int] = {}
        self.held: dict[str, str] = {}  # key -> holder
        self.sync_held: dict[int, str] = {}
        self.async_held: list[str] = []
        self.getters: list[asyncio.Task[None]] = []
        self.drainer: asyncio.Task[None] | None = None
        self.closed = False
        self.dropping = False  # shutdown() (as opposed to a drain)

    # -- plumbing -----------------------------------------------------------

    def settle(self) -> None:
        self.loop.run_until_complete(self.clock.settle(5))

    def in_loop(self, function: Callable[[], T]) -> T:
        """Run a synchronous queue call inside the loop, as controllers do (wakeups need it)."""

        async def call() -> T:
            return function()

        return self.loop.run_until_complete(call())

    def now(self) -> float:
        return self.clock.monotonic()

    def pending(self, key: str) -> bool:
        return key in self.owed and self.owed[key] <= self.now()

    def ready(self) -> dict[str, int]:
        """The due keys not held, with their priorities: at a hand-out, the queue's ready keys."""
        return {k: self.priority[k] for k in self.owed if self.pending(k) and k not in self.held}

    def lanes_ready(self, priority: int) -> set[str]:
        return {LANES[k] for k, p in self.ready().items() if p == priority}

    def handed_out(self, key: str, holder: str) -> None:
        assert key not in self.held, f"{key!r} handed to {holder} while held by {self.held[key]}"
        assert key in self.owed, f"{key!r} handed out but no run was owed"
        assert self.owed[key] <= self.now(), f"{key!r} handed out before {self.owed[key]}"
        priority, lane = self.queue._held[key], LANES[key]
        assert priority == self.priority[key], (key, priority, self.priority[key])
        ready = self.ready()
        top = max(ready.values())
        if len(set(ready.values())) > 1:
            if self.streak >= AGING:
                assert priority < top, f"{key!r} at the top after {self.streak} in a row"
                self.streak = 0
            else:
                assert priority == top, f"{key!r} at {priority} before {top} (streak {self.streak})"
                self.streak += 1
        else:
            self.streak = 0
        owed_turns = self.passed.get((priority, lane), set()) & self.lanes_ready(priority)
        assert not owed_turns, f"lane {lane} served again before {owed_turns} at {priority}"
        for turns in (t for (p, _), t in self.passed.items() if p == priority):
            turns.discard(lane)
        self.passed[priority, lane] = self.lanes_ready(priority) - {lane}
        del self.priority[key]
        del self.owed[key]
        self.counted.discard(key)
        self.held[key] = holder

    def owe(self, key: str, at: float, *, counted: bool = False) -> None:
        if at <= self.now():
            self.counted.discard(key)
        elif counted:
            self.counted.add(key)
        self.owed[key] = min(self.owed.get(key, at), at)

    def prioritise(self, key: str, priority: int) -> None:
        """An accepted add of ``key`` at ``priority``: the run owed takes the highest."""
        if self.closed:
            return
        was = self.priority.get(key)
        if was is None:
            self.priority[key] = priority
            return
        if priority > was and self.pending(key) and key not in self.held:
            # it moves up: if nothing else of its lane is ready at ``was``, the lane leaves
            lane = LANES[key]
            if not any(LANES[k] == lane and p == was and k != key
                       for k, p in self.ready().items()):
                for (p, _), turns in self.passed.items():
                    if p == was:
                        turns.discard(lane)
        self.priority[key] = max(was, priority)

    def finish(self, key: str) -> None:
        del self.held[key]
        self.in_loop(lambda: self.queue.done(key))

    # -- operations ---------------------------------------------------------

    # The model is updated before the queue call: a getter woken by the call
    # may run (and check the model) before in_loop returns.

    @rule(key=KEYS, priority=PRIORITIES)
    def add(self, key: str, priority: int) -> None:
        self.prioritise(key, priority)
        if not self.closed:
            self.owe(key, self.now())
        self.in_loop(lambda: self.queue.add(key, priority))

    @rule(key=KEYS, delay=DELAYS, priority=PRIORITIES)
    def add_after(self, key: str, delay: float, priority: int = 0) -> None:
        self.prioritise(key, priority)
        if not self.closed and not self.pending(key):
            self.owe(key, self.now() + delay if delay > 0 else self.now())
        self.in_loop(lambda: self.queue.add_after(key, delay, priority))

    @rule(key=KEYS, priority=PRIORITIES)
    def add_rate_limited(self, key: str, priority: int = 0) -> None:
        self.prioritise(key, priority)
        if not (self.closed or self.pending(key) or key in self.counted):
            failures = self.failures.get(key, 0)
            self.failures[key] = failures + 1
            self.owe(key, self.now() + min(BASE * 2.0**failures, CAP), counted=True)
        self.in_loop(lambda: self.queue.add_rate_limited(key, priority))

    @rule(key=KEYS)
    def forget(self, key: str) -> None:
        self.queue.forget(key)
        self.failures.pop(key, None)

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0, 4.0]))
    def advance(self, seconds: float) -> None:
        self.clock.advance(seconds)

    @rule(worker=st.integers(0, SYNC_WORKERS - 1))
    def sync_get(self, worker: int) -> None:
        if worker in self.sync_held:
            return
        try:
            key = self.in_loop(self.queue.get_nowait)
        except anyio.WouldBlock:
            assert not any(self.pending(k) and k not in self.held for k in self.owed)
            return
        except QueueShutDown:
            assert self.closed
            return
        self.handed_out(key, f"worker {worker}")
        self.sync_held[worker] = key

    @rule(worker=st.integers(0, SYNC_WORKERS - 1))
    def sync_done(self, worker: int) -> None:
        if worker in self.sync_held:
            self.finish(self.sync_held.pop(worker))

    @precondition(lambda self: len(self.getters) < MAX_GETTERS)
    @rule()
    def spawn_getter(self) -> None:
        async def getter() -> None:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            self.handed_out(key, "a getter")
            self.async_held.append(key)

        self.getters.append(self.loop.create_task(getter()))

    @rule(data=st.data())
    def async_done(self, data: st.DataObject) -> None:
        if self.async_held:
            key = self.async_held.pop(data.draw(st.integers(0, len(self.async_held) - 1)))
            self.finish(key)

    @rule(data=st.data())
    def cancel_getter(self, data: st.DataObject) -> None:
        if self.getters:
            self.getters[data.draw(st.integers(0, len(self.getters) - 1))].cancel()

    @precondition(lambda self: not self.closed)
    @rule(key=KEYS, delay=st.sampled_from([0.5, 1.0, 3.0]), rate_limited=st.booleans())
    def deadline_arrives_while_getters_wait(self, key: str, delay: float,
                                            rate_limited: bool) -> None:
        """Getters park with no deadline, then one comes: the state in which a
        getter re-parks to keep the deadline for the others (and may be cancelled)."""
        while len(self.getters) < 2:
            self.spawn_getter()
        self.settle()
        if rate_limited:
            self.add_rate_limited(key)
        else:
            self.add_after(key, delay)

    @rule()
    def cancel_oldest_getter(self) -> None:
        """The oldest getter is the one most often sleeping until the next deadline."""
        if self.getters:
            self.getters[0].cancel()

    @precondition(lambda self: not self.closed)
    @rule()
    def start_drain(self) -> None:
        self.closed = True
        self.owed = {k: at for k, at in self.owed.items() if at <= self.now()}
        self.priority = {k: p for k, p in self.priority.items() if k in self.owed}
        self.drainer = self.loop.create_task(self.queue.shutdown_with_drain())

    @precondition(lambda self: not self.dropping)
    @rule()
    def shutdown(self) -> None:
        self.in_loop(self.queue.shutdown)
        self.closed = self.dropping = True
        self.owed.clear()
        self.priority.clear()

    # -- checks -------------------------------------------------------------

    @invariant()
    def settled_state_matches_the_model(self) -> None:
        self.settle()
        for task in self.getters:
            if task.done() and not task.cancelled():
                task.result()  # re-raise a failed check made inside a getter
        self.getters = [t for t in self.getters if not t.done()]
        queue = self.queue
        queue._check_invariants()
        assert set(queue._held) == set(self.held)
        for key, entry in queue._delays.index.items():
            assert self.owed.get(key) == entry[0], (key, self.owed.get(key), entry[0])
            assert queue._delays.is_rate_limited(key) == (key in self.counted)
        for key, at in self.owed.items():
            if at > self.now():
                assert queue._delays.deadline(key) == at, (key, at)
                if self.getters:  # someone must wake by then, whoever was cancelled
                    wakes = self.clock.next_deadline()
                    assert wakes is not None and wakes <= at, (
                        f"{key!r} due at {at} but the getters sleep until {wakes}")
            elif self.getters:  # a getter is waiting: nothing it could take is due
                assert key in self.held, f"{key!r} due at {at} while a getter sleeps"
        for key in "abcde":
            assert queue.num_requeues(key) == self.failures.get(key, 0), key
        if self.drainer is not None and self.drainer.done():
            assert self.dropping or (not queue._dirty and not queue._held)

    def teardown(self) -> None:
        try:
            if not self.dropping:
                self.clock.advance(1000)
                self.settle()
                for key in list(self.held):
                    self.finish(key)
                self.sync_held.clear()
                self.async_held.clear()
                while True:
                    try:
                        key = self.in_loop(self.queue.get_nowait)
                    except (anyio.WouldBlock, QueueShutDown):
                        break
                    self.handed_out(key, "the final drain")
                    self.finish(key)
                    self.queue._check_invariants()
                assert self.owed == {}, f"runs owed but never handed out: {self.owed}"
        finally:
            tasks = [*self.getters, *([self.drainer] if self.drainer else [])]

            async def cancel_all() -> None:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            try:
                self.loop.run_until_complete(cancel_all())
            finally:
                self.loop.close()


WorkQueueMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=40, deadline=None
)
TestWorkQueueMachine = WorkQueueMachine.TestCase


def lane_of(key: str) -> str:
    """The order machine's keys are a lane's letter and a number."""
    return key[0]


class ReferenceOrder:
    """FairOrder's documented rules, written the naive way (lists, scans, no stale entries)."""

    def __init__(self, aging: int) -> None:
        self.aging = aging
        # priority -> [served, turns (lanes in order), lane -> FIFO], in the order made
        self.levels: dict[int, tuple[list[int], list[str], dict[str, list[str]]]] = {}
        self.streak = 0
        self.handed = 0

    def push(self, key: str, priority: int) -> None:
        if priority not in self.levels:
            self.levels[priority] = ([self.handed], [], {})
        _, turns, lanes = self.levels[priority]
        if lane_of(key) not in lanes:
            lanes[lane_of(key)] = []
            turns.append(lane_of(key))
        lanes[lane_of(key)].append(key)

    def remove(self, key: str, priority: int) -> None:
        _, turns, lanes = self.levels[priority]
        lanes[lane_of(key)].remove(key)
        if not lanes[lane_of(key)]:
            del lanes[lane_of(key)]
            turns.remove(lane_of(key))
        if not lanes:
            del self.levels[priority]

    def pop(self) -> str:
        top = max(self.levels)
        chosen = top
        if len(self.levels) > 1:
            if self.streak >= self.aging:  # the lower level served least recently
                chosen = min((p for p in self.levels if p != top),
                             key=lambda p: self.levels[p][0][0])
                self.streak = 0
            else:
                self.streak += 1
        else:
            self.streak = 0
        served, turns, lanes = self.levels[chosen]
        served[0] = self.handed
        self.handed += 1
        lane = turns.pop(0)
        key = lanes[lane].pop(0)
        if lanes[lane]:
            turns.append(lane)
        else:
            del lanes[lane]
        if not lanes:
            del self.levels[chosen]
        return key

    def entries(self) -> list[tuple[str, int]]:
        return [(key, p) for p in sorted(self.levels, reverse=True)
                for lane in self.levels[p][1] for key in self.levels[p][2][lane]]


ORDER_KEYS = st.sampled_from([f"{lane}{i}" for lane in "xyz" for i in range(4)])
ORDER_PRIORITIES = st.sampled_from([LOW_PRIORITY, -1, 0, 0, 5])
FLOOD = 10  # above every priority the machine uses


class FairOrderMachine(RuleBasedStateMachine):
    """FairOrder against ReferenceOrder: the same key out of every pop, the same entries
    in the same order after every step, stale entries bounded (``_check_invariants``); and
    a flood of higher-priority keys lets every key already ready out within ``(AGING + 1)``
    pops per key."""

    lanes_change = False

    def __init__(self) -> None:
        super().__init__()
        self.order: FairOrder[str] = FairOrder(lane_of, aging=AGING,
                                               lanes_change=self.lanes_change)
        self.model = ReferenceOrder(AGING)
        self.ready: dict[str, int] = {}
        self.floods = 0

    @rule(key=ORDER_KEYS, priority=ORDER_PRIORITIES)
    def push_or_promote(self, key: str, priority: int) -> None:
        was = self.ready.get(key)
        if was is None:
            self.order.push(key, priority)
            self.model.push(key, priority)
            self.ready[key] = priority
        elif priority > was:
            self.order.promote(key, was, priority)
            self.model.remove(key, was)
            self.model.push(key, priority)
            self.ready[key] = priority

    @precondition(lambda self: self.ready)
    @rule()
    def pop(self) -> None:
        key = self.order.pop()
        assert key == self.model.pop()
        del self.ready[key]

    @precondition(lambda self: self.ready)
    @rule()
    def flood(self) -> None:
        waiting = set(self.ready)
        bound = len(waiting) * (AGING + 1)
        for _ in range(bound):
            flood_key = f"f{self.floods}"
            self.floods += 1
            self.push_or_promote(flood_key, FLOOD)
            key = self.order.pop()
            assert key == self.model.pop()
            del self.ready[key]
            waiting.discard(key)
        assert not waiting, f"{sorted(waiting)} still waiting after {bound} pops"

    @invariant()
    def same_order(self) -> None:
        self.order._check_invariants()
        assert self.order.entries() == self.model.entries()
        assert self.order.size == len(self.ready)


FairOrderMachine.TestCase.settings = settings(
    max_examples=300, stateful_step_count=60, deadline=None
)
TestFairOrderMachine = FairOrderMachine.TestCase


class KeptLanesMachine(FairOrderMachine):
    """The same, with each ready key's lane kept (``lanes_change``): the same order."""

    lanes_change = True


KeptLanesMachine.TestCase.settings = FairOrderMachine.TestCase.settings
TestKeptLanesMachine = KeptLanesMachine.TestCase
