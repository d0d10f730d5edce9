"""Cache reads: reconcilekit's cached reads of Pods against client-go's lister, per object.

Run: ``python -m benchmarks.reads --assets DIR [--pods 30000] [--reps 7] [--go auto|off]
[--shared-read-memory BYTES]``; ``--quick`` is ``--pods 3000 --reps 3`` (a smoke run).
``python -m benchmarks`` runs it only when named with ``--only reads``.

A control plane (etcd and kube-apiserver v1.28.7 from the binaries in DIR, as
``benchmarks/scale.py`` starts it) is given N realistic Pods (``scale.py``'s, in 20
namespaces, each created and then given its status), each also labelled
``read-group: g-{i % G}`` with G = N // 1000, so that every group holds about 1,000
Pods. Then each subject runs in a fresh child process, one after the other, its cache
holding the Pods with a field index named ``read-group`` on that label (and the
namespace index both libraries keep):

* reconcilekit (``benchmarks/reads_subject.py``): a ``Manager``'s cache, read with
  ``cache.list`` and ``cache.get``; mode ``copy`` (the default: fresh dicts the caller
  may change) and, where reconcilekit has them, mode ``shared`` (``shared=True``: the
  cache's own decoded objects, read-only), with ``cache_shared_read_memory`` large
  enough to keep every Pod decoded (``--shared-read-memory``, 2 GiB by default); a
  second process with the default bound reads the ``namespace`` scenario shared;
* client-go v0.28.7 (``benchmarks/go/main.go -label-index read-group``): a
  SharedInformerFactory's Pod informer and its lister; mode ``lister`` (the pointers
  the informer holds) and ``deepcopy`` (each object ``DeepCopy``'d after the read, as
  controller-runtime's cache reader does by default).

Scenarios, each read's objects all touched (their name and phase read into a sum
the subject prints) and dropped before the next repetition, the garbage collector on
(Python's and Go's alike): ``field``, the Pods of one group by the field index
(client-go: ``indexer.ByIndex``); ``label``, the same Pods by the selector
``app=cn,read-group=g-K`` across all namespaces (client-go's lister walks every
object and matches); ``namespace``, every Pod, one list per namespace; ``get``, the
Pods of one group, one get by key each (collected, then touched). Each scenario is R
repetitions; the table gives the median time per object, in µs, of the read alone
(the calls returning the objects, and dropping them: a copy's memory is freed then)
and, in brackets, of the read and the touch. The ratios are of the read alone:
touching two fields of each object costs Python about ten times what it costs Go,
whatever the cache, and would hide what the read costs. Shared reads keep decoded objects, so
their first read and the next ones differ: ``shared, first read`` is the first read
of a scenario (one measurement), ``shared, warm`` the median of the R after it; each
shared scenario reads a group no shared read has read before (the ``namespace``
scenario, read last, reads them all).

Memory, per subject: the settled RSS after the sync (``scale.py``'s: after a
collection and memory given back to the OS), the RSS while a ``field`` read of
1,000 Pods is held (reconcilekit copy mode, client-go deep copies), read before any
other read and with no collection first, and its ratio to the settled RSS; the
settled RSS after the warm shared reads (client-go: after all its reads).

Output: one Markdown table and a line with the machine and the versions. The Go
side is built as ``scale.py`` builds it (``benchmarks/scale_go.py``); ``--go off``
skips it, and when it cannot be built the table says why.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import inspect
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconcilekit import Cache, Manager

from .__main__ import machine
from .scale import NAMESPACES_USED, _line, _pod, control_plane, go_and_versions, populate, settle
from .servers import add_assets_option

GROUP_LABEL = "read-group"
PODS_PER_GROUP = 1_000
SCENARIOS = ("field", "label", "namespace", "get")
SHARED_ORDER = ("field", "get", "label", "namespace")  # namespace last: it reads every Pod
SHARED_READS = ("shared" in inspect.signature(Cache.list).parameters
                and "cache_shared_read_memory" in inspect.signature(Manager).parameters)
NO_SHARED = "not run: this reconcilekit has no shared reads"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def group(k: int) -> str:
    return f"g-{k}"


def grouped_pod(i: int, groups: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pod ``i`` as ``scale.py`` writes it, labelled ``read-group: g-{i % groups}``."""
    pod, status = _pod(i)
    pod["metadata"]["labels"][GROUP_LABEL] = group(i % groups)
    return pod, status


class Subject:
    """One subject process: synced, then one JSON answer per command line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    @classmethod
    async def start(cls, argv: Sequence[str], n: int) -> tuple[Subject, dict[str, Any]]:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            cwd=Path(__file__).parent.parent)
        subject = cls(proc)
        try:
            synced = await _line(proc, within=600 + n / 50)
        except BaseException:
            await subject.close(kill=True)
            raise
        if synced["objects"] != n:
            await subject.close(kill=True)
            raise RuntimeError(f"{argv[0]} cached {synced['objects']} Pods, not {n}")
        return subject, synced

    async def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{command}\n".encode())
        await self.proc.stdin.drain()
        return await _line(self.proc, within=1800)

    async def close(self, *, kill: bool = False) -> None:
        """End of input ends the subject (killed after a minute, or at once with ``kill``)."""
        if self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.close()
        if kill and self.proc.returncode is None:
            self.proc.kill()
        if self.proc.returncode is None:
            try:
                await asyncio.wait_for(self.proc.wait(), 60)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


@dataclass
class Results:
    """µs per object (wall clock, and the process's CPU time), by (scenario, mode); memory
    figures in bytes, by name."""

    n: int
    groups: int
    reps: int
    per_object: dict[tuple[str, str], float] = field(default_factory=dict)
    read_per_object: dict[tuple[str, str], float] = field(default_factory=dict)
    cpu_per_object: dict[tuple[str, str], float] = field(default_factory=dict)
    objects: dict[tuple[str, str], int] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)

    def add(self, mode: str, answer: dict[str, Any], which: slice = slice(None)) -> None:
        """The median of the repetitions ``which`` of a read's answer."""
        key = (answer["scenario"], mode)
        self.objects[key] = objects = answer["objects"]
        self.per_object[key] = statistics.median(answer["seconds"][which]) / objects * 1e6
        reading = [total - touch for total, touch in zip(
            answer["seconds"][which], answer["touch_seconds"][which], strict=True)]
        self.read_per_object[key] = statistics.median(reading) / objects * 1e6
        self.cpu_per_object[key] = (statistics.median(answer["cpu_seconds"][which])
                                    / objects * 1e6)


def _value(scenario: str, k: int, groups: int) -> str:
    """What a read command asks of ``scenario``, for group ``k``."""
    if scenario == "label":
        return f"app=cn,{GROUP_LABEL}={group(k % groups)}"
    if scenario == "namespace":
        return ",".join(f"ns-{j}" for j in range(NAMESPACES_USED))
    return group(k % groups)


async def _reads(subject: Subject, results: Results, modes: Sequence[str]) -> None:
    """Every scenario in each of ``modes``, the Pods of group 0 (no first-read effect)."""
    for mode in modes:
        for scenario in SCENARIOS:
            _progress(f"  {scenario}, {mode}")
            answer = await subject.ask(
                f"read {scenario} {mode} {_value(scenario, 0, results.groups)} {results.reps}")
            results.add(mode, answer)


async def _shared_reads(subject: Subject, results: Results, scenarios: Sequence[str],
                        label: str) -> None:
    """Each scenario's first shared read (of a group no shared read has read) and R more."""
    for k, scenario in enumerate(scenarios, 1):
        _progress(f"  {scenario}, {label}")
        answer = await subject.ask(f"read {scenario} shared "
                                   f"{_value(scenario, k, results.groups)} {results.reps + 1}")
        if label == "shared":
            results.add("shared, first read", answer, slice(0, 1))
            results.add("shared, warm", answer, slice(1, None))
        else:
            results.add(label, answer, slice(1, None))


async def _memory(subject: Subject, results: Results, synced: dict[str, Any]) -> None:
    held = await subject.ask(f"hold {group(0)}")  # before any other read
    results.memory["after sync"] = synced["settled_rss"]
    results.memory["holding"] = held["rss"]


async def _reconcilekit(argv: list[str], n: int, groups: int, reps: int,
                        shared_memory: int) -> Results:
    results = Results(n, groups, reps)
    budget = ["--shared-read-memory", str(shared_memory)] if SHARED_READS else []
    _progress("reconcilekit" + (f", cache_shared_read_memory {shared_memory:,} B"
                                if SHARED_READS else ""))
    subject, synced = await Subject.start([*argv, *budget], n)
    try:
        await _memory(subject, results, synced)
        await _reads(subject, results, ["copy"])
        if SHARED_READS:
            await _shared_reads(subject, results, SHARED_ORDER, "shared")
            results.memory["after shared reads"] = (await subject.ask("settle"))["rss"]
    finally:
        await subject.close()
    if SHARED_READS:
        _progress("reconcilekit, default cache_shared_read_memory")
        subject, _ = await Subject.start(argv, n)
        try:
            await _shared_reads(subject, results, ["namespace"], "shared, default budget")
            results.memory["after shared reads, default budget"] = (
                await subject.ask("settle"))["rss"]
        finally:
            await subject.close()
    return results


async def _client_go(argv: list[str], n: int, groups: int, reps: int) -> Results:
    results = Results(n, groups, reps)
    _progress("client-go")
    subject, synced = await Subject.start(argv, n)
    try:
        await _memory(subject, results, synced)
        await _reads(subject, results, ["lister", "deepcopy"])
        results.memory["after shared reads"] = (await subject.ask("settle"))["rss"]
    finally:
        await subject.close()
    return results


def _us(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _mib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024**2:,.0f} MiB"


def _scenario_cell(scenario: str, ours: Results) -> str:
    objects = next((v for (s, _), v in ours.objects.items() if s == scenario), None)
    n = f"{ours.n:,}"
    if scenario == "namespace":
        return f"namespace ({n} Pods, {NAMESPACES_USED} lists)"
    got = f"{objects:,}" if objects is not None else f"~{PODS_PER_GROUP:,}"
    what = "gets by key" if scenario == "get" else f"of {n} Pods"
    return f"{scenario} ({got} {what})"


HEADER = ("| scenario | mode | reconcilekit µs/object | client-go lister µs/object | "
          "client-go deep copy µs/object | ratios (read) |",
          "|---|---|---:|---:|---:|---|")


def table(ours: Results, theirs: Results | None, go_note: str | None) -> list[str]:
    """The rows: each scenario in each mode, then memory."""
    missing_go = "not run" if go_note else "-"
    rows = []
    for scenario in SCENARIOS:
        cell = _scenario_cell(scenario, ours)
        lister = theirs.read_per_object.get((scenario, "lister")) if theirs else None
        deep = theirs.read_per_object.get((scenario, "deepcopy")) if theirs else None
        go = (_cell(theirs, (scenario, "lister")) if theirs else missing_go,
              _cell(theirs, (scenario, "deepcopy")) if theirs else missing_go)
        modes = ["copy", "shared, first read", "shared, warm"]
        if scenario == "namespace":
            modes.append("shared, default budget")
        for mode in modes:
            value = ours.read_per_object.get((scenario, mode))
            anchor, name = (deep, "deep copy") if mode == "copy" else (lister, "lister")
            if value is None:
                mine = NO_SHARED if mode != "copy" and not SHARED_READS else "-"
            else:
                mine = _cell(ours, (scenario, mode))
            ratio = (f"{value / anchor:.2f}x client-go {name}"
                     if value is not None and anchor else "-")
            label = "copy (default)" if mode == "copy" else mode
            rows.append(f"| {cell} | {label} | {mine} | {go[0]} | {go[1]} | {ratio} |")
    rows.extend(_memory_rows(ours, theirs, missing_go))
    if go_note:
        rows.append(f"| client-go | - | - | {go_note.removeprefix('not run: ')} | - | - |")
    return rows


def _cell(results: Results, key: tuple[str, str]) -> str:
    """``read (read and touch)``: µs per object of the read alone, and with the touch."""
    return (f"{_us(results.read_per_object[key])} ({_us(results.per_object[key])})"
            if key in results.per_object else "-")


def _memory_rows(ours: Results, theirs: Results | None, missing_go: str) -> list[str]:
    cell = f"memory ({ours.n:,} Pods)"
    mine, go = ours.memory, theirs.memory if theirs else {}

    def ratio(a: float | None, b: float | None, of: str = "client-go") -> str:
        return f"{a / b:.2f}x {of}" if a is not None and b else "-"

    def go_mib(key: str) -> str:
        return _mib(go.get(key)) if theirs else missing_go

    held_ratio = {who: (m["holding"] / m["after sync"] if "holding" in m else None)
                  for who, m in (("ours", mine), ("go", go))}
    shared = mine.get("after shared reads")
    default = mine.get("after shared reads, default budget")
    no_shared = NO_SHARED if not SHARED_READS else "-"
    return [
        f"| {cell} | settled RSS after sync | {_mib(mine.get('after sync'))} | "
        f"{go_mib('after sync')} | {go_mib('after sync')} | "
        f"{ratio(mine.get('after sync'), go.get('after sync'))} |",
        f"| {cell} | RSS holding a 1,000-object field read (copy; client-go deep copy) | "
        f"{_mib(mine.get('holding'))} | - | {go_mib('holding')} | "
        f"{ratio(mine.get('holding'), go.get('holding'))} |",
        f"| {cell} | holding / after sync | "
        f"{_ratio_cell(held_ratio['ours'])} | - | "
        f"{_ratio_cell(held_ratio['go']) if theirs else missing_go} | - |",
        f"| {cell} | settled RSS after the warm shared reads (client-go: after its reads) | "
        f"{_mib(shared) if shared is not None else no_shared} | {go_mib('after shared reads')} "
        f"| - | {ratio(shared, go.get('after shared reads'))} |",
        f"| {cell} | settled RSS after the shared reads, default budget | "
        f"{_mib(default) if default is not None else no_shared} | - | - | - |",
    ]


def _ratio_cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


async def run(args: argparse.Namespace, go_argv: list[str] | None, go_note: str | None,
              versions: str) -> None:
    n, reps = args.pods, args.reps
    groups = max(1, n // PODS_PER_GROUP)
    async with control_plane(args.assets) as plane:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = plane.write_kubeconfig(Path(tmp) / "kubeconfig")
            _progress(f"writing {n:,} Pods in {groups} read groups")
            await populate(kubeconfig, 0, n, args.in_flight,
                           functools.partial(grouped_pod, groups=groups))
            await settle(kubeconfig)
            python = [sys.executable, "-m", "benchmarks.reads_subject", "--kubeconfig",
                      str(kubeconfig), "--index", GROUP_LABEL]
            ours = await _reconcilekit(python, n, groups, reps, args.shared_read_memory)
            theirs = None
            if go_argv:
                theirs = await _client_go(
                    [*go_argv, "-kubeconfig", str(kubeconfig), "-mode", "full",
                     "-label-index", GROUP_LABEL], n, groups, reps)
    if theirs is not None:
        for scenario in SCENARIOS:
            a, b = ours.objects.get((scenario, "copy")), theirs.objects.get((scenario, "lister"))
            if a != b:
                raise RuntimeError(f"{scenario}: reconcilekit read {a} Pods, client-go {b}")
    for who, got in (("reconcilekit", ours), ("client-go", theirs)):
        if got is None:
            continue
        for key, us in got.per_object.items():
            _progress(f"{who}, {', '.join(key)}: {us:,.2f} µs/object, CPU "
                      f"{got.cpu_per_object[key]:,.2f} µs/object")
    print(f"Machine: {machine()}; {versions}\n")
    print(f"{n:,} Pods in {NAMESPACES_USED} namespaces, {groups} read groups; median of "
          f"{reps} repetitions; µs per object: the read alone (returning the objects, and "
          "dropping them), then in brackets with the touch (two fields of each object read); "
          "ratios of the read alone; garbage collectors on\n")
    print("\n".join((*HEADER, *table(ours, theirs, go_note))) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.reads",
                                     description=__doc__.split("\n")[0])
    add_assets_option(parser)
    parser.add_argument("--pods", type=int, default=30_000)
    parser.add_argument("--reps", type=int, default=7, help="repetitions of each read")
    parser.add_argument("--quick", action="store_true", help="--pods 3000 --reps 3")
    parser.add_argument("--go", choices=("auto", "off"), default="auto")
    parser.add_argument("--go-binary", metavar="PATH", help="a built benchmarks/go program")
    parser.add_argument("--shared-read-memory", type=int, default=2 * 1024**3,
                        metavar="BYTES",
                        help="cache_shared_read_memory for the shared reads (default 2 GiB: "
                             "every Pod kept decoded)")
    parser.add_argument("--in-flight", type=int, default=300,
                        help="writes in flight while populating")
    args = parser.parse_args(argv)
    if args.quick:
        args.pods, args.reps = 3_000, 3
    if args.pods < PODS_PER_GROUP:
        parser.error(f"--pods {args.pods}: at least {PODS_PER_GROUP:,} (one read group)")
    if args.reps < 1:
        parser.error(f"--reps {args.reps}: at least 1")
    if args.assets is None:
        print("| cache reads | not run: no assets (--assets or RECONCILEKIT_TEST_ASSETS) |")
        print("|---|---|")
        return
    if not SHARED_READS:
        _progress(f"reconcilekit shared reads: {NO_SHARED}")
    asyncio.run(run(args, *go_and_versions(args)))


if __name__ == "__main__":
    main()
