"""ResourceVersion expectations: "the cache is stale until it has seen my write"."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

from cachetools import TTLCache

from .._foundations.clock import Clock, SystemClock
from .expectations import DEFAULT_TIMEOUT, ExpectationMetrics, TimedRecords

__all__ = ["ResourceVersionExpectations"]

K = TypeVar("K", bound=Hashable)

_SYSTEM_CLOCK: Final = SystemClock()


def _parse(resource_version: str) -> int | None:
    """The resourceVersion as an integer, or None if it is not a plain decimal number."""
    if resource_version.isascii() and resource_version.isdigit():
        return int(resource_version)
    return None


class _Wanted:
    __slots__ = ("deadline", "resource_version", "started", "version")

    def __init__(self, resource_version: str, version: int | None, now: float, timeout: float):
        self.resource_version = resource_version
        self.version = version
        self.started = now
        self.deadline = now + timeout

    def __repr__(self) -> str:
        return f"<resourceVersion {self.resource_version!r} or newer>"


class ResourceVersionExpectations(Generic[K]):
    """Per object: "the cache is stale until it has seen this object at resourceVersion R or newer".

    Expected flow:

    1. A reconciler writes object X (update, patch, status, create) and gets
       back the object with ``metadata.resourceVersion`` R. It calls
       ``expect(X, R)``. ``X`` is any hashable naming the object, for
       example ``(resource, "namespace/name")``.
    2. The cache calls ``observed(X, rv)`` for every event it applies to X
       (added, modified, deleted, and objects seen by a relist).
    3. Before trusting the cached X (or anything derived from it), the
       reconciler checks ``satisfied(X)``; if False it returns
       ``Result.requeue_after(time_until_expiry(X))`` or waits for the event
       that satisfies it, which enqueues the key anyway.

    Guarantees:
      * ``satisfied(X)`` is False from ``expect(X, R)`` until the cache has
        observed X at a resourceVersion ``>= R`` (compared as integers), or
        until ``timeout`` seconds (default 300) have passed; then it is True.
        A timed-out expectation is removed, logged once at WARNING on the
        ``reconcilekit.expectations`` logger with the key and its age, and
        counted once with ``metrics.on_timeout()``.
      * An observation that arrived *before* ``expect`` (the watch can be
        faster than the write's response) still counts: the newest version
        observed for each object in the last ``timeout`` seconds is kept.
      * A newer ``expect`` for the same object raises the wanted version
        (never lowers it) and restarts the timeout.
      * ``satisfied`` is True for an object nothing was expected of.

    Assumptions: resourceVersions are etcd revisions rendered as decimal
    integers, which every Kubernetes API server does, although the API calls
    them opaque. One event loop.

    Caveats:
      * If either R or an observed version is not a plain decimal integer,
        versions cannot be ordered: such an expectation is satisfied by the
        next observation of X *after* ``expect``, whatever its version, and
        an earlier observation does not count.
      * Memory: besides pending expectations, one small entry per object
        observed within the last ``timeout`` seconds (at most one per object
        in the cache).
      * Timeouts are noticed lazily, by the next call of any method.
    """

    __slots__ = ("_records", "_seen")

    def __init__(
        self,
        *,
        name: str = "",
        timeout: float = DEFAULT_TIMEOUT,
        clock: Clock = _SYSTEM_CLOCK,
        metrics: ExpectationMetrics | None = None,
    ) -> None:
        self._records: TimedRecords[K, _Wanted] = TimedRecords(
            what="resourceVersion expectation",
            name=name,
            timeout=timeout,
            clock=clock,
            metrics=metrics,
        )
        # Newest version observed recently per object (None: not an integer).
        # Silent expiry is what is wanted here, so TTLCache fits.
        self._seen: TTLCache[K, int | None] = TTLCache(
            maxsize=math.inf, ttl=timeout, timer=clock.monotonic
        )

    def expect(self, key: K, resource_version: str) -> None:
        """Wait for the cache to observe ``key`` at ``resource_version`` or newer."""
        now = self._records.expire()
        records = self._records.records
        version = _parse(resource_version)
        previous = records.pop(key, None)
        if previous is not None:
            if version is None or previous.version is None:
                version = None
            elif previous.version > version:
                version, resource_version = previous.version, previous.resource_version
        if version is not None:
            seen = self._seen.get(key)
            if seen is not None and seen >= version:
                return
        records[key] = _Wanted(resource_version, version, now, self._records.timeout)

    def observed(self, key: K, resource_version: str) -> None:
        """The cache has applied an event for ``key`` at ``resource_version``."""
        self._records.expire()
        version = _parse(resource_version)
        seen = self._seen.get(key)
        if version is None or seen is None or version > seen:
            self._seen[key] = version
        else:
            self._seen[key] = seen  # keep the newer one, refresh its lifetime
        records = self._records.records
        wanted = records.get(key)
        if wanted is not None and (
            version is None or wanted.version is None or version >= wanted.version
        ):
            del records[key]

    def waiting(self, key: K) -> bool:
        """Whether an expectation for ``key`` is recorded (timed out or not): a dict lookup.

        For a cache that observes only what something waits for, and so keeps
        no entry per object it holds: it must then, before each ``expect``,
        report the version it holds with ``observed``, or the guarantee that an
        observation before ``expect`` counts is lost."""
        return key in self._records.records

    def satisfied(self, key: K) -> bool:
        """True unless an expectation for ``key`` is still waiting (and not timed out)."""
        return not self._records.pending(key)

    def time_until_expiry(self, key: K) -> float | None:
        """Seconds until ``key``'s expectation times out, or None if it is satisfied."""
        return self._records.time_until_expiry(key)

    def delete(self, key: K) -> None:
        """Forget ``key`` (the object is gone and nothing waits for it). Not logged."""
        self._records.forget(key)
        self._seen.pop(key, None)

    def forget_where(self, which: Callable[[K], bool]) -> int:
        """Forget every key ``which`` selects (nothing can observe them any more: the
        cache stopped watching their resource); how many were waited for. Not logged."""
        keys = [key for key in self._records.records if which(key)]
        for key in keys:
            self._records.forget(key)
        for key in [key for key in self._seen if which(key)]:
            self._seen.pop(key, None)
        return len(keys)

    def __len__(self) -> int:
        """Objects with a pending expectation (expired ones included until the next call)."""
        return len(self._records.records)

    def __repr__(self) -> str:
        return f"<ResourceVersionExpectations {self._records.name!r} keys={len(self)}>"

    def _check_invariants(self) -> None:
        self._records._check_invariants()
