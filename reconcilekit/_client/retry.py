"""When :class:`reconcilekit.Client` retries a failed request, and how long it waits.

The policy, verb by verb (``GET`` covers get, list and get_status; writes are
create, update, patch, delete and their status and collection forms):

=====================================  ===============  ===============
outcome                                GET              write
=====================================  ===============  ===============
429 TooManyRequests                    retried          retried
5xx (500, 502, 503, 504, ...)          retried          raised
connection refused (never sent)        retried          retried
reset, cut short or timed out          retried          raised
any other error (4xx)                  raised           raised
=====================================  ===============  ===============

The wait is the server's ``Retry-After`` when it sent one (header, else
``details.retryAfterSeconds``), otherwise exponential backoff
(``initial_delay * multiplier**n``, capped at ``max_delay``); either is then
stretched by a random fraction up to ``jitter`` so that many clients throttled
together do not come back together. A ``Retry-After`` longer than
``max_retry_after`` is not waited for: the error is raised at once, carrying
``retry_after``, so that the caller (a work queue) can requeue instead of
holding a worker.

How this compares with client-go (k8s.io/client-go/rest ``request.go`` and
``with_retry.go``): client-go retries any verb up to 10 times when a 429 *or
any 5xx* carries a ``Retry-After`` header (``checkWait``), waiting exactly that
long, and retries a ``GET`` after a reset connection or unexpected EOF
(``isErrRetryableFunc``, as if ``Retry-After: 1``); it never retries a 5xx
without ``Retry-After``. reconcilekit differs on purpose in three places:

* a write is not retried on a 5xx even with ``Retry-After``: 504 Timeout
  means "may still be processing the request", and replaying a create (with
  ``generateName``: a duplicate object) or a JSON patch that appends is not
  safe. A 429 is different: kube-apiserver sends it from its max-in-flight
  and priority-and-fairness filters, and while shutting down, all before the
  request reaches storage. A controller's work queue retries the whole
  reconcile anyway, after reading the object again;
* a ``GET`` is also retried on a 5xx without ``Retry-After`` (etcd leader
  changes and apiserver rollouts answer 500/503 for a moment; a read is
  always safe to repeat);
* a connection that could not be opened at all (refused, DNS) is retried for
  every verb, since the request never left; TLS failures are not retried.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._foundations.errors import APIConnectionError, APIError, ServerError, TooManyRequests

__all__ = ["RetryPolicy"]

_SAFE_METHODS = frozenset({"GET", "HEAD"})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries with exponential backoff and jitter (see the module docstring).

    ``max_retries`` is the number of retries after the first attempt, so a
    request is sent at most ``max_retries + 1`` times. ``RetryPolicy(max_retries=0)``
    turns retries off.
    """

    max_retries: int = 5
    initial_delay: float = 0.2
    max_delay: float = 10.0
    multiplier: float = 2.0
    jitter: float = 0.2
    max_retry_after: float = 60.0

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.initial_delay < 0 or self.max_delay < 0 or self.max_retry_after < 0:
            raise ValueError("RetryPolicy delays must be >= 0")
        if self.multiplier < 1:
            raise ValueError(f"multiplier must be >= 1, got {self.multiplier}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be within [0, 1], got {self.jitter}")

    def backoff(self, retry: int) -> float:
        """The delay before retry number ``retry`` (0-based), before jitter."""
        return min(self.max_delay, self.initial_delay * self.multiplier ** retry)

    def delay(self, method: str, error: Exception, retry: int, rand: float) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based) after ``error``, or None.

        ``method`` is the HTTP method of the failed request; ``rand`` is a
        uniform random number in ``[0, 1)`` that scales the jitter. None means
        the error is final: not retryable, retries exhausted, or a
        ``Retry-After`` longer than ``max_retry_after``.
        """
        if retry >= self.max_retries:
            return None
        safe = method.upper() in _SAFE_METHODS
        if isinstance(error, TooManyRequests) or (safe and isinstance(error, ServerError)):
            assert isinstance(error, APIError)
            if error.retry_after is not None:
                if error.retry_after > self.max_retry_after:
                    return None
                base = error.retry_after
            else:
                base = self.backoff(retry)
        elif isinstance(error, APIConnectionError) and (safe or not error.sent):
            base = self.backoff(retry)
        else:
            return None
        return base * (1.0 + self.jitter * rand)
