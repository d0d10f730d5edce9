"""The fair priority work queue: ``python -m benchmarks.fairness [--quick]``.

Two measurements, each subject in the same run:

* latency of a change in another namespace while 10,000 keys are queued in
  one namespace (kept at 10,000: every key served is replaced by a new one),
  one worker whose handler costs a fixed 20 µs of CPU per key. Each probe
  adds one key in a namespace of its own after a random 0-99 keys served;
  reported: how many keys were handed out before it, and the time from its
  add to its hand-out, p50 and p99 over the probes. Subjects: the fair queue
  (a controller's default, round-robin across namespaces), and first come,
  first served (``fairness=None``, the order before). A third row: the same
  10,000 keys queued at ``LOW_PRIORITY`` (an initial list) and the change in
  the same namespace at 0, on the default queue.
* throughput of the plain case: one namespace, no priorities, add→get→done
  of ``Request`` keys, with no await in the work (the queue's own cost,
  batches of 1,024 added then handed out) and with one await per key (one
  event-loop round trip, as any reconcile makes: ``benchmarks.workqueue``'s
  cycles, one consumer). Subjects: the fair queue, the same with
  ``fairness=None``, and the queue as it was before priorities and fairness
  (``PreviousWorkQueue`` below, a frozen copy of its hot path), with today's
  keys and with keys as ``Request`` was before it kept its hash
  (``PreviousRequest``: a dataclass hashing its two fields on every call):
  the queue as it was, as a whole; interleaved run by run; best of the runs,
  and the ratio to the previous queue with the previous keys.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Final, Generic, Protocol, TypeVar

import anyio
import anyio.lowlevel

from reconcilekit import Request, SystemClock
from reconcilekit._workqueue.delay_heap import DelayHeap
from reconcilekit._workqueue.parking import ParkingLot
from reconcilekit.workqueue import LOW_PRIORITY, QueueShutDown, WorkQueue

from .workqueue import cycles

K = TypeVar("K", bound=Hashable)
BACKLOG: Final = 10_000
COST: Final = 20e-6  # seconds of CPU per key
BATCH: Final = 1024


class PreviousWorkQueue(Generic[K]):
    """The work queue before priorities and fairness, frozen for the ratio: its add, get
    and done exactly (FIFO deque of ready keys, dict of dirty keys, no metrics)."""

    def __init__(self) -> None:
        self._clock = SystemClock()
        self._dirty: dict[K, float] = {}
        self._ready: deque[K] = deque()
        self._held: dict[K, float] = {}
        self._delays: DelayHeap[K] = DelayHeap()
        self._parking = ParkingLot(self._clock, self._delays.next_deadline)
        self._closed = False
        self._metrics = None

    def add(self, key: K) -> None:
        if self._closed or key in self._dirty:
            return
        if key in self._delays.index:
            self._delays.cancel(key)
        metrics = self._metrics
        if metrics is None:
            self._dirty[key] = 0.0
        if key not in self._held:
            self._ready.append(key)
            self._parking.wake_one()

    def get_nowait(self) -> K:
        if self._take():
            return self._hand_out()
        raise anyio.WouldBlock

    async def get(self) -> K:
        if self._ready and not self._delays.index:
            return self._hand_out()
        await self._parking.wait_until(self._take)
        return self._hand_out()

    def _take(self) -> bool:
        if self._ready:
            return True
        if self._closed and not self._dirty:
            raise QueueShutDown("previous")
        return False

    def _hand_out(self) -> K:
        key = self._ready.popleft()
        self._dirty.pop(key)
        metrics = self._metrics
        if metrics is None:
            self._held[key] = 0.0
        if self._closed and not self._dirty:
            self._parking.wake_all()
        return key

    def done(self, key: K) -> None:
        try:
            self._held.pop(key)
        except KeyError:
            raise ValueError(f"{key!r} is not held") from None
        if key in self._dirty:
            self._ready.append(key)
            self._parking.wake_one()

    def shutdown(self) -> None:
        self._closed = True
        self._dirty.clear()
        self._ready.clear()
        self._parking.wake_all()


@dataclass(frozen=True, slots=True, order=True)
class PreviousRequest:
    """``Request`` as it was before it kept its hash (frozen for the ratio)."""

    namespace: str
    name: str


class Queue(Protocol):
    def add(self, key: Any) -> None: ...
    def get_nowait(self) -> Any: ...
    async def get(self) -> Any: ...
    def done(self, key: Any) -> None: ...
    def shutdown(self) -> None: ...


def _namespace(request: Request) -> Hashable:
    return request.namespace


PREVIOUS: Final = "previous queue, previous keys"
SUBJECTS: dict[str, tuple[Callable[[], Queue], Callable[[str, str], Hashable]]] = {
    "fair (default)": (lambda: WorkQueue(fairness=_namespace), Request),
    "first come, first served (fairness=None)": (lambda: WorkQueue(fairness=None), Request),
    "previous queue, today's keys": (PreviousWorkQueue, Request),
    PREVIOUS: (PreviousWorkQueue, PreviousRequest),
}


def _spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def probe_latency(fair: bool, probes: int, *, initial_list: bool = False
                  ) -> tuple[list[float], list[float]]:
    """(keys handed out before each probe, seconds from its add to its hand-out)."""
    queue: WorkQueue[Request] = WorkQueue(fairness=_namespace if fair else None)
    backlog_priority = LOW_PRIORITY if initial_list else 0
    for i in range(BACKLOG):
        queue.add(Request("busy", f"k{i}"), backlog_priority)
    rng = random.Random(1)
    made = BACKLOG

    def handle(key: Request) -> None:
        nonlocal made
        _spin(COST)
        queue.done(key)
        if not key.name.startswith("probe"):  # keep the backlog at BACKLOG
            queue.add(Request("busy", f"k{made}"), backlog_priority)
            made += 1

    ahead: list[float] = []
    waited: list[float] = []
    for n in range(probes):
        for _ in range(rng.randrange(100)):
            handle(queue.get_nowait())
        probe = Request("busy" if initial_list else f"other-{n}", f"probe-{n}")
        queue.add(probe)
        added, count = time.perf_counter(), 0
        while (key := queue.get_nowait()) != probe:
            count += 1
            handle(key)
        waited.append(time.perf_counter() - added)
        ahead.append(count)
        handle(key)
    return ahead, waited


async def plain_cycles(make: Callable[[], Queue], key_of: Callable[[str, str], Hashable],
                       ops: int, await_in_work: bool) -> float:
    """Seconds for ``ops`` add→get→done cycles of distinct keys in one namespace."""
    queue = make()
    keys = [key_of("default", f"k{i}") for i in range(ops)]
    began = time.perf_counter()
    if not await_in_work:
        add, get, done = queue.add, queue.get_nowait, queue.done
        for start in range(0, ops, BATCH):
            batch = keys[start:start + BATCH]
            for key in batch:
                add(key)
            for _ in batch:
                done(get())
        return time.perf_counter() - began
    return await cycles(1, await_in_work=True, make=make, keys=keys)(ops)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer probes and cycles")
    parser.add_argument("--runs", type=int, default=5, help="throughput runs per subject")
    args = parser.parse_args(argv)
    fair_probes, fifo_probes, ops = (40, 5, 50_000) if args.quick else (300, 20, 200_000)
    print(f"Python {sys.version.split()[0]}, anyio {version('anyio')}, asyncio's own loop, "
          f"{os.cpu_count()} CPUs")
    print()
    print(f"A change in another namespace, {BACKLOG:,} keys queued in one, one worker, "
          f"{COST * 1e6:.0f} µs per key")
    print()
    print("| subject | probes | keys before it, p50 | p99 | time to hand-out, p50 | p99 |")
    print("|---|---:|---:|---:|---:|---:|")
    for title, fair, probes, initial in (
            ("fair (default)", True, fair_probes, False),
            ("first come, first served (fairness=None)", False, fifo_probes, False),
            ("fair, the 10,000 at LOW_PRIORITY, the change in their namespace", True,
             fair_probes, True)):
        ahead, waited = probe_latency(fair, probes, initial_list=initial)
        print(f"| {title} | {probes} | {statistics.median(ahead):,.0f} | "
              f"{_percentile(ahead, 0.99):,.0f} | {_ms(statistics.median(waited))} | "
              f"{_ms(_percentile(waited, 0.99))} |")
    print()
    print(f"One namespace, no priorities: add→get→done of {ops:,} distinct keys "
          f"(best of {args.runs})")
    print()
    print("| subject | no await in work, keys/s | vs as it was | 1 await in work, keys/s "
          "| vs as it was |")
    print("|---|---:|---:|---:|---:|")
    best: dict[tuple[str, bool], float] = {}
    for _ in range(args.runs):
        for title, (make, key_of) in SUBJECTS.items():
            for await_in_work in (False, True):
                gc.collect()
                seconds = anyio.run(plain_cycles, make, key_of, ops, await_in_work)
                key = (title, await_in_work)
                best[key] = min(best.get(key, seconds), seconds)
    for title in SUBJECTS:
        rates = [ops / best[title, w] for w in (False, True)]
        base = [ops / best[PREVIOUS, w] for w in (False, True)]
        print(f"| {title} | {rates[0]:,.0f} | {rates[0] / base[0]:.2f}x | {rates[1]:,.0f} | "
              f"{rates[1] / base[1]:.2f}x |")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.2f} ms"


if __name__ == "__main__":
    main()
