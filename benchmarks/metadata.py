"""Metadata-only informers: PartialObjectMetadata from the server against a client-side projection.

Run: ``python -m benchmarks.metadata [--assets DIR | --in-process] [--n 2000]``.
Numbers go in docs/performance.md.

N realistic Pods (about 3 KB of JSON each, managedFields included) in one
namespace; an informer lists and watches them two ways, each in three rounds
(medians reported), both against the same API server in the same run:

* ``projection``: full objects on the wire, parsed, then cut down to
  apiVersion, kind and metadata by the informer's ``metadata_only`` transform
  (what reconcilekit did before asking the server);
* ``server``: ``PartialObjectMetadata`` asked of the server on the list and
  the watch (``Informer(metadata_only=True)``), the same transform after.

Measured: bytes received (counted by a TCP proxy between the client and the
server, so TLS and HTTP framing included) and client CPU seconds
(``time.process_time``; the server is another process) for the initial
sync, and again for N watch events (a label changed on every Pod); memory
per cached object (tracemalloc, after the sync and at its peak during the
sync, in a separate pass). What is kept is the same both ways (the same
transform runs on what arrives); the peak, the bytes and the CPU are not.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

import anyio

from reconcilekit import Client, metadata_only
from reconcilekit.kinds import PODS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import TCPProxy, eventually

from .servers import api_server
from .store import realistic_pod

NAMESPACE = "default"


async def _create_pods(client: Client, n: int) -> None:
    limiter = anyio.Semaphore(16)

    async def create(i: int) -> None:
        async with limiter:
            pod = realistic_pod(i)
            for key in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences",
                        "generation"):
                pod["metadata"].pop(key, None)
            pod["metadata"]["namespace"] = NAMESPACE
            pod.pop("status", None)
            await client.create(PODS, pod, NAMESPACE)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(create, i)


async def _relabel_elsewhere(kubeconfig: Path, n: int, round_: int) -> None:
    """Change a label on every Pod from another process (its CPU is not the informer's)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "benchmarks.metadata", "--relabel", str(round_), "--n", str(n),
        "--kubeconfig", str(kubeconfig))
    if await proc.wait() != 0:
        raise RuntimeError("relabelling the Pods failed")


async def _relabel(client: Client, n: int, round_: int) -> None:
    limiter = anyio.Semaphore(16)

    async def patch(i: int) -> None:
        async with limiter:
            await client.patch(PODS, f"cn-{i:06d}", {"metadata": {"labels": {
                "round": str(round_)}}}, NAMESPACE)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(patch, i)


def _labelled(informer: Informer, n: int, round_: int) -> bool:
    objs = informer.store.list()
    return len(objs) >= n and all(
        (o["metadata"].get("labels") or {}).get("round") == str(round_) for o in objs)


async def measure(configuration: Any, kubeconfig: Path, server_side: bool, n: int,
                  round_: int) -> dict[str, float]:
    """One informer: sync, then n watch events; bytes and CPU of each."""
    async with TCPProxy(str(configuration.host)) as proxy:
        cfg = copy.copy(configuration)
        cfg.host = proxy.url
        async with Client(cfg) as client:
            informer = Informer(client, PODS, namespace=NAMESPACE, transform=metadata_only,
                                metadata_only=server_side)
            gc.collect()
            cpu, wire = time.process_time(), proxy.received
            async with anyio.create_task_group() as tg:
                tg.start_soon(informer.run)
                await informer.synced.wait()
                sync_cpu, sync_bytes = time.process_time() - cpu, proxy.received - wire
                await eventually(lambda: informer.statistics().watching, within=30)
                cpu, wire = time.process_time(), proxy.received
                await _relabel_elsewhere(kubeconfig, n, round_)
                await eventually(lambda: _labelled(informer, n, round_), within=120)
                watch_cpu = time.process_time() - cpu
                watch_bytes = proxy.received - wire
                tg.cancel_scope.cancel()
    return {"sync_bytes": sync_bytes / n, "sync_cpu": sync_cpu, "watch_bytes": watch_bytes / n,
            "watch_cpu": watch_cpu}


async def memory_per_object(configuration: Any, server_side: bool,
                            n: int) -> tuple[float, float]:
    """Bytes per object kept in the store after the sync, and at the peak during it."""
    async with Client(configuration) as client:
        informer = Informer(client, PODS, namespace=NAMESPACE, transform=metadata_only,
                            metadata_only=server_side)
        gc.collect()
        tracemalloc.start()
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            await informer.synced.wait()
            tg.cancel_scope.cancel()
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(informer.store.list()) >= n
        return kept / n, peak / n


async def run(assets: str | None, n: int, rounds: int) -> None:
    where = f"kube-apiserver from {assets}" if assets else "the in-process API server"
    print(f"metadata benchmark: {n:,} Pods on {where}, {rounds} rounds", file=sys.stderr,
          flush=True)
    async with api_server(assets) as kubeconfig:
        async with await Client.from_kubeconfig(kubeconfig) as writer:
            await _create_pods(writer, n)
            configuration = writer.configuration
        results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
        for r in range(rounds):
            for server_side in (False, True):  # alternate, so drift hits both alike
                got = await measure(configuration, kubeconfig, server_side, n,
                                    2 * r + server_side)
                results[server_side].append(got)
                print(f"  round {r + 1} {'server' if server_side else 'projection'}: {got}",
                      file=sys.stderr, flush=True)
        memory = {s: await memory_per_object(configuration, s, n) for s in (False, True)}
    med = {s: {k: statistics.median(x[k] for x in results[s]) for k in results[s][0]}
           for s in results}
    old, new = med[False], med[True]
    print(f"| {n:,} Pods on {where} | projection (full objects) | PartialObjectMetadata "
          "| ratio |")
    print("|---|---|---|---|")
    rows = (("bytes received per object, list", "sync_bytes", "{:,.0f} B"),
            ("client CPU, initial sync", "sync_cpu", "{:.2f} s"),
            ("bytes received per object, one MODIFIED event", "watch_bytes", "{:,.0f} B"),
            ("client CPU, N watch events", "watch_cpu", "{:.2f} s"))
    for label, key, fmt in rows:
        print(f"| {label} | {fmt.format(old[key])} | {fmt.format(new[key])} "
              f"| {new[key] / old[key]:.2f} |")
    for label, i in (("memory per cached object", 0), ("peak memory per object during "
                                                       "the sync", 1)):
        print(f"| {label} | {memory[False][i]:,.0f} B | {memory[True][i]:,.0f} B "
              f"| {memory[True][i] / memory[False][i]:.2f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="Pods (default 2000)")
    parser.add_argument("--rounds", type=int, default=3)
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--assets", metavar="DIR", default=os.environ.get(
        "RECONCILEKIT_TEST_ASSETS"), help="kube-apiserver and etcd binaries "
        "(default $RECONCILEKIT_TEST_ASSETS)")
    where.add_argument("--in-process", action="store_true",
                       help="the in-process API server even when assets are set")
    parser.add_argument("--relabel", type=int, help=argparse.SUPPRESS)  # the writer process
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relabel is not None:
        asyncio.run(_relabel_from(Path(args.kubeconfig), args.n, args.relabel))
        return
    asyncio.run(run(None if args.in_process else args.assets, args.n, args.rounds))


async def _relabel_from(kubeconfig: Path, n: int, round_: int) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        await _relabel(client, n, round_)


if __name__ == "__main__":
    main()
