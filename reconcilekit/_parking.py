"""Parking tasks until they are woken or a deadline passes, without helper tasks."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import anyio

from ._clock import Clock

__all__ = ["Waiter", "park"]


class Waiter:
    """A task parked by :func:`park`; ``wake()`` sets its Event or cancels its sleep."""

    __slots__ = ("_wake", "woken")

    def __init__(self, wake: Callable[[], object]) -> None:
        self._wake = wake
        self.woken = False

    def wake(self) -> None:
        self.woken = True
        self._wake()


async def park(lot: deque[Waiter], clock: Clock, deadline: float | None) -> None:
    """Wait in ``lot`` (FIFO) until a waker calls ``lot.popleft().wake()``, or until ``deadline``.

    Returns when woken or when ``clock.monotonic()`` reaches ``deadline``
    (``None``: no deadline); the caller then looks again at what it waits
    for. Wakers take the waiter off ``lot`` before waking it; a wait that
    ends any other way (deadline, cancellation) takes its own waiter off.

    Without a deadline the waiter is an :class:`anyio.Event`, the cheapest
    thing to wake. With one, it is a cancel scope around ``clock.sleep``:
    the only way to race a wake against the injected clock without a task.

    Cancellation: if the caller is cancelled after it was woken, the wake is
    passed on to the next waiter, so that a wake meant for "someone should
    look" is never lost with the cancelled task.
    """
    if deadline is None:
        event = anyio.Event()
        waiter = Waiter(event.set)
    else:
        scope = anyio.CancelScope()
        waiter = Waiter(scope.cancel)
    lot.append(waiter)
    try:
        if deadline is None:
            await event.wait()
        else:
            with scope:
                await clock.sleep(deadline - clock.monotonic())
    except BaseException:
        if not waiter.woken:
            lot.remove(waiter)
        elif lot:
            lot.popleft().wake()
        raise
    if not waiter.woken:
        lot.remove(waiter)
