"""Claim storm, end to end: N Idle Pods in a pool and N CNClaims created at once.

For each N and each operator, a fresh in-process API server runs in this
process and the operator runs as a separate process, so its CPU time and
peak memory are its own:

* ``reconcilekit``: the bundled CNClaim operator (``python -m examples.cnclaim
  --kubeconfig ... --no-webhooks``): shared cache, field index, several
  workers; without its validating webhook unless ``--webhooks on`` (the
  floor has no admission: what a webhook costs the API server is measured
  by ``benchmarks/admission.py``, and here as a variant of its own);
* ``client-go``: the anchor, the same claim binding written as a Go operator
  is with client-go v0.28.7 (``benchmarks/go/cnclaim``: dynamic informers for
  the custom kinds, a typed one for Pods, a rate-limited work queue, as many
  workers as the reconcilekit operator), making the same requests per claim;
  it has no webhook, so against reconcilekit ``--webhooks on`` the comparison
  favours the anchor. Built as ``benchmarks/scale.py`` builds its Go program
  (``--go auto``, the default, when a Go toolchain is found; ``--go-binary
  PATH`` runs one built elsewhere; ``--go off`` skips it; the table says why
  it did not run);
* ``naive``: the same workload done the way a simple operator does it
  (``benchmarks/naive_operator.py``): no cache, list Pods from the API
  server on every reconcile, one worker;
* ``floor``: no operator at all: the benchmark itself does only the writes
  a binding needs, claim i to Pod i (PUT the Pod with its resourceVersion,
  PATCH the claim's spec, PATCH its status), as each claim is created. No
  operator can be faster on the same API server.

Claims are created 20 at a time, for every operator. Measured: time from
the first claim created to all claims Bound (and its ratios to the floor's
and to client-go's of the same round),
API requests per claim and 409 conflicts per claim (from the operator's
``reconcilekit_client_requests_total``, which the Go operator serves too, so on
any API server; Events
counted apart), reconciles per claim, CPU seconds of the operator process
during the storm (from its first claim to the last Bound) and in all (start-up
and the initial list included), and its peak RSS; with ``--assets``, also
the CPU seconds etcd, kube-apiserver and kube-controller-manager spent
during the storm. On a cluster "all Bound" is
seen through one watch on the claims, in every storm, the floor's included
(polling lists would load the API server the operator is measured on, and
the floor pays for the same observer); in-process the benchmark reads the
store.
Requests are counted once the operator's Events are all written (they trail
the bindings). Results go to ``benchmarks/results/e2e.json`` and a plot
to ``docs/e2e.png``.

``--quick`` runs N=50 only (a smoke run); ``--sizes 100,1000`` picks sizes;
``--workers 1,2,4,8`` runs the operator once per worker count (default 4);
``--event-loops asyncio,uvloop`` once per event loop (``RECONCILEKIT_EVENT_LOOP``);
``--webhooks off,on`` once without and once with its validating webhook;
``--naive-max N`` skips the baseline above N (it grows as N squared);
``--kubeconfig PATH`` runs the storms on that cluster instead (each in a
namespace of its own; the operator's API requests are then not counted);
``--assets DIR`` on a control plane started from the binaries in DIR (real
kube-apiserver and etcd, no kubelets: Pods are reported Running by the
benchmark as in-process).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import anyio.abc
import orjson
import yaml
from prometheus_client.parser import text_string_to_metric_families

from reconcilekit import AlreadyExists, Client, NotFound, Resource
from reconcilekit.kinds import CUSTOM_RESOURCE_DEFINITIONS, NAMESPACES, PODS
from reconcilekit.testing import APIServer, ControlPlane, OperatorProcess

from .proc_stats import cpu_and_peak_rss, cpu_seconds
from .scale_go import CNCLAIM, go_subject
from .store import realistic_pod

ROOT = Path(__file__).resolve().parent.parent
MANIFESTS = ROOT / "examples" / "cnclaim" / "manifests"
RESULTS = Path(__file__).resolve().parent / "results" / "e2e.json"
PLOT = ROOT / "docs" / "e2e.png"

CLAIMS = Resource("core.matrixorigin.io", "v1alpha1", "CNClaim", "cnclaims")
POOL = "bench"
NS = "default"
CREATES_IN_FLIGHT = 20


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _pod(i: int, ns: str) -> dict[str, Any]:
    pod = realistic_pod(i)
    meta = pod["metadata"]
    for key in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences",
                "generation"):
        meta.pop(key, None)
    meta["namespace"] = ns
    meta["labels"] = {"pool.matrixorigin.io/pool-name": POOL,
                      "pool.matrixorigin.io/pod-phase": "Idle"}
    pod.pop("status", None)
    return pod


def _cluster_pod(i: int) -> dict[str, Any]:
    """A Pod a real cluster can run: the pause image, tiny requests, scheduled anywhere."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"cn-{i:06d}", "labels": {
                "pool.matrixorigin.io/pool-name": POOL,
                "pool.matrixorigin.io/pod-phase": "Idle"}},
            "spec": {"containers": [{"name": "cn", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": {"cpu": "1m",
                                                                "memory": "4Mi"}}}],
                     "terminationGracePeriodSeconds": 0}}


def _claim(i: int) -> dict[str, Any]:
    return {"apiVersion": "core.matrixorigin.io/v1alpha1", "kind": "CNClaim",
            "metadata": {"name": f"claim-{i:05d}"}, "spec": {"poolName": POOL}}


def _cpu_of(pids: tuple[int, ...]) -> float:
    """CPU seconds used so far by these processes together."""
    return sum(cpu_seconds(pid) for pid in pids)


async def _operator_metrics(port: int) -> dict[str, float]:
    """Reconciles of the claim controller, the operator's requests by kind, and the
    admission reviews its webhook answered."""
    async with aiohttp.ClientSession() as http, http.get(
            f"http://127.0.0.1:{port}/metrics") as resp:
        text = await resp.text()
    out: dict[str, float] = {"reconciles": 0.0, "requests": 0.0, "events": 0.0,
                             "conflicts": 0.0}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "controller_runtime_reconcile_total" and (
                    sample.labels.get("controller") == "cnclaim"):
                out["reconciles"] += sample.value
            elif sample.name == "reconcilekit_client_requests_total":
                verb, resource = sample.labels["verb"], sample.labels["resource"]
                if verb == "watch":
                    continue
                key = f"{verb} {resource} {sample.labels['code']}"
                out[key] = out.get(key, 0.0) + sample.value
                out["events" if resource.startswith("events") else "requests"] += sample.value
                if sample.labels["code"] == "409":
                    out["conflicts"] += sample.value
            elif sample.name == "reconcilekit_webhook_requests_total":  # reviews answered
                out["webhook reviews"] = out.get("webhook reviews", 0.0) + sample.value
    return out


EVENTS_WAIT = {"seconds": 60.0}  # --events-wait


async def _settled_metrics(port: int, events: float) -> dict[str, float]:
    """The operator's metrics once ``events`` Events are written or their count stops
    growing (they follow the bindings at the recorder's 20 a second), or after
    ``--events-wait`` seconds."""
    last = await _operator_metrics(port)
    with anyio.move_on_after(EVENTS_WAIT["seconds"]):
        while last.get("events", 0.0) < events:
            await anyio.sleep(1.0)
            now = await _operator_metrics(port)
            if now.get("events") == last.get("events"):
                break
            last = now
    return last


async def run_one(operator: str, n: int, within: float, kubeconfig: str | None = None,
                  kubelets: bool = True, workers: int = 4,
                  event_loop: str = "", server_pids: tuple[int, ...] = (),
                  webhook: bool = False, go_argv: tuple[str, ...] = ()) -> dict[str, Any]:
    """One storm; in-process unless ``kubeconfig`` names a cluster (then in a fresh
    namespace, removed afterwards; API requests are not counted there). Without
    ``kubelets`` (a bare control plane) the Pods are placed and reported Running
    by the benchmark, as in-process. ``go_argv`` runs the ``client-go`` operator."""
    if kubeconfig is not None:
        async with await Client.from_kubeconfig(kubeconfig) as client:
            ns = f"rk-bench-{os.getpid()}-{n}-{operator}-{workers}{event_loop}{'-wh' * webhook}"
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": ns}})
            try:
                return await _storm(client, None, Path(kubeconfig), ns, operator, n, within,
                                    kubelets=kubelets, workers=workers, event_loop=event_loop,
                                    server_pids=server_pids, webhook=webhook, go_argv=go_argv)
            finally:
                if kubelets:  # (a bare control plane is thrown away with its objects)
                    await client.delete(NAMESPACES, ns)
                    await _gone(client, ns)
    async with APIServer(history_limit=max(10_000, 4 * n)) as server:
        with tempfile.TemporaryDirectory() as tmp:
            path = server.write_kubeconfig(Path(tmp) / "kubeconfig")
            async with Client(server.configuration()) as client:
                return await _storm(client, server, path, NS, operator, n, within,
                                    kubelets=False, workers=workers, event_loop=event_loop,
                                    webhook=webhook, go_argv=go_argv)


async def _gone(client: Client, ns: str) -> None:
    """Wait (up to 10 minutes) until namespace ``ns`` is deleted: the next storm must not
    share the cluster with the deletion of this one's thousands of objects."""
    with anyio.move_on_after(600) as scope:
        while True:
            try:
                await client.get(NAMESPACES, ns)
            except NotFound:
                return
            await anyio.sleep(1)
    if scope.cancelled_caught:
        _progress(f"  namespace {ns} still not deleted after 10 minutes; going on")


async def _storm(client: Client, server: APIServer | None, kubeconfig: Path, ns: str,
                 operator: str, n: int, within: float, *, kubelets: bool,
                 workers: int, event_loop: str, server_pids: tuple[int, ...] = (),
                 webhook: bool = False, go_argv: tuple[str, ...] = ()) -> dict[str, Any]:
    for doc in yaml.safe_load_all((MANIFESTS / "crds.yaml").read_text()):
        if doc and doc.get("kind") == "CustomResourceDefinition":
            with contextlib.suppress(AlreadyExists):
                await client.create(CUSTOM_RESOURCE_DEFINITIONS, doc)
    limiter = anyio.Semaphore(CREATES_IN_FLIGHT)
    pods: dict[int, dict[str, Any]] = {}

    async def create(obj: dict[str, Any], resource: Resource, i: int = 0) -> None:
        async with limiter:
            made = await client.create(resource, obj, ns)
            if resource is PODS and not kubelets:  # report it running, as a kubelet would
                made = await client.patch_status(PODS, made["metadata"]["name"],
                                                 {"status": {"phase": "Running"}}, ns)
            if resource is PODS:
                pods[i] = made

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(create, _cluster_pod(i) if kubelets else _pod(i, ns), PODS, i)
    with anyio.fail_after(within):  # on a cluster the kubelets start them
        while await _count(client, server, ns, PODS, "Running") < n:  # noqa: ASYNC110
            await anyio.sleep(0.5 if kubelets else 0.02)
    # The first request for a custom resource makes kube-apiserver build its storage and
    # watch cache (about two seconds): no storm may start with that in its time.
    warm = await client.create(CLAIMS, dict(_claim(0), metadata={"name": "warm-up"}), ns)
    await client.delete(CLAIMS, warm["metadata"]["name"], ns)
    if operator == "floor":
        return await _floor(client, server, ns, n, within, pods, server_pids)
    port = _free_port()
    if operator == "naive":
        args = [sys.executable, "-m", "benchmarks.naive_operator", str(kubeconfig), ns]
    elif operator == "client-go":
        args = [*go_argv, "-kubeconfig", str(kubeconfig), "-namespace", ns,
                "-workers", str(workers), "-metrics-addr", f"127.0.0.1:{port}"]
    else:
        args = [sys.executable, "-m", "examples.cnclaim", "--kubeconfig", str(kubeconfig),
                "--namespace", ns, "--workers", str(workers),
                "--metrics-addr", f"127.0.0.1:{port}",
                *(["--webhook-addr", f"127.0.0.1:{_free_port()}"] if webhook else
                  ["--no-webhooks"])]
    env = dict(os.environ, RECONCILEKIT_EVENT_LOOP=event_loop) if event_loop else None
    proc = await OperatorProcess(*args, cwd=ROOT, env=env, name=operator).start()
    try:
        with anyio.fail_after(60):  # the operator is up once it watches claims
            if server is not None:
                while server.request_count("watch", "cnclaims") == 0:  # noqa: ASYNC110
                    await anyio.sleep(0.02)
            else:
                await anyio.sleep(5)
        await anyio.sleep(0.2)
        if server is not None:
            server.requests.clear()
        before = None if operator == "naive" else await _operator_metrics(port)
        cpu_ready, server_ready = cpu_seconds(proc.pid), _cpu_of(server_pids)
        bound = anyio.Event()
        async with anyio.create_task_group() as tg:
            if server is None:  # on a cluster: one watch, far cheaper than polling lists
                await tg.start(_watch_bound, client, ns, n, bound)
            started = time.perf_counter()
            for i in range(n):
                tg.start_soon(create, _claim(i), CLAIMS)
            with anyio.fail_after(within):
                if server is None:
                    await bound.wait()
                while server is not None and await _count(  # noqa: ASYNC110
                        client, server, ns, CLAIMS, "Bound") < n:
                    await anyio.sleep(0.05)
            elapsed = time.perf_counter() - started
        requests = None if server is None else server.request_count() - n  # minus ours
        cpu, rss = cpu_and_peak_rss(proc.pid)
        server_cpu = _cpu_of(server_pids) - server_ready
        at_bound = None if before is None else await _operator_metrics(port)
        after = None if before is None else await _settled_metrics(
            port, before.get("events", 0.0) + n)
    finally:
        await proc.stop()
    counts: dict[str, float] = {}
    if before is not None and after is not None:
        counts = {k: v - before.get(k, 0.0) for k, v in after.items()
                  if v - before.get(k, 0.0)}
        requests = int(counts.get("requests", 0))
        reconciles = counts.get("reconciles", 0.0)
    else:
        reconciles = float(orjson.loads(proc.stdout[-1])["reconciles"])
    return {"operator": operator, "workers": 1 if operator == "naive" else workers,
            "event_loop": event_loop or "default", "webhook": webhook,
            "n": n, "seconds": elapsed,
            "requests_per_claim": None if requests is None else requests / n,
            "events_per_claim": counts.get("events", 0.0) / n if counts else None,
            "storm_events_per_claim": None if at_bound is None or before is None else (
                at_bound.get("events", 0.0) - before.get("events", 0.0)) / n,
            "conflicts_per_claim": counts.get("conflicts", 0.0) / n if counts else None,
            "request_counts": {k: v for k, v in counts.items() if " " in k},
            "reconciles_per_claim": (reconciles or 0) / n, "cpu_seconds": cpu,
            "storm_cpu_seconds": cpu - cpu_ready,
            "server_cpu_seconds": server_cpu if server_pids else None,
            "peak_rss_mib": rss, "where": "cluster" if server is None else "in-process"}


async def _floor(client: Client, server: APIServer | None, ns: str, n: int, within: float,
                 pods: dict[int, dict[str, Any]], server_pids: tuple[int, ...] = ()
                 ) -> dict[str, Any]:
    """The least any operator must do: bind claim i to Pod i with three writes, as each
    claim is created, ``CREATES_IN_FLIGHT`` at a time. CPU is this process's. On a
    cluster the end is seen through the same watch as an operator's storm, so both
    pay for the observer."""
    if server is not None:
        server.requests.clear()
    limiter = anyio.Semaphore(CREATES_IN_FLIGHT)
    sent: list[int | None] = []

    async def bind(i: int) -> None:
        async with limiter:
            claim = await client.create(CLAIMS, _claim(i), ns)
            pod = pods[i]
            name = claim["metadata"]["name"]
            labelled = dict(pod, metadata=dict(pod["metadata"], labels={
                **pod["metadata"]["labels"], "pool.matrixorigin.io/claimed-by": name,
                "pool.matrixorigin.io/pod-phase": "Bound"}))
            await client.update(PODS, labelled)
            await client.patch(CLAIMS, name, {"spec": {
                "podName": pod["metadata"]["name"],
                "nodeName": pod["spec"].get("nodeName")}}, ns)
            await client.patch_status(CLAIMS, name, {"status": {
                "phase": "Bound", "boundTime": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                             time.gmtime())}}, ns)

    bound = anyio.Event()
    with anyio.fail_after(within):
        async with anyio.create_task_group() as tg:
            if server is None:  # the same observer as the operators' storms, at the same cost
                await tg.start(_watch_bound, client, ns, n, bound)
            unobserve = client.add_request_observer(lambda r: sent.append(r.status))
            cpu_before, server_before = time.process_time(), _cpu_of(server_pids)
            started = time.perf_counter()
            for i in range(n):
                tg.start_soon(bind, i)
            if server is None:
                await bound.wait()
        elapsed = time.perf_counter() - started  # every bind written (and on a cluster, seen)
    server_cpu = _cpu_of(server_pids) - server_before
    unobserve()
    return {"operator": "floor", "workers": CREATES_IN_FLIGHT, "n": n, "seconds": elapsed,
            "requests_per_claim": (len(sent) - n) / n, "events_per_claim": 0.0,
            "conflicts_per_claim": sent.count(409) / n, "request_counts": {},
            "reconciles_per_claim": 0.0, "cpu_seconds": time.process_time() - cpu_before,
            "storm_cpu_seconds": time.process_time() - cpu_before,
            "server_cpu_seconds": server_cpu if server_pids else None,
            "peak_rss_mib": 0.0, "where": "cluster" if server is None else "in-process"}


async def _watch_bound(client: Client, ns: str, n: int, bound: anyio.Event, *,
                       task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                       ) -> None:
    """Set ``bound`` once ``n`` claims in ``ns`` have been seen with phase Bound.

    A watch kube-apiserver closes (it drops a watcher that falls behind a fast
    writer) is opened again from the last resourceVersion seen; one it answers
    410 Gone is replaced by a list and a watch from there."""
    start = await client.list(CLAIMS, ns, limit=1)
    path = f"/apis/{CLAIMS.group}/{CLAIMS.version}/namespaces/{ns}/{CLAIMS.plural}"
    version, started = start["metadata"]["resourceVersion"], False
    seen: set[str] = set()
    while True:
        response = await client.open_stream(path, {
            "watch": "true", "resourceVersion": version, "timeoutSeconds": 3600},
            inactivity_timeout=None)
        if not started:
            task_status.started()
            started = True
        async with response:
            async for line in response.content:
                event = orjson.loads(line)
                obj = event["object"]
                if event["type"] == "ERROR":  # 410 Gone: list, and watch from there
                    listed = await client.list_all(CLAIMS, ns)
                    seen.update(c["metadata"]["name"] for c in listed["items"]
                                if (c.get("status") or {}).get("phase") == "Bound")
                    version = listed["metadata"]["resourceVersion"]
                    break
                version = obj["metadata"]["resourceVersion"]
                if (obj.get("status") or {}).get("phase") == "Bound":
                    seen.add(obj["metadata"]["name"])
                if len(seen) >= n:
                    bound.set()
                    return
            if len(seen) >= n:  # (the list after a 410 saw the last of them)
                bound.set()
                return


async def _count(client: Client, server: APIServer | None, ns: str, resource: Resource,
                 phase: str) -> int:
    """How many objects of ``resource`` have ``status.phase == phase``."""
    if server is not None:  # read the store: polling over HTTP would be counted
        table = server.storage.tables.get((resource.group, resource.plural))
        objects = list(table.objects.values()) if table is not None else []
    else:
        objects = (await client.list_all(resource, ns))["items"]
    return sum(1 for o in objects if (o.get("status") or {}).get("phase") == phase)


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
    whos = list(dict.fromkeys(_who(r) for r in results))
    for index, who in enumerate(whos):  # one line each, the median over rounds at each N
        rows = [r for r in results if _who(r) == who]
        ns = sorted({r["n"] for r in rows})
        style = ("^:" if who == "floor" else "s--" if who == "naive"
                 else "d-." if who.startswith("client-go") else "o-")
        left.plot(ns, [statistics.median(r["seconds"] for r in rows if r["n"] == n)
                       for n in ns], style, label=who, color=f"C{index}")
        if who != "floor":
            right.plot(ns, [statistics.median(r["peak_rss_mib"] for r in rows if r["n"] == n)
                            for n in ns], style, label=who, color=f"C{index}")
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
    parser.add_argument("--naive-max", type=int, default=1000,
                        help="largest N for the baseline (default 1000: at 5,000 it needs "
                             "about half an hour, growing as N squared)")
    parser.add_argument("--workers", default="4",
                        help="operator worker counts to run, comma-separated (default 4)")
    parser.add_argument("--event-loops", default="",
                        help="run the operator on each of these event loops, e.g. "
                             "asyncio,uvloop (default: whatever it picks)")
    parser.add_argument("--webhooks", default="off",
                        help="run the operator without (off, the default) or with (on) its "
                             "validating webhook, or both: off,on")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run every storm this many times, in rounds (each ratio is "
                             "to the floor of its own round)")
    parser.add_argument("--events-wait", type=float, default=60.0,
                        help="after all are Bound, wait up to this many seconds for the "
                             "operator's Events to be written before counting requests")
    parser.add_argument("--go", choices=("auto", "off"), default="auto",
                        help="build and run the client-go operator (auto: when a Go "
                             "toolchain is found) or not (off)")
    parser.add_argument("--go-binary", metavar="PATH",
                        help="a built benchmarks/go/cnclaim program to run as client-go")
    parser.add_argument("--no-plot", action="store_true")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", metavar="PATH",
                       help="run against this cluster instead of the in-process server")
    where.add_argument("--assets", metavar="DIR",
                       help="run against a control plane (etcd, kube-apiserver, "
                            "kube-controller-manager) started from the binaries in DIR")
    args = parser.parse_args(argv)
    choices = {"off": False, "on": True}
    if not set(args.webhooks.split(",")) <= choices.keys():
        parser.error(f"--webhooks: off, on or off,on, not {args.webhooks!r}")
    args.webhooks = [choices[w] for w in args.webhooks.split(",")]
    EVENTS_WAIT["seconds"] = args.events_wait
    go_argv, go_note, go_version = go_subject(args.go, args.go_binary, CNCLAIM)
    if go_note:
        _progress(f"client-go: {go_note}")
    elif go_version:
        _progress(f"client-go: built with {go_version}")
    _run_all(args, tuple(go_argv or ()), go_note)


def _run(args: argparse.Namespace, operator: str, n: int, workers: int,
         event_loop: str, webhook: bool, go_argv: tuple[str, ...] = ()) -> dict[str, Any]:
    """One storm: with ``--assets`` on a control plane of its own, so no run pays for
    another's leftovers (a namespace of thousands of objects being deleted, a larger
    etcd); else on ``--kubeconfig``'s cluster or in-process."""
    within = 120 + n * 0.5
    if not args.assets:
        return anyio.run(functools.partial(
            run_one, operator, n, within, args.kubeconfig, True, workers, event_loop,
            webhook=webhook, go_argv=go_argv))
    with ControlPlane(args.assets) as plane, tempfile.TemporaryDirectory() as tmp:
        kubeconfig = str(plane.write_kubeconfig(Path(tmp) / "kubeconfig"))
        return anyio.run(functools.partial(
            run_one, operator, n, within, kubeconfig, False, workers, event_loop,
            tuple(plane.pids), webhook=webhook, go_argv=go_argv))


def _run_all(args: argparse.Namespace, go_argv: tuple[str, ...] = (),
             go_note: str | None = None) -> None:
    """Every storm, in rounds: per N and round the floor, each reconcilekit variant, the
    client-go operator at each worker count (when ``go_argv`` runs it) and the naive
    one; then the table (with ``go_note``, why client-go did not run, if it did not)."""
    sizes = [50] if args.quick else [int(s) for s in args.sizes.split(",")]
    worker_counts = [int(w) for w in args.workers.split(",")]
    results = []
    loops = args.event_loops.split(",") if args.event_loops else [""]
    runs = [("floor", 1, "", False), *(("reconcilekit", w, loop, hook) for w in worker_counts
                                       for loop in loops for hook in args.webhooks),
            *(("client-go", w, "", False) for w in worker_counts if go_argv),
            ("naive", 1, "", False)]
    for n, round_ in ((n, r) for n in sizes for r in range(1, args.repeat + 1)):
        for operator, workers, loop, webhook in runs:
            if operator == "naive" and n > args.naive_max:
                _progress(f"  skipping naive at N={n} (--naive-max {args.naive_max})")
                continue
            result = {"operator": operator, "workers": workers, "event_loop": loop or "default",
                      "webhook": webhook}
            _progress(f"  e2e: {_who(result)}, N={n} ...")
            result = dict(_run(args, operator, n, workers, loop, webhook, go_argv),
                          round=round_)
            _progress(f"  e2e: {_who(result)}, N={n}: {result['seconds']:.1f}s to all Bound")
            results.append(result)
            RESULTS.parent.mkdir(exist_ok=True)  # written as it goes: a long run keeps its rows
            RESULTS.write_text(json.dumps(results, indent=1))
    if not args.no_plot and not args.quick:
        _plot(results)
    _report(results, go_note)


def _who(r: dict[str, Any]) -> str:
    workers = f"{r['workers']} worker" + ("s" if r["workers"] != 1 else "")
    if r["operator"] == "client-go":
        return f"client-go, {workers}"
    if r["operator"] != "reconcilekit":
        return str(r["operator"])
    loop = r.get("event_loop", "default")
    return (f"reconcilekit, {workers}" + (f", {loop}" if loop != "default" else "")
            + (", with its webhook" if r.get("webhook") else ""))


def _report(results: list[dict[str, Any]], go_note: str | None = None) -> None:
    """Every run (its ratios to the floor and to client-go of its own round, client-go
    with as many workers), then the medians over rounds."""
    print("| N | round | who | time to all Bound | x floor | x client-go | requests/claim "
          "(+ Events: in all, in the storm) | 409s/claim | reconciles/claim | CPU s in storm "
          "(total) | API server CPU s | peak RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    floors = {(r["n"], r["round"]): r["seconds"] for r in results if r["operator"] == "floor"}
    anchors = {(r["n"], r["round"], r["workers"]): r["seconds"] for r in results
               if r["operator"] == "client-go"}
    ratios: dict[tuple[int, str], list[float]] = {}
    to_anchors: dict[tuple[int, str], list[float]] = {}
    for r in results:
        floor = floors.get((r["n"], r["round"]))
        ratio = f"{r['seconds'] / floor:.2f}x" if floor else "-"
        anchor = (anchors.get((r["n"], r["round"], r["workers"]))
                  if r["operator"] == "reconcilekit" else None)
        to_anchor = f"{r['seconds'] / anchor:.2f}x" if anchor else "-"
        if anchor:
            to_anchors.setdefault((r["n"], _who(r)), []).append(r["seconds"] / anchor)
        if floor:
            ratios.setdefault((r["n"], _who(r)), []).append(r["seconds"] / floor)
        per_claim = ("n/a" if r["requests_per_claim"] is None
                     else f"{r['requests_per_claim']:.2f}")
        if r.get("events_per_claim"):
            per_claim += (f" (+ {r['events_per_claim']:.2f}, "
                          f"{r.get('storm_events_per_claim') or 0:.2f})")
        conflicts = ("n/a" if r.get("conflicts_per_claim") is None
                     else f"{r['conflicts_per_claim']:.3f}")
        rss = "-" if r["operator"] == "floor" else f"{r['peak_rss_mib']:.0f} MiB"
        server = ("-" if r.get("server_cpu_seconds") is None
                  else f"{r['server_cpu_seconds']:.1f}")
        print(f"| {r['n']:,} | {r['round']} | {_who(r)} | {r['seconds']:.2f} s | {ratio} | "
              f"{to_anchor} | {per_claim} | {conflicts} | {r['reconciles_per_claim']:.1f} | "
              f"{r['storm_cpu_seconds']:.1f} ({r['cpu_seconds']:.1f}) | {server} | {rss} |")
    if go_note:  # once, not in every round
        print(f"| - | - | client-go | {go_note.removeprefix('not run: ')} | - | - | - | - | - "
              "| - | - | - |")
    if max((r["round"] for r in results), default=1) > 1:
        print()
        print("| N | who | rounds | median time | median x floor | x floor, best-worst | "
              "median x client-go |")
        print("|---|---|---|---|---|---|---|")
        for (n, who), values in ratios.items():
            times = [r["seconds"] for r in results if r["n"] == n and _who(r) == who]
            anchored = to_anchors.get((n, who))
            print(f"| {n:,} | {who} | {len(values)} | {statistics.median(times):.2f} s | "
                  f"{statistics.median(values):.2f}x | {min(values):.2f}-{max(values):.2f}x | "
                  + (f"{statistics.median(anchored):.2f}x |" if anchored else "- |"))
    for r in results:
        if r.get("request_counts"):
            _progress(f"  requests, {_who(r)}, N={r['n']}, round {r['round']}: " +
                      ", ".join(f"{k}: {v:.0f}" for k, v in sorted(r["request_counts"].items())))

if __name__ == "__main__":
    main()
