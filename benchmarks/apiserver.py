"""Test API server: time until ready, and request/watch throughput on loopback,
over HTTPS (the default) and plain HTTP.

Run: ``python -m benchmarks.apiserver``. Numbers go in docs/performance.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from typing import Any
from unittest import mock

import kubernetes_asyncio.client  # noqa: F401  (the client's import is not the server's start)

from reconcilekit.testing import APIServer, Cluster
from reconcilekit.testing.apiserver.machinery import decoding


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


def _schema_bodies(kind: str, i: int) -> tuple[str, dict[str, Any]]:
    if kind == "ConfigMap":
        return "/api/v1/namespaces/default/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"c{i}"},
            "data": {"k": "v" * 64}}
    return "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "labels": {"a": "b"}},
        "spec": {"containers": [{
            "name": "main", "image": "busybox", "command": ["sleep", "3600"],
            "ports": [{"containerPort": 8080, "name": "http"}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}}}]}}


async def _creates(kind: str, tls: bool, schema: bool, n: int) -> float:
    """Sequential creates per second, with the built-in schema decoding on or patched out."""
    patched = mock.patch.object(decoding, "kind_fields", lambda *_: None)
    with contextlib.nullcontext() if schema else patched:
        async with APIServer(tls=tls) as server:
            cluster = Cluster(server.configuration(), server=server)
            for i in range(50):  # warm-up (the schema is read and compiled here)
                path, body = _schema_bodies(kind, -i - 1)
                await cluster.request("POST", path, json=body)
            started = time.perf_counter()
            for i in range(n):
                path, body = _schema_bodies(kind, i)
                got = await cluster.request("POST", path, json=body)
                assert got.status == 201, got
            rate = n / (time.perf_counter() - started)
            await cluster.close()
    return rate


def _decode_us(kind: str, schema: bool, n: int = 20000) -> float:
    """Microseconds per decoding of a request body (the write path's step), best of 3."""
    from reconcilekit.testing.apiserver.machinery.builtin_kinds import builtin_api

    rtype = next(t for t in builtin_api().types
                 if t.resource.group == "" and t.resource.kind == kind)
    body = _schema_bodies(kind, 0)[1]
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(n):
            decoding.decode(rtype, body, [] if schema else None)
        best = min(best, (time.perf_counter() - started) / n * 1e6)
    return best


async def _schema_cost(tls: bool, n: int = 1000, rounds: int = 2) -> list[str]:
    """What decoding built-in kinds by their OpenAPI schema costs, measured in the same
    run with it patched out: creates per second (best of ``rounds``, alternated) and
    microseconds per decoding of the body."""
    cells = []
    for kind in ("ConfigMap", "Pod"):
        rates = {False: 0.0, True: 0.0}
        for _ in range(rounds):
            for schema in (False, True):
                rates[schema] = max(rates[schema], await _creates(kind, tls, schema, n))
        cells.append(f"{rates[True] / rates[False]:.2f} ({rates[True]:,.0f} / "
                     f"{rates[False]:,.0f} /s)")
    for kind in ("ConfigMap", "Pod"):
        cells.append(f"{_decode_us(kind, True):.1f} / {_decode_us(kind, False):.1f} µs")
    return cells


async def main() -> None:
    print("| measurement | HTTPS (default) | plain HTTP (`tls=False`) |")
    print("|---|---:|---:|")
    runs = {tls: (await _startup_ms(tls), await _throughput(tls), await _schema_cost(tls))
            for tls in (True, False)}
    rows = [("start to first /readyz answer, first in process", lambda r: f"{r[0][0]:.1f} ms"),
            ("start to first /readyz answer (median of 20)", lambda r: f"{r[0][1]:.1f} ms"),
            ("start to first /readyz answer (worst of 20)", lambda r: f"{r[0][2]:.1f} ms"),
            ("sequential creates", lambda r: f"{r[1][0]:,.0f} /s"),
            ("watch replay of history", lambda r: f"{r[1][1]:,.0f} events/s"),
            ("ConfigMap creates, schema decoding on / off", lambda r: r[2][0]),
            ("Pod creates, schema decoding on / off", lambda r: r[2][1]),
            ("decoding a ConfigMap body, schema on / off", lambda r: r[2][2]),
            ("decoding a Pod body, schema on / off", lambda r: r[2][3])]
    for label, cell in rows:
        print(f"| {label} | {cell(runs[True])} | {cell(runs[False])} |")


if __name__ == "__main__":
    asyncio.run(main())
