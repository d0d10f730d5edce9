"""Informers that come and go: the memory a 30,000-Pod informer takes, and gives back.

Run: ``python -m benchmarks.informer_lifecycle [--assets DIR] [--pods 30000]
[--cycles 3]``; ``--quick`` is ``--pods 3000 --cycles 2``. Without ``--assets`` the
in-process API server serves (in a process of its own); with it, etcd and
kube-apiserver from DIR. ``python -m benchmarks`` runs it only when named with
``--only informer_lifecycle``.

The server is given N realistic Pods (``scale.py``'s, in 20 namespaces). Then a
subject process (``--subject``) runs a ``Manager`` whose one controller reconciles
ConfigMaps (a small informer, so the manager runs with something cached), and, each
cycle: adds a controller for Pods to the running manager (its reconciler does
nothing), waits until it started (the Pod informer synced, every Pod queued), lets
its queue drain, then removes it (its informer, held by nothing else, stops). After
each step the subject collects garbage and gives freed heap back to the OS
(``malloc_trim(0)``, as ``scale.py``'s subjects do) and reads its RSS.

Reported per cycle: the time from the add to the controller started; the JSON the
Pod store held (``reconcilekit_cache_bytes``); the RSS before the add, with the
informer synced, and after the removal; what the removal gave back, as a share of
what the add took; and the process's memory per JSON byte held (the RSS the add
took over the store's JSON): what ``Cache(memory_budget=...)`` counts against what
the process pays; and the Python objects (``sys.getallocatedblocks()``) left after
the removal beyond those before the add: what a leak would show, where RSS alone
cannot tell a leak from the allocator keeping freed memory for reuse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from reconcilekit import Client, Manager, Reconciler, Request, Result
from reconcilekit.kinds import CONFIG_MAPS, PODS

from .__main__ import machine
from .scale import populate
from .scale_subject import memory, settle
from .servers import add_assets_option, api_server, kube_apiserver_version

ROOT = Path(__file__).resolve().parent.parent


class _Nothing(Reconciler):
    """Reconciles nothing; ``drained`` is set once it was called ``expect`` times."""

    def __init__(self) -> None:
        self.calls, self.expect = 0, -1
        self.drained = asyncio.Event()

    async def reconcile(self, request: Request) -> Result:
        self.calls += 1
        if self.calls == self.expect:
            self.drained.set()
        return Result.done()


def _settled_rss() -> int:
    """VmRSS after a collection and freed heap given back to the OS (``scale_subject``'s
    settling, as the scale benchmark's subjects settle)."""
    settle()
    return memory()[1]


async def subject(kubeconfig: str, cycles: int) -> None:
    """The measured process: one JSON line per cycle on stdout."""
    async with await Client.from_kubeconfig(kubeconfig) as client:
        manager = Manager(client, http_addr=None)
        manager.controller().named("configmaps").for_(CONFIG_MAPS).complete(_Nothing())
        async with manager:
            for cycle in range(1, cycles + 1):
                before, blocks_before = _settled_rss(), sys.getallocatedblocks()
                began = time.perf_counter()
                reconciler = _Nothing()
                controller = manager.controller().named("pods").for_(PODS).complete(reconciler)
                await controller.started.wait()
                started = time.perf_counter() - began
                (informer,) = controller.watched
                held, objects = informer.store.nbytes, len(informer.store)
                del informer
                reconciler.expect = objects  # every Pod is queued once, and reconciled
                if reconciler.calls < objects:
                    await reconciler.drained.wait()
                synced = _settled_rss()
                await manager.remove(controller)
                del controller
                after, blocks_after = _settled_rss(), sys.getallocatedblocks()
                print(json.dumps({"cycle": cycle, "start_seconds": started, "objects": objects,
                                  "held": held, "before": before, "synced": synced,
                                  "after": after, "blocks_before": blocks_before,
                                  "blocks_after": blocks_after,
                                  "informers": len(manager.cache.informers())}), flush=True)


async def drive(args: argparse.Namespace) -> list[dict[str, Any]]:
    async with api_server(args.assets) as kubeconfig:
        print(f"writing {args.pods:,} Pods ...", file=sys.stderr, flush=True)
        await populate(kubeconfig, 0, args.pods, in_flight=64)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.informer_lifecycle", "--subject",
            "--kubeconfig", str(kubeconfig), "--cycles", str(args.cycles),
            cwd=ROOT, stdout=subprocess.PIPE)
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise SystemExit(f"the subject failed with exit code {proc.returncode}")
        return [json.loads(line) for line in out.decode().splitlines() if line.strip()]


def _mib(nbytes: float) -> str:
    return f"{nbytes / 2**20:.1f}"


def table(rows: list[dict[str, Any]], server: str) -> list[str]:
    out = [f"| {server}: cycle | started in (s) | Pods | JSON held (MiB) | RSS before | "
           "RSS synced | RSS after removal | given back | RSS per JSON byte | "
           "Python blocks left |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        took = row["synced"] - row["before"]
        back = row["synced"] - row["after"]
        out.append(f"| {row['cycle']} | {row['start_seconds']:.2f} | {row['objects']:,} | "
                   f"{_mib(row['held'])} | {_mib(row['before'])} MiB | "
                   f"{_mib(row['synced'])} MiB | {_mib(row['after'])} MiB | "
                   f"{back / took:.0%} | {took / row['held']:.1f} | "
                   f"{row['blocks_after'] - row['blocks_before']:+,} |")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.informer_lifecycle",
                                     description=__doc__.split("\n")[0])
    add_assets_option(parser)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="--pods 3000 --cycles 2")
    parser.add_argument("--subject", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.subject:
        asyncio.run(subject(args.kubeconfig, args.cycles))
        return
    if args.quick:
        args.pods, args.cycles = 3_000, 2
    rows = asyncio.run(drive(args))
    server = (kube_apiserver_version(args.assets) if args.assets
              else "in-process API server")
    print("\n".join(table(rows, server)))
    print(f"\n{args.pods:,} Pods; {machine()}")


if __name__ == "__main__":
    main()
