"""Claim storm, end to end: N Idle Pods in a pool and N CNClaims created at once.

For each N and each operator, a fresh in-process API server runs in this
process and the operator runs as a separate process, so its CPU time and
peak memory are its own:

* ``reconcilekit``: the bundled CNClaim operator (``python -m examples.cnclaim
  --kubeconfig ...``): shared cache, field index, several workers;
* ``naive``: the same workload done the way a simple operator does it
  (``benchmarks/naive_operator.py``): no cache, list Pods from the API
  server on every reconcile, one worker.

Measured: time from the first claim created to all claims Bound, API
requests the operator made per claim (counted by the server), reconciles per
claim, CPU seconds and peak RSS of the operator process. Results go to
``benchmarks/results/e2e.json`` and a plot to ``docs/e2e.png``.

``--quick`` runs N=50 only (a smoke run); ``--sizes 100,1000`` picks sizes;
``--naive-max N`` skips the baseline above N (it grows as N squared).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import orjson
import yaml

from reconcilekit import Client, Resource
from reconcilekit.testing import APIServer

from .store import realistic_pod

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "examples" / "cnclaim" / "manifests"
RESULTS = Path(__file__).resolve().parent / "results" / "e2e.json"
PLOT = ROOT / "docs" / "e2e.png"
PODS = Resource("", "v1", "Pod", "pods")
CLAIMS = Resource("core.matrixorigin.io", "v1alpha1", "CNClaim", "cnclaims")
POOL = "bench"
NS = "default"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _pod(i: int) -> dict[str, Any]:
    pod = realistic_pod(i)
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences",
                "generation"):
        meta.pop(key, None)
    meta["namespace"] = NS
    meta["labels"] = {"pool.matrixorigin.io/pool-name": POOL,
                      "pool.matrixorigin.io/pod-phase": "Idle"}
    pod.pop("status", None)
    return pod


def _claim(i: int) -> dict[str, Any]:
    return {"apiVersion": "core.matrixorigin.io/v1alpha1", "kind": "CNClaim",
            "metadata": {"name": f"claim-{i:05d}"}, "spec": {"poolName": POOL}}


def _proc_stats(pid: int) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of a live process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    hwm = next(int(line.split()[1]) for line in Path(f"/proc/{pid}/status").read_text()
               .splitlines() if line.startswith("VmHWM"))
    return cpu, hwm / 1024


def _bound(server: APIServer) -> int:
    table = server.storage.tables.get(("core.matrixorigin.io", "cnclaims"))
    if table is None:
        return 0
    return sum(1 for obj in table.objects.values()
               if (obj.get("status") or {}).get("phase") == "Bound")


async def _reconciles_from_metrics(port: int) -> float:
    async with aiohttp.ClientSession() as http, http.get(
            f"http://127.0.0.1:{port}/metrics") as resp:
        text = await resp.text()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("controller_runtime_reconcile_total{") and "cnclaim\"" in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


async def run_one(operator: str, n: int, within: float) -> dict[str, Any]:
    async with APIServer(history_limit=max(10_000, 4 * n)) as server:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with Client(server.configuration()) as client:
                for path in sorted(MANIFESTS.glob("crd*.yaml")) or sorted(
                        MANIFESTS.glob("*crd*.yaml")):
                    for doc in yaml.safe_load_all(path.read_text()):
                        if doc and doc.get("kind") == "CustomResourceDefinition":
                            await client.create(Resource("apiextensions.k8s.io", "v1",
                                                         "CustomResourceDefinition",
                                                         "customresourcedefinitions",
                                                         namespaced=False), doc)
                limiter = anyio.Semaphore(32)

                async def create(obj: dict[str, Any], resource: Resource) -> None:
                    async with limiter:
                        made = await client.create(resource, obj, NS)
                        if resource is PODS:  # no kubelet here: report it running
                            await client.patch_status(PODS, made["metadata"]["name"],
                                                      {"status": {"phase": "Running"}}, NS)

                async with anyio.create_task_group() as tg:
                    for i in range(n):
                        tg.start_soon(create, _pod(i), PODS)
                port = _free_port()
                if operator == "naive":
                    args = [sys.executable, "-m", "benchmarks.naive_operator",
                            str(kubeconfig), NS]
                else:
                    args = [sys.executable, "-m", "examples.cnclaim", "--kubeconfig",
                            str(kubeconfig), "--namespace", NS, "--workers", "4",
                            "--metrics-addr", f"127.0.0.1:{port}"]
                proc = await asyncio.create_subprocess_exec(
                    *args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
                try:
                    with anyio.fail_after(60):  # operator up: it watches claims
                        while server.request_count("watch", "cnclaims") == 0:  # noqa: ASYNC110
                            await anyio.sleep(0.02)
                    await anyio.sleep(0.2)
                    server.requests.clear()
                    started = time.perf_counter()
                    async with anyio.create_task_group() as tg:
                        for i in range(n):
                            tg.start_soon(create, _claim(i), CLAIMS)
                    ours = n  # the creates above
                    with anyio.fail_after(within):
                        while _bound(server) < n:  # noqa: ASYNC110 (polling the store)
                            await anyio.sleep(0.05)
                    elapsed = time.perf_counter() - started
                    requests = server.request_count() - ours
                    cpu, rss = _proc_stats(proc.pid)
                    if operator == "naive":
                        reconciles = None
                    else:
                        reconciles = await _reconciles_from_metrics(port)
                finally:
                    if proc.returncode is None:
                        proc.send_signal(signal.SIGTERM)
                    out = (await proc.communicate())[0].decode()
                if operator == "naive":
                    reconciles = float(orjson.loads(out.strip().splitlines()[-1])["reconciles"])
    return {"operator": operator, "n": n, "seconds": elapsed, "requests_per_claim":
            requests / n, "reconciles_per_claim": (reconciles or 0) / n,
            "cpu_seconds": cpu, "peak_rss_mib": rss}


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _plot(results: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for operator, style in (("reconcilekit", "o-"), ("naive", "s--")):
        rows = sorted((r for r in results if r["operator"] == operator), key=lambda r: r["n"])
        if not rows:
            continue
        ns = [r["n"] for r in rows]
        left.plot(ns, [r["seconds"] for r in rows], style, label=operator)
        right.plot(ns, [r["peak_rss_mib"] for r in rows], style, label=operator)
    for ax, title, unit in ((left, "time to all claims Bound", "seconds"),
                            (right, "operator peak RSS", "MiB")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("N (pods = claims)")
        ax.set_ylabel(unit)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(PLOT, dpi=110)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.e2e")
    parser.add_argument("--quick", action="store_true", help="N=50 only")
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--naive-max", type=int, default=5000)
    parser.add_argument("--no-plot", action="store_true")
    args = parser.parse_args(argv)
    sizes = [50] if args.quick else [int(s) for s in args.sizes.split(",")]
    results = []
    for n in sizes:
        for operator in ("reconcilekit", "naive"):
            if operator == "naive" and n > args.naive_max:
                _progress(f"  skipping naive at N={n} (--naive-max {args.naive_max})")
                continue
            _progress(f"  e2e: {operator}, N={n} ...")
            result = anyio.run(run_one, operator, n, 120 + n * 0.5)
            _progress(f"  e2e: {operator}, N={n}: {result['seconds']:.1f}s to all Bound")
            results.append(result)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    if not args.no_plot and not args.quick:
        _plot(results)
    print("| N | operator | time to all Bound | requests/claim | reconciles/claim | "
          "CPU s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    by = {(r["operator"], r["n"]): r for r in results}
    for r in results:
        naive = by.get(("naive", r["n"]))
        ratio = (f" (naive: {naive['seconds'] / r['seconds']:.1f}x this)"
                 if r["operator"] == "reconcilekit" and naive else "")
        print(f"| {r['n']:,} | {r['operator']} | {r['seconds']:.2f} s{ratio} | "
              f"{r['requests_per_claim']:.1f} | {r['reconciles_per_claim']:.1f} | "
              f"{r['cpu_seconds']:.1f} | {r['peak_rss_mib']:.0f} MiB |")


if __name__ == "__main__":
    main()
