"""Exponential backoff with jitter that forgets after a quiet period.

What a watcher waits between failed lists and watches: as client-go's
reflector, 0.8 s doubling to 30 s, reset after 2 minutes without failure.
Time comes from the injected clock.
"""

from __future__ import annotations

import random
from typing import Final

from .._foundations.clock import Clock, SystemClock

__all__ = ["Backoff"]

_SYSTEM_CLOCK: Final = SystemClock()


class Backoff:
    """Exponential backoff with jitter that resets after a quiet period.

    ``next_delay()`` doubles from ``initial`` up to ``cap`` and adds up to
    ``jitter`` (a fraction) on top; if ``reset_after`` seconds passed since
    the previous failure, it starts from ``initial`` again.
    """

    def __init__(self, *, initial: float = 0.8, cap: float = 30.0, reset_after: float = 120.0,
                 jitter: float = 1.0, clock: Clock = _SYSTEM_CLOCK) -> None:
        self.initial, self.cap, self.reset_after, self.jitter = initial, cap, reset_after, jitter
        self._clock = clock
        self._current = 0.0
        self._last_failure: float | None = None

    def next_delay(self) -> float:
        now = self._clock.monotonic()
        if self._last_failure is None or now - self._last_failure >= self.reset_after:
            self._current = self.initial
        else:
            self._current = min(self.cap, self._current * 2)
        self._last_failure = now
        return self._current * (1 + random.random() * self.jitter)
