"""Parking tasks until there is something to look at or a deadline passes, with no helper task."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

import anyio

from .._foundations.clock import Clock

__all__ = ["ParkingLot"]


class _Waiter:
    """One parked task; ``wake()`` sets its Event or cancels its sleep."""

    __slots__ = ("_wake", "until", "woken")

    def __init__(self, wake: Callable[[], object], until: float | None) -> None:
        self._wake = wake
        self.until = until
        self.woken = False

    def wake(self) -> bool:
        """Wake the task; True the first time (a wake its lot has not counted yet)."""
        if self.woken:
            return False
        self.woken = True
        self._wake()
        return True


class ParkingLot:
    """Tasks waiting for something to become ready, or for the earliest deadline of a waiting item.

    Callers wait with ``await lot.wait_until(ready)``; producers call
    :meth:`wake_one` when one thing became ready, :meth:`deadline_moved` when
    ``deadline()`` became earlier, :meth:`wake_all` when everyone must look.

    The deadline duty: at most one parked task, the *timekeeper*, sleeps on
    the clock until ``deadline()``; every other parked task waits on an Event
    (the cheapest thing to wake) in FIFO order. There is no timer task: the
    duty is always held by a parked task or handed to one.

    Invariant (whenever no method runs): if ``deadline()`` is not None and a
    task waits on an Event, then a timekeeper sleeps until at most that
    deadline, or a woken task has yet to look again (it will take the duty
    when it parks, or hand it on when it leaves). Each way the duty can be
    vacated keeps it:

      * an earlier deadline wakes the timekeeper (it parks again until the
        new one), or, with no timekeeper, wakes one task to become it;
      * a timekeeper that leaves ``wait_until`` (its deadline came and it took
        what became ready, or it was woken for something else, or it was
        cancelled) hands the duty to the next waiting task on the way out;
      * a task woken for something ready and then cancelled passes the wake on.

    So a deadline is never slept through while anyone waits, whatever is
    cancelled, woken or re-parked in between; and ``wake_one`` prefers Event
    waiters, so the timekeeper is disturbed only when nobody else waits.
    """

    __slots__ = ("_clock", "_deadline", "_keeper", "_lot", "_woken")

    def __init__(self, clock: Clock, deadline: Callable[[], float | None]) -> None:
        """``deadline()`` returns the earliest deadline anyone waits for, or None."""
        self._clock = clock
        self._deadline = deadline
        self._lot: deque[_Waiter] = deque()
        self._keeper: _Waiter | None = None
        self._woken = 0  # tasks woken that have not looked again yet

    def __len__(self) -> int:
        """How many tasks are parked and not yet woken."""
        keeper = self._keeper
        return len(self._lot) + (keeper is not None and not keeper.woken)

    async def wait_until(self, ready: Callable[[], bool]) -> None:
        """Park until ``ready()`` returns True (checked first, then after every wake).

        Exceptions from ``ready`` (a shutdown, say) propagate; the duty and
        any wake this task received are handed on however it leaves.
        """
        try:
            while not ready():
                deadline = self._deadline()
                await self._park(None if self._keeper is not None else deadline)
        finally:
            if self._keeper is None and self._lot and self._deadline() is not None:
                self._wake(self._lot.popleft())

    def wake_one(self) -> None:
        """One thing became ready: wake one Event waiter, or else the timekeeper."""
        if self._lot:
            self._wake(self._lot.popleft())
        elif self._keeper is not None:
            self._wake(self._keeper)

    def deadline_moved(self, deadline: float) -> None:
        """``deadline()`` is now ``deadline``, earlier than before: someone must sleep until it."""
        keeper = self._keeper
        if keeper is not None:
            if keeper.until is not None and keeper.until > deadline:
                self._wake(keeper)
        elif self._lot:
            self._wake(self._lot.popleft())

    def wake_all(self) -> None:
        while self._lot:
            self._wake(self._lot.popleft())
        if self._keeper is not None:
            self._wake(self._keeper)

    def _wake(self, waiter: _Waiter) -> None:
        if waiter.wake():
            self._woken += 1  # until it looks again (_leave)

    async def _park(self, deadline: float | None) -> None:
        """Wait on an Event (no deadline) or, as the timekeeper, on the clock until ``deadline``."""
        if deadline is None:
            event = anyio.Event()
            waiter = _Waiter(event.set, None)
            self._lot.append(waiter)
        else:
            scope = anyio.CancelScope()
            waiter = self._keeper = _Waiter(scope.cancel, deadline)
        try:
            if deadline is None:
                await event.wait()
            else:
                with scope:
                    await self._clock.sleep(deadline - self._clock.monotonic())
        except BaseException:
            self._leave(waiter)
            if waiter.woken:
                self.wake_one()  # a wake for "someone should look" is not lost with us
            raise
        self._leave(waiter)

    def _leave(self, waiter: _Waiter) -> None:
        if waiter is self._keeper:
            self._keeper = None
        elif not waiter.woken:
            self._lot.remove(waiter)
        if waiter.woken:
            self._woken -= 1

    def _check_invariants(self) -> None:
        for waiter in self._lot:
            assert not waiter.woken, "a woken task is still listed as waiting"
            assert waiter.until is None, "an Event waiter with a deadline"
        assert self._woken >= 0, self._woken
        deadline = self._deadline()
        if deadline is not None and self._lot and not self._woken:
            keeper = self._keeper
            assert keeper is not None, f"tasks wait while nobody sleeps until {deadline}"
            assert keeper.until is not None and keeper.until <= deadline, (keeper.until, deadline)
