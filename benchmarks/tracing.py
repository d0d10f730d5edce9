"""Tracing's cost per reconcile and per API request: ``python -m benchmarks.tracing``.

Run: ``python -m benchmarks.tracing [--assets DIR] [--objects 200] [--rounds 4]
[--requests 1000] [--reps 3] [--quick]``; ``--quick`` is ``--objects 50 --rounds 2
--requests 300 --reps 2`` (a smoke run).

Three modes, measured in the same process, interleaved (off, no-op, SDK, off, ...)
so that a drift of the shared machine falls on all three alike:

* ``off``: tracing not enabled (nothing of OpenTelemetry imported until the first
  enabled mode; the hooks read one module attribute);
* ``no-op``: ``reconcilekit.tracing.enable()`` with the global provider, which no
  one set: OpenTelemetry's no-op (what a process gets that installs the extra and
  configures no SDK);
* ``SDK``: ``enable(tracer_provider=...)`` with an SDK ``TracerProvider`` and a
  ``BatchSpanProcessor`` whose exporter drops the spans (the SDK's cost, no I/O).

Against the in-process API server (in a process of its own) and, with ``--assets``,
kube-apiserver v1.28.7 (etcd and kube-apiserver from DIR), in one run. Scenarios,
the benchmark process's CPU time (``time.process_time``: the servers run in other
processes) and wall time, each the median of R repetitions:

* a reconcile cycle: M ConfigMaps are patched (16 at a time, by a client outside any
  span: untraced in every mode), each watch event is mapped by a controller (a
  ``watch event`` span) whose reconcile (a ``reconcile`` span, linked to it) reads
  its ConfigMap once (a request span, its ``traceparent`` sent); K rounds. Per
  cycle: the write, the event, the reconcile and its read;
* an API request: N GETs of one ConfigMap one after the other, inside one span
  (the application's own, of the mode's provider: under the no-op provider an
  invalid span, so not traced, as in a reconcile there).

Output: one Markdown table (µs per cycle or request, and each mode's ratio to
``off`` of the same run), the spans the SDK mode exported per cycle, and a line
with the machine and the versions.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import anyio

import reconcilekit.tracing
from reconcilekit import Cache, Client, Controller, Reconciler, Request, Result, enqueue_object
from reconcilekit.kinds import CONFIG_MAPS

from .__main__ import machine
from .servers import add_assets_option, api_server, kube_apiserver_version

NAMESPACE = "default"
MODES = ("off", "no-op", "SDK")
WRITERS = 16


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Sdk:
    """An SDK provider batching into an exporter that drops (and counts) the spans."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            SpanExporter,
            SpanExportResult,
        )

        counted = self

        class Dropping(SpanExporter):
            def export(self, spans: Sequence[Any]) -> SpanExportResult:
                counted.exported += len(spans)
                return SpanExportResult.SUCCESS

        self.exported = 0
        self.spans_per_cycle: list[float] = []
        self.provider = TracerProvider()
        self.provider.add_span_processor(BatchSpanProcessor(Dropping()))

    def flush(self) -> int:
        self.provider.force_flush()
        return self.exported


def switch(mode: str, sdk: Sdk | None) -> None:
    if mode == "off":
        reconcilekit.tracing.disable()
    elif mode == "no-op":
        reconcilekit.tracing.enable()
    else:
        assert sdk is not None
        reconcilekit.tracing.enable(tracer_provider=sdk.provider)


class Reads(Reconciler):
    """Reads its ConfigMap once; counts the reconciles of each round's value."""

    def __init__(self, client: Client, objects: int) -> None:
        self.client, self.objects = client, objects
        self.round = ""
        self.seen = 0
        self.all_seen = anyio.Event()

    def next_round(self, value: str) -> None:
        self.round, self.seen, self.all_seen = value, 0, anyio.Event()

    async def reconcile(self, request: Request) -> Result:
        obj = await self.client.get(CONFIG_MAPS, request.name, request.namespace)
        if (obj.get("data") or {}).get("round") == self.round:
            self.seen += 1
            if self.seen == self.objects:
                self.all_seen.set()
        return Result.done()


async def measure(work: Callable[[], Awaitable[int]]) -> tuple[float, float]:
    """(CPU µs, wall µs) per unit of ``work``, which returns how many units it did."""
    cpu, wall = time.process_time(), time.perf_counter()
    units = await work()
    return ((time.process_time() - cpu) * 1e6 / units,
            (time.perf_counter() - wall) * 1e6 / units)


async def server_run(kubeconfig: Path, args: argparse.Namespace,
                     sdk: Sdk) -> dict[tuple[str, str], list[tuple[float, float]]]:
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    names = [f"trace-{i}" for i in range(args.objects)]
    async with await Client.from_kubeconfig(kubeconfig) as client:
        for name in names:
            await client.apply(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": name}, "data": {}},
                               NAMESPACE, field_manager="bench", force=True)
        reads = Reads(client, len(names))
        cache = Cache(client, namespace=NAMESPACE)
        controller = Controller("bench", reads, cache, max_concurrent_reconciles=4)
        controller.watch(CONFIG_MAPS, enqueue_object)
        counter = 0
        mode = "off"

        async def cycles() -> int:
            nonlocal counter
            for _ in range(args.rounds):
                counter += 1
                reads.next_round(str(counter))
                limit = anyio.Semaphore(WRITERS)

                async def patch(name: str, limit: anyio.Semaphore = limit) -> None:
                    async with limit:
                        await client.patch(CONFIG_MAPS, name,
                                           {"data": {"round": reads.round}}, NAMESPACE)

                async with anyio.create_task_group() as tg:
                    for name in names:
                        tg.start_soon(patch, name)
                await reads.all_seen.wait()
            return args.rounds * len(names)

        async def gets() -> None:
            for _ in range(args.requests):
                await client.get(CONFIG_MAPS, names[0], NAMESPACE)

        async def requests() -> int:
            if mode == "off":
                await gets()
                return args.requests
            from opentelemetry import trace

            tracer = trace.get_tracer("bench", tracer_provider=sdk.provider
                                      if mode == "SDK" else None)
            with tracer.start_as_current_span("the application's own"):
                await gets()
            return args.requests

        async with anyio.create_task_group() as tg:
            await tg.start(cache.run)
            await cache.wait_for_sync(60)
            await tg.start(controller.run)
            for rep in range(args.reps + 1):  # the first a warm-up, not kept
                for mode in MODES:
                    switch(mode, sdk)
                    exported = sdk.flush()
                    cycle = await measure(cycles)
                    if mode == "SDK":
                        sdk.spans_per_cycle.append(
                            (sdk.flush() - exported) / (args.rounds * len(names)))
                    request = await measure(requests)
                    reconcilekit.tracing.disable()
                    if rep:
                        results.setdefault(("cycle", mode), []).append(cycle)
                        results.setdefault(("request", mode), []).append(request)
                _progress(f"  repetition {rep} done")
            tg.cancel_scope.cancel()
    return results


Results = dict[tuple[str, str], list[tuple[float, float]]]


def rows(server: str, results: Results) -> list[str]:
    out = []
    for scenario, label in (("cycle", "reconcile cycle"), ("request", "API request")):
        base = statistics.median(cpu for cpu, _ in results[(scenario, "off")])
        for mode in MODES:
            cpu = statistics.median(c for c, _ in results[(scenario, mode)])
            wall = statistics.median(w for _, w in results[(scenario, mode)])
            out.append(f"| {server} | {label} | {mode} | {cpu:,.0f} | {cpu - base:+,.0f} | "
                       f"{cpu / base:.2f} | {wall:,.0f} |")
    return out


HEADER = ("| server | per | tracing | CPU µs | vs off, µs | ratio to off | wall µs |",
          "|---|---|---|---:|---:|---:|---:|")


async def run(args: argparse.Namespace) -> None:
    servers: list[tuple[str, str | None]] = [("in-process", None)]
    if args.assets:
        servers.append(("kube-apiserver", args.assets))
    else:
        _progress("no --assets: kube-apiserver not run")
    sdk = Sdk()
    table: list[str] = []
    for label, assets in servers:
        _progress(f"{label}: starting")
        async with api_server(assets) as kubeconfig:
            table += rows(label, await server_run(kubeconfig, args, sdk))
    versions = (f"Python {sys.version.split()[0]}, opentelemetry-sdk "
                f"{version('opentelemetry-sdk')}")
    if args.assets:
        versions += f", {kube_apiserver_version(args.assets)}"
    print(f"Machine: {machine()}; {versions}\n")
    print(f"{args.objects} ConfigMaps x {args.rounds} rounds per reconcile-cycle "
          f"measurement, {args.requests} GETs per request measurement; median of "
          f"{args.reps} repetitions (after one warm-up); the SDK mode exported "
          f"{statistics.median(sdk.spans_per_cycle):.1f} spans per cycle.\n")
    print("\n".join((*HEADER, *table)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.tracing",
                                     description=__doc__.split("\n\n")[0])
    add_assets_option(parser)
    parser.add_argument("--objects", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true",
                        help="--objects 50 --rounds 2 --requests 300 --reps 2")
    args = parser.parse_args(argv)
    if args.quick:
        args.objects, args.rounds, args.requests, args.reps = 50, 2, 300, 2
    anyio.run(run, args)


if __name__ == "__main__":
    main()
