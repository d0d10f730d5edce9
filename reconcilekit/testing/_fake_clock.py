"""A clock that only moves when a test says so."""

from __future__ import annotations

import heapq
import itertools
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel

if TYPE_CHECKING:
    from .._client.client import Client

__all__ = ["FakeClock"]


class FakeClock:
    """A :class:`reconcilekit.Clock` whose time is advanced by hand.

    ``sleep(s)`` parks the caller until :meth:`advance` moves ``monotonic()``
    to or past its deadline; nothing ever waits on real time. ``sleep(0)``
    (or a negative delay) only yields to the event loop.

    Invariants:
      * ``monotonic()`` never decreases; ``time()`` moves with it.
      * every parked sleeper whose deadline is ``<= monotonic()`` is woken by
        the :meth:`advance` call that reached that deadline.
      * a cancelled sleeper leaves no entry behind that could be woken later.
    """

    def __init__(self, start: float = 0.0, *, wall_start: float = 1_700_000_000.0) -> None:
        self._now = float(start)
        self._wall_offset = wall_start - self._now
        self._sleepers: list[tuple[float, int, anyio.Event]] = []
        self._seq = itertools.count()

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now + self._wall_offset

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        event = anyio.Event()
        entry = (self._now + seconds, next(self._seq), event)
        heapq.heappush(self._sleepers, entry)
        try:
            await event.wait()
        finally:
            if not event.is_set():
                self._sleepers.remove(entry)
                heapq.heapify(self._sleepers)

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` and wake every sleeper now due.

        Woken sleepers run at the caller's next checkpoint; ``await
        anyio.sleep(0)`` (or :meth:`settle`) after ``advance`` lets them run.
        """
        if seconds < 0:
            raise ValueError(f"FakeClock cannot go backwards (advance({seconds!r}))")
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, event = heapq.heappop(self._sleepers)
            event.set()

    @property
    def sleepers(self) -> int:
        """How many tasks are parked in :meth:`sleep`."""
        return len(self._sleepers)

    def deadlines(self) -> list[float]:
        """The deadlines of every parked sleeper, earliest first."""
        return sorted(deadline for deadline, _, _ in self._sleepers)

    def next_deadline(self) -> float | None:
        """The earliest deadline of a parked sleeper, or None."""
        return self._sleepers[0][0] if self._sleepers else None

    async def settle(self, rounds: int = 10) -> None:
        """Yield to the event loop a few times so woken tasks get to run."""
        for _ in range(rounds):
            await anyio.lowlevel.checkpoint()

    async def until_parked(self, *clients: Client, turns: int = 3) -> None:
        """Wait until the tasks the last :meth:`advance` woke are parked on the clock again.

        For code whose every wait is a sleep on this clock or a request of one
        of ``clients`` (an elector, a shard ring, a controller's retries): it
        returns once none of the clients has a request in flight and the
        number of sleepers has held for ``turns`` turns of the event loop (10
        ms of real time each), so every woken task has run until it sleeps
        again. Then advancing the clock cannot run ahead of a request still
        waiting on a busy API server, which counting sleepers alone would (a
        request in flight looks like quiet). Watches are not requests in
        flight once their response has begun.
        """
        last, same = -1, 0
        while same < turns:
            await anyio.sleep(0.01)
            busy = any(client.statistics().in_flight for client in clients)
            same = same + 1 if self.sleepers == last and not busy else 0
            last = self.sleepers

    def __repr__(self) -> str:
        return f"FakeClock(monotonic={self._now!r}, sleepers={len(self._sleepers)})"
