"""What the cache tests share: a cache run until synced, and the timeout of a wait for its
sync on a fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from reconcilekit import Cache, CacheSyncTimeout
from reconcilekit.testing import FakeClock, eventually


@asynccontextmanager
async def running(cache: Cache, sync: float = 10.0) -> AsyncIterator[Cache]:
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(sync)
        yield cache
        tg.cancel_scope.cancel()


async def sync_timeout(cache: Cache, clock: FakeClock) -> CacheSyncTimeout:
    """What ``cache.wait_for_sync(30)`` raises once ``clock`` is moved 30 s on while it
    waits (``cache`` runs, with ``clock``, and does not sync)."""
    errors: list[CacheSyncTimeout] = []

    async def wait() -> None:
        try:
            await cache.wait_for_sync(30)
        except CacheSyncTimeout as err:
            errors.append(err)

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await eventually(lambda: 30.0 in clock.deadlines())
        clock.advance(30)
        await eventually(lambda: bool(errors))
    return errors[0]
