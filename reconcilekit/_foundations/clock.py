"""The clock every timed component of reconcilekit takes.

Timed components (queues, rate limiters, expectations, watchers, leader
election) never call :mod:`time` or :func:`anyio.sleep` directly: they take a
``clock`` argument so that tests can drive time with
:class:`reconcilekit.testing.FakeClock` instead of sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

import anyio

__all__ = ["Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """A source of time and a way to wait for it.

    ``monotonic()`` is for measuring intervals and deadlines; it never goes
    backwards. ``time()`` is wall-clock seconds since the epoch, for
    timestamps written to the API server (Lease renew times, Event times).
    ``sleep(seconds)`` returns once ``monotonic()`` has advanced by at least
    ``seconds``; it is a cancellation point like :func:`anyio.sleep`.
    """

    def monotonic(self) -> float: ...

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock: :func:`time.monotonic`, :func:`time.time`, :func:`anyio.sleep`."""

    __slots__ = ()

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(seconds, 0.0))

    def __repr__(self) -> str:
        return "SystemClock()"
