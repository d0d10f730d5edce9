"""The reconcilekit side of ``benchmarks/scale.py``: one Manager-owned cache of Pods, alone in
its process.

``python -m benchmarks.scale_subject --kubeconfig PATH
--mode full|metadata|baseline|floor [--profile FILE]``, as ``benchmarks/go/main.go`` is
the client-go side, with the same protocol on stdin and stdout:

* ``full``: ``manager.cache`` with a ``spec.nodeName`` field index (the informer of
  Pods, its default transform dropping managedFields), as an operator gets it;
* ``metadata``: the metadata-only informer of Pods (``informer_for(PODS, metadata=True)``:
  ``PartialObjectMetadata`` on the wire);
* ``baseline``: the same imports, client and Manager, one request, no informer (the
  RSS the others are taken against);
* ``floor``: the metadata-only informer's list alone (``resourceVersion=0``,
  ``PartialObjectMetadataList``, from kube-apiserver's watch cache), its body read
  as it arrives and dropped, its items counted: the server's time and the bytes'
  transfer, what no client of that list can go below (no burst follows).

Once synced it prints one JSON line: ``{"event": "synced", "sync_seconds", "objects",
"peak_rss", "settled_rss", "gc_rss", "first_answer_seconds"}`` (the last: when the
answer to the first list began to arrive; bytes: peak is VmHWM; settled is VmRSS after
``gc.collect()`` and ``malloc_trim(0)``, as the Go side frees with
``debug.FreeOSMemory``; ``gc_rss`` is VmRSS after the collection alone; and
``store_bytes``, the compact JSON the store holds). With
``PYTHONTRACEMALLOC=1`` in its environment it adds ``python_heap`` (what tracemalloc
traces) and prints the top allocation sites on stderr.

Then each stdin line ``burst VALUE COUNT`` arms a counter of the Pods seen updated
with the label ``scale-burst=VALUE``, answers ``{"event": "armed"}`` and, once COUNT
were seen, ``{"event": "burst", "done_at": UNIX_SECONDS, ...}``. End of input ends it.
``--profile FILE`` writes cProfile statistics (CPU time) of the start-to-synced part.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import ctypes
import gc
import json
import sys
import time
import tracemalloc
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import anyio

from reconcilekit import Client, EventHandler, Manager, RequestRecord
from reconcilekit.kinds import PODS
from reconcilekit.lowlevel import PARTIAL_OBJECT_METADATA_LIST

BURST_LABEL = "scale-burst"


def settle() -> int:
    """Collect garbage and return freed heap to the OS (``malloc_trim``, where the C library
    has it: what Go's ``debug.FreeOSMemory`` does for the client-go side); the RSS after the
    collection alone, before the trim."""
    gc.collect()
    rss = memory()[1]
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss


def memory() -> tuple[int, int]:
    """(VmHWM, VmRSS) of this process, in bytes."""
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text()
                  .splitlines() if ":" in line)
    return (int(fields["VmHWM"].split()[0]) * 1024, int(fields["VmRSS"].split()[0]) * 1024)


def emit(**values: Any) -> None:
    print(json.dumps(values), flush=True)


def node_name(pod: Mapping[str, Any]) -> Iterable[str]:
    name = (pod.get("spec") or {}).get("nodeName")
    return [name] if name else []


def _traced() -> dict[str, int]:
    """With ``PYTHONTRACEMALLOC`` set: the Python heap in use, its top allocation sites on
    stderr (what RSS holds beyond it is the allocators' and the libraries' own)."""
    if not tracemalloc.is_tracing():
        return {}
    snapshot = tracemalloc.take_snapshot()
    for stat in snapshot.statistics("lineno")[:15]:
        print(stat, file=sys.stderr)
    return {"python_heap": tracemalloc.get_traced_memory()[0]}


class Burst:
    """Counts the distinct Pods seen updated with ``scale-burst=want``."""

    def __init__(self) -> None:
        self.want: str | None = None
        self.need = 0
        self.seen: set[tuple[str, str]] = set()
        self.done = anyio.Event()

    def arm(self, want: str, need: int) -> anyio.Event:
        self.want, self.need, self.seen, self.done = want, need, set(), anyio.Event()
        return self.done

    def observe(self, _old: dict[str, Any], new: dict[str, Any]) -> None:
        meta = new["metadata"]
        if self.want is None or (meta.get("labels") or {}).get(BURST_LABEL) != self.want:
            return
        self.seen.add((meta.get("namespace", ""), meta["name"]))
        if len(self.seen) >= self.need:
            self.want = None
            self.done.set()


_ITEM: Final = b'{"kind":"PartialObjectMetadata",'


async def read_list_alone(client: Client) -> int:
    """The metadata-only list of every Pod from the watch cache, read and dropped; how
    many items it held (counted in the bytes, an item's first bytes across two reads
    included)."""
    response = await client.open_stream(PODS.path(None), {"resourceVersion": "0"},
                                        accept=PARTIAL_OBJECT_METADATA_LIST)
    count, tail = 0, b""
    try:
        async for chunk in response.content.iter_any():
            data = tail + chunk  # the tail, too short to hold an item's first bytes whole
            count += data.count(_ITEM)
            tail = data[-len(_ITEM) + 1:]
    finally:
        response.release()
    return count


class FirstAnswer:
    """When the answer to the first list arrived (its status and headers: kube-apiserver
    sends them once the answer is encoded, with its first bytes)."""

    def __init__(self, client: Client) -> None:
        self.at: float | None = None
        client.add_request_observer(self.observe)

    def observe(self, request: RequestRecord) -> None:
        if self.at is None and request.verb == "list":
            self.at = time.perf_counter()

    def seconds(self, began: float) -> float:
        return (self.at or began) - began


async def run(kubeconfig: str, mode: str, profile: str | None) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        manager = Manager(client, http_addr=None)
        first = FirstAnswer(client)
        if mode == "baseline":
            await client.list(PODS, limit=1)
            after_gc = settle()
            peak, rss = memory()
            emit(event="synced", sync_seconds=0.0, objects=0, peak_rss=peak, settled_rss=rss,
                 gc_rss=after_gc)
            await anyio.to_thread.run_sync(sys.stdin.read)  # live until told: CPU is read
            return
        if mode == "floor":
            began = time.perf_counter()
            objects = await read_list_alone(client)
            synced = time.perf_counter() - began
            peak, rss = memory()
            emit(event="synced", sync_seconds=synced, objects=objects, peak_rss=peak,
                 settled_rss=rss, gc_rss=rss, first_answer_seconds=first.seconds(began))
            await anyio.to_thread.run_sync(sys.stdin.read)
            return
        metadata = mode == "metadata"
        if metadata:
            informer = manager.cache.informer_for(PODS, metadata=True)
        else:
            manager.cache.index_field(PODS, "spec.nodeName", node_name)
            informer = manager.cache.informer_for(PODS)
        burst = Burst()
        manager.cache.add_handler(PODS, EventHandler(on_update=burst.observe), metadata=metadata)
        # CPU time, not wall time: waiting for the server is not the client's cost, and a
        # busy machine's preemptions would otherwise count against whatever was running.
        profiler = cProfile.Profile(time.process_time) if profile else None
        began = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        await manager.start()
        synced = time.perf_counter() - began
        if profiler is not None and profile:
            profiler.disable()
            profiler.dump_stats(profile)
        peak, _ = memory()
        after_gc = settle()
        _, rss = memory()
        emit(event="synced", sync_seconds=synced, objects=len(informer.store), peak_rss=peak,
             settled_rss=rss, gc_rss=after_gc, store_bytes=informer.store.nbytes,
             first_answer_seconds=first.seconds(began), **_traced())
        try:
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                command, want, need = line.split()
                if command != "burst":
                    raise SystemExit(f"unexpected command {line!r}")
                done = burst.arm(want, int(need))
                emit(event="armed")
                await done.wait()
                done_at = time.time()
                peak, rss = memory()
                emit(event="burst", done_at=done_at, peak_rss=peak, rss=rss)
        finally:
            await manager.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale_subject",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--mode", choices=("full", "metadata", "baseline", "floor"),
                        required=True)
    parser.add_argument("--profile", metavar="FILE")
    args = parser.parse_args(argv)
    asyncio.run(run(args.kubeconfig, args.mode, args.profile))


if __name__ == "__main__":
    main()
