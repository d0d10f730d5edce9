"""Run the test suite repeatedly on a deliberately loaded machine, on both backends.

Usage: ``python tools/loaded_suite.py [--runs 5] [--backends in-process,control-plane]
[--load N] [--assets DIR] [--out FILE] [-- PYTEST ARGS]``

CI machines are shared: a test that passes on a quiet machine and fails when
every core is busy is a defect, whatever the cause (a fake clock advanced on
a guess that real I/O finished, a timed assertion, a wait too short for a
loaded kube-apiserver). This script makes the machine busy on purpose: ``--load``
processes (default: one per core) spin at normal priority for the whole run,
competing with pytest, the API server, etcd and kube-controller-manager for
every core. Under that load it runs the whole suite ``--runs`` times on each
backend (``in-process``; ``control-plane``, the binaries of ``--assets``,
default ``$RECONCILEKIT_TEST_ASSETS`` or ``$KUBEBUILDER_ASSETS``), one run at a
time, and records for each run its exit status, duration, the counts pytest
reports and the ids of failing tests.

The record goes to ``--out`` (default ``benchmarks/results/loaded_suite.json``),
rewritten after every run, with each run's whole pytest output beside it
(``loaded_suite-<backend>-<n>.log``), and a Markdown table to standard output.
The exit status is 1 if any run failed. Arguments after ``--`` go to pytest
(e.g. ``-- tests/test_informer.py``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("in-process", "control-plane")
_SUMMARY = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")
_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)


def _spin(stop: Any) -> None:
    """Burn one core until told to stop (a busy neighbour at normal priority)."""
    n = 0
    while not stop.is_set():
        for _ in range(100_000):
            n = (n * 1_103_515_245 + 12_345) & 0xFFFFFFFF


def _environment(backend: str, assets: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RECONCILEKIT_TEST_ASSETS", "KUBEBUILDER_ASSETS",
                        "RECONCILEKIT_TEST_KUBECONFIG")}
    if backend == "control-plane":
        if not assets:
            raise SystemExit("the control-plane backend needs --assets DIR (kube-apiserver, "
                             "etcd, kube-controller-manager) or $RECONCILEKIT_TEST_ASSETS")
        env["RECONCILEKIT_TEST_ASSETS"] = assets
    return env


def run_once(backend: str, assets: str | None, pytest_args: list[str],
             log: Path) -> dict[str, Any]:
    """One whole suite run; what pytest reported, the failing test ids, the duration.
    pytest's whole output (failures included) goes to ``log``."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
        cwd=ROOT, env=_environment(backend, assets), capture_output=True, text=True,
        check=False)
    took = time.monotonic() - started
    log.write_text(done.stdout + done.stderr)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    counts = {kind.rstrip("s") if kind.startswith("error") else kind: int(n)
              for n, kind in _SUMMARY.findall(tail)}
    return {"backend": backend, "exit": done.returncode, "seconds": round(took, 1),
            "counts": counts, "failed": sorted(set(_FAILED.findall(done.stdout))),
            "summary": tail, "log": str(log)}


def _write(out: Path, load: int, pytest_args: list[str], runs: list[dict[str, Any]]) -> None:
    out.write_text(json.dumps({"load": load, "cores": os.cpu_count(),
                               "pytest_args": pytest_args, "runs": runs}, indent=1) + "\n")


def table(runs: list[dict[str, Any]], load: int) -> str:
    lines = ["| run | backend | load | exit | passed | failed | errors | skipped | time "
             "| failing tests |", "|---|---|---|---|---|---|---|---|---|---|"]
    for i, run in enumerate(runs, 1):
        c = run["counts"]
        lines.append(
            f"| {i} | {run['backend']} | {load} spinners | {run['exit']} | {c.get('passed', 0)} "
            f"| {c.get('failed', 0)} | {c.get('error', 0)} | {c.get('skipped', 0)} "
            f"| {run['seconds']:.0f} s | {', '.join(run['failed']) or '-'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    pytest_args: list[str] = []
    if "--" in args_in:
        cut = args_in.index("--")
        args_in, pytest_args = args_in[:cut], args_in[cut + 1:]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="suite runs per backend")
    parser.add_argument("--backends", default=",".join(BACKENDS),
                        help=f"comma-separated, of {', '.join(BACKENDS)}")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1,
                        help="busy processes spinning meanwhile (default: one per core)")
    parser.add_argument("--assets", metavar="DIR",
                        default=os.environ.get("RECONCILEKIT_TEST_ASSETS")
                        or os.environ.get("KUBEBUILDER_ASSETS"))
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "results" / "loaded_suite.json")
    args = parser.parse_args(args_in)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(backends) - set(BACKENDS))
    if unknown or args.runs < 1 or args.load < 0:
        parser.error(f"unknown backend(s) {unknown}" if unknown
                     else "--runs must be at least 1 and --load at least 0")
    for backend in backends:
        _environment(backend, args.assets)  # fail now, not after an hour

    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True)
                for _ in range(args.load)]
    for spinner in spinners:
        spinner.start()
    runs: list[dict[str, Any]] = []
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        for backend in backends:
            for i in range(args.runs):
                log = args.out.with_name(f"{args.out.stem}-{backend}-{i + 1}.log")
                run = run_once(backend, args.assets, pytest_args, log)
                runs.append(run)
                _write(args.out, args.load, pytest_args, runs)
                print(f"{backend} run {i + 1}/{args.runs}: {run['summary']} "
                      f"({run['seconds']:.0f} s)", file=sys.stderr, flush=True)
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join(5)
            if spinner.is_alive():
                spinner.kill()
    print(table(runs, args.load))
    return 1 if any(run["exit"] != 0 for run in runs) else 0


if __name__ == "__main__":
    raise SystemExit(main())
