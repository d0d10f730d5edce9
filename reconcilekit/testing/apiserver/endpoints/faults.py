"""Fault injection for the test API server: plain methods a test calls.

Every fault is something a real API server or network does to a controller:
watches closed under it, history compacted (resumes get 410 Expired),
failures and throttling, latency, stalled or lost watch events.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..machinery.status import StatusError

if TYPE_CHECKING:
    from ..machinery.request_info import ResourceRequest
    from ..registry.generic_store import Storage
from ..storage.versioned_store import Table

__all__ = ["Faults"]


@dataclass(slots=True)
class _FaultRule:
    verb: str | None
    resource: str | None
    name: str | None
    namespace: str | None

    def matches(self, verb: str, req: ResourceRequest) -> bool:
        r = req.rtype.resource
        return ((self.verb is None or self.verb == verb)
                and (self.resource is None
                     or self.resource in (r.plural, r.group_resource, req.counter_resource))
                and (self.name is None or self.name == req.name)
                and (self.namespace is None or self.namespace == req.namespace))


@dataclass(slots=True)
class _Failure:
    rule: _FaultRule
    status: int
    retry_after: int | None
    remaining: int

    def spend(self) -> bool:
        """One request failed by this fault; True when it has none left to fail."""
        self.remaining -= 1
        return self.remaining == 0


@dataclass(slots=True)
class _Latency:
    rule: _FaultRule
    seconds: float


class Faults:
    """Faults the server injects; reach it as ``APIServer.faults``.

    Resources are named by plural (``"pods"``), group-qualified plural
    (``"cnclaims.core.matrixorigin.io"``) or with a subresource
    (``"pods/status"``). ``None`` matches anything.
    """

    def __init__(self, storage: Storage) -> None:
        self._storage = storage
        self._failures: list[_Failure] = []
        self._latencies: list[_Latency] = []
        self.injected: Counter[int] = Counter()  # status code -> failures served

    # -- requests -------------------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 500, verb: str | None = None,
                  resource: str | None = None, name: str | None = None,
                  namespace: str | None = None, retry_after: int | None = None) -> None:
        """Answer the next ``n`` matching requests with ``status`` (500, 429, 409, 504, ...).

        A 429 carries ``Retry-After`` (``retry_after`` seconds, default 1) like
        kube-apiserver's priority-and-fairness rejections.
        """
        if n < 1:
            raise ValueError(f"fail_next needs n >= 1, got {n}")
        if not 400 <= status <= 599:
            raise ValueError(f"fail_next needs an HTTP error status, got {status}")
        self._failures.append(
            _Failure(_FaultRule(verb, resource, name, namespace), status, retry_after, n))

    def add_latency(self, seconds: float, *, verb: str | None = None,
                    resource: str | None = None, name: str | None = None,
                    namespace: str | None = None) -> None:
        """Delay every matching request by ``seconds`` before it is handled."""
        self._latencies.append(_Latency(_FaultRule(verb, resource, name, namespace), seconds))

    def clear(self) -> None:
        """Remove pending failures and latencies (watch faults are unaffected)."""
        self._failures.clear()
        self._latencies.clear()

    def latency_for(self, verb: str, req: ResourceRequest) -> float:
        return sum(lat.seconds for lat in self._latencies if lat.rule.matches(verb, req))

    def failure_for(self, verb: str, req: ResourceRequest) -> StatusError | None:
        for failure in self._failures:
            if failure.rule.matches(verb, req):
                if failure.spend():
                    self._failures.remove(failure)
                self.injected[failure.status] += 1
                return StatusError.for_status(failure.status, failure.retry_after)
        return None

    # -- watches ----------------------------------------------------------------------

    def _tables(self, resource: str | None) -> list[Table]:
        tables = list(self._storage.tables.values())
        if resource is None:
            return tables
        return [t for t in tables
                if resource in (t.rtype.resource.plural, t.rtype.resource.group_resource)]

    def close_watches(self, resource: str | None = None) -> int:
        """End every open watch (of ``resource``) now, cleanly; returns how many."""
        closed = 0
        for table in self._tables(resource):
            for watcher in list(table.watchers):
                watcher.close()
                closed += 1
        return closed

    def send_bookmarks(self, resource: str | None = None) -> int:
        """Send a BOOKMARK now on every watch that asked for them; returns how many."""
        sent = 0
        rv = self._storage.bookmark_rv()
        for table in self._tables(resource):
            for watcher in list(table.watchers):
                if watcher.bookmark_line is not None:
                    watcher.push(watcher.bookmark_line(rv))
                    sent += 1
        return sent

    def compact(self) -> None:
        """Drop the event history: resuming from any earlier resourceVersion gets 410."""
        self._storage.compact()

    def drop_events(self, resource: str, n: int = 1) -> None:
        """The next ``n`` events of ``resource`` are never delivered to any watch.

        They are not replayed on resume either: only a relist shows the change.
        """
        tables = self._tables(resource)
        if not tables:
            raise ValueError(f"unknown resource {resource!r}")
        for table in tables:
            table.drop_events(n)

    def pause_events(self) -> None:
        """Hold back watch events (writes still succeed) until :meth:`resume_events`."""
        self._storage.pause()

    def resume_events(self) -> None:
        """Deliver held-back events in order."""
        self._storage.resume()
