"""``retry_on_conflict``: run a read-modify-write again when the write lost a race.

client-go's ``retry.RetryOnConflict``: optimistic concurrency means a write
computed from a stale read is refused (409 Conflict, or whatever the caller
counts as "changed under me"); the remedy is to read again and recompute,
not to wait. ``attempt`` is the whole read-modify-write, so each retry
starts from a fresh read.

Guarantees:
  * ``attempt`` runs at most ``attempts`` times; the first result it returns
    is returned;
  * an error that ``retriable`` refuses propagates at once, unchanged;
  * after the last attempt the last retriable error propagates unchanged (a
    caller sees the real 409, not a wrapper).

Caveats: there is no delay between attempts. A conflict says the read was
stale, not that the server is overloaded (a 429 or 5xx is the client's
:class:`~reconcilekit.RetryPolicy`'s business), and the fresh read in the
next attempt is the wait client-go's 10 ms steps stand for.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

__all__ = ["is_conflict", "retry_on_conflict"]

T = TypeVar("T")

DEFAULT_ATTEMPTS: Final = 5  # client-go's retry.DefaultRetry has 5 steps


def http_status(err: BaseException) -> int | None:
    """The HTTP status a client error carries in an ``int`` attribute ``status``.

    reconcilekit's errors carry it, as do kubernetes-asyncio's ``ApiException``
    and aiohttp's ``ClientResponseError``; anything else has none.
    """
    status = getattr(err, "status", None)
    return status if isinstance(status, int) else None


def is_conflict(err: BaseException) -> bool:
    """Whether ``err`` is a 409 Conflict (the default of :func:`retry_on_conflict`)."""
    return http_status(err) == 409


async def retry_on_conflict(attempt: Callable[[], Awaitable[T]], *,
                            attempts: int = DEFAULT_ATTEMPTS,
                            retriable: Callable[[BaseException], bool] = is_conflict) -> T:
    """Return ``await attempt()``, calling it again while it raises a retriable error.

    ``attempt`` must read what it writes from (a GET, not the cache's copy,
    unless a conflict is what refreshes the cache), so that each call
    computes its write anew. ``retriable`` says which errors mean "the
    object changed since the read" (409 Conflict by default; the finalizer
    helpers add 404 and 422 for a failed JSON patch ``test``).

    Raises ValueError if ``attempts`` is below 1.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be >= 1, got {attempts}")
    for remaining in range(attempts - 1, -1, -1):
        try:
            return await attempt()
        except Exception as err:
            if not remaining or not retriable(err):
                raise
    raise AssertionError("unreachable")  # the last attempt returns or raises
