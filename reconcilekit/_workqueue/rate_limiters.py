"""How long a failing key waits before its next attempt.

The limiters and their defaults are client-go's
(``k8s.io/client-go/util/workqueue/default_rate_limiters.go``), with delays in
seconds as floats. A limiter is consulted by
:meth:`reconcilekit.workqueue.WorkQueue.add_rate_limited`; :meth:`~RateLimiter.forget`
is called when a key succeeds.

None of them is safe to share between threads; all of them are safe to share
between tasks of one event loop (no method awaits).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, Generic, Protocol, TypeVar

from .._foundations.clock import Clock, SystemClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "default_controller_rate_limiter",
]

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)

_SYSTEM_CLOCK: Final = SystemClock()
# 2.0 ** 1023 is the largest power of two a float holds; past it the delay
# is the cap whatever the base.
_MAX_EXPONENT: Final = 1023


class RateLimiter(Protocol[K_contra]):
    """Decides how long an item waits before it is retried.

    ``when(item)`` records one more failure of ``item`` and returns the delay
    in seconds before its next attempt. ``forget(item)`` clears what the
    limiter knows about ``item`` (call it when the item succeeded).
    ``num_requeues(item)`` is the number of failures recorded since the last
    ``forget``.
    """

    def when(self, item: K_contra) -> float: ...

    def forget(self, item: K_contra) -> None: ...

    def num_requeues(self, item: K_contra) -> int: ...


class ItemExponentialFailureRateLimiter:
    """Per item, ``base_delay * 2 ** failures``, capped at ``max_delay``.

    The first failure waits ``base_delay`` (default 5 ms), then 10 ms, 20 ms,
    ... up to ``max_delay`` (default 1000 s, reached after 18 failures). The
    exponent never overflows: past 2**1023 the delay is simply the cap.
    Failures are remembered per item until :meth:`forget`; an item that is
    never forgotten keeps its entry.
    """

    __slots__ = ("_failures", "base_delay", "max_delay")

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("delays must be >= 0")
        self.base_delay = float(base_delay)
        self.max_delay = float(max_delay)
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exponent = self._failures.get(item, 0)
        self._failures[item] = exponent + 1
        if exponent > _MAX_EXPONENT:
            return self.max_delay
        return min(self.base_delay * 2.0**exponent, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def __repr__(self) -> str:
        return f"ItemExponentialFailureRateLimiter({self.base_delay!r}, {self.max_delay!r})"


class BucketRateLimiter:
    """One token bucket for all items: ``qps`` tokens a second, at most ``burst`` saved.

    ``when`` reserves a token and returns how long until that token exists,
    like ``golang.org/x/time/rate``'s ``Reserve().Delay()``: the bucket starts
    full, so the first ``burst`` calls return 0, and later calls are spaced
    ``1 / qps`` apart. A reservation is never given back: every call to
    ``when`` consumes a token, whether or not the item is then retried.
    Defaults: 10 qps, burst 100 (client-go's overall retry limit).
    It keeps no per-item state: ``forget`` does nothing, ``num_requeues`` is 0.
    """

    __slots__ = ("_clock", "_last", "_tokens", "burst", "qps")

    def __init__(
        self, qps: float = 10.0, burst: int = 100, *, clock: Clock = _SYSTEM_CLOCK
    ) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be > 0, not {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, not {burst!r}")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def when(self, item: Hashable) -> float:
        now = self._clock.monotonic()
        tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps) - 1.0
        self._last = now
        self._tokens = tokens
        return 0.0 if tokens >= 0 else -tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0

    def __repr__(self) -> str:
        return f"BucketRateLimiter(qps={self.qps!r}, burst={self.burst!r})"


class ItemFastSlowRateLimiter:
    """Per item: ``fast_delay`` for the first ``max_fast_attempts`` failures, then ``slow_delay``.

    client-go's ``ItemFastSlowRateLimiter``; failures are remembered until :meth:`forget`.
    """

    __slots__ = ("_failures", "fast_delay", "max_fast_attempts", "slow_delay")

    def __init__(self, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        if fast_delay < 0 or slow_delay < 0:
            raise ValueError("delays must be >= 0")
        self.fast_delay = float(fast_delay)
        self.slow_delay = float(slow_delay)
        self.max_fast_attempts = max_fast_attempts
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        failures = self._failures.get(item, 0) + 1
        self._failures[item] = failures
        return self.fast_delay if failures <= self.max_fast_attempts else self.slow_delay

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)

    def __repr__(self) -> str:
        return (
            f"ItemFastSlowRateLimiter({self.fast_delay!r}, {self.slow_delay!r}, "
            f"{self.max_fast_attempts!r})"
        )


class MaxOfRateLimiter(Generic[K]):
    """Asks every limiter and returns the longest delay.

    Every limiter's ``when`` is called each time (so each records the
    failure and a bucket spends a token). ``num_requeues`` is the largest
    count any limiter reports; ``forget`` forgets in all of them.
    """

    __slots__ = ("limiters",)

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters: tuple[RateLimiter[K], ...] = limiters

    def when(self, item: K) -> float:
        return max([limiter.when(item) for limiter in self.limiters])

    def forget(self, item: K) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)

    def __repr__(self) -> str:
        return f"MaxOfRateLimiter{self.limiters!r}"


def default_controller_rate_limiter(*, clock: Clock = _SYSTEM_CLOCK) -> MaxOfRateLimiter[Hashable]:
    """client-go's ``DefaultControllerRateLimiter``.

    Per item exponential backoff from 5 ms to 1000 s, under an overall token
    bucket of 10 retries a second with a burst of 100.
    """
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock=clock),
    )
