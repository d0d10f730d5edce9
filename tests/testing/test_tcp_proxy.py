"""``TCPProxy``: the faults it puts between a client and the API server.

A partition holds every byte both ways, for open and new connections, until it
heals; latency delays every chunk; both on either backend.
"""

from __future__ import annotations

import copy
import time

import anyio

from reconcilekit import Client, Resource
from reconcilekit.testing import Cluster, TCPProxy

NAMESPACES = Resource("", "v1", "Namespace", "namespaces", namespaced=False)


async def test_a_partition_holds_every_request_until_it_heals(apiserver: Cluster) -> None:
    async with TCPProxy(apiserver.configuration.host) as proxy:
        configuration = copy.copy(apiserver.configuration)
        configuration.host = proxy.url
        async with Client(configuration) as client:
            await client.get(NAMESPACES, "default")  # a pooled connection, open
            proxy.partition()
            assert proxy.partitioned
            with anyio.move_on_after(1) as scope:  # nothing can cross: it never completes
                await client.get(NAMESPACES, "default")
            assert scope.cancelled_caught
            async with anyio.create_task_group() as tg:
                done = anyio.Event()

                async def held() -> None:
                    await client.get(NAMESPACES, "kube-system")
                    done.set()

                tg.start_soon(held)
                proxy.heal()
                with anyio.fail_after(30):
                    await done.wait()
            assert proxy.connections >= 2  # the held request's connection went through
            assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"


async def test_latency_delays_every_request(apiserver: Cluster) -> None:
    async with TCPProxy(apiserver.configuration.host, latency=0.25) as proxy:
        configuration = copy.copy(apiserver.configuration)
        configuration.host = proxy.url
        async with Client(configuration) as client:
            started = time.monotonic()
            await client.get(NAMESPACES, "default")
            assert time.monotonic() - started >= 0.25  # a lower bound: never flaky
            proxy.latency = 0.0
            assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
    assert proxy.received > 0
