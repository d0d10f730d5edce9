"""``python -m benchmarks``: run every benchmark, show progress, print one table.

Each benchmark runs in its own process (so memory figures and garbage
collector state do not leak between them) and prints a Markdown table; this
runner streams their progress to stderr, prints one combined table, and with
``--write-docs`` puts each table into docs/performance.md between its
``<!-- bench:NAME -->`` markers, with the machine it ran on.

Options: ``--only NAME`` (repeatable) runs a subset; ``--quick`` passes
``--quick`` to benchmarks that support it (smaller sizes, for a smoke run).
``install`` (packages downloaded into fresh venvs, a few minutes), ``scale``
(100,000 Pods written to kube-apiserver, then informers of two libraries, the
better part of an hour), ``failover`` (30,000 Pods, then leaders killed,
some minutes), ``reads`` (30,000 Pods, then two libraries' cached reads, some
minutes) and ``informer_lifecycle`` (30,000 Pods, then an informer of them started
and stopped three times, some minutes) run only when named with ``--only``.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "performance.md"
BENCHMARKS = ("apiserver", "cluster_in_a_box", "control_plane", "workqueue", "store", "informer",
              "kinds", "startup", "e2e")
QUICK_CAPABLE = {"e2e", "failover", "informer_lifecycle", "reads", "scale"}
# Only with --only: each takes minutes or more.
ON_REQUEST = ("install", "failover", "scale", "reads", "informer_lifecycle")


def _available() -> list[str]:
    return [n for n in (*BENCHMARKS, *ON_REQUEST) if (Path(__file__).parent / f"{n}.py").exists()]


def _run(name: str, quick: bool) -> tuple[str, float]:
    args = [sys.executable, "-m", f"benchmarks.{name}"]
    if quick and name in QUICK_CAPABLE:
        args.append("--quick")
    started = time.perf_counter()
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=None, text=True)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise SystemExit(f"benchmark {name} failed with exit code {proc.returncode}")
    return out, time.perf_counter() - started


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("|")]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _rows(table: list[str]) -> list[tuple[str, str]]:
    """(measurement, value) per row of a Markdown table; wider tables name each value."""
    if len(table) < 3:
        return []
    header = _cells(table[0])
    out = []
    for line in table[2:]:
        cells = _cells(line)
        if len(cells) == 2:
            out.append((cells[0], cells[1]))
        else:
            out.append((cells[0], "; ".join(f"{h}: {c}" for h, c in zip(header[1:], cells[1:],
                                                                          strict=False))))
    return out


def machine() -> str:
    cpus = os.cpu_count()
    try:
        mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text()
                      .splitlines() if line.startswith("MemTotal"))
        memory = f"{mem_kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, StopIteration, ValueError):
        memory = "unknown RAM"
    return (f"{platform.machine()}, {cpus} CPUs, {memory}, Python "
            f"{platform.python_version()}, {platform.system()} {platform.release()}")


def _write_docs(tables: dict[str, list[str]]) -> None:
    text = DOCS.read_text()
    for name, table in tables.items():
        block = f"<!-- bench:{name} -->\n" + "\n".join(table) + f"\n<!-- /bench:{name} -->"
        pattern = re.compile(rf"<!-- bench:{name} -->.*?<!-- /bench:{name} -->", re.S)
        if pattern.search(text):
            text = pattern.sub(lambda _, b=block: b, text)
        else:
            text = text.rstrip() + f"\n\n## {name}\n\n{block}\n"
    stamp = f"<!-- machine -->{machine()}<!-- /machine -->"
    text = re.sub(r"<!-- machine -->.*?<!-- /machine -->", lambda _: stamp, text, flags=re.S)
    DOCS.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--only", action="append", choices=(*BENCHMARKS, *ON_REQUEST),
                        default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args(argv)
    names = [n for n in _available() if n in (args.only or BENCHMARKS)]
    tables: dict[str, list[str]] = {}
    for i, name in enumerate(names, 1):
        print(f"[{i}/{len(names)}] {name} ...", file=sys.stderr, flush=True)
        out, seconds = _run(name, args.quick)
        tables[name] = _table(out)
        print(f"[{i}/{len(names)}] {name} done in {seconds:.0f}s", file=sys.stderr, flush=True)
    print(f"Machine: {machine()}\n")
    print("| benchmark | measurement | value |")
    print("|---|---|---|")
    for name, table in tables.items():
        for measurement, value in _rows(table):
            print(f"| {name} | {measurement} | {value} |")
    if args.write_docs:
        _write_docs(tables)
        print(f"\nwrote {DOCS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
