"""Failover with warm and cold standbys: a leader SIGKILLed with its cluster's Pods cached.

Run: ``python -m benchmarks.failover --assets DIR [--objects 30000] [--rounds 3]``;
``--quick`` is ``--objects 2000 --rounds 1``. ``python -m benchmarks`` runs it only when
named with ``--only failover`` (the Pods are written first: minutes).

A control plane (etcd and kube-apiserver v1.28.7 from the binaries in DIR) is started,
and ``--objects`` realistic Pods are written to it (``benchmarks/scale.py``'s). Then,
for each round and each kind of standby (``LeaderElection(standby="warm")``, the
default, and ``"cold"``), two replicas of one operator (``benchmarks/failover_subject.py``:
a Manager reconciling Pods under a Lease of their own, client-go's timings: 15 s
lease, 10 s renew deadline, 2 s retry), each a process of its own:

1. replica A starts, takes the Lease and reconciles its first Pod;
2. replica B starts and stands by: once ready (warm: its cache synced) and having read
   the Lease held by A;
3. A is killed with SIGKILL (no release: B must wait for the Lease to expire);
4. B takes the Lease, then reconciles its first Pod.

Measured from B's own lines (Unix time, one machine): from the kill to the Lease
taken (the lease duration and B's retry jitter: the same for both kinds), from the
Lease taken to the first reconcile (the standby's cost: the goal is at most 1 s,
whatever the cluster's size), from the kill to the first reconcile, and B's RSS while
standing by and at its first reconcile. The table gives each round's median, with the
range over rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

from reconcilekit.testing import ControlPlane, OperatorProcess

from .__main__ import machine
from .scale import ETCD_QUOTA, populate
from .servers import add_assets_option, kube_apiserver_version

STANDBYS = ("warm", "cold")


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Replica:
    """One operator process (an :class:`OperatorProcess`, its output in a log beside the
    kubeconfig), and the JSON lines it prints."""

    def __init__(self, process: OperatorProcess) -> None:
        self.process = process

    @classmethod
    async def start(cls, kubeconfig: Path, identity: str, lease: str, standby: str) -> Replica:
        return cls(await OperatorProcess(
            sys.executable, "-m", "benchmarks.failover_subject", "--kubeconfig",
            str(kubeconfig), "--identity", identity, "--lease", lease, "--standby", standby,
            cwd=Path(__file__).parent.parent, log=kubeconfig.with_name(f"{lease}-{identity}.log"),
            name=f"replica {identity}").start())

    async def until(self, event: str, within: float) -> dict[str, Any]:
        """The first line telling of ``event``, read already or when it comes (the
        replica's lines may come in another order than they are asked for)."""
        opening = json.dumps({"event": event})[:-1]  # {"event": "leading"
        line = await self.process.wait_for_line(f"^{re.escape(opening)}", within=within)
        got: dict[str, Any] = json.loads(line.string)
        return got

    async def kill(self) -> float:
        """SIGKILL; the Unix time it was sent."""
        at = time.time()
        self.process.kill()
        await self.process.wait()
        return at


async def one_failover(kubeconfig: Path, lease: str, standby: str, n: int) -> dict[str, float]:
    within = 120 + n / 100  # a cold start lists everything
    leader = await Replica.start(kubeconfig, "a", lease, standby)
    successor: Replica | None = None
    try:
        await leader.until("first_reconcile", within)
        successor = await Replica.start(kubeconfig, "b", lease, standby)
        standing = await successor.until("standing_by", within)
        killed_at = await leader.kill()
        leading = await successor.until("leading", within)
        first = await successor.until("first_reconcile", within)
        if first["objects"] != n:
            raise RuntimeError(f"the successor reconciled with {first['objects']} Pods "
                               f"cached, not {n}")
        return {"to_lease": leading["t"] - killed_at, "lease_to_first": first["t"] - leading["t"],
                "to_first": first["t"] - killed_at, "standby_rss": standing["rss"],
                "first_rss": first["rss"]}
    finally:
        await leader.kill()
        if successor is not None:
            await successor.kill()


ROWS: tuple[tuple[str, str, Callable[[float], str]], ...] = (
    ("kill → Lease taken", "to_lease", lambda v: f"{v:.2f} s"),
    ("Lease taken → first reconcile", "lease_to_first", lambda v: f"{v:.3f} s"),
    ("kill → first reconcile", "to_first", lambda v: f"{v:.2f} s"),
    ("successor's RSS standing by", "standby_rss", lambda v: f"{v / 1024**2:,.0f} MiB"),
    ("successor's RSS at its first reconcile", "first_rss",
     lambda v: f"{v / 1024**2:,.0f} MiB"))


def table(n: int, results: dict[str, list[dict[str, float]]]) -> list[str]:
    out = ["| Pods | measurement | warm standby | cold standby |", "|---|---|---:|---:|"]
    for name, key, fmt in ROWS:
        cells = []
        for standby in STANDBYS:
            values = [r[key] for r in results[standby]]
            cell = fmt(statistics.median(values))
            if len(values) > 1:
                cell += f" ({fmt(min(values))} to {fmt(max(values))})"
            cells.append(cell)
        out.append(f"| {n:,} | {name} | {' | '.join(cells)} |")
    return out


async def run(args: argparse.Namespace, versions: str) -> None:
    plane = ControlPlane(args.assets, controller_manager=False,
                         etcd_flags=(f"--quota-backend-bytes={ETCD_QUOTA}",))
    async with plane:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = plane.write_kubeconfig(Path(tmp) / "kubeconfig")
            _progress(f"writing {args.objects:,} Pods")
            await populate(kubeconfig, 0, args.objects, args.in_flight)
            results: dict[str, list[dict[str, float]]] = {s: [] for s in STANDBYS}
            for r in range(args.rounds):
                for standby in STANDBYS:
                    got = await one_failover(kubeconfig, f"failover-{standby}-{r}", standby,
                                             args.objects)
                    _progress(f"  round {r + 1}, {standby}: {json.dumps(got)}")
                    results[standby].append(got)
    print(f"Machine: {machine()}; {versions}; {args.rounds} round(s)\n")
    print("\n".join(table(args.objects, results)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover",
                                     description=__doc__.split("\n")[0])
    add_assets_option(parser)
    parser.add_argument("--objects", type=int, default=30_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--in-flight", type=int, default=300,
                        help="writes in flight while writing the Pods")
    parser.add_argument("--quick", action="store_true", help="--objects 2000 --rounds 1")
    args = parser.parse_args(argv)
    if args.quick:
        args.objects, args.rounds = 2000, 1
    if not args.assets:
        print("| failover | not run: no assets (--assets or RECONCILEKIT_TEST_ASSETS) |")
        print("|---|---|")
        return
    server = kube_apiserver_version(args.assets)
    asyncio.run(run(args, f"{server}; reconcilekit {metadata.version('reconcilekit')}"))


if __name__ == "__main__":
    main()
