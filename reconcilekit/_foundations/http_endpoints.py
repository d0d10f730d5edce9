"""The manager's HTTP endpoints: ``/metrics``, ``/healthz``, ``/readyz``."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import anyio.abc
from aiohttp import web
from prometheus_client import CollectorRegistry
from prometheus_client.aiohttp import make_aiohttp_handler

__all__ = ["EndpointsError", "serve_endpoints", "split_address"]

logger = logging.getLogger("reconcilekit.manager")


class EndpointsError(OSError):
    """The metrics and health endpoints cannot be served (the address is taken, say).

    Its message names the address and the reason in one line, for a CLI to print.
    """

    def __init__(self, message: str, *, errno: int | None = None) -> None:
        """``message`` is the whole of ``str(error)``; ``errno`` the failure's
        :attr:`errno` (None when it had none)."""
        super().__init__(message)
        self.errno = errno


def split_address(address: str) -> tuple[str, int]:
    """``"host:port"`` or ``":port"`` (all interfaces); ValueError naming the problem."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"HTTP address {address!r} is not host:port (e.g. ':8080')")
    return host.strip("[]") or "0.0.0.0", int(port)


async def serve_endpoints(address: str, registry: CollectorRegistry,
                          ready: Callable[[], tuple[bool, str]],
                          on_port: Callable[[int], None], *,
                          detail: Callable[[], list[str]] | None = None,
                          task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                          ) -> None:
    """Serve until cancelled. ``ready()`` answers (ready, reason) for ``/readyz``;
    ``/readyz?verbose`` adds ``detail()``'s lines (one per check, kube-apiserver's
    ``[+]name ok`` form) before the verdict."""
    host, port = split_address(address)

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(request: web.Request) -> web.Response:
        ok, reason = ready()
        status = 200 if ok else 503
        if "verbose" not in request.query:
            return web.Response(text="ok" if ok else reason, status=status)
        lines = ["[+]ready ok" if ok else f"[-]ready failed: {reason}",
                 *(detail() if detail is not None else ())]
        verdict = "readyz check passed" if ok else "readyz check failed"
        return web.Response(text="\n".join([*lines, verdict, ""]), status=status)

    app = web.Application()
    metrics: Any = make_aiohttp_handler(registry)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, reuse_address=True)
        try:
            await site.start()
        except OSError as err:
            reason = os.strerror(err.errno).lower() if err.errno else str(err)
            raise EndpointsError(f"cannot serve /metrics, /healthz and /readyz on "
                                 f"{address}: {reason}", errno=err.errno) from None
        sockets: Any = getattr(site._server, "sockets", None) or ()
        bound = int(sockets[0].getsockname()[1]) if sockets else port
        shown = f"[{host}]" if ":" in host else host
        logger.info("serving /metrics, /healthz and /readyz on http://%s:%d", shown, bound)
        on_port(bound)
        task_status.started()
        await anyio.sleep_forever()
    finally:
        with anyio.CancelScope(shield=True):
            await runner.cleanup()
