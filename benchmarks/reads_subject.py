"""The reconcilekit side of ``benchmarks/reads.py``: a Manager's cache of Pods, read.

``python -m benchmarks.reads_subject --kubeconfig PATH --index LABEL
[--shared-read-memory BYTES]``, as ``benchmarks/go/main.go -mode full -label-index LABEL``
is the client-go side, with the same protocol on stdin and stdout.

Its cache holds the Pods with a field index named LABEL, on that label's value
(``cache.index_field``), beside the namespace index every store has.
``--shared-read-memory`` is the Manager's ``cache_shared_read_memory`` (the bound of
the decoded objects shared reads keep); without it the Manager's default holds.
Once synced it prints ``{"event": "synced", "sync_seconds", "objects", "peak_rss",
"settled_rss", "gc_rss"}`` (bytes, as ``benchmarks/scale_subject.py`` measures them).
Then each stdin line is a command, answered by one JSON line:

* ``read SCENARIO MODE VALUE REPS``: REPS timed reads, each one's objects all touched
  (``metadata.name`` and ``status.phase`` read) and then dropped, the garbage
  collector left on. MODE is ``copy`` (the default reads: fresh dicts) or ``shared``
  (``shared=True``: the cache's own decoded objects). SCENARIO ``field``:
  ``list(PODS, field=(LABEL, VALUE))``; ``label``: ``list(PODS,
  label_selector=VALUE)`` across all namespaces; ``namespace``: ``list(PODS, ns)``
  for each ns of the comma-separated VALUE; ``get``: ``get(PODS, name, ns)`` of each
  key the field index holds for VALUE (looked up before the timing). Answers
  ``{"event": "read", "objects", "seconds": [...], "cpu_seconds": [...], "touched"}``:
  per repetition, the time it took and the process's CPU time in it.
* ``hold VALUE``: the field read of VALUE (copy mode), kept while VmRSS is read, with
  no collection first: ``{"event": "hold", "objects", "rss"}``.
* ``settle``: ``{"event": "settled", "rss", "gc_rss"}``, measured as after the sync.

End of input ends it. Before reconcilekit has shared reads (``shared`` among
``Cache.list``'s parameters) the ``shared`` mode and ``--shared-read-memory`` are
refused with a message saying so.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from reconcilekit import Cache, Client, Manager
from reconcilekit.kinds import PODS

from .scale_subject import emit, memory, settle

SHARED_READS = "shared" in inspect.signature(Cache.list).parameters
MODES = ("copy", "shared")
SCENARIOS = ("field", "label", "namespace", "get")


def label_value(label: str) -> Callable[[Mapping[str, Any]], Iterable[str]]:
    """The index function of ``label``: its value, when the object has the label."""
    def values(obj: Mapping[str, Any]) -> Iterable[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return () if value is None else (value,)
    return values


def touch(pods: Iterable[Mapping[str, Any]]) -> int:
    """What a reconcile reads of each object: its name and phase (as the Go side does)."""
    touched = 0
    for pod in pods:
        touched += len(pod["metadata"]["name"])
        if pod["status"].get("phase") == "Running":
            touched += 1
    return touched


class Reader:
    """Answers the read commands from a synced cache with a field index named ``index``."""

    def __init__(self, cache: Cache, index: str) -> None:
        self.cache = cache
        self.index = index
        self.touched = 0

    async def pods(self, scenario: str, value: str, mode: dict[str, Any]) -> list[Any]:
        """One read of ``scenario``: the objects it returned."""
        out: list[Any] = []
        if scenario == "field":
            out = await self.cache.list(PODS, field=(self.index, value), **mode)
        elif scenario == "label":
            out = await self.cache.list(PODS, label_selector=value, **mode)
        elif scenario == "namespace":
            for ns in value.split(","):
                out.extend(await self.cache.list(PODS, ns, **mode))
        else:
            raise ValueError(f"unknown scenario {scenario!r}: expected one of "
                             f"{', '.join(SCENARIOS)}")
        return out

    async def read(self, scenario: str, mode_name: str, value: str,
                   reps: int) -> dict[str, Any]:
        """``reps`` timed reads; each one's objects are touched, then dropped."""
        if mode_name not in MODES:
            raise ValueError(f"mode {mode_name!r}: expected copy or shared")
        if mode_name == "shared" and not SHARED_READS:
            raise ValueError("mode shared: this reconcilekit's Cache.list has no shared "
                             "parameter")
        mode: dict[str, Any] = {"shared": True} if mode_name == "shared" else {}
        keys = (self.cache.lookup_keys(PODS, (self.index, value)) if scenario == "get"
                else [])
        seconds, cpu, touching, objects = [], [], [], 0
        for _ in range(reps):
            began, began_cpu = time.perf_counter(), time.process_time()
            if scenario == "get":  # one at a time, each touched and dropped
                touched = 0.0
                for key in keys:
                    pod = await self.cache.get(PODS, key.name, key.namespace, **mode)
                    read = time.perf_counter()
                    self.touched += touch((pod,))
                    touched += time.perf_counter() - read
                    del pod
                touching.append(touched)
                objects = len(keys)
            else:
                pods = await self.pods(scenario, value, mode)
                read = time.perf_counter()
                self.touched += touch(pods)
                touching.append(time.perf_counter() - read)
                objects = len(pods)
                del pods  # dropped inside the timing, as a reconcile drops what it read
            seconds.append(time.perf_counter() - began)
            cpu.append(time.process_time() - began_cpu)
        return {"event": "read", "scenario": scenario, "mode": mode_name, "objects": objects,
                "seconds": seconds, "touch_seconds": touching, "cpu_seconds": cpu,
                "touched": self.touched}

    async def hold(self, value: str) -> dict[str, Any]:
        """The field read of ``value`` (copy mode), held while VmRSS is read."""
        held = await self.pods("field", value, {})
        self.touched += touch(held)
        _, rss = memory()
        answer = {"event": "hold", "objects": len(held), "rss": rss, "touched": self.touched}
        del held
        return answer

    async def command(self, line: str) -> dict[str, Any]:
        fields = line.split()
        if fields[:1] == ["read"] and len(fields) == 5:
            try:
                reps = int(fields[4])
            except ValueError:
                reps = 0
            if reps < 1:
                raise ValueError(f"read: repetitions {fields[4]!r}: expected a positive integer")
            return await self.read(fields[1], fields[2], fields[3], reps)
        if fields[:1] == ["hold"] and len(fields) == 2:
            return await self.hold(fields[1])
        if fields == ["settle"]:
            after_gc = settle()
            return {"event": "settled", "rss": memory()[1], "gc_rss": after_gc}
        raise ValueError(f"unexpected command {line.strip()!r}")


async def run(kubeconfig: str, index: str, shared_read_memory: int | None) -> None:
    budget: dict[str, Any] = ({} if shared_read_memory is None
              else {"cache_shared_read_memory": shared_read_memory})
    async with await Client.from_kubeconfig(kubeconfig) as client:
        manager = Manager(client, http_addr=None, **budget)
        manager.cache.index_field(PODS, index, label_value(index))
        informer = manager.cache.informer_for(PODS)
        began = time.perf_counter()
        await manager.start()
        synced = time.perf_counter() - began
        peak, _ = memory()
        after_gc = settle()
        emit(event="synced", sync_seconds=synced, objects=len(informer.store), peak_rss=peak,
             settled_rss=memory()[1], gc_rss=after_gc)
        reader = Reader(manager.cache, index)
        try:
            while line := await anyio.to_thread.run_sync(sys.stdin.readline):
                try:
                    answer = await reader.command(line)
                except ValueError as e:
                    raise SystemExit(f"reads_subject: {e}") from None
                emit(**answer)
        finally:
            await manager.shutdown()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reads_subject",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--index", required=True, metavar="LABEL",
                        help="the label the field index of that name is on")
    parser.add_argument("--shared-read-memory", type=int, metavar="BYTES",
                        help="the Manager's cache_shared_read_memory")
    args = parser.parse_args(argv)
    if args.shared_read_memory is not None and not SHARED_READS:
        parser.error("--shared-read-memory: this reconcilekit has no shared reads "
                     "(no shared parameter in Cache.list)")
    asyncio.run(run(args.kubeconfig, args.index, args.shared_read_memory))


if __name__ == "__main__":
    main()
