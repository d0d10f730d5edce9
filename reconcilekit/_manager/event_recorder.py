"""``EventRecorder``: core/v1 Events about objects, written like client-go's recorder.

Events are what ``kubectl describe`` shows under "Events:". Recording one
must never slow down or break a reconcile, so :meth:`EventRecorder.event`
only puts the event in a bounded buffer, and :meth:`EventRecorder.run`
(started in the manager's task group) writes them to the API server.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
from anyio.abc import TaskStatus

from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import (
    AlreadyExists,
    APIConnectionError,
    APIError,
    NotFound,
    describe_error,
)
from .._foundations.logging import RepeatFilter
from ..kinds import EVENTS

__all__ = ["EventRecorder", "EventRecorderStatistics"]

logger = logging.getLogger("reconcilekit.events")

_SYSTEM_CLOCK: Final = SystemClock()
_TYPES: Final = ("Normal", "Warning")
_SEEN_ENTRIES: Final = 4096  # client-go's maxLruCacheEntries
_MAX_NAME: Final = 253 - 17  # room for ".<16 hex digits>" in a DNS subdomain name
_DROP_WARNING_INTERVAL: Final = 60.0

# (involvedObject uid, kind, name, namespace, apiVersion, type, reason, message);
# the source is the recorder's own, so it is the same for every key.
_Key = tuple[str, str, str, str, str, str, str, str]


@dataclass(frozen=True, slots=True)
class EventRecorderStatistics:
    """What an :class:`EventRecorder` did so far.

    ``pending``: recorded, not yet written (including one being written);
    ``created``: Events created; ``patched``: repeats folded into an existing
    Event; ``dropped``: discarded because the buffer was full; ``failed``:
    writes the API server refused or that got no answer.
    """

    pending: int
    created: int
    patched: int
    dropped: int
    failed: int


@dataclass(slots=True)
class _Pending:
    seq: int
    key: _Key
    namespace: str
    involved: dict[str, str]
    type: str
    reason: str
    message: str
    wall: float
    monotonic: float


@dataclass(slots=True)
class _Seen:
    name: str
    namespace: str
    count: int
    first_timestamp: str
    last_monotonic: float


def _timestamp(wall: float) -> str:
    """RFC 3339 in UTC to the second, as core/v1 ``firstTimestamp`` / ``lastTimestamp``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(wall))


class EventRecorder:
    """Records core/v1 Events about objects for one ``component`` (usually a controller).

    Expected flow:
      1. the manager starts :meth:`run` in its task group
         (``await tg.start(recorder.run)``);
      2. reconcilers call :meth:`event` (a plain, non-blocking method);
      3. :meth:`run` writes the events in the order they were recorded, one
         request at a time; at shutdown, ``await recorder.flush()`` (under a
         deadline) before cancelling :meth:`run` to write what is left.

    Each Event is written like client-go's ``record`` package writes it:
      * named ``<object name>.<16 hex digits of the time in ns>`` in the
        object's namespace, or in ``default`` for a cluster-scoped object;
      * ``involvedObject`` is the object's apiVersion, kind, name, namespace,
        uid and resourceVersion; ``source`` is ``{component, host}``, also
        sent as ``reportingComponent`` / ``reportingInstance``;
      * ``firstTimestamp`` / ``lastTimestamp`` in RFC 3339 to the second,
        from ``clock.time()`` when :meth:`event` was called.

    Guarantees:
      * :meth:`event` never blocks, never waits for the API server and never
        raises for a failed write: only for a bad ``type`` or an object
        without kind or name (ValueError), which are bugs at the call site;
      * a repeat of the same event (same involved object uid, kind, name,
        namespace and apiVersion, type, reason and message, from this
        recorder) within ``window`` seconds of the previous one is folded
        into the existing Event: one merge patch raising ``count`` and
        setting ``lastTimestamp``, not a new object. Up to 4,096 distinct
        events are remembered (least recently seen forgotten first);
      * at most ``qps`` writes a second, in bursts of up to ``burst`` (a
        token bucket on ``clock``; ``qps=None``: no limit). Events are for
        people and must not take the API server from the controllers: a
        storm of a thousand bindings writes its thousand Events over the
        following minute instead of during it. The default is the client
        rate limit controller-runtime gives its clients (20 a second, bursts
        of 30). :meth:`flush` writes what is pending without the limit;
      * at most ``max_pending`` events wait to be written; when full, the
        oldest is dropped, counted in :meth:`statistics` and logged at
        WARNING (at most once a minute) on the ``reconcilekit.events`` logger.
        The default, 10,000 (a few MiB), holds what a storm of that many
        objects records while the rate limit spreads it out;
      * a write that fails is logged at WARNING and dropped, never retried
        and never raised (events are best effort; client-go retries
        connection failures up to 12 times, which a controller does not
        need). A repeat whose Event has expired (404 on the patch) is created
        again under the same name, keeping its count, as in client-go.

    Events are not written while :meth:`run` is not running; :meth:`event`
    must be called from the event loop's thread.
    """

    def __init__(self, client: Client, *, component: str, host: str | None = None,
                 clock: Clock = _SYSTEM_CLOCK, max_pending: int = 10_000,
                 window: float = 600.0, qps: float | None = 20.0, burst: int = 30) -> None:
        if not component:
            raise ValueError("an event recorder needs a component name")
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        if not window >= 0:
            raise ValueError(f"window must be >= 0 seconds, got {window!r}")
        if qps is not None and not qps > 0:
            raise ValueError(f"qps must be > 0 (or None for no limit), got {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be >= 1, got {burst}")
        self.client = client
        self.component = component
        self.host = host
        self.clock = clock
        self._failures = RepeatFilter(clock=clock)  # one line a minute per kind of failure
        self.max_pending = max_pending
        self.window = float(window)
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._refilled: float | None = None
        self._throttled: anyio.CancelScope | None = None
        self._draining = 0
        self._queue: deque[_Pending] = deque()
        self._seen: OrderedDict[_Key, _Seen] = OrderedDict()
        self._recorded = 0  # seq of the last event recorded
        self._settled = 0  # seq of the last event written, failed or dropped
        self._in_flight = False
        self._running = False
        self._wakeup: anyio.Event | None = None
        self._progress: anyio.Event | None = None
        self._last_ns = 0
        self._last_drop_warning: float | None = None
        self._created = self._patched = self._dropped = self._failed = 0

    # -- recording ------------------------------------------------------------------------------

    def event(self, obj: Mapping[str, Any], type: str, reason: str, message: str) -> None:
        """Record an event of ``type`` (``"Normal"`` or ``"Warning"``) about ``obj``.

        ``reason`` is a short CamelCase word (``"Created"``, ``"FailedSync"``);
        ``message`` is for humans. Returns at once; see the class docstring
        for when and how it is written.
        """
        if type not in _TYPES:
            raise ValueError(f"event type must be 'Normal' or 'Warning', got {type!r}")
        meta = obj.get("metadata") or {}
        kind, name = obj.get("kind"), meta.get("name")
        if not kind or not name:
            raise ValueError("an event needs an object with kind and metadata.name")
        namespace = meta.get("namespace") or ""
        involved = {"kind": str(kind), "name": str(name)}
        for field, value in (("namespace", namespace), ("uid", meta.get("uid")),
                             ("apiVersion", obj.get("apiVersion")),
                             ("resourceVersion", meta.get("resourceVersion"))):
            if value:
                involved[field] = str(value)
        key: _Key = (involved.get("uid", ""), involved["kind"], involved["name"], namespace,
                     involved.get("apiVersion", ""), type, reason, message)
        self._recorded += 1
        if len(self._queue) >= self.max_pending:
            self._drop_oldest()
        self._queue.append(_Pending(self._recorded, key, namespace or "default", involved, type,
                                    reason, message, self.clock.time(), self.clock.monotonic()))
        if self._wakeup is not None:
            self._wakeup.set()

    def _drop_oldest(self) -> None:
        dropped = self._queue.popleft()
        self._dropped += 1
        now = self.clock.monotonic()
        if (self._last_drop_warning is None
                or now - self._last_drop_warning >= _DROP_WARNING_INTERVAL):
            self._last_drop_warning = now
            logger.warning("%s: %d events waiting to be written; dropped the oldest (%s %s on "
                           "%s %s), %d dropped so far", self.component, self.max_pending,
                           dropped.type, dropped.reason, dropped.involved["kind"],
                           dropped.involved["name"], self._dropped,
                           extra={"component": self.component, "dropped": self._dropped})

    def statistics(self) -> EventRecorderStatistics:
        return EventRecorderStatistics(len(self._queue) + self._in_flight, self._created,
                                       self._patched, self._dropped, self._failed)

    # -- writing --------------------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Write recorded events until cancelled; signals ``task_status`` once started.

        Raises RuntimeError if this recorder is already running.
        """
        if self._running:
            raise RuntimeError(f"EventRecorder {self.component!r} is already running")
        self._running = True
        try:
            task_status.started()
            while True:
                while not self._queue:
                    self._wakeup = anyio.Event()
                    await self._wakeup.wait()
                await self._take_token()
                item = self._queue.popleft()
                self._in_flight = True
                try:
                    await self._write(item)
                finally:
                    self._in_flight = False
                    self._settled = item.seq
                    if self._progress is not None:
                        self._progress.set()
                        self._progress = None
        finally:
            self._running = False
            self._wakeup = None

    async def flush(self) -> None:
        """Return once every event recorded before this call is written, failed or dropped.

        While it waits, :meth:`run` writes without the rate limit. It waits
        for :meth:`run` to get there: it never returns while nothing runs it
        and events are pending, so call it under a deadline.
        """
        target = self._recorded
        self._draining += 1
        try:
            if self._throttled is not None:
                self._throttled.cancel()
            while self._settled < target and (self._queue or self._in_flight):
                if self._progress is None:
                    self._progress = anyio.Event()
                await self._progress.wait()
        finally:
            self._draining -= 1

    async def _take_token(self) -> None:
        """Wait until the rate limit allows one more write (at once while flushing)."""
        while self.qps is not None:
            now = self.clock.monotonic()
            if self._refilled is not None:
                self._tokens = min(float(self.burst),
                                   self._tokens + (now - self._refilled) * self.qps)
            self._refilled = now
            if self._tokens >= 1 or self._draining:
                self._tokens = max(0.0, self._tokens - 1)
                return
            with anyio.CancelScope() as self._throttled:
                await self.clock.sleep((1 - self._tokens) / self.qps)
            self._throttled = None

    async def _write(self, item: _Pending) -> None:
        seen = self._seen.get(item.key)
        if seen is not None and item.monotonic - seen.last_monotonic > self.window:
            seen = None
        try:
            if seen is None:
                await self._create(item)
            else:
                await self._repeat(item, seen)
        except AlreadyExists:
            self._failed += 1
            logger.debug("%s: event %s %s on %s %s already exists, not written",
                         self.component, item.type, item.reason, item.involved["kind"],
                         item.involved["name"])
        except Exception as err:
            self._failed += 1
            api = isinstance(err, APIError | APIConnectionError)  # weather, not a bug
            self._failures.log(logger, logging.WARNING, (type(err), getattr(err, "status", 0)),
                               "%s: could not write event %s %s on %s %s: %s", self.component,
                               item.type, item.reason, item.involved["kind"],
                               item.involved["name"], describe_error(err),
                               exc_info=None if api else err,
                               extra={"component": self.component, "reason": item.reason})

    async def _create(self, item: _Pending, *, seen: _Seen | None = None) -> None:
        stamp = _timestamp(item.wall)
        if seen is None:
            seen = _Seen(self._name(item), item.namespace, 1, stamp, item.monotonic)
        body = self._body(item, seen, stamp)
        await self.client.create(EVENTS, body, item.namespace)
        self._created += 1
        self._remember(item.key, seen)

    async def _repeat(self, item: _Pending, seen: _Seen) -> None:
        stamp = _timestamp(item.wall)
        count = seen.count + 1
        again = _Seen(seen.name, seen.namespace, count, seen.first_timestamp, item.monotonic)
        try:
            await self.client.patch(EVENTS, seen.name,
                                    {"count": count, "lastTimestamp": stamp}, seen.namespace)
        except NotFound:  # the Event expired (kube-apiserver keeps them for an hour by default)
            await self._create(item, seen=again)
            return
        self._patched += 1
        self._remember(item.key, again)

    def _remember(self, key: _Key, seen: _Seen) -> None:
        self._seen[key] = seen
        self._seen.move_to_end(key)
        while len(self._seen) > _SEEN_ENTRIES:
            self._seen.popitem(last=False)

    def _name(self, item: _Pending) -> str:
        # Strictly increasing, so two events recorded within one clock tick
        # (a coarse or fake clock) still get different names.
        ns = max(int(item.wall * 1e9), self._last_ns + 1)
        self._last_ns = ns
        prefix = item.involved["name"][:_MAX_NAME].rstrip(".-")
        return f"{prefix}.{ns:016x}"

    def _body(self, item: _Pending, seen: _Seen, last: str) -> dict[str, Any]:
        source = {"component": self.component}
        if self.host:
            source["host"] = self.host
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": seen.name, "namespace": seen.namespace},
            "involvedObject": dict(item.involved),
            "reason": item.reason, "message": item.message, "type": item.type,
            "source": source,
            "firstTimestamp": seen.first_timestamp, "lastTimestamp": last,
            "count": seen.count,
            "reportingComponent": self.component,
        }
        if self.host:
            body["reportingInstance"] = self.host
        return body

    def __repr__(self) -> str:
        return f"EventRecorder(component={self.component!r}, host={self.host!r})"
