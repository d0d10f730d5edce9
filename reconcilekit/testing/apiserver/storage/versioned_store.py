"""The storage under the registry: objects by resource, one resourceVersion counter, and
each resource's bounded event history (what kube-apiserver's etcd and watch cache keep).

Every write the registry makes goes through :meth:`VersionedStore._emit`, which
records the event in the resource's history and offers it to its open watches
(or holds it while delivery is paused, for fault injection). A read at an older
resourceVersion (:meth:`VersionedStore.snapshot`) rolls the history back; one
older than what the history holds is 410 Expired, as after etcd's compaction.

Invariants (whenever no method is running): ``rv`` is the newest
resourceVersion; every event in a history has ``oldest_rv < event.rv <= rv``,
in increasing order; ``delivered_rv <= rv``, equal unless delivery is paused.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..machinery.resources import ResourceType
from .watch_cache import CacheWatcher, Event

__all__ = ["ObjKey", "Table", "TableKey", "VersionedStore"]

TableKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name)


@dataclass(eq=False)
class Table:
    """The objects of one resource (all versions share it) and its event history."""

    rtype: ResourceType
    history_limit: int
    objects: dict[ObjKey, dict[str, Any]] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    oldest_rv: int = 0  # a watch may resume from any rv >= oldest_rv
    watchers: set[CacheWatcher] = field(default_factory=set)
    drop_next: int = 0
    # The rv of the last event delivered to watchers, 0 before the first since start:
    # what kube-apiserver's watch cache puts in a BOOKMARK (it sends none while 0).
    last_event_rv: int = 0

    def record(self, type_: str, obj: dict[str, Any], prev: dict[str, Any] | None) -> Event:
        """The event of a change to ``obj``, kept in the history (a fault may mark it
        dropped: no watch is ever offered it)."""
        dropped = self.drop_next > 0
        if dropped:
            self.drop_next -= 1
        event = Event(type_, int(obj["metadata"]["resourceVersion"]), obj, prev, dropped)
        self.history.append(event)
        while len(self.history) > self.history_limit:
            self.oldest_rv = self.history.popleft().rv
        return event

    def deliver(self, event: Event) -> None:
        """Offer ``event`` to every open watch of the resource."""
        self.last_event_rv = event.rv
        for w in list(self.watchers):
            w.offer(event)

    def drop_events(self, n: int) -> None:
        """Mark the next ``n`` events dropped (fault injection)."""
        self.drop_next += n

    def forget_history(self, rv: int) -> None:
        """Compaction at ``rv``: a watch from an older resourceVersion gets 410."""
        self.history.clear()
        self.oldest_rv = rv

    def serve_as(self, rtype: ResourceType) -> None:
        """Store objects at ``rtype`` from now on (a CRD's storage version changed)."""
        self.rtype = rtype


class VersionedStore:
    """The tables of every resource, the resourceVersion counter and event delivery.
    Not thread-safe: used from one event loop."""

    def __init__(self, *, history_limit: int = 10_000) -> None:
        self.rv = 1
        self.history_limit = history_limit
        self.tables: dict[TableKey, Table] = {}
        self.paused = False
        self._pending: list[tuple[Table, Event]] = []
        self.delivered_rv = 1

    def table_at(self, key: TableKey, rtype: ResourceType) -> Table:
        """The table stored under ``key``, made for ``rtype`` on first use."""
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = Table(rtype, self.history_limit, oldest_rv=self.rv)
        return table

    def drop_table(self, table: Table) -> None:
        for w in list(table.watchers):
            w.close()
        self.tables.pop((table.rtype.resource.group, table.rtype.resource.plural), None)

    # -- events ---------------------------------------------------------------

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _emit(self, table: Table, type_: str, obj: dict[str, Any],
              prev: dict[str, Any] | None) -> None:
        event = table.record(type_, obj, prev)
        if self.paused:
            self._pending.append((table, event))
            return
        self._deliver(table, event)

    def _deliver(self, table: Table, event: Event) -> None:
        table.deliver(event)
        self.delivered_rv = event.rv

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        pending, self._pending = self._pending, []
        for table, event in pending:
            self._deliver(table, event)
        self.delivered_rv = self.rv

    def bookmark_rv(self) -> int:
        """The resourceVersion a BOOKMARK may carry: every event up to it was offered."""
        return self.delivered_rv if self.paused or self._pending else self.rv

    def compact(self) -> None:
        """Forget all history: resuming a watch from an older rv then gets 410."""
        for table in self.tables.values():
            table.forget_history(self.rv)
