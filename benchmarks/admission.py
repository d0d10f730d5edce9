"""Admission latency: what the CNClaim validating webhook adds to each create.

Run: ``python -m benchmarks.admission [--assets DIR | --in-process] [--n 200] [--rounds 3]``.
Numbers go in docs/performance.md.

The webhook runs as a process of its own (``--serve-webhook``: the CNClaim
validator on a :class:`reconcilekit.webhook.WebhookServer`, its
configuration installed scoped to one namespace), as an operator would. Each
round creates N valid CNClaims at once (N in flight) in a namespace the
webhook does not cover and N in one it does, alternating which goes first;
the latency of every create is taken on the client. Reported: p50 and p99 per
create without and with the webhook, in the same run, and the difference;
and the webhook process's CPU time per review during the timed rounds (read
from /proc before and after them: its start-up, certificate and warm-up left
out; kube-apiserver reviews each create once, and the creates in the other
namespace cost it nothing). ``--profile`` adds one more burst in the guarded
namespace, not timed, with the webhook process profiled (cProfile, CPU time),
and prints the functions with most time of their own.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import signal
import statistics
import sys
import time
from pathlib import Path

import anyio

from examples.cnclaim.admission import add_claim_webhook
from examples.cnclaim.operator import install_crds
from examples.cnclaim.resources import CNCLAIMS
from reconcilekit import Client
from reconcilekit.kinds import NAMESPACES
from reconcilekit.lowlevel import event_loop_options
from reconcilekit.testing import OperatorProcess
from reconcilekit.webhook import WebhookServer, install_configurations, remove_configurations

from .proc_stats import cpu_seconds
from .scale import _profile_lines
from .servers import api_server

PLAIN, GUARDED = "admission-plain", "admission-guarded"
ROOT = Path(__file__).resolve().parent.parent


async def serve_webhook(kubeconfig: str, profile: str | None) -> None:
    """The webhook alone, until SIGTERM; prints ``ready`` once its configuration is in.
    With ``profile``, SIGUSR1 starts a cProfile (CPU time) written there at SIGTERM."""
    profiler = cProfile.Profile(time.process_time)
    async with await Client.from_kubeconfig(kubeconfig) as client:
        server = WebhookServer(name="admission-benchmark", host="127.0.0.1", port=0)
        add_claim_webhook(server, operator_users=None, namespace=GUARDED)
        async with anyio.create_task_group() as tg:
            await tg.start(server.run)
            await install_configurations(client, server)
            print("ready", flush=True)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGUSR1) as signals:
                async for signum in signals:
                    if signum == signal.SIGTERM:
                        break
                    if profile:
                        profiler.enable()
            if profile:
                profiler.disable()
                profiler.dump_stats(profile)
            await remove_configurations(client, server)
            tg.cancel_scope.cancel()
    print(f"cpu {time.process_time()}", flush=True)


async def _storm(client: Client, namespace: str, n: int, round_: int) -> list[float]:
    """Create ``n`` claims at once; each create's latency in seconds."""
    latencies: list[float] = []

    async def create(i: int) -> None:
        started = time.perf_counter()
        await client.create(CNCLAIMS, {
            "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
            "metadata": {"name": f"c-{round_}-{i}"}, "spec": {"poolName": "p"}}, namespace)
        latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(create, i)
    return latencies


def _quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1]


async def run(assets: str | None, n: int, rounds: int, profile: bool) -> None:
    async with api_server(assets) as kubeconfig, \
            await Client.from_kubeconfig(str(kubeconfig)) as client:
        await install_crds(client)
        for ns in (PLAIN, GUARDED):
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": ns}})
        profile_file = str(Path(kubeconfig).with_name("webhook.prof")) if profile else ""
        async with OperatorProcess(
                sys.executable, "-m", "benchmarks.admission", "--serve-webhook", str(kubeconfig),
                *(["--profile-file", profile_file] if profile else []), cwd=ROOT,
                name="the webhook") as webhook:
            await webhook.wait_for_line("^ready$", within=120)
            await _storm(client, PLAIN, 20, -1)  # warm both paths (connections, caches)
            await _storm(client, GUARDED, 20, -1)
            cpu_before = cpu_seconds(webhook.pid)
            plain: list[float] = []
            guarded: list[float] = []
            for r in range(rounds):
                order = [(PLAIN, plain), (GUARDED, guarded)]
                for ns, into in (order if r % 2 == 0 else order[::-1]):
                    into.extend(await _storm(client, ns, n, r))
                    print(f"round {r + 1}/{rounds} {ns}: done", file=sys.stderr)
            cpu = cpu_seconds(webhook.pid) - cpu_before
            if profile:  # one more burst, profiled: cProfile slows what it watches
                os.kill(webhook.pid, signal.SIGUSR1)
                await _storm(client, GUARDED, n, rounds)
        profile_lines = _profile_lines(profile_file, top=30) if profile else []
    server = "kube-apiserver" if assets else "in-process"
    loop = "uvloop" if event_loop_options() else "asyncio's own loop"
    print(f"\n{n} concurrent CNClaim creates x {rounds} rounds, {server}; the webhook on "
          f"{loop}\n")
    print("| | p50 per create | p99 per create |")
    print("|---|---|---|")
    rows = (("no webhook", plain), ("CNClaim validating webhook", guarded))
    for label, values in rows:
        print(f"| {label} | {_quantile(values, 0.5) * 1000:.1f} ms "
              f"| {_quantile(values, 0.99) * 1000:.1f} ms |")
    print(f"| added by the webhook | "
          f"{(_quantile(guarded, 0.5) - _quantile(plain, 0.5)) * 1000:+.1f} ms | "
          f"{(_quantile(guarded, 0.99) - _quantile(plain, 0.99)) * 1000:+.1f} ms |")
    print(f"| webhook process: CPU per review (timed rounds) "
          f"| {cpu / len(guarded) * 1000:.2f} ms | ({cpu:.2f} CPU-s, {len(guarded)} reviews) |")
    if profile_lines:
        print(f"\nwebhook process, one more burst of {n} (profiled, not timed), cProfile by "
              "own time:\n\n```\n"
              + "\n".join(profile_lines) + "\n```")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.admission")
    parser.add_argument("--assets", default=os.environ.get("RECONCILEKIT_TEST_ASSETS"),
                        help="kube-apiserver and etcd binaries (default "
                             "$RECONCILEKIT_TEST_ASSETS); without: the in-process server")
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true",
                        help="profile the webhook process in one more burst")
    parser.add_argument("--serve-webhook", metavar="KUBECONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--profile-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_webhook:  # on the loop an operator's manager runs (uvloop if installed)
        anyio.run(serve_webhook, args.serve_webhook, args.profile_file,
                  backend_options=event_loop_options())
        return
    anyio.run(run, None if args.in_process else args.assets, args.n, args.rounds, args.profile)


if __name__ == "__main__":
    main()
