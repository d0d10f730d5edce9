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


async def stop_tls_site(runner: web.AppRunner, server: asyncio.AbstractServer | None) -> None:
    """Stop an aiohttp TLS site: ``runner``'s cleanup, then :func:`abort_handshakes` of its
    ``server``, waiting for the aborted connections to close."""
    await runner.cleanup()
    if abort_handshakes(server):
        await anyio.lowlevel.checkpoint()  # the cancelled handshakes close
