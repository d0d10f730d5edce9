"""The watcher: list, then watch, forever, without ever losing the truth.

Specification
-------------
Expected flow:

1. List the resource (paginated) and hand the complete list to the sink's
   ``replace`` with the list's resourceVersion: the sink converges to it.
2. Watch from that resourceVersion with bookmarks and a randomized
   ``timeoutSeconds`` (so watches of many controllers do not expire together).
   Every ADDED/MODIFIED/DELETED goes to the sink's ``apply``; every event and
   BOOKMARK advances the resume point.
3. When the watch ends cleanly (server timeout, closed connection) watch
   again from the resume point: no relist.
4. When the server says the resume point is too old (410 Gone/Expired, as an
   ERROR event or an HTTP status) relist: step 1 again.
5. On any other failure (connection refused, 5xx, 403, a malformed line)
   wait with exponential backoff and jitter (0.8 s doubling to 30 s, reset
   after 2 minutes without failure, as client-go's reflector), then resume;
   after a failed list, list again.
6. If no event and no bookmark arrives within ``inactivity_timeout`` the
   watch is presumed dead (a proxy that keeps the socket open but forwards
   nothing), it is abandoned and resumed like a failure.
7. With ``relist_period`` set, a complete list is made again at least that
   often (the watch is rotated to end in time): a change whose event was
   lost on a healthy watch, which no 410 would ever reveal, is repaired
   within that period. client-go has no such option; it costs one list per
   period.

Guarantees:
  * the sink sees a complete list before any watch event, and after every
    relist, so a store driven by it converges to the server's state whatever
    events were lost, duplicated or delayed;
  * events reach the sink in the order the server sent them, and none is
    skipped between a list and the watch that follows it;
  * the watcher never gives up: only cancellation stops it.

Assumptions: the sink's methods are synchronous and do not raise (an
exception from the sink is logged and ends that watch, which is then
resumed; the next relist repairs whatever it missed).

Time: backoff, watch rotation and dead-watch detection use the injected
clock, so tests drive them with :class:`reconcilekit.testing.FakeClock`.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiohttp
import anyio
import orjson

from ._client import Client
from ._clock import Clock, SystemClock
from ._errors import APIConnectionError, APIError, Gone, error_from_status
from ._objects import Resource

__all__ = ["Backoff", "WatchSink", "Watcher", "WatcherStatistics"]

logger = logging.getLogger("reconcilekit.watcher")
_SYSTEM_CLOCK: Final = SystemClock()


class WatchSink(Protocol):
    """Where a :class:`Watcher` delivers what it learns (an informer)."""

    def replace(self, objects: list[dict[str, Any]], resource_version: str) -> None:
        """The complete state at ``resource_version`` (after a list)."""

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``."""


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


@dataclass(frozen=True, slots=True)
class WatcherStatistics:
    """What a watcher has been through (for metrics and readiness)."""

    lists: int
    watches: int
    restarts: int
    dead_watches: int
    events: int
    resource_version: str | None
    last_activity: float | None  # clock.monotonic() of the last event or bookmark
    watching: bool
    last_error: str | None


class _DeadWatch(Exception):
    """No event or bookmark within the inactivity window."""


class Watcher:
    """List+watch of one resource (optionally one namespace and selectors) into a sink.

    ``run(sink)`` runs until cancelled; see the module docstring for the
    protocol it follows.
    """

    def __init__(self, client: Client, resource: Resource, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 page_size: int = 500, min_watch_timeout: float = 300.0,
                 inactivity_timeout: float = 300.0, relist_period: float | None = None,
                 clock: Clock = _SYSTEM_CLOCK, backoff: Backoff | None = None) -> None:
        if inactivity_timeout <= 0 or min_watch_timeout <= 0 or page_size <= 0:
            raise ValueError("page_size, min_watch_timeout and inactivity_timeout must be > 0")
        if relist_period is not None and relist_period <= 0:
            raise ValueError(f"relist_period must be > 0 seconds, got {relist_period}")
        self.relist_period = relist_period
        self._listed_at = 0.0
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.page_size = page_size
        self.min_watch_timeout = min_watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.clock = clock
        self.backoff = backoff or Backoff(clock=clock)
        self._rv: str | None = None
        self._lists = self._watches = self._restarts = self._dead = self._events = 0
        self._last_activity: float | None = None
        self._watching = False
        self._dead_flag = False
        self._last_error: str | None = None

    def statistics(self) -> WatcherStatistics:
        return WatcherStatistics(self._lists, self._watches, self._restarts, self._dead,
                                 self._events, self._rv, self._last_activity, self._watching,
                                 self._last_error)

    async def run(self, sink: WatchSink) -> None:
        """List and watch into ``sink`` until cancelled."""
        while True:
            try:
                if self._rv is None or self._relist_due():
                    await self._list(sink)
                await self._watch(sink)
                self._last_error = None
            except Gone as err:
                logger.info("%s: resume point %s expired (%s); relisting",
                            self.resource, self._rv, err.message)
                self._rv = None
            except (APIError, APIConnectionError, aiohttp.ClientError, OSError,
                    TimeoutError, ValueError, _DeadWatch) as err:
                self._restarts += 1
                self._last_error = f"{type(err).__name__}: {err}"
                delay = self.backoff.next_delay()
                logger.warning("%s: %s; retrying in %.1fs (resume point %s)",
                               self.resource, self._last_error, delay, self._rv,
                               extra={"resource": str(self.resource)})
                await self.clock.sleep(delay)
            except Exception as err:  # a sink (handler) bug must not end the watcher
                self._restarts += 1
                self._last_error = f"{type(err).__name__}: {err}"
                delay = self.backoff.next_delay()
                logger.exception("%s: unexpected error; relisting in %.1fs", self.resource,
                                 delay)
                self._rv = None
                await self.clock.sleep(delay)

    async def _list(self, sink: WatchSink) -> None:
        listed = await self.client.list_all(
            self.resource, self.namespace, label_selector=self.label_selector,
            field_selector=self.field_selector, limit=self.page_size)
        rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        kind = self.resource.kind
        items = listed.get("items") or []
        for item in items:  # list items of built-in kinds come without kind/apiVersion
            item.setdefault("apiVersion", self.resource.api_version)
            item.setdefault("kind", kind)
        self._lists += 1
        self._listed_at = self.clock.monotonic()
        self._last_error = None
        self._touch()
        sink.replace(items, rv)
        self._rv = rv

    def _relist_due(self) -> bool:
        return (self.relist_period is not None
                and self.clock.monotonic() - self._listed_at >= self.relist_period)

    def _touch(self) -> None:
        self._last_activity = self.clock.monotonic()

    async def _watch(self, sink: WatchSink) -> None:
        timeout = int(self.min_watch_timeout * (1 + random.random()))
        if self.relist_period is not None:  # end the watch when the next list is due
            left = self.relist_period - (self.clock.monotonic() - self._listed_at)
            timeout = max(1, min(timeout, math.ceil(left)))
        params = {"watch": "true", "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout), "resourceVersion": self._rv or ""}
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        path = self.resource.path(self.namespace)
        self._watches += 1
        response = await self.client.open_stream(
            path, params, inactivity_timeout=self.inactivity_timeout + 30.0)
        self._watching = True
        self._last_error = None
        self._touch()
        try:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._watchdog, tg.cancel_scope)
                    async for line in _lines(response):
                        self._handle(sink, line)
                    tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:  # the task group wraps what the loop raised
                raise _only(group) from None
            if self._dead_flag:
                self._dead += 1
                raise _DeadWatch(f"no event or bookmark for {self.inactivity_timeout:.0f}s")
        finally:
            self._watching = False
            self._dead_flag = False
            response.release()

    async def _watchdog(self, scope: anyio.CancelScope) -> None:
        while True:
            assert self._last_activity is not None
            left = self._last_activity + self.inactivity_timeout - self.clock.monotonic()
            if left <= 0:
                self._dead_flag = True
                scope.cancel()
                return
            await self.clock.sleep(left)

    def _handle(self, sink: WatchSink, line: bytes) -> None:
        event = orjson.loads(line)
        if not isinstance(event, Mapping):
            raise ValueError(f"watch line is not an object: {line[:200]!r}")
        type_, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict):
            raise ValueError(f"watch event without an object: {line[:200]!r}")
        self._touch()
        if type_ == "ERROR":
            raise error_from_status(obj)
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if type_ == "BOOKMARK":
            if rv:
                self._rv = str(rv)
            return
        if type_ not in ("ADDED", "MODIFIED", "DELETED"):
            raise ValueError(f"unknown watch event type {type_!r}")
        self._events += 1
        sink.apply(type_, obj)
        if rv:
            self._rv = str(rv)


def _only(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception inside (nested) groups of one; the group itself otherwise."""
    while len(group.exceptions) == 1:
        inner = group.exceptions[0]
        if not isinstance(inner, BaseExceptionGroup):
            return inner
        group = inner
    return group


async def _lines(response: aiohttp.ClientResponse) -> AsyncIterator[bytes]:
    """Newline-delimited JSON of a watch body, lines of any length."""
    pending = b""
    async for chunk in response.content.iter_any():
        pending += chunk
        if b"\n" not in chunk:
            continue
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
