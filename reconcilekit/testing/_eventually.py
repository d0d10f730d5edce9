"""``eventually``: wait for something that happens over I/O, with a bound."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

__all__ = ["eventually"]


async def eventually(condition: Callable[[], Any | Awaitable[Any]], *, within: float = 10.0,
                     interval: float = 0.005, what: str | None = None) -> Any:
    """Poll ``condition`` until it returns something truthy, and return that.

    ``condition`` may be a plain function or return an awaitable. After
    ``within`` seconds of real time it fails with an AssertionError naming
    ``what`` and the last value seen. This is for waiting on work that
    happens over the network (an informer catching up, a controller
    converging); timeouts of the code under test should run on a
    :class:`FakeClock` instead, never on this.
    """
    last: Any = None
    with anyio.move_on_after(within):
        while True:
            last = condition()
            if inspect.isawaitable(last):
                last = await last
            if last:
                return last
            await anyio.sleep(interval)
    raise AssertionError(f"{what or 'condition'} did not hold within {within:g}s "
                         f"(last value: {last!r})")
