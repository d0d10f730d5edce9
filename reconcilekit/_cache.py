"""``Cache``: shared informers per resource, cached reads, field indexes, sync.

Every controller of a manager reads through one cache: one informer (one
list+watch, one store) per resource however many controllers use it.

Guarantees:
  * ``get`` and ``list`` never touch the API server; they answer from the
    store once that resource's informer has synced (waiting for it if it was
    just created) and return fresh dicts the caller may mutate;
  * ``wait_for_sync(timeout)`` either returns with every informer synced or
    raises :class:`CacheSyncTimeout` naming each resource that did not sync
    and its last error (a CRD that is not installed answers 404): it never
    hangs;
  * read-your-own-writes: every write made through the client given to the
    cache is remembered with the resourceVersion it returned, and
    :meth:`has_seen_own_write` stays False until the cache has seen that
    object at that version or newer (or the expectation timed out, which is
    logged and counted), so a reconciler can avoid acting on a cache that
    predates its own last write.

Reading from a cache that is not running raises RuntimeError at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.abc

from ._client import Client
from ._client_writes import WriteRecord
from ._clock import Clock, SystemClock
from ._errors import NotFound
from ._informer import (
    EventHandler,
    Informer,
    InformerStatistics,
    metadata_only,
    strip_managed_fields,
)
from ._objects import ObjectKey, Resource, object_key
from ._rv_expectations import ResourceVersionExpectations
from ._selectors import LabelSelector

__all__ = ["Cache", "CacheSyncTimeout"]

_SYSTEM_CLOCK: Final = SystemClock()
Obj = dict[str, Any]
Objs = list[Obj]  # spelled here: the class below has a method named ``list``
Keys = list[ObjectKey]
_FIELD_PREFIX = "field:"


class CacheSyncTimeout(TimeoutError):
    """Some informers did not sync in time; ``resources`` names them."""

    def __init__(self, timeout: float, unsynced: Mapping[str, str | None]) -> None:
        self.resources = sorted(unsynced)
        detail = "; ".join(f"{name} (last error: {err})" if err else name
                           for name, err in sorted(unsynced.items()))
        super().__init__(f"caches did not sync within {timeout:g}s: {detail}")


@dataclass(frozen=True, slots=True)
class _InformerKey:
    resource: Resource
    metadata_only: bool


class Cache:
    """Shared informers for one client, and the reads controllers make from them."""

    def __init__(self, client: Client, *, namespace: str | None = None,
                 clock: Clock = _SYSTEM_CLOCK, resync_period: float | None = None,
                 relist_period: float | None = None, liveness_timeout: float = 60.0,
                 own_write_timeout: float = 60.0) -> None:
        self.client = client
        self.namespace = namespace
        self.clock = clock
        self.resync_period = resync_period
        self.relist_period = relist_period
        self.liveness_timeout = liveness_timeout
        self._informers: dict[_InformerKey, Informer] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self.own_writes: ResourceVersionExpectations[tuple[Resource, ObjectKey]] = (
            ResourceVersionExpectations(name="cache", timeout=own_write_timeout, clock=clock))
        client.add_write_observer(self._on_write)

    # -- informers -----------------------------------------------------------------------

    def informer_for(self, resource: Resource, *, metadata: bool = False) -> Informer:
        """The shared informer of ``resource`` (created, and started if running, on first use).

        ``metadata=True`` gives a metadata-only informer: it lists and watches
        ``PartialObjectMetadata`` (the server sends no spec, status or data)
        and its store keeps apiVersion, kind and metadata, for kinds that only
        map events.
        """
        key = _InformerKey(resource, metadata)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(
                self.client, resource,
                namespace=self.namespace if resource.namespaced else None,
                transform=metadata_only if metadata else strip_managed_fields,
                metadata_only=metadata,
                resync_period=self.resync_period, relist_period=self.relist_period,
                liveness_timeout=self.liveness_timeout,
                clock=self.clock)
            own_writes = self.own_writes
            informer.version_observers.append(
                lambda k, rv: own_writes.observed((resource, k), rv))
            self._informers[key] = informer
            if self._tg is not None:
                self._tg.start_soon(informer.run)
        return informer

    def index_field(self, resource: Resource, field_name: str,
                    fn: Callable[[Mapping[str, Any]], Iterable[str]]) -> None:
        """Index ``resource`` objects by ``fn(obj)`` under ``field_name``.

        Then ``list(resource, field=(field_name, value))`` answers in time
        independent of how many objects are cached, like controller-runtime's
        ``IndexField`` with ``MatchingFields``.
        """
        self.informer_for(resource).add_index(_FIELD_PREFIX + field_name, fn)

    def add_handler(self, resource: Resource, handler: EventHandler, *,
                    metadata: bool = False) -> None:
        self.informer_for(resource, metadata=metadata).add_handler(handler)

    # -- running ---------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Run every informer (and those created later) until cancelled."""
        if self._tg is not None:
            raise RuntimeError("this cache is already running")
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for informer in self._informers.values():
                    tg.start_soon(informer.run)
                task_status.started()
                await anyio.sleep_forever()  # informers created later start in this group
        finally:
            self._tg = None

    async def wait_for_sync(self, timeout: float) -> None:  # noqa: ASYNC109 (injected clock)
        """Wait until every informer has synced; :class:`CacheSyncTimeout` after ``timeout``."""
        if self._tg is None:
            raise RuntimeError("the cache is not running: start Cache.run() first")
        informers = list(self._informers.values())
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:

                async def deadline() -> None:
                    await self.clock.sleep(timeout)
                    scope.cancel()

                tg.start_soon(deadline)
                for informer in informers:
                    await informer.synced.wait()
                tg.cancel_scope.cancel()
        unsynced = {str(i.resource): i.statistics().last_error
                    for i in informers if not i.has_synced}
        if unsynced:
            raise CacheSyncTimeout(timeout, unsynced)

    def statistics(self) -> list[InformerStatistics]:
        return [i.statistics() for i in self._informers.values()]

    # -- reads -----------------------------------------------------------------------------------

    async def _synced(self, resource: Resource, metadata: bool) -> Informer:
        if self._tg is None:
            raise RuntimeError("the cache is not running: start Cache.run() first")
        informer = self.informer_for(resource, metadata=metadata)
        if not informer.has_synced:
            await informer.synced.wait()
        return informer

    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  metadata: bool = False) -> Obj:
        """The cached object; raises :class:`NotFound` when the cache has none."""
        informer = await self._synced(resource, metadata)
        key = ObjectKey(namespace or "" if resource.namespaced else "", name)
        obj = informer.store.get(key)
        if obj is None:
            raise NotFound(f'{resource.group_resource} "{name}" not found in the cache',
                           status=404, reason="NotFound",
                           details={"name": name, "kind": resource.plural})
        return obj

    async def list(self, resource: Resource, namespace: str | None = None, *,
                   label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
                   field: tuple[str, str] | None = None, metadata: bool = False) -> Objs:
        """Cached objects, sorted by namespace/name, filtered by namespace, labels and field.

        ``label_selector`` is a selector string (``"app=web,tier!=db"``), a
        metav1.LabelSelector dict (``matchLabels``/``matchExpressions``) or a
        :class:`LabelSelector`. A field lookup costs O(matches); a label
        selector filters the namespace's objects (index a label with
        :meth:`index_field` when that is too many).
        """
        informer = await self._synced(resource, metadata)
        return self._read(informer, namespace, label_selector, field)

    def lookup(self, resource: Resource, namespace: str | None = None, *,
               label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
               field: tuple[str, str] | None = None, metadata: bool = False) -> Objs:
        """:meth:`list` without waiting, for mappers (which are synchronous).

        Answers from what the informer holds now: before it has synced that
        may be less than the server has (a mapper then sees the rest as their
        events arrive). Raises RuntimeError if no informer of ``resource``
        exists (register it, e.g. with :meth:`index_field` or a watch, first).
        """
        informer = self._informers.get(_InformerKey(resource, metadata))
        if informer is None:
            raise RuntimeError(f"no informer for {resource} in this cache: register one "
                               "(index_field, informer_for or a watch) before reading it")
        return self._read(informer, namespace, label_selector, field)

    def lookup_keys(self, resource: Resource, field: tuple[str, str], *,
                    namespace: str | None = None, metadata: bool = False,
                    limit: int | None = None) -> Keys:
        """The keys of cached objects whose field index ``field[0]`` holds ``field[1]``.

        Like :meth:`lookup` but decodes nothing: O(matches), for mappers that
        only need to know which keys to enqueue; sorted. With ``limit``: the
        first ``limit`` of them in that order, found without sorting them all,
        for a mapper that wakes a bounded number of keys (the same keys while
        the index holds the same ones).
        """
        informer = self._informers.get(_InformerKey(resource, metadata))
        if informer is None:
            raise RuntimeError(f"no informer for {resource} in this cache: register one "
                               "(index_field, informer_for or a watch) before reading it")
        name = _FIELD_PREFIX + field[0]
        if limit is not None and namespace is None:
            return informer.store.first_index_keys(name, field[1], limit)
        keys = sorted(k for k in informer.store.index_keys(name, field[1])
                      if namespace is None or k.namespace == namespace)
        return keys if limit is None else keys[:limit]

    @staticmethod
    def _read(informer: Informer, namespace: str | None,
              label_selector: str | Mapping[str, Any] | LabelSelector | None,
              field: tuple[str, str] | None) -> Objs:
        store = informer.store
        if field is not None:
            objects = store.by_index(_FIELD_PREFIX + field[0], field[1])
            if namespace is not None:
                objects = [o for o in objects if object_key(o).namespace == namespace]
        else:
            objects = store.list(namespace)
        if label_selector is not None:
            if isinstance(label_selector, LabelSelector):
                selector = label_selector
            elif isinstance(label_selector, str):
                selector = LabelSelector.parse(label_selector)
            else:
                selector = LabelSelector.from_dict(label_selector)
            objects = [o for o in objects
                       if selector.matches((o.get("metadata") or {}).get("labels"))]
        return objects

    # -- read-your-own-writes ----------------------------------------------------------------------

    def has_seen_own_write(self, resource: Resource, name: str,
                           namespace: str | None = None) -> bool:
        """False while the cache predates the last write this client made to the object."""
        key = ObjectKey(namespace or "" if resource.namespaced else "", name)
        return self.own_writes.satisfied((resource, key))

    def _on_write(self, record: WriteRecord) -> None:
        # Only what this cache watches can ever be observed: an expectation for
        # anything else (Events, say) would only wait for its timeout.
        if not any(key.resource == record.resource for key in self._informers):
            return
        if record.resource_version and not record.deleted:
            self.own_writes.expect((record.resource, record.key), record.resource_version)
        elif record.deleted:
            self.own_writes.delete((record.resource, record.key))
