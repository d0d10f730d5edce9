"""The webhook server in a :class:`~reconcilekit.Manager`'s lifecycle.

:func:`serve_webhooks` runs the server, writes its configurations when it is
asked to (once it serves, so that the API server can call it at once), and
writes them again whenever the certificate's files change; the manager
starts it before its caches and controllers. :func:`unserve_webhooks` removes
the configurations on shutdown when asked, after the controllers stopped and
before the server does.
"""

from __future__ import annotations

import contextlib
import logging
from functools import partial

import anyio
import anyio.abc

from .._client.client import Client
from .._foundations.errors import APIError, describe_error
from ._install import WebhookSetupError, install_configurations, remove_configurations
from ._server import WebhookServer

__all__ = ["serve_webhooks", "unserve_webhooks"]

logger = logging.getLogger("reconcilekit.webhook")


async def serve_webhooks(client: Client, server: WebhookServer, *,
                         task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                         ) -> None:
    """Serve ``server`` until cancelled, keeping its configurations in step if asked."""
    send, receive = anyio.create_memory_object_stream[None](1)

    def certificate_changed() -> None:
        with contextlib.suppress(anyio.WouldBlock):  # a rewrite is already due
            send.send_nowait(None)

    async with anyio.create_task_group() as tg, send, receive:
        await tg.start(partial(server.run, on_certificate_change=certificate_changed))
        if server.install_configurations:
            await install_configurations(client, server)  # WebhookSetupError says why not
        task_status.started()
        async for _ in receive:
            if server.install_configurations:
                try:
                    await install_configurations(client, server)
                except WebhookSetupError as err:
                    logger.warning("webhook configurations not updated for the new "
                                   "certificate (the next change retries): %s", err)


async def unserve_webhooks(client: Client, server: WebhookServer) -> None:
    """Remove the configurations written at start, if the server was asked to."""
    if not (server.install_configurations and server.remove_configurations_on_exit):
        return
    try:
        await remove_configurations(client, server)
    except APIError as err:
        logger.warning("webhook configurations not removed: %s", describe_error(err))
