"""Connections a TLS server accepted and is still shaking hands with, closed at shutdown.

asyncio's server (Python 3.11) forgets a connection between accepting it and
the end of its TLS handshake: closing the server, and aiohttp's shutdown of
its request handlers, leave such a connection open, parked in a task that
waits for the client's next handshake bytes. When the event loop then
closes, the socket is only found by the garbage collector, which reports it
as unclosed at some later moment. An API server that dials the webhook just
as the webhook server stops leaves exactly that behind. Python 3.12's
``Server.close_clients()`` closes them; before it, the accepting tasks are
cancelled, which makes asyncio abort their transports.

A connection past its handshake has the opposite problem: aiohttp's
shutdown closes it the TLS way, sending close_notify and keeping the socket
until the peer answers with its own, for up to asyncio's 30 s
``ssl_shutdown_timeout``. A peer that has given up on the connection (an API
server whose call to a hung webhook timed out) never answers, and the socket
outlives the event loop just the same. Once the site has stopped, every
connection it still had is aborted.
"""

from __future__ import annotations

import asyncio

import anyio.lowlevel
from aiohttp import web

__all__ = ["abort_handshakes", "stop_tls_site"]


def abort_handshakes(server: asyncio.AbstractServer | None) -> int:
    """Close every connection ``server`` accepted that has not finished its TLS handshake.

    Returns how many were aborted (on Python 3.12 and later, every client connection
    still open is closed instead, and 0 is returned). Call it after the server stopped
    accepting; connections already handed to the application are not touched.
    """
    if server is None:
        return 0
    close_clients = getattr(server, "close_clients", None)
    if close_clients is not None:  # Python 3.12+
        close_clients()
        return 0
    aborted = 0
    for task in asyncio.all_tasks():
        coro = task.get_coro()
        frame = getattr(coro, "cr_frame", None)
        if (getattr(coro, "__qualname__", "").endswith("._accept_connection2")
                and frame is not None and frame.f_locals.get("server") is server):
            task.cancel()  # asyncio closes the transport of a cancelled handshake
            aborted += 1
    return aborted


async def stop_tls_site(runner: web.BaseRunner, server: asyncio.AbstractServer | None) -> None:
    """Stop an aiohttp TLS site: ``runner``'s cleanup (handlers given its shutdown timeout),
    then abort every connection it had and :func:`abort_handshakes` of its ``server``.

    Guarantee: when this returns, no socket the site accepted is left open, whatever
    the peers do (a TLS close that waits for the peer's answer is cut short)."""
    http = runner.server
    transports = [] if http is None else [
        handler.transport for handler in http.connections if handler.transport is not None]
    await runner.cleanup()
    for transport in transports:
        transport.abort()  # a no-op for one already closed
    if abort_handshakes(server) or transports:
        await anyio.lowlevel.checkpoint()  # the aborted transports close
