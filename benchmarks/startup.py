"""Start-up: ``import reconcilekit``, and the bundled operator's way from exec to its first
reconcile.

Run: ``python -m benchmarks.startup [--assets DIR] [--imports 20] [--rounds 5]
[--objects 1000]``.

* **Imports**, each in a fresh interpreter (``--imports`` of each, the median): the
  interpreter alone (``python -c pass``), ``import reconcilekit`` timed inside the
  interpreter, and ``import reconcilekit.testing`` (what a test suite adds), plus the
  ten slowest modules that reconcilekit's own modules import, each where it is first
  imported, in one ``python -X importtime -c "import reconcilekit"``.
* **Exec to first reconcile**, on a control plane (etcd and kube-apiserver v1.28.7 from
  the binaries in ``--assets``, else ``$RECONCILEKIT_TEST_ASSETS``) holding, in a
  namespace of each round's own, ``--objects`` Idle Pods of a pool (reported Running)
  and as many CNClaims of it: the CNClaim operator (``python -m examples.cnclaim
  --kubeconfig ... --namespace NS --no-webhooks``) is started as a process, and timed
  from just before the exec to its metrics endpoint answering, and to its first
  reconcile done (``controller_runtime_reconcile_total{controller="cnclaim"}`` above
  zero, polled every 5 ms): imports, the client, the caches' lists (Pods and claims),
  the first binding. The median of ``--rounds``, with the range.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import anyio
import yaml

from reconcilekit import AlreadyExists, Client
from reconcilekit.kinds import CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, PODS
from reconcilekit.testing import ControlPlane, OperatorProcess

from .__main__ import machine
from .e2e import CLAIMS, MANIFESTS, _claim, _free_port, _operator_metrics, _pod
from .servers import add_assets_option

ROOT = Path(__file__).resolve().parent.parent
IN_FLIGHT = 50


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _seconds(code: str, inside: bool) -> float:
    """Wall seconds of one fresh interpreter running ``code`` (``inside``: as timed by the
    interpreter itself, around ``code`` only)."""
    if inside:
        out = subprocess.run(
            [sys.executable, "-c", "import time; t = time.perf_counter(); "
             f"{code}; print(time.perf_counter() - t)"],
            cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return float(out)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)
    return time.perf_counter() - began


def _slowest_imports(top: int = 10) -> list[tuple[str, int]]:
    """(module, cumulative µs) of the slowest modules reconcilekit's own modules import
    (each counted where it is first imported), in one run."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import reconcilekit"],
                         cwd=ROOT, capture_output=True, text=True, check=True).stderr
    rows = []  # (depth, name, cumulative µs), children before their parent
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| ( *)(\S+)", line)
        if m:
            rows.append((len(m.group(2)), m.group(3), int(m.group(1))))
    found = []
    for i, (depth, name, us) in enumerate(rows):
        parent = next((n for d, n, _ in rows[i + 1:] if d < depth), "")
        if parent.startswith("reconcilekit") and not name.startswith("reconcilekit"):
            found.append((name, us))
    return sorted(found, key=lambda r: -r[1])[:top]


def _median(values: list[float]) -> str:
    return (f"{statistics.median(values) * 1000:.0f} ms ({min(values) * 1000:.0f} to "
            f"{max(values) * 1000:.0f})")


def imports(n: int) -> list[str]:
    bare = [_seconds("pass", inside=False) for _ in range(n)]
    ours = [_seconds("import reconcilekit", inside=True) for _ in range(n)]
    whole = [_seconds("import reconcilekit", inside=False) for _ in range(n)]
    testing = [_seconds("import reconcilekit.testing", inside=True) for _ in range(n)]
    rows = [f"| interpreter alone (`python -c pass`), wall | {_median(bare)} |",
            f"| `import reconcilekit`, timed inside | {_median(ours)} |",
            f"| `python -c 'import reconcilekit'`, wall | {_median(whole)} |",
            f"| `import reconcilekit.testing`, timed inside | {_median(testing)} |"]
    for name, us in _slowest_imports():
        rows.append(f"| of which `{name}` (imported by reconcilekit; one run, "
                    f"-X importtime) | {us / 1000:.0f} ms |")
    return rows


async def _populate(client: Client, ns: str, n: int) -> None:
    await client.create(NAMESPACES, {"metadata": {"name": ns}})
    limiter = anyio.Semaphore(IN_FLIGHT)

    async def pod(i: int) -> None:
        async with limiter:
            made = await client.create(PODS, _pod(i, ns), ns)
            await client.patch_status(PODS, made["metadata"]["name"],
                                      {"status": {"phase": "Running"}}, ns)

    async def claim(i: int) -> None:
        async with limiter:
            await client.create(CLAIMS, _claim(i), ns)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(pod, i)
    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(claim, i)


async def _first_reconcile(kubeconfig: Path, ns: str) -> tuple[float, float]:
    """Seconds from exec to the operator's metrics answering, and to its first reconcile."""
    port = _free_port()
    began = time.perf_counter()
    proc = await OperatorProcess(
        sys.executable, "-m", "examples.cnclaim", "--kubeconfig", str(kubeconfig),
        "--namespace", ns, "--no-webhooks", "--metrics-addr", f"127.0.0.1:{port}",
        cwd=ROOT, name="the operator").start()
    serving: float | None = None
    try:
        with anyio.fail_after(120):
            while True:
                try:
                    metrics = await _operator_metrics(port)
                except aiohttp.ClientError:
                    if proc.returncode is not None:
                        raise RuntimeError(f"the operator exited ({proc.returncode}); the last "
                                           f"lines of its output:\n{proc.log_tail()}") from None
                    await anyio.sleep(0.005)
                    continue
                if serving is None:
                    serving = time.perf_counter() - began
                if metrics["reconciles"] > 0:
                    return serving, time.perf_counter() - began
                await anyio.sleep(0.005)
    finally:
        proc.kill()
        await proc.wait()


async def exec_to_reconcile(assets: str, rounds: int, n: int) -> list[str]:
    async with ControlPlane(assets, controller_manager=False) as plane:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = plane.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with Client(plane.configuration()) as client:
                for doc in yaml.safe_load_all((MANIFESTS / "crds.yaml").read_text()):
                    if doc and doc.get("kind") == "CustomResourceDefinition":
                        with contextlib.suppress(AlreadyExists):
                            await client.create(CUSTOM_RESOURCE_DEFINITIONS, doc)
                serving, first = [], []
                for r in range(rounds):
                    ns = f"startup-{os.getpid()}-{r}"
                    _progress(f"round {r + 1}: {n:,} Pods and {n:,} CNClaims in {ns}")
                    await _populate(client, ns, n)
                    up, done = await _first_reconcile(kubeconfig, ns)
                    serving.append(up)
                    first.append(done)
    return [f"| operator, exec to its metrics endpoint answering | {_median(serving)} |",
            f"| operator, exec to its first reconcile done ({n:,} Pods, {n:,} CNClaims) "
            f"| {_median(first)} |"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.startup",
                                     description=__doc__.split("\n")[0])
    add_assets_option(parser)
    parser.add_argument("--imports", type=int, default=20, help="fresh interpreters each")
    parser.add_argument("--rounds", type=int, default=5, help="operator starts")
    parser.add_argument("--objects", type=int, default=1000, help="Pods, and as many claims")
    args = parser.parse_args(argv)
    _progress(f"imports: {args.imports} fresh interpreters each")
    rows = imports(args.imports)
    if not args.assets:
        rows.append("| operator, exec to first reconcile | not run: no assets (--assets or "
                    "RECONCILEKIT_TEST_ASSETS) |")
    else:
        rows.extend(asyncio.run(exec_to_reconcile(args.assets, args.rounds, args.objects)))
    print(f"Machine: {machine()}\n")
    print("\n".join(("| start-up | median (range) |", "|---|---:|", *rows)))


if __name__ == "__main__":
    main()
