"""WorkQueue throughput: ``python -m benchmarks.workqueue [--quick]``.

Scenarios (each run a few times, best run reported):

* add→get→done with 1 and 8 consumers. A producer task keeps one to two
  batches of 1,024 distinct keys queued; consumers loop on ``get``/``done``. With
  "no await in work" a consumer finishes a key without yielding (the queue's
  own cost); with "1 await in work" it yields once per key, as any real
  reconcile does (adds one event-loop round trip per key).
* the same with Prometheus metrics on (clock reads, a histogram each on get
  and done).
* add_after of 100,000 distinct keys with random delays, then all of them
  coming due, handed out and done (on a FakeClock, so only CPU is measured).
* a consumer blocked in ``get`` woken by every single add (the slow path).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import sys
import time
from collections.abc import Awaitable, Callable, Hashable, Sequence
from importlib.metadata import version
from typing import Any

import anyio
import anyio.lowlevel
from prometheus_client import CollectorRegistry

from reconcilekit.metrics import PrometheusQueueMetrics
from reconcilekit.testing import FakeClock
from reconcilekit.workqueue import QueueShutDown, WorkQueue

BATCH = 1024
Scenario = Callable[[int], Awaitable[float]]  # ops -> seconds


def _queue(metrics: bool) -> WorkQueue[int]:
    if metrics:
        return WorkQueue(name="bench", metrics=PrometheusQueueMetrics(CollectorRegistry(), "bench"))
    return WorkQueue(name="bench")


def cycles(consumers: int, *, await_in_work: bool, metrics: bool = False,
           make: Callable[[], Any] | None = None,
           keys: Sequence[Hashable] | None = None) -> Scenario:
    """``make``: the queue (None: a WorkQueue); ``keys``: the keys to add, ``keys[i]``
    for the i-th (None: the ints)."""

    async def run(ops: int) -> float:
        queue = _queue(metrics) if make is None else make()
        checkpoint = anyio.lowlevel.checkpoint
        finished = 0
        refill = anyio.Event()  # set each time consumers finish a batch
        all_done = anyio.Event()

        async def consume() -> None:
            nonlocal finished
            get, done = queue.get, queue.done
            try:
                while True:
                    key = await get()
                    if await_in_work:
                        await checkpoint()
                    done(key)
                    finished += 1
                    if finished % BATCH == 0 or finished == ops:
                        refill.set()
                        if finished == ops:
                            all_done.set()
            except QueueShutDown:
                pass

        async def produce() -> None:
            # Keep one to two batches queued: never unbounded, never idle.
            nonlocal refill
            add, added = queue.add, 0
            while added < ops:
                while added < ops and added - finished < 2 * BATCH:
                    for key in range(added, min(added + BATCH, ops)):
                        add(key if keys is None else keys[key])
                    added = min(added + BATCH, ops)
                await refill.wait()
                refill = anyio.Event()
            await all_done.wait()
            queue.shutdown()

        began = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(consumers):
                tg.start_soon(consume)
            tg.start_soon(produce)
        return time.perf_counter() - began

    return run


async def add_after_keys(ops: int) -> float:
    clock = FakeClock()
    queue: WorkQueue[int] = WorkQueue(name="bench", clock=clock)
    delays = [random.uniform(0.001, 10.0) for _ in range(ops)]
    began = time.perf_counter()
    for key, delay in enumerate(delays):
        queue.add_after(key, delay)
    return time.perf_counter() - began


async def due_keys_handed_out(ops: int) -> float:
    clock = FakeClock()
    queue: WorkQueue[int] = WorkQueue(name="bench", clock=clock)
    for key in range(ops):
        queue.add_after(key, random.uniform(0.001, 10.0))
    clock.advance(10.0)
    get, done = queue.get_nowait, queue.done
    began = time.perf_counter()
    for _ in range(ops):
        done(get())
    return time.perf_counter() - began


async def add_after_replaced(ops: int) -> float:
    """Every add_after pulls an existing key's deadline in (cancelled entries pile up)."""
    clock = FakeClock()
    queue: WorkQueue[int] = WorkQueue(name="bench", clock=clock)
    keys = 1000
    for key in range(keys):
        queue.add_after(key, 1000.0)
    began = time.perf_counter()
    for i in range(ops):
        queue.add_after(i % keys, 999.0 - i * 1e-6)
    return time.perf_counter() - began


async def wake_per_add(ops: int) -> float:
    queue: WorkQueue[int] = WorkQueue(name="bench")
    handled = 0

    async def consume() -> None:
        nonlocal handled
        try:
            while True:
                queue.done(await queue.get())
                handled += 1
        except QueueShutDown:
            pass

    began = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await anyio.lowlevel.checkpoint()
        for key in range(ops):
            queue.add(key)
            while handled <= key:
                await anyio.lowlevel.checkpoint()
        queue.shutdown()
    return time.perf_counter() - began


SCENARIOS: list[tuple[str, str, Scenario, int]] = [
    ("add→get→done, 1 consumer, no await in work", "cycles", cycles(1, await_in_work=False),
     500_000),
    ("add→get→done, 8 consumers, no await in work", "cycles", cycles(8, await_in_work=False),
     500_000),
    ("add→get→done, 1 consumer, 1 await in work", "cycles", cycles(1, await_in_work=True),
     200_000),
    ("add→get→done, 8 consumers, 1 await in work", "cycles", cycles(8, await_in_work=True),
     200_000),
    ("add→get→done, 1 consumer, no await, Prometheus metrics", "cycles",
     cycles(1, await_in_work=False, metrics=True), 200_000),
    ("add_after, 100k distinct keys, random delays", "adds", add_after_keys, 100_000),
    ("100k due keys: promote→get→done", "cycles", due_keys_handed_out, 100_000),
    ("add_after pulling in a waiting key's deadline", "adds", add_after_replaced, 200_000),
    ("consumer blocked in get, woken per add", "cycles", wake_per_add, 50_000),
]  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a tenth of the work, one run each")
    parser.add_argument("--runs", type=int, default=3, help="runs per scenario (best is shown)")
    parser.add_argument("--uvloop", action="store_true", help="run on uvloop's event loop")
    args = parser.parse_args(argv)
    global _BACKEND_OPTIONS
    _BACKEND_OPTIONS = {"use_uvloop": True} if args.uvloop else {}
    runs = 1 if args.quick else args.runs
    random.seed(1)
    loop = "uvloop " + version("uvloop") if args.uvloop else "asyncio's own loop"
    print(f"Python {sys.version.split()[0]}, anyio {version('anyio')}, {loop}, "
          f"{os.cpu_count()} CPUs")
    print()
    print("| scenario | ops | best of | seconds | ops/s |")
    print("|---|---:|---:|---:|---:|")
    for title, unit, scenario, ops in SCENARIOS:
        if args.quick:
            ops //= 10
        best = min(_timed(scenario, ops) for _ in range(runs))
        print(f"| {title} | {ops:,} {unit} | {runs} | {best:.3f} | {ops / best:,.0f} |")


_BACKEND_OPTIONS: dict[str, bool] = {}


def _timed(scenario: Scenario, ops: int) -> float:
    gc.collect()
    return anyio.run(scenario, ops, backend="asyncio", backend_options=_BACKEND_OPTIONS)


if __name__ == "__main__":
    main()
