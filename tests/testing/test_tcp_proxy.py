"""``TCPProxy``: the faults it puts between a client and the API server.

A partition holds every byte both ways, for open and new connections, until it
heals; latency delays every chunk; both on either backend.
"""

from __future__ import annotations

import asyncio
import copy
import time

import anyio

from reconcilekit import Client
from reconcilekit.kinds import NAMESPACES
from reconcilekit.testing import Cluster, TCPProxy


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


async def test_latency_delays_each_chunk_once_not_until_the_one_before_is_through() -> None:
    """Two chunks sent 0.1 s apart each arrive ``latency`` (2 s) after they were sent.

    A proxy that read the next chunk only once it had forwarded the one
    before delayed the second chunk by nearly two latencies (3.9 s: it waited
    out the first chunk's delay unread, then its own), and every request
    that followed another on a connection by less than the latency paid
    twice. The bound, 1.5 latencies, leaves a second of slack on a loaded
    machine.
    """
    arrivals: list[float] = []
    got_both = anyio.Event()

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(1):
            arrivals.append(time.monotonic())
            if len(arrivals) == 2:
                got_both.set()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        async with TCPProxy(f"tcp://127.0.0.1:{port}", latency=2.0) as proxy:
            _, writer = await asyncio.open_connection("127.0.0.1", int(proxy.url.rsplit(":")[-1]))
            sent = []
            for _ in range(2):
                sent.append(time.monotonic())
                writer.write(b"x")
                await writer.drain()
                await anyio.sleep(0.1)
            with anyio.fail_after(30):
                await got_both.wait()
            writer.close()
            await writer.wait_closed()
    finally:
        server.close()
        await server.wait_closed()
    delays = [got - put for put, got in zip(sent, arrivals, strict=True)]
    assert all(delay >= 2.0 for delay in delays), delays
    assert delays[1] < 3.0, delays
