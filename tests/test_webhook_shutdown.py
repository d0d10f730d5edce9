"""A webhook server that stops closes every connection it accepted, handshake or not.

An API server may dial the webhook just as it stops: a connection accepted and
still in its TLS handshake must be closed then, not left open for the garbage
collector to find (and report as unclosed) after the event loop is gone.
"""

from __future__ import annotations

import asyncio

import anyio

from reconcilekit.webhook import WebhookServer


async def test_connections_still_in_their_tls_handshake_are_closed_when_it_stops() -> None:
    server = WebhookServer(host="127.0.0.1", port=0)
    connections: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        for _ in range(3):  # TCP connected, never a ClientHello
            connections.append(await asyncio.open_connection("127.0.0.1", server.port))
        tg.cancel_scope.cancel()
    try:
        for reader, _ in connections:
            with anyio.fail_after(10):  # an open connection would block here
                assert await reader.read() == b""  # the server closed it
    finally:
        for _, writer in connections:
            writer.close()
            await writer.wait_closed()
