"""Sharded replicas: 1, 2 and 4 replicas of the CNClaim operator sharing many namespaces.

Run: ``python -m benchmarks.sharding [--assets DIR | --in-process] [--namespaces 24]
[--claims 8] [--replicas 1,2,4]``. Numbers go in docs/performance.md.

For each replica count, on a fresh API server: ``--namespaces`` namespaces,
each with a pool of ``claims + 2`` Pods and a claim set of ``claims``; the
replicas are started as processes of their own (``python -m examples.cnclaim
--kubeconfig ... --shard-ring bench``, sharded by namespace) and timed until
every claim set reports all its claims Bound. Reported per run: the time to
converge, and per replica its CPU seconds, its RSS and the objects and JSON
bytes its cache holds (``reconcilekit_cache_objects``/``_bytes`` from its
/metrics), at convergence.
A node simulator in the benchmark runs the Pods.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import sys
import time
from pathlib import Path

import aiohttp
import anyio

from examples.cnclaim.demo.scenario import POD_TEMPLATE
from examples.cnclaim.operator import install_crds
from examples.cnclaim.resources import CNCLAIMSETS, CNPOOLS
from reconcilekit import Client
from reconcilekit.kinds import NAMESPACES
from reconcilekit.testing import NodeSimulator, OperatorProcess

from .proc_stats import cpu_and_rss
from .servers import api_server

ROOT = Path(__file__).resolve().parent.parent
_PORT = re.compile(r"serving /metrics, /healthz and /readyz on http://[^:]+:(\d+)")


def _names(n: int) -> list[str]:
    # names that differ from the start: FNV-1a spreads them over the shards (names
    # that differ only at the end would share a few)
    return [f"n{hashlib.sha256(str(i).encode()).hexdigest()[:10]}" for i in range(n)]


async def _cached(port: int) -> tuple[int, int]:
    """(objects, JSON bytes) the replica's cache holds, from its /metrics."""
    async with aiohttp.ClientSession() as http, \
            http.get(f"http://127.0.0.1:{port}/metrics") as response:
        text = await response.text()

    def total(name: str) -> int:
        return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(name + "{")))
    return total("reconcilekit_cache_objects"), total("reconcilekit_cache_bytes")


async def _replica(kubeconfig: Path, identity: str) -> tuple[OperatorProcess, int]:
    proc = await OperatorProcess(
        sys.executable, "-m", "examples.cnclaim", "--kubeconfig", str(kubeconfig),
        "--shard-ring", "bench", "--identity", identity, "--metrics-addr", "127.0.0.1:0",
        "--no-webhooks", "--log-level", "INFO", cwd=ROOT, name=f"replica {identity}").start()
    serving = await proc.wait_for_line(_PORT, within=120)
    return proc, int(serving.group(1))


async def one_run(assets: str | None, namespaces: int, claims: int, replicas: int
                  ) -> dict[str, object]:
    async with api_server(assets) as kubeconfig, \
            await Client.from_kubeconfig(str(kubeconfig)) as client:
        await install_crds(client)
        names = _names(namespaces)
        for ns in names:
            await client.create(NAMESPACES, {"metadata": {"name": ns}})
            await client.create(CNPOOLS, {
                "apiVersion": CNPOOLS.api_version, "kind": CNPOOLS.kind,
                "metadata": {"name": "pool"},
                "spec": {"replicas": claims + 2, "podTemplate": POD_TEMPLATE}}, ns)
            await client.create(CNCLAIMSETS, {
                "apiVersion": CNCLAIMSETS.api_version, "kind": CNCLAIMSETS.kind,
                "metadata": {"name": "web"},
                "spec": {"replicas": claims, "template": {"spec": {"poolName": "pool"}}}},
                ns)

        async def converged() -> bool:
            sets = (await client.list(CNCLAIMSETS))["items"]
            return len(sets) == namespaces and all(
                int((s.get("status") or {}).get("readyReplicas") or 0) == claims for s in sets)

        async with NodeSimulator(client, nodes=4):
            started = time.perf_counter()
            procs = [await _replica(kubeconfig, f"r{i}") for i in range(replicas)]
            try:
                with anyio.fail_after(600):
                    while not await converged():  # noqa: ASYNC110 (polling the server)
                        await anyio.sleep(0.25)
                took = time.perf_counter() - started
                await anyio.sleep(2)  # let every replica's relists settle before measuring
                per = []
                for proc, port in procs:
                    cpu, rss = cpu_and_rss(proc.pid)
                    objects, held = await _cached(port)
                    per.append((cpu, rss, objects, held))
            finally:
                for proc, _ in procs:
                    proc.terminate()
                for proc, _ in procs:
                    await proc.stop()
    return {"replicas": replicas, "seconds": took,
            "cpu": [p[0] for p in per], "rss": [p[1] for p in per],
            "objects": [p[2] for p in per], "bytes": [p[3] for p in per]}


async def run(assets: str | None, namespaces: int, claims: int, counts: list[int]) -> None:
    rows = []
    for replicas in counts:
        print(f"{replicas} replica(s)...", file=sys.stderr)
        rows.append(await one_run(assets, namespaces, claims, replicas))
    server = "kube-apiserver" if assets else "in-process"
    print(f"\n{namespaces} namespaces x (pool of {claims + 2}, claim set of {claims}), "
          f"{server}\n")
    print("| replicas | time to all Bound | CPU per replica (mean) | RSS per replica (mean) "
          "| cached objects per replica (mean) | cache bytes per replica (mean) "
          "| cache bytes, ratio to 1 replica |")
    print("|---|---|---|---|---|---|---|")
    base = statistics.mean(rows[0]["bytes"])  # type: ignore[arg-type]
    for row in rows:
        held = statistics.mean(row["bytes"])  # type: ignore[arg-type]
        print(f"| {row['replicas']} | {row['seconds']:.1f} s "
              f"| {statistics.mean(row['cpu']):.2f} s "  # type: ignore[arg-type]
              f"| {statistics.mean(row['rss']):.1f} MiB "  # type: ignore[arg-type]
              f"| {statistics.mean(row['objects']):.0f} "  # type: ignore[arg-type]
              f"| {held / 1024:.0f} KiB | {held / base:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sharding")
    parser.add_argument("--assets", default=os.environ.get("RECONCILEKIT_TEST_ASSETS"))
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--namespaces", type=int, default=24)
    parser.add_argument("--claims", type=int, default=8)
    parser.add_argument("--replicas", default="1,2,4")
    args = parser.parse_args()
    counts = [int(c) for c in args.replicas.split(",")]
    anyio.run(run, None if args.in_process else args.assets, args.namespaces, args.claims,
              counts)


if __name__ == "__main__":
    main()
