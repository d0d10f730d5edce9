"""Informer: sync and watch-event throughput, and memory per cached Pod.

Run: ``python -m benchmarks.informer``. Numbers go in docs/performance.md.

* watch events/s: 10,000 MODIFIED lines, as the API server writes them,
  through the watcher's line handling into an informer (parse, transform,
  index, store), with no network in between, so the informer's own cost is
  what is measured;
* initial sync: 10,000 Pods listed from the in-process API server, which
  runs in a separate process so the two do not share a core;
* memory: bytes per cached Pod (tracemalloc) with the default transform
  (managedFields dropped) and without, against the JSON the server sends.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import sys
import time
import tracemalloc
from typing import Any

import anyio
import orjson

from reconcilekit import Client, ObjectKey, strip_managed_fields
from reconcilekit._cache.watcher import Watcher
from reconcilekit.kinds import PODS
from reconcilekit.lowlevel import Informer

from .servers import api_server
from .store import realistic_pod

N = 10_000


def served_pod(i: int) -> dict[str, Any]:
    """A realistic Pod as the API server sends it: with managedFields."""
    pod = realistic_pod(i)
    pod["metadata"]["managedFields"] = [
        {"manager": m, "operation": op, "apiVersion": "v1", "time": "2026-11-22T01:00:05Z",
         "fieldsType": "FieldsV1", "fieldsV1": {
             "f:metadata": {"f:labels": {f"f:{k}": {} for k in pod["metadata"]["labels"]}},
             "f:spec": {"f:containers": {'k:{"name":"main"}': {
                 ".": {}, "f:image": {}, "f:args": {}, "f:env": {
                     f'k:{{"name":"ENV_{k}"}}': {".": {}, "f:name": {}, "f:value": {}}
                     for k in range(6)}}}},
             "f:status": {"f:conditions": {f'k:{{"type":"{t}"}}': {".": {}, "f:status": {}}
                                           for t in ("Ready", "Initialized")}}}}
        for m, op in (("kube-controller-manager", "Update"), ("kubelet", "Update"))]
    return pod


class _NullClient:
    """Stands in for the client: the line benchmark never talks to a server."""


def _lines(n: int) -> list[bytes]:
    out = []
    for i in range(n):
        pod = served_pod(i)
        pod["metadata"]["resourceVersion"] = str(200_000 + i)
        out.append(orjson.dumps({"type": "MODIFIED", "object": pod}))
    return out


def events_per_second(with_handler: bool) -> float:
    informer = Informer(_NullClient(), PODS)  # type: ignore[arg-type]
    informer.add_index("node", lambda o: [o["spec"].get("nodeName") or ""])
    if with_handler:
        from reconcilekit import EventHandler

        informer.add_handler(EventHandler(on_update=lambda old, new: None))
    seed = [served_pod(i) for i in range(N)]
    informer.replace(copy.deepcopy(seed), "1")
    watcher: Watcher = informer.watcher
    lines = _lines(N)
    gc.collect()
    started = time.perf_counter()
    for line in lines:
        watcher._handle(informer, line)
    return N / (time.perf_counter() - started)


def bytes_per_pod(transform: bool) -> tuple[float, float]:
    wire = [orjson.dumps(served_pod(i)) for i in range(N)]
    wire_size = sum(map(len, wire)) / N
    informer = Informer(_NullClient(), PODS,  # type: ignore[arg-type]
                        transform=strip_managed_fields if transform else None)
    objects = [orjson.loads(w) for w in wire]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    informer.replace(objects, "1")
    del objects
    gc.collect()
    cost = (tracemalloc.get_traced_memory()[0] - before) / N
    tracemalloc.stop()
    return wire_size, cost


async def initial_sync_seconds() -> tuple[float, float]:
    async with api_server() as kubeconfig, await Client.from_kubeconfig(kubeconfig) as client:
        async with anyio.create_task_group() as tg:
            limiter = anyio.Semaphore(16)

            async def create(i: int) -> None:
                async with limiter:
                    pod = realistic_pod(i)
                    for key in ("uid", "resourceVersion", "creationTimestamp",
                                "ownerReferences"):
                        pod["metadata"].pop(key)
                    pod["metadata"]["namespace"] = "default"
                    await client.create(PODS, pod, "default")

            for i in range(N):
                tg.start_soon(create, i)
        informer = Informer(client, PODS)
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            await informer.synced.wait()
            synced = time.perf_counter() - started
            key = ObjectKey("default", "cn-000042")
            rounds = 20_000
            t0 = time.perf_counter()
            for _ in range(rounds):
                informer.store.get(key)
            get_us = (time.perf_counter() - t0) / rounds * 1e6
            tg.cancel_scope.cancel()
        return synced, get_us


def main() -> None:
    print(f"informer benchmark, {N:,} Pods", file=sys.stderr, flush=True)
    plain = events_per_second(with_handler=False)
    handled = events_per_second(with_handler=True)
    print("  events measured", file=sys.stderr, flush=True)
    wire, stripped = bytes_per_pod(transform=True)
    _, unstripped = bytes_per_pod(transform=False)
    print("  memory measured; syncing from a server process", file=sys.stderr, flush=True)
    synced, get_us = asyncio.run(initial_sync_seconds())
    print("| measurement | value |")
    print("|---|---|")
    print(f"| watch events into the store, no handler | {plain:,.0f} events/s |")
    print(f"| watch events into the store, one on_update handler | {handled:,.0f} events/s |")
    print(f"| Pod JSON as the server sends it (with managedFields) | {wire:,.0f} B |")
    print(f"| cached Pod, default transform (managedFields dropped) | {stripped:,.0f} B "
          f"({stripped / wire:.2f}x wire JSON) |")
    print(f"| cached Pod, no transform | {unstripped:,.0f} B ({unstripped / wire:.2f}x) |")
    print(f"| initial sync of {N:,} Pods from a server process | {synced:.2f} s |")
    print(f"| cached get from the synced store | {get_us:.1f} µs |")


if __name__ == "__main__":
    main()
