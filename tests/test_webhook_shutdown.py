"""A webhook server that stops closes every connection it accepted, handshake or not.

An API server may dial the webhook just as it stops: a connection accepted and
still in its TLS handshake must be closed then, not left open for the garbage
collector to find (and report as unclosed) after the event loop is gone. So
must one whose peer gave up on a hung call and never answers the TLS close.
"""

from __future__ import annotations

import asyncio
import ssl

import anyio
from aiohttp import web

from reconcilekit.webhook import ServingCertificate, WebhookServer
from reconcilekit.webhook._tls_handshakes import stop_tls_site


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


async def test_a_peer_that_never_answers_the_tls_close_is_cut_off_when_it_stops() -> None:
    """A client completes its handshake, sends a request whose handler hangs, then reads
    nothing more (as a caller whose timeout fired): the site's stop must close the socket,
    not wait for the client's close_notify."""
    certificate = ServingCertificate.generate(("127.0.0.1",))
    called = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        called.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    app = web.Application()
    app.router.add_post("/hang", hang)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=certificate.server_context())
    await site.start()
    server = site._server
    assert server is not None
    port = server.sockets[0].getsockname()[1]
    # TLS by hand over a plain socket, so that the client can go silent at will
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = certificate.client_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    try:
        with anyio.fail_after(10):
            while True:
                try:
                    tls.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    writer.write(outgoing.read())
                    await writer.drain()
                    data = await reader.read(65536)
                    assert data, "the server closed the connection during the handshake"
                    incoming.write(data)
            tls.write(b"POST /hang HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n")
            writer.write(outgoing.read())
            await writer.drain()
            await called.wait()
        await stop_tls_site(runner, server)
        with anyio.fail_after(10):  # asyncio's TLS close would wait 30 s for our answer
            while await reader.read(65536):
                pass  # the server's close_notify, then the end of the stream
    finally:
        writer.close()
