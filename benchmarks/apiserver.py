"""Test API server: time until ready, and request/watch throughput on loopback,
over HTTPS (the default) and plain HTTP.

Run: ``python -m benchmarks.apiserver``. Numbers go in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import kubernetes_asyncio.client  # noqa: F401  (the client's import is not the server's start)

from reconcilekit.testing import APIServer, Cluster


async def _startup_ms(tls: bool, rounds: int = 21) -> tuple[float, float, float]:
    """First start in the process (imports included), then median and worst of the rest.

    With TLS the start includes making a CA and a serving certificate.
    """
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        server = APIServer(tls=tls)
        await server.start()
        cluster = Cluster(server.configuration(), server=server)
        got = await cluster.request("GET", "/readyz")
        samples.append((time.perf_counter() - started) * 1000)
        assert got.status == 200
        await cluster.close()
        await server.stop()
    return samples[0], statistics.median(samples[1:]), max(samples[1:])


async def _throughput(tls: bool, n: int = 2000) -> tuple[float, float]:
    async with APIServer(tls=tls) as server:
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
    print("| measurement | HTTPS (default) | plain HTTP (`tls=False`) |")
    print("|---|---:|---:|")
    runs = {tls: (await _startup_ms(tls), await _throughput(tls)) for tls in (True, False)}
    rows = [("start to first /readyz answer, first in process", lambda r: f"{r[0][0]:.1f} ms"),
            ("start to first /readyz answer (median of 20)", lambda r: f"{r[0][1]:.1f} ms"),
            ("start to first /readyz answer (worst of 20)", lambda r: f"{r[0][2]:.1f} ms"),
            ("sequential creates", lambda r: f"{r[1][0]:,.0f} /s"),
            ("watch replay of history", lambda r: f"{r[1][1]:,.0f} events/s")]
    for label, cell in rows:
        print(f"| {label} | {cell(runs[True])} | {cell(runs[False])} |")


if __name__ == "__main__":
    asyncio.run(main())
