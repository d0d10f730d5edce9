"""The cluster in a box: how fast the in-process server starts with its controllers, and
how long a Deployment of 3 replicas takes to become Available, in-process and on
kube-apiserver with kube-controller-manager, in the same run.

Run: ``python -m benchmarks.cluster_in_a_box [--assets DIR] [--rounds N]
[--plane-starts M]``. The in-process server's start runs from making it to serving;
kube-apiserver's is :class:`ControlPlane`'s start to ready (etcd, kube-apiserver and
kube-controller-manager started, ``/readyz`` 200 and the ``default`` ServiceAccount
made), M times (default 3), the Deployments measured on the last one. A
:class:`NodeSimulator` (2 nodes) plays the kubelet on both; the time runs from the
create to the Deployment's status showing 3 available, updated replicas at its
generation (what ``kubectl rollout status`` waits for). Numbers go in
docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import DEPLOYMENTS
from reconcilekit.testing import APIServer, ControlPlane, NodeSimulator
from reconcilekit.testing._control_plane import assets_from_env


async def _start_ms(controllers: tuple[str, ...], rounds: int) -> float:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        server = APIServer(controllers=controllers)
        await server.start()
        samples.append((time.perf_counter() - started) * 1000)
        await server.stop()
    return statistics.median(samples)


def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}]}}}}


async def _available_ms(client: Client, namespace: str, rounds: int) -> float:
    samples = []
    async with NodeSimulator(client, nodes=2, namespace=namespace):
        for i in range(rounds):
            name = f"bench-{i}"
            started = time.perf_counter()
            await client.create(DEPLOYMENTS, _deployment(name), namespace)
            while True:
                d = await client.get(DEPLOYMENTS, name, namespace)
                status = d.get("status") or {}
                if (status.get("observedGeneration") == d["metadata"]["generation"]
                        and status.get("availableReplicas") == 3
                        and status.get("updatedReplicas") == 3):
                    break
                await asyncio.sleep(0.002)
            samples.append((time.perf_counter() - started) * 1000)
            await client.delete(DEPLOYMENTS, name, namespace)
    return statistics.median(samples)


async def _in_process(rounds: int) -> float:
    async with APIServer() as server, Client(server.configuration()) as client:
        return await _available_ms(client, "default", rounds)


async def _on_kube(assets: Path, rounds: int, starts: int) -> tuple[float, float]:
    """The median of ``starts`` control planes' start to ready, and the Deployments'
    median on the last one (both in ms)."""
    samples, available = [], None
    for started in range(1, starts + 1):
        plane = ControlPlane(assets=assets)
        plane.start()
        try:
            assert plane.startup_seconds is not None
            samples.append(plane.startup_seconds * 1000)
            if started == starts:
                async with Client(plane.configuration()) as client:
                    available = await _available_ms(client, "default", rounds)
        finally:
            plane.stop()
    assert available is not None, "starts must be at least 1"
    return statistics.median(samples), available


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=Path, default=assets_from_env(),
                        help="kube-apiserver, etcd and kube-controller-manager binaries "
                        "(default: RECONCILEKIT_TEST_ASSETS or KUBEBUILDER_ASSETS)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--plane-starts", type=int, default=3,
                        help="control planes started, their start to ready's median shown")
    args = parser.parse_args()
    if args.rounds < 1 or args.plane_starts < 1:
        parser.error("--rounds and --plane-starts must be at least 1")
    with_controllers = await _start_ms(("*",), args.rounds * 2)
    without = await _start_ms((), args.rounds * 2)
    here = await _in_process(args.rounds)
    kube = await _on_kube(args.assets, args.rounds, args.plane_starts) if args.assets else None
    print("| measurement | in-process | kube-apiserver + kube-controller-manager |")
    print("|---|---:|---:|")
    if kube is None:
        start_cell = available_cell = "(no --assets)"
    else:
        start_cell = (f"{kube[0]:.0f} ms, median of {args.plane_starts} "
                      f"({kube[0] / with_controllers:.0f}x the in-process time)")
        available_cell = f"{kube[1]:.0f} ms ({kube[1] / here:.1f}x the in-process time)"
    print(f"| start to serving (kube-apiserver: ControlPlane start to ready), every controller"
          f" on / off (median) | {with_controllers:.1f} ms / {without:.1f} ms | {start_cell} |")
    print(f"| Deployment of 3 replicas created to Available (median of {args.rounds}) | "
          f"{here:.0f} ms | {available_cell} |")


if __name__ == "__main__":
    asyncio.run(main())
