"""Test API server: time until ready, and request/watch throughput on loopback.

Run: ``python -m benchmarks.apiserver``. Numbers go in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import kubernetes_asyncio.client  # noqa: F401  (the client's import is not the server's start)

from reconcilekit.testing import APIServer, Cluster


async def _startup_ms(rounds: int = 21) -> tuple[float, float, float]:
    """First start in the process (imports included), then median and worst of the rest."""
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        server = APIServer()
        await server.start()
        cluster = Cluster(server.configuration(), server=server)
        got = await cluster.request("GET", "/readyz")
        samples.append((time.perf_counter() - started) * 1000)
        assert got.status == 200
        await cluster.close()
        await server.stop()
    return samples[0], statistics.median(samples[1:]), max(samples[1:])


async def _throughput(n: int = 2000) -> tuple[float, float]:
    async with APIServer() as server:
        cluster = Cluster(server.configuration(), server=server)
        path = "/api/v1/namespaces/default/configmaps"
        rv = (await cluster.request("GET", path)).body["metadata"]["resourceVersion"]
        started = time.perf_counter()
        for i in range(n):
            await cluster.request("POST", path, json={
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"},
                "data": {"k": "v" * 64}})
        creates = n / (time.perf_counter() - started)
        started = time.perf_counter()
        seen = 0
        async with cluster.watch(path, {"resourceVersion": rv}) as events:
            async for _ in events:
                seen += 1
                if seen == n:
                    break
        replay = n / (time.perf_counter() - started)
        await cluster.close()
    return creates, replay


async def main() -> None:
    first, median, worst = await _startup_ms()
    creates, replay = await _throughput()
    print("| measurement | value |")
    print("|---|---|")
    print(f"| start to first /readyz answer, first in process | {first:.1f} ms |")
    print(f"| start to first /readyz answer (median of 20) | {median:.1f} ms |")
    print(f"| start to first /readyz answer (worst of 20) | {worst:.1f} ms |")
    print(f"| sequential creates over HTTP | {creates:,.0f} /s |")
    print(f"| watch replay of history | {replay:,.0f} events/s |")


if __name__ == "__main__":
    asyncio.run(main())
