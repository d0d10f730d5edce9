"""WorkQueue: de-duplication, the processing set, delays, rate-limited adds, shutdown, metrics."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
import pytest
from prometheus_client import CollectorRegistry

from reconcilekit.metrics import PrometheusQueueMetrics, QueueMetrics, QueueStatistics
from reconcilekit.testing import FakeClock
from reconcilekit.workqueue import (
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    QueueShutDown,
    WorkQueue,
)

Log = list[tuple[float, str]]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def queue(clock: FakeClock) -> WorkQueue[str]:
    return WorkQueue(name="test", clock=clock)


def drain(queue: WorkQueue[str]) -> list[str]:
    """Hand out and finish every pending key, checking invariants after each step."""
    keys = []
    while True:
        try:
            key = queue.get_nowait()
        except (anyio.WouldBlock, QueueShutDown):
            return keys
        queue._check_invariants()
        keys.append(key)
        queue.done(key)
        queue._check_invariants()


def collector(queue: WorkQueue[str], clock: FakeClock, log: Log) -> Callable[[], Awaitable[None]]:
    """A worker that records (time, key) for every key it gets, until shutdown."""

    async def run() -> None:
        try:
            while True:
                async with queue.item() as key:
                    log.append((clock.monotonic(), key))
                    queue._check_invariants()
        except QueueShutDown:
            pass

    return run


@asynccontextmanager
async def worker_log(queue: WorkQueue[str], clock: FakeClock) -> AsyncIterator[Log]:
    """Run one background worker; yields the (time, key) it got, shuts the queue down on exit."""
    entries: Log = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(collector(queue, clock, entries))
        await clock.settle()
        yield entries
        queue.shutdown()


# -- de-duplication and the processing set -------------------------------------


async def test_add_deduplicates_pending_keys(queue: WorkQueue[str]) -> None:
    for key in ["a", "b", "a", "a", "b"]:
        queue.add(key)
        queue._check_invariants()
    assert len(queue) == 2
    assert drain(queue) == ["a", "b"]


async def test_pending_keys_are_handed_out_in_fifo_order(queue: WorkQueue[str]) -> None:
    for key in "cab":
        queue.add(key)
    assert [await queue.get() for _ in range(3)] == ["c", "a", "b"]


async def test_add_while_processing_requeues_after_done(queue: WorkQueue[str]) -> None:
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    queue.add("a")
    queue._check_invariants()
    assert queue.statistics() == QueueStatistics(depth=1, held=1, waiting=0)
    with pytest.raises(anyio.WouldBlock):
        queue.get_nowait()  # never to a second worker while held
    queue.done(key)
    queue._check_invariants()
    assert await queue.get() == "a"  # exactly once more
    queue.done("a")
    assert len(queue) == 0
    with pytest.raises(anyio.WouldBlock):
        queue.get_nowait()


async def test_key_is_never_held_by_two_workers(queue: WorkQueue[str], clock: FakeClock) -> None:
    held: set[str] = set()
    runs: list[str] = []

    async def worker() -> None:
        try:
            while True:
                async with queue.item() as key:
                    assert key not in held
                    held.add(key)
                    runs.append(key)
                    for _ in range(3):
                        await anyio.lowlevel.checkpoint()
                    held.discard(key)
        except QueueShutDown:
            pass

    async with anyio.create_task_group() as tg:
        for _ in range(4):
            tg.start_soon(worker)
        for round_ in range(50):
            for key in "abc":
                queue.add(key)
            queue._check_invariants()
            await anyio.lowlevel.checkpoint()
            if round_ % 7 == 0:
                await clock.settle()
        await clock.settle(50)
        queue._check_invariants()
        assert queue.statistics() == QueueStatistics(depth=0, held=0, waiting=0)
        queue.shutdown()
    assert set(runs) == {"a", "b", "c"}


async def test_done_of_a_key_not_held_raises(queue: WorkQueue[str]) -> None:
    queue.add("a")
    with pytest.raises(ValueError, match="not held"):
        queue.done("a")
    assert await queue.get() == "a"
    queue.done("a")
    with pytest.raises(ValueError, match="not held"):
        queue.done("a")


async def test_item_calls_done_when_the_body_raises(queue: WorkQueue[str]) -> None:
    queue.add("a")
    with pytest.raises(RuntimeError):
        async with queue.item() as key:
            assert key == "a"
            raise RuntimeError("reconcile failed")
    assert queue.statistics().held == 0
    queue._check_invariants()


async def test_statistics_and_len(queue: WorkQueue[str]) -> None:
    queue.add("a")
    queue.add("b")
    queue.add_after("c", 5)
    await queue.get()
    assert queue.statistics() == QueueStatistics(depth=1, held=1, waiting=1)
    assert len(queue) == 1
    assert "depth=1 held=1 waiting=1" in repr(queue)


# -- waiting in get -------------------------------------------------------------


async def test_get_waits_for_an_add(queue: WorkQueue[str], clock: FakeClock) -> None:
    async with worker_log(queue, clock) as log:
        assert log == []
        queue.add("a")
        await clock.settle()
        assert log == [(0.0, "a")]


async def test_cancelled_get_takes_nothing_off_the_queue(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    with anyio.move_on_after(0) as scope:  # cancels at the first wait
        await queue.get()
    assert scope.cancelled_caught
    queue._check_invariants()
    queue.add("a")
    assert queue.get_nowait() == "a"


async def test_asyncio_cancelled_get_leaves_no_waiter(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    task = asyncio.ensure_future(queue.get())
    await clock.settle()
    assert len(queue._parking) == 1
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(queue._parking) == 0
    queue._check_invariants()


@pytest.mark.parametrize("with_deadline", [False, True])
async def test_wake_is_passed_on_when_the_woken_getter_is_cancelled(
    queue: WorkQueue[str], clock: FakeClock, with_deadline: bool
) -> None:
    if with_deadline:  # getters then park in a cancel scope around clock.sleep
        queue.add_after("later", 100)
    first = asyncio.ensure_future(queue.get())
    await clock.settle()
    second = asyncio.ensure_future(queue.get())
    await clock.settle()
    assert len(queue._parking) == 2
    queue.add("a")  # wakes the first getter ...
    first.cancel()  # ... which is cancelled before it runs
    await clock.settle()
    assert first.cancelled()
    assert second.done() and second.result() == "a"
    queue._check_invariants()
    assert queue.statistics() == QueueStatistics(depth=0, held=1, waiting=int(with_deadline))


async def test_getter_wakes_for_an_earlier_deadline(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    async with worker_log(queue, clock) as log:
        queue.add_after("late", 10)
        await clock.settle()
        assert clock.next_deadline() == 10
        queue.add_after("early", 2)
        await clock.settle()
        assert clock.next_deadline() == 2
        clock.advance(2)
        await clock.settle()
        clock.advance(8)
        await clock.settle()
    assert log == [(2.0, "early"), (10.0, "late")]


async def test_keys_due_together_reach_every_idle_getter(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    got: list[str] = []

    async def one_shot() -> None:
        got.append(await queue.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(one_shot)
        tg.start_soon(one_shot)
        await clock.settle()  # both idle, no deadline to wait for
        queue.add_after("x", 1)  # the first getter re-parks until 1
        queue.add_after("y", 1)  # same deadline: nobody else needs waking yet
        await clock.settle()
        assert clock.sleepers == 1
        clock.advance(1)  # the first wakes, finds x and y due, and must wake the second
        await clock.settle()
        assert sorted(got) == ["x", "y"]
        tg.cancel_scope.cancel()


async def test_drain_releases_idle_getters_once_nothing_is_pending(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    held = queue.get_nowait()
    queue.add("a")  # pending again after done
    outcomes: list[str] = []

    async def getter() -> None:
        try:
            key = await queue.get()
        except QueueShutDown:
            outcomes.append("shut down")
        else:
            outcomes.append(key)
            queue.done(key)

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(getter)
        await clock.settle()
        tg.start_soon(queue.shutdown_with_drain)
        await clock.settle()
        assert outcomes == []  # "a" is still to come
        queue.done(held)
        await clock.settle()
        assert sorted(outcomes) == ["a", "shut down", "shut down"]
        tg.cancel_scope.cancel()


# -- add_after ------------------------------------------------------------------


async def test_add_after_key_is_not_pending_until_due(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add_after("a", 5)
    queue._check_invariants()
    assert queue.statistics() == QueueStatistics(depth=0, held=0, waiting=1)
    clock.advance(4.5)
    with pytest.raises(anyio.WouldBlock):
        queue.get_nowait()
    clock.advance(0.5)
    assert queue.get_nowait() == "a"
    queue._check_invariants()


@pytest.mark.parametrize("delays", [(10, 3), (3, 10)])
async def test_duplicate_add_after_keeps_earliest_deadline(
    queue: WorkQueue[str], clock: FakeClock, delays: tuple[float, float]
) -> None:
    async with worker_log(queue, clock) as log:
        for delay in delays:
            queue.add_after("a", delay)
            queue._check_invariants()
        assert queue.statistics().waiting == 1
        for _ in range(12):
            clock.advance(1)
            await clock.settle()
    assert log == [(3.0, "a")]


async def test_add_after_with_no_delay_is_add(queue: WorkQueue[str]) -> None:
    queue.add_after("a", 0)
    queue.add_after("b", -1)
    assert queue.statistics() == QueueStatistics(depth=2, held=0, waiting=0)
    with pytest.raises(ValueError):
        queue.add_after("c", math.nan)


async def test_add_cancels_a_waiting_deadline(queue: WorkQueue[str], clock: FakeClock) -> None:
    queue.add_after("a", 5)
    queue.add("a")
    queue._check_invariants()
    assert queue.statistics() == QueueStatistics(depth=1, held=0, waiting=0)
    assert drain(queue) == ["a"]
    clock.advance(10)
    assert drain(queue) == []


async def test_add_after_of_a_pending_key_does_nothing(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    queue.add_after("a", 5)
    queue._check_invariants()
    assert drain(queue) == ["a"]
    clock.advance(10)
    assert drain(queue) == []


async def test_add_after_while_held_waits_for_deadline_and_done(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    assert queue.get_nowait() == "a"
    queue.add_after("a", 5)
    clock.advance(6)  # due while still held: pending, handed out after done
    with pytest.raises(anyio.WouldBlock):
        queue.get_nowait()
    queue._check_invariants()
    queue.done("a")
    assert drain(queue) == ["a"]


@pytest.mark.parametrize("stale_delay", [3, 10])
async def test_replaced_delay_leaves_no_trace_incident_5(
    queue: WorkQueue[str], clock: FakeClock, stale_delay: float
) -> None:
    """The KWOK delayed-work incident (docs/reliability.md): a delayed item replaced by an add
    leaves nothing behind.

    A wait at ``stale_delay`` is made obsolete by ``add``; after that run a
    new ``add_after(a, 5)`` must fire exactly once, at +5: not suppressed by
    bookkeeping the replaced wait left behind, and not delivered a second
    time (or at the wrong time) by a stale heap entry.

    Checked against the buggy behaviour by breaking the code and running
    this test: with ``DelayHeap.cancel`` leaving the index entry in place
    (the KWOK bug), stale_delay=3 fails because "a" never runs at +5 (the
    stale entry says it is due at +3 already, so the new wait is dropped),
    and stale_delay=10 fails in ``_check_invariants``. With ``WorkQueue.add``
    not cancelling the wait, stale_delay=3 fails because "a" runs at +3
    (``test_add_cancels_a_waiting_deadline`` catches the +10 case).
    """
    async with worker_log(queue, clock) as log:
        queue.add_after("a", stale_delay)
        queue.add("a")
        await clock.settle()
        assert log == [(0.0, "a")]
        queue.add_after("a", 5)
        for _ in range(15):
            clock.advance(1)
            await clock.settle()
            queue._check_invariants()
        assert log == [(0.0, "a"), (5.0, "a")]
        assert queue.statistics() == QueueStatistics(depth=0, held=0, waiting=0)


async def test_many_replaced_delays_do_not_grow_the_heap(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    for i in range(1000):
        queue.add_after(f"k{i % 10}", 100 - i * 0.05)  # each replaces an earlier wait
        queue._check_invariants()
    assert queue.statistics().waiting == 10
    assert len(queue._delays._heap) <= 10 + 64 + 1


# -- add_rate_limited -----------------------------------------------------------


async def test_add_rate_limited_waits_for_the_limiter_delay(clock: FakeClock) -> None:
    queue: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0)
    )
    delays = []
    for _ in range(4):
        start = clock.monotonic()
        queue.add_rate_limited("a")
        while True:
            try:
                key = queue.get_nowait()
                break
            except anyio.WouldBlock:
                clock.advance(0.5)
        delays.append(clock.monotonic() - start)
        queue.done(key)
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert queue.num_requeues("a") == 4
    queue.forget("a")
    assert queue.num_requeues("a") == 0


async def test_rate_limited_add_of_a_waiting_key_counts_no_failure(clock: FakeClock) -> None:
    queue: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 1000.0)
    )
    for _ in range(20):  # spurious events, no attempt in between
        queue.add_rate_limited("a")
        queue._check_invariants()
    assert queue.num_requeues("a") == 1
    clock.advance(1)
    assert drain(queue) == ["a"]
    queue.add_rate_limited("a")  # the attempt failed: counted
    assert queue.num_requeues("a") == 2
    assert queue._delays.deadline("a") == 3.0


async def test_rate_limited_add_of_a_pending_key_counts_no_failure(clock: FakeClock) -> None:
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=ItemFastSlowRateLimiter(1, 9, 2))
    queue.add("a")
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 0
    assert queue.get_nowait() == "a"
    queue.add("a")  # an event while held: pending again
    queue.add_rate_limited("a")  # it runs again after done anyway
    assert queue.num_requeues("a") == 0
    queue.done("a")
    assert drain(queue) == ["a"]
    queue._check_invariants()


async def test_rate_limited_add_pulls_in_a_long_requeue(clock: FakeClock) -> None:
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=ItemFastSlowRateLimiter(1, 9, 2))
    queue.add("a")
    assert queue.get_nowait() == "a"
    queue.add_after("a", 3600)  # a requeue, not a failure
    queue.add_rate_limited("a")  # the run failed: retry on backoff, not in an hour
    queue.done("a")
    assert queue.num_requeues("a") == 1
    assert queue._delays.deadline("a") == 1.0
    queue.add_rate_limited("a")  # already waiting on a counted failure
    assert queue.num_requeues("a") == 1


# -- shutdown -------------------------------------------------------------------


async def test_shutdown_drops_pending_keys_and_get_raises(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    queue.add("a")
    queue.add("b")
    queue.add_after("c", 1)
    held = queue.get_nowait()
    queue.add(held)
    queue.shutdown()
    queue._check_invariants()
    assert queue.statistics() == QueueStatistics(depth=0, held=1, waiting=0)
    with pytest.raises(QueueShutDown):
        await queue.get()
    queue.add("d")
    queue.add_after("d", 1)
    queue.add_rate_limited("d")
    queue.done(held)  # added while held, but dropped by shutdown
    clock.advance(2)
    with pytest.raises(QueueShutDown):
        queue.get_nowait()
    assert queue.shutting_down


async def test_shutdown_wakes_blocked_getters(queue: WorkQueue[str], clock: FakeClock) -> None:
    outcomes: list[str] = []

    async def getter() -> None:
        try:
            await queue.get()
        except QueueShutDown:
            outcomes.append("shut down")

    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(getter)
        queue.add_after("x", 100)
        await clock.settle()
        queue.shutdown()
    assert outcomes == ["shut down"] * 3
    assert clock.sleepers == 0


async def test_shutdown_with_drain_hands_out_pending_keys_then_returns(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    log: Log = []
    queue.add("a")
    held = queue.get_nowait()  # held by someone else than the collector
    queue.add("a")  # added while held: handed out again after done
    queue.add("b")
    queue.add_after("c", 1)  # waiting: dropped
    finished = False

    async def drain_it() -> None:
        nonlocal finished
        await queue.shutdown_with_drain()
        finished = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(collector(queue, clock, log))
        tg.start_soon(drain_it)
        await clock.settle()
        queue._check_invariants()
        assert log == [(0.0, "b")]
        assert not finished
        queue.add("d")  # intake is closed
        queue.done(held)
        await clock.settle()
        assert finished
    assert log == [(0.0, "b"), (0.0, "a")]
    clock.advance(5)
    with pytest.raises(QueueShutDown):
        queue.get_nowait()


async def test_shutdown_ends_a_drain(queue: WorkQueue[str], clock: FakeClock) -> None:
    queue.add("a")
    queue.get_nowait()
    async with anyio.create_task_group() as tg:
        tg.start_soon(queue.shutdown_with_drain)
        await clock.settle()
        queue.shutdown()
    queue._check_invariants()
    await queue.shutdown_with_drain()  # returns at once after shutdown()
    assert queue.statistics().held == 1
    queue.done("a")


async def test_shutdown_with_drain_with_nothing_to_do_returns(queue: WorkQueue[str]) -> None:
    await queue.shutdown_with_drain()
    with pytest.raises(QueueShutDown):
        await queue.get()


# -- metrics --------------------------------------------------------------------


async def test_prometheus_metrics_use_controller_runtime_names(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    queue: WorkQueue[str] = WorkQueue(
        name="pods", clock=clock, metrics=PrometheusQueueMetrics(registry, "pods")
    )
    labels = {"name": "pods", "controller": "pods"}

    def value(metric: str, **extra: str) -> float | None:
        return registry.get_sample_value(metric, {**labels, **extra})

    queue.add("a")
    queue.add("a")
    queue.add("b")
    assert value("workqueue_adds_total") == 2
    assert value("workqueue_depth", priority="") == 2
    clock.advance(2)
    key = await queue.get()
    assert value("workqueue_queue_duration_seconds_sum") == 2
    assert value("workqueue_queue_duration_seconds_bucket", le="10.0") == 1
    assert value("workqueue_queue_duration_seconds_bucket", le="1.0") == 0
    clock.advance(3)
    assert value("workqueue_unfinished_work_seconds") == 3
    assert value("workqueue_longest_running_processor_seconds") == 3
    queue.done(key)
    assert value("workqueue_work_duration_seconds_sum") == 3
    assert value("workqueue_unfinished_work_seconds") == 0
    queue.add_after("c", 1)
    queue.add_rate_limited("d")
    assert value("workqueue_retries_total") == 2
    assert value("workqueue_depth", priority="") == 1


async def test_queues_share_a_registry_under_distinct_names(clock: FakeClock) -> None:
    registry = CollectorRegistry()
    first: WorkQueue[str] = WorkQueue(clock=clock, metrics=PrometheusQueueMetrics(registry, "a"))
    second: WorkQueue[str] = WorkQueue(clock=clock, metrics=PrometheusQueueMetrics(registry, "b"))
    first.add("x")
    second.add("x")
    second.add("y")
    assert registry.get_sample_value("workqueue_depth", {"name": "a", "controller": "a",
                                                         "priority": ""}) == 1  # fmt: skip
    assert registry.get_sample_value("workqueue_depth", {"name": "b", "controller": "b",
                                                         "priority": ""}) == 2  # fmt: skip
    with pytest.raises(ValueError, match="already"):
        PrometheusQueueMetrics(registry, "a")
    metrics = PrometheusQueueMetrics(CollectorRegistry(), "c")
    WorkQueue[str](clock=clock, metrics=metrics)
    with pytest.raises(RuntimeError, match="already bound"):
        WorkQueue[str](clock=clock, metrics=metrics)


async def test_custom_metrics_hooks_see_every_event(clock: FakeClock) -> None:
    calls: list[tuple[str, float]] = []

    class Recording(QueueMetrics):
        def on_add(self) -> None:
            calls.append(("add", 0))

        def on_get(self, wait: float) -> None:
            calls.append(("get", wait))

        def on_done(self, work: float) -> None:
            calls.append(("done", work))

        def on_retry(self) -> None:
            calls.append(("retry", 0))

    queue: WorkQueue[str] = WorkQueue(clock=clock, metrics=Recording())
    queue.add_after("a", 1)
    clock.advance(1.5)
    key = await queue.get()
    clock.advance(2)
    queue.done(key)
    assert calls == [("retry", 0), ("add", 0), ("get", 0.5), ("done", 2.0)]


# -- lost wake-ups (the deadline duty) ------------------------------------------


async def _getters(queue: WorkQueue[str], clock: FakeClock, n: int) -> list[asyncio.Task[str]]:
    tasks = [asyncio.ensure_future(queue.get()) for _ in range(n)]
    await clock.settle()
    return tasks


async def _cancel(task: asyncio.Task[str], clock: FakeClock) -> None:
    task.cancel()
    await clock.settle()
    assert task.cancelled()


async def test_cancelling_the_getter_that_waits_for_the_deadline_hands_the_deadline_on(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    first, second = await _getters(queue, clock, 2)
    queue.add_after("a", 1)  # wakes the first getter, which parks again until 1
    await clock.settle()
    await _cancel(first, clock)  # the getter that knew the deadline leaves
    queue._check_invariants()
    assert clock.next_deadline() == 1, "no getter sleeps until the deadline"
    clock.advance(1)
    await clock.settle()
    assert second.done() and second.result() == "a"


async def test_cancelling_the_deadline_getter_after_it_was_woken_for_a_key_loses_nothing(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    (first,) = await _getters(queue, clock, 1)
    queue.add_after("later", 5)  # the only getter keeps the deadline
    await clock.settle()
    queue.add("now")  # wakes it for a key ...
    first.cancel()  # ... and it is cancelled before it runs
    second, third = await _getters(queue, clock, 2)
    await clock.settle()
    assert first.cancelled()
    assert second.done() and second.result() == "now"
    queue._check_invariants()
    clock.advance(5)
    await clock.settle()
    assert third.done() and third.result() == "later"


async def test_a_getter_that_takes_a_key_leaves_the_deadline_to_another(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    first, second = await _getters(queue, clock, 2)
    queue.add_after("later", 5)
    await clock.settle()
    queue.add("now")  # whichever getter takes it, the other must keep the deadline
    await clock.settle()
    assert [t.result() for t in (first, second) if t.done()] == ["now"]
    queue._check_invariants()
    clock.advance(5)
    await clock.settle()
    assert first.done() and second.done()
    assert sorted([first.result(), second.result()]) == ["later", "now"]


async def test_a_woken_getter_cancelled_while_another_keeps_the_deadline_passes_the_key_on(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    first, second = await _getters(queue, clock, 2)
    queue.add_after("later", 5)  # the first keeps the deadline, the second waits for keys
    await clock.settle()
    queue.add("now")  # wakes the second ...
    second.cancel()  # ... which is cancelled before it runs: the first must take "now"
    await clock.settle()
    assert second.cancelled()
    assert first.done() and first.result() == "now"
    queue._check_invariants()


async def test_the_deadline_getter_wakes_for_a_key_when_no_other_getter_waits(
    queue: WorkQueue[str], clock: FakeClock
) -> None:
    (only,) = await _getters(queue, clock, 1)
    queue.add_after("later", 100)
    await clock.settle()
    queue.add("now")
    await clock.settle()
    assert only.done() and only.result() == "now"
