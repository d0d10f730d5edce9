"""Soak: the CNClaim operator on kube-apiserver for a long time, under churn.

Run: ``python -m benchmarks.soak --minutes 30 [--assets DIR]``. The record
goes in docs/performance.md (with ``docs/soak.png``).

A control plane (etcd, kube-apiserver, kube-controller-manager) from
``--assets`` (default ``$RECONCILEKIT_TEST_ASSETS``) and, in this process, a
node simulator (scheduler and kubelet); the operator runs as its own process
(``python -m examples.cnclaim --kubeconfig ...``) with its log at INFO in a
file. A CNPool of ``--pool`` (40) Idle Pods and a CNClaimSet; every round the
claim set is scaled to a random size in [0, 2 x pool] and a few Pods, bound or
idle, are deleted at random (as a node loss would), then the round waits
until everything converged:

* the claim set has its replicas, every claim Bound to a Running Pod
  labelled as claimed by it, no Pod named by two claims;
* the pool has exactly its Idle Running Pods, none Draining.

Recorded per round: convergence time, the operator's CPU seconds and RSS
(reported first, warm, a third into the run, and last: growth after warm-up
is what a leak looks like).

``--fault-every M`` injects a fault from outside every M minutes, in turn
from ``benchmarks/soak_faults.py``: a partition between the operator and
kube-apiserver longer than the Lease, seconds of latency per request, etcd
stopped longer than a watch's timeout, the operator SIGKILLed, kube-apiserver
SIGKILLed. The operator runs with leader election and reaches kube-apiserver
through a ``TCPProxy``; a supervisor restarts it after it exits, as a kubelet
would. A fault round makes its change (scale, Pods deleted) and then the
fault; convergence is timed from the fault's end. Each WARNING or ERROR line
of the operator's log is attributed to the fault it fell in (or within a
minute after), or to none.
At the end the claim set goes to 0 and the end state is checked clean (no
claim left, the pool back to its size, nothing Draining). The operator's
log is counted by level, with its tracebacks: a healthy operator under
churn it can handle logs no WARNING or ERROR. ``--idle-minutes M`` first
leaves the operator idle (pool full, no claims) for M minutes and counts
what it logs meanwhile. Results go to ``benchmarks/results/soak.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import yaml

from examples.cnclaim.demo.scenario import POD_TEMPLATE, converged
from examples.cnclaim.operator import install_crds
from examples.cnclaim.resources import (
    CNCLAIMS,
    CNCLAIMSETS,
    CNPOOLS,
    POOL_LABEL,
    name_of,
)
from reconcilekit import Client, NotFound
from reconcilekit.kinds import NAMESPACES, PODS
from reconcilekit.testing import ControlPlane, NodeSimulator, TCPProxy

from .proc_stats import cpu_and_rss
from .soak_faults import FAULTS, FaultInjector, Supervisor

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"

NS = "soak"
POOL = "soak"
SET = "churn"
_LEVEL = re.compile(r"^\S+ \S+ (DEBUG|INFO|WARNING|ERROR|CRITICAL)\s")


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _converged(client: Client, replicas: int, pool: int) -> str | None:
    return await converged(client, NS, pool=POOL, claimset=SET, claims=replicas, idle=pool)


async def _until_converged(client: Client, replicas: int, pool: int, within: float) -> float:
    started = time.perf_counter()
    seen: str | None = "nothing yet"
    while time.perf_counter() - started < within:
        seen = await _converged(client, replicas, pool)
        if seen is None:
            return time.perf_counter() - started
        await anyio.sleep(0.25)
    raise TimeoutError(f"not converged within {within:.0f}s: {seen}")


async def _kill_pods(client: Client, rng: random.Random, count: int) -> list[str]:
    """Delete ``count`` random live Pods of the pool at once (a node lost)."""
    pods = [p for p in (await client.list(PODS, NS, label_selector=f"{POOL_LABEL}={POOL}")
                        ).get("items") or [] if not p["metadata"].get("deletionTimestamp")]
    victims = rng.sample(pods, min(count, len(pods)))
    for pod in victims:
        with contextlib.suppress(NotFound):
            await client.delete(PODS, name_of(pod), NS, grace_period_seconds=0)
    return [name_of(p) for p in victims]


def _log_counts(path: Path, windows: Sequence[tuple[str, float, float]] = ()
                ) -> dict[str, Any]:
    """Lines by level, tracebacks, and each WARNING or ERROR line's fault: the
    ``(fault, began, ended)`` window (wall-clock seconds) its timestamp falls in."""
    levels: Counter[str] = Counter()
    tracebacks = 0
    loud: list[str] = []
    by_fault: Counter[str] = Counter()
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("Traceback (most recent call last)"):
            tracebacks += 1
        m = _LEVEL.match(line)
        if m:
            levels[m.group(1)] += 1
            if m.group(1) in ("WARNING", "ERROR", "CRITICAL"):
                cause = _fault_at(line, windows)
                by_fault[cause] += 1
                if cause == "none" and len(loud) < 20:
                    loud.append(line[:300])
    return {"levels": dict(levels), "tracebacks": tracebacks, "loud_by_fault": dict(by_fault),
            "loud_outside_faults": loud}


def _fault_at(line: str, windows: Sequence[tuple[str, float, float]]) -> str:
    try:
        stamp = datetime.datetime.strptime(" ".join(line.split()[:2]), "%Y-%m-%d %H:%M:%S,%f")
    except ValueError:
        return "none"
    at = stamp.timestamp()
    return next((kind for kind, began, ended in windows if began <= at <= ended), "none")


async def soak(assets: str, minutes: float, idle_minutes: float, pool: int, seed: int,
               kill_max: int, within: float, fault_every: float) -> dict[str, Any]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        kubeconfig = Path(tmp) / "kubeconfig"
        log_path = RESULTS / "soak-operator.log"
        RESULTS.mkdir(parents=True, exist_ok=True)
        async with ControlPlane(assets) as plane, \
                TCPProxy(plane.configuration().host) as proxy:
            document = plane.kubeconfig(namespace=NS)
            document["clusters"][0]["cluster"]["server"] = proxy.url
            kubeconfig.write_text(yaml.safe_dump(document))
            async with Client(plane.configuration()) as client:
                await install_crds(client)  # and wait until they are Established
                await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": NS}})
                log_path.write_bytes(b"")
                operator = Supervisor(ROOT, kubeconfig, NS, log_path)
                faults = FaultInjector(plane, proxy, operator)
                async with NodeSimulator(client, nodes=5, namespace=NS), \
                        anyio.create_task_group() as tg:
                    await tg.start(operator.run)
                    try:
                        result = await _rounds(client, operator, faults, log_path, rng,
                                               minutes, idle_minutes, pool, kill_max,
                                               within, seed, fault_every)
                    finally:
                        await operator.stop()
                        tg.cancel_scope.cancel()
                result["operator_starts"] = operator.starts
                result["operator_exits"] = {str(k): v for k, v in operator.exits.items()}
                return result


async def _rounds(client: Client, operator: Supervisor, faults: FaultInjector,
                  log_path: Path, rng: random.Random, minutes: float, idle_minutes: float,
                  pool: int, kill_max: int, within: float, seed: int,
                  fault_every: float) -> dict[str, Any]:
    await client.create(CNPOOLS, {"apiVersion": CNPOOLS.api_version, "kind": "CNPool",
                                  "metadata": {"name": POOL},
                                  "spec": {"replicas": pool, "podTemplate": POD_TEMPLATE}}, NS)
    await client.create(CNCLAIMSETS, {
        "apiVersion": CNCLAIMSETS.api_version, "kind": "CNClaimSet",
        "metadata": {"name": SET},
        "spec": {"replicas": 0, "template": {"spec": {"poolName": POOL}}}}, NS)
    await _until_converged(client, 0, pool, within + 60)  # the first election included
    idle: dict[str, Any] = {}
    if idle_minutes > 0:
        _progress(f"idle for {idle_minutes:g} minutes")
        before = _log_counts(log_path)
        cpu0, _ = cpu_and_rss(operator.pid)
        await anyio.sleep(idle_minutes * 60)
        after = _log_counts(log_path)
        idle = {"minutes": idle_minutes, "cpu_seconds": cpu_and_rss(operator.pid)[0] - cpu0,
                "lines": {k: v - before["levels"].get(k, 0)
                          for k, v in after["levels"].items()},
                "tracebacks": after["tracebacks"] - before["tracebacks"]}
        _progress(f"  idle: {idle}")
    rounds: list[dict[str, Any]] = []
    injected: list[dict[str, Any]] = []
    started = time.monotonic()
    wall_offset = time.time() - started
    next_fault = started + fault_every * 60 if fault_every > 0 else float("inf")
    while time.monotonic() - started < minutes * 60:
        replicas = rng.randint(0, 2 * pool)
        kills = rng.randint(0, kill_max)
        pid = operator.pid
        cpu0, _ = cpu_and_rss(pid)
        t0 = time.monotonic()
        await client.patch(CNCLAIMSETS, SET, {"spec": {"replicas": replicas}}, NS)
        killed = await _kill_pods(client, rng, kills)
        fault: dict[str, Any] | None = None
        if time.monotonic() >= next_fault:
            kind = FAULTS[len(injected) % len(FAULTS)]
            _progress(f"  fault {len(injected) + 1}: {kind}")
            fault = await faults.inject(kind)
            injected.append(fault)
            next_fault += fault_every * 60
            t0 = fault["ended"]
        try:
            await _until_converged(client, replicas, pool, within)
        except TimeoutError as err:
            raise TimeoutError(f"round {len(rounds) + 1}"
                               + (f" after the fault {fault['fault']}" if fault else "")
                               + f": {err}") from None
        seconds = time.monotonic() - t0
        restarted = operator.pid != pid
        cpu, rss = cpu_and_rss(operator.pid)
        rounds.append({"at": time.monotonic() - started, "replicas": replicas,
                       "killed": len(killed), "seconds": seconds,
                       "cpu": None if restarted else cpu - cpu0, "rss_mib": rss,
                       "pid": operator.pid, "fault": fault["fault"] if fault else None})
        if fault:
            fault["converged_seconds"] = seconds
            _progress(f"    converged {seconds:.1f} s after it ended")
        if len(rounds) % 10 == 0:
            _progress(f"  round {len(rounds)} at {rounds[-1]['at'] / 60:.1f} min: "
                      f"{replicas} claims, {len(killed)} Pods killed, converged in "
                      f"{seconds:.1f}s, RSS {rss:.0f} MiB")
    await client.patch(CNCLAIMSETS, SET, {"spec": {"replicas": 0}}, NS)
    end_seconds = await _until_converged(client, 0, pool, within)
    left = (await client.list(CNCLAIMS, NS)).get("items") or []
    if left:
        raise AssertionError(f"{len(left)} claims left after scaling to 0")
    times = sorted(r["seconds"] for r in rounds if not r["fault"])
    p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
    cpus = [r["cpu"] for r in rounds if r["cpu"] is not None]
    windows = [(f["fault"], f["began"] + wall_offset, f["ended"] + wall_offset + 60)
               for f in injected]
    return {"seed": seed, "minutes": minutes, "pool": pool, "rounds": rounds,
            "fault_every": fault_every,
            "faults": [{k: v for k, v in f.items() if k not in ("began", "ended")}
                       | {"at_minute": round((f["began"] - started) / 60, 1),
                          "lasted": round(f["ended"] - f["began"], 1)} for f in injected],
            "idle": idle, "end_state_seconds": end_seconds,
            "converge_median": statistics.median(times), "converge_p95": p95,
            "converge_max": times[-1], "cpu_per_round_median": statistics.median(cpus),
            "rss_first": rounds[0]["rss_mib"],
            "rss_warm": _warm_rss(rounds), "rss_last": rounds[-1]["rss_mib"],
            "log": _log_counts(log_path, windows)}


def _warm_rss(rounds: list[dict[str, Any]]) -> float:
    """RSS once the operator is warm: at the first round past a third of the run (its
    bounded caches, such as the Event recorder's 4,096 correlations, have filled)."""
    third = rounds[-1]["at"] / 3
    return float(next(r["rss_mib"] for r in rounds if r["at"] >= third))


def _plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rounds = result["rounds"]
    at = [r["at"] / 60 for r in rounds]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 5))
    top.plot(at, [r["seconds"] for r in rounds], ".", markersize=3)
    top.set_ylabel("round converged in (s)")
    top.set_title(f"CNClaim operator on kube-apiserver: {len(rounds)} churn rounds, "
                  f"{result['minutes']:g} minutes")
    bottom.plot(at, [r["rss_mib"] for r in rounds], "-")
    bottom.set_ylabel("operator RSS (MiB)")
    bottom.set_xlabel("minutes")
    bottom.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--idle-minutes", type=float, default=0.0)
    parser.add_argument("--pool", type=int, default=40)
    parser.add_argument("--kill-max", type=int, default=3,
                        help="at most this many Pods deleted per round (default 3)")
    parser.add_argument("--within", type=float, default=180.0,
                        help="a round that does not converge in this many seconds fails")
    parser.add_argument("--fault-every", type=float, default=0.0, metavar="MINUTES",
                        help="inject a fault from outside every MINUTES (default: none)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--assets", metavar="DIR",
                        default=os.environ.get("RECONCILEKIT_TEST_ASSETS"))
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    if not args.assets:
        parser.error("needs kube-apiserver and etcd: --assets DIR or $RECONCILEKIT_TEST_ASSETS")
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    _progress(f"soak: {args.minutes:g} minutes, pool {args.pool}, seed {seed}")
    result = asyncio.run(soak(args.assets, args.minutes, args.idle_minutes, args.pool, seed,
                              args.kill_max, args.within, args.fault_every))
    (RESULTS / "soak.json").write_text(json.dumps(result, indent=1))
    log = result["log"]
    print(f"rounds {len(result['rounds'])}; converged median {result['converge_median']:.1f} s, "
          f"p95 {result['converge_p95']:.1f} s, max {result['converge_max']:.1f} s; "
          f"CPU per round {result['cpu_per_round_median']:.2f} s; RSS first "
          f"{result['rss_first']:.0f} MiB, warm {result['rss_warm']:.0f} MiB, last "
          f"{result['rss_last']:.0f} MiB; log lines "
          f"{log['levels']}, tracebacks {log['tracebacks']}; end state clean in "
          f"{result['end_state_seconds']:.1f} s; idle {result['idle'] or '-'}; "
          f"operator starts {result['operator_starts']}, exits {result['operator_exits']}")
    for fault in result["faults"]:
        print(f"  fault at {fault['at_minute']} min: {fault['fault']} ({fault['lasted']} s), "
              f"converged {fault['converged_seconds']:.1f} s after")
    print(f"  WARNING/ERROR lines by fault: {log['loud_by_fault']}")
    for line in log["loud_outside_faults"]:
        print("  outside any fault: " + line)
    if not args.no_plot:
        _plot(result, ROOT / "docs" / "soak.png")


if __name__ == "__main__":
    main()
