"""The claim-binding workload done the naive way: no cache, one worker.

This is how a simple Python operator is commonly written (a handler per
event, reading what it needs from the API server each time): every claim
event is handled in turn by GETting the claim, LISTing its pool's Pods from
the API server, and binding the oldest Idle one with an optimistic update.
It is the baseline ``benchmarks/e2e.py`` measures reconcilekit against, using
the same HTTP client so only the architecture differs.

Usage: ``python -m benchmarks.naive_operator KUBECONFIG NAMESPACE``; prints
its request statistics as one JSON line on SIGTERM.
"""

from __future__ import annotations

import signal
import sys

import anyio
import orjson

from reconcilekit import Client, Conflict, NotFound, Resource
from reconcilekit.kinds import PODS

CLAIMS = Resource("core.matrixorigin.io", "v1alpha1", "CNClaim", "cnclaims")

POOL = "pool.matrixorigin.io/pool-name"
PHASE = "pool.matrixorigin.io/pod-phase"
CLAIMED_BY = "pool.matrixorigin.io/claimed-by"


class NaiveBinder:
    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.reconciles = 0

    async def reconcile(self, name: str) -> None:
        self.reconciles += 1
        ns = self.namespace
        try:
            claim = await self.client.get(CLAIMS, name, ns)
        except NotFound:
            return
        if (claim.get("status") or {}).get("phase") == "Bound":
            return
        pool = (claim.get("spec") or {}).get("poolName")
        pods = (await self.client.list(PODS, ns, label_selector=f"{POOL}={pool}"))["items"]
        idle = sorted((p for p in pods if p["metadata"]["labels"].get(PHASE) == "Idle"
                       and (p.get("status") or {}).get("phase") == "Running"),
                      key=lambda p: p["metadata"]["creationTimestamp"])
        for pod in idle:
            pod.setdefault("apiVersion", "v1")
            pod.setdefault("kind", "Pod")
            pod["metadata"]["labels"][PHASE] = "Bound"
            pod["metadata"]["labels"][CLAIMED_BY] = name
            try:
                await self.client.update(PODS, pod)
            except Conflict:
                continue
            claim["spec"]["podName"] = pod["metadata"]["name"]
            claim["spec"]["nodeName"] = pod["spec"].get("nodeName", "")
            claim = await self.client.update(CLAIMS, claim)
            claim["status"] = {"phase": "Bound"}
            await self.client.update_status(CLAIMS, claim)
            return


async def main(kubeconfig: str, namespace: str) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        binder = NaiveBinder(client, namespace)
        send, receive = anyio.create_memory_object_stream[str](max_buffer_size=1_000_000)

        async def watch() -> None:
            params = {"watch": "true", "allowWatchBookmarks": "false"}
            response = await client.open_stream(CLAIMS.path(namespace), params)
            async for line in response.content:
                event = orjson.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    await send.send(event["object"]["metadata"]["name"])

        async def worker() -> None:
            async for name in receive:
                await binder.reconcile(name)

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch)
            tg.start_soon(worker)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    break
            stats = client.statistics()
            print(orjson.dumps({"reconciles": binder.reconciles,
                                "requests": stats.total_requests}).decode(), flush=True)
            tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
