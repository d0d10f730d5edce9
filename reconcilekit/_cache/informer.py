"""The informer: a watcher feeding a store, and handlers told about every change.

Guarantees:
  * after each list (the first one and every relist) the store holds exactly
    the listed objects: objects gone from the server get ``on_delete`` with
    their last known state, changed ones ``on_update(old, new)``, new ones
    ``on_add``; so handlers converge whatever events were lost;
  * an informer of several ``namespaces`` runs one list+watch per namespace
    into its one store, and a list converges only its own namespace's
    objects: a relist of one namespace never touches the others;
  * a list is read page by page and stored only once complete (see
    :class:`Listing`): the store never holds half a list, and a list that
    fails midway changes nothing and tells no handler;
  * a watch event that changes nothing the store holds (same
    resourceVersion, e.g. replayed after a reconnect) calls no handler; nor
    does a DELETED event for an object the store no longer holds (a relist
    found it gone and told ``on_delete`` already: each deletion is told once);
  * ``has_synced`` turns True once the first complete list of every
    namespace has been stored and stays True; ``synced`` is an event to
    wait on;
  * a handler added late is first told ``on_add`` for every stored object;
  * a handler that raises is logged and does not stop the informer or the
    other handlers;
  * handlers receive fresh dicts: mutating them cannot corrupt the store;
  * a resource the API server does not serve (its list answers 404: a CRD
    not installed or not established yet) is waited for, not retried with a
    WARNING a minute: one INFO line when the wait begins, naming what is
    awaited (``waiting_for`` in :meth:`statistics`), one when it is served,
    and then the informer lists and syncs as it would have (see
    ``served.py``); it never syncs meanwhile;
  * ``reserve``, if given, is told before the informer's first list is
    stored how many JSON bytes it has prepared so far, page by page, and
    may refuse it by raising :class:`SinkRefused` (the cache's memory
    budget): :meth:`run` then raises it, having stored nothing and told no
    handler; later lists and events are never refused;
  * after :meth:`close` the store is empty, no handler is told anything
    more, and the informer holds nothing it listed (its memory can be
    given back).

The ``transform`` runs on every object before it is stored or handed to a
handler; by default it drops ``metadata.managedFields``, which controllers
rarely read and which is often a third of a Pod's size.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final, Literal

import anyio
import orjson

from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.objects import Obj, ObjectKey, Resource, object_key, resource_version_of
from .backoff import Backoff
from .mutation_detector import MutationDetector
from .served import awaited, until_served
from .store import (
    DEFAULT_SHARED_READ_MEMORY,
    NAMESPACE_INDEX,
    IndexFunc,
    Prepared,
    Store,
    encode,
)
from .watch_sink import SinkRefused
from .watcher import NotServed, Watcher, WatchOptions

__all__ = [
    "EventHandler",
    "Informer",
    "InformerStatistics",
    "Listing",
    "Transform",
    "metadata_only",
    "strip_managed_fields",
]

logger = logging.getLogger("reconcilekit.informer")
_SYSTEM_CLOCK: Final = SystemClock()

Transform = Callable[[Obj], Obj]


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: drop ``metadata.managedFields``."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return obj


def metadata_only(obj: Obj) -> Obj:
    """Keep only apiVersion, kind and metadata (without managedFields).

    For kinds a controller only maps events from: the cache then holds what
    a PartialObjectMetadata would, a fraction of the object. ``obj`` itself
    when it holds nothing else (a metadata-only list's items, their
    ``managedFields`` cut before decoding), as :func:`strip_managed_fields`
    returns the object it was given.
    """
    meta = obj.get("metadata")
    if len(obj) == 3 and type(meta) is dict and "managedFields" not in meta and (
            "kind" in obj and "apiVersion" in obj):
        return obj
    meta = dict(meta or {})
    meta.pop("managedFields", None)
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": meta}


_DROPPING_MANAGED_FIELDS: Final = (strip_managed_fields, metadata_only)


@dataclass(frozen=True, slots=True)
class EventHandler:
    """Callbacks for one consumer of an informer; any of them may be None."""

    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


class _PagedSink(abc.ABC):
    """A watch sink that stores every list through a :class:`Listing` (``begin_list``):
    a complete list handed over at once is a list of one page."""

    __slots__ = ()

    @abc.abstractmethod
    def begin_list(self) -> Listing:
        """A complete list, delivered page by page."""

    def replace(self, objects: list[Obj], resource_version: str) -> None:
        """Converge to a complete list (what :meth:`begin_list` converges to); tell
        handlers what changed."""
        listing = self.begin_list()
        listing.add(objects)
        listing.finish(resource_version)


@dataclass(frozen=True, slots=True)
class InformerStatistics:
    """Per-informer numbers for metrics, health and debugging."""

    resource: str
    objects: int
    synced: bool
    lists: int
    relists: int
    watch_restarts: int
    dead_watches: int
    events: int
    last_event_age: float | None  # seconds since the last event or bookmark
    watching: bool
    last_error: str | None
    bytes: int = 0  # the JSON the store holds for its objects
    waiting_for: str | None = None  # what a resource not served is waited for (in words)
    shared_bytes: int = 0  # the decoded objects kept for shared reads (estimated)


class Informer(_PagedSink):
    """Keeps a :class:`Store` of one resource in step with the API server.

    ``run()`` (in a task group) lists and watches until cancelled; the store
    and handlers can be set up before or after it starts.
    """

    def __init__(self, client: Client, resource: Resource, *, namespace: str | None = None,
                 namespaces: Collection[str] | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 transform: Transform | None = strip_managed_fields,
                 resync_period: float | None = None, relist_period: float | None = None,
                 liveness_timeout: float = 60.0, metadata_only: bool = False,
                 page_size: int = 500, admit: Callable[[Obj], bool] | None = None,
                 shard_selector: Callable[[], str | None] | None = None,
                 clock: Clock = _SYSTEM_CLOCK,
                 backoff: Backoff | None = None,
                 shared_read_memory: int = DEFAULT_SHARED_READ_MEMORY,
                 detector: MutationDetector | None = None,
                 reserve: Callable[[Informer, int], None] | None = None,
                 list_from: Literal["watch_cache", "etcd"] | None = None) -> None:
        """Keep ``resource``, read through ``client``, in a new :attr:`store`.

        ``namespace`` watches one namespace (None: all of them); ``namespaces``
        instead watches each of several, one :class:`Watcher` apiece (in
        :attr:`watchers`, sharing ``backoff`` if one is given), as
        controller-runtime's multi-namespace cache does. Every watcher is made
        with the same :class:`WatchOptions`: ``label_selector``,
        ``field_selector``, ``page_size``, ``liveness_timeout``,
        ``relist_period``, ``metadata_only``, ``shard_selector`` and
        ``list_from``, as described there (selectors go to the server with
        every list and watch).

        ``transform`` runs on every object before it is stored or handed to a
        handler (None: none). ``resync_period``: seconds between two
        :meth:`resync` (None: never). ``admit`` says which objects the store
        holds, beyond the server's selection (a sharded manager's: those of
        its replica's shards; None: every one the server sends); an object it
        refuses is never stored nor handed to a handler. ``clock`` times the
        resyncs and the watchers. ``shared_read_memory`` and ``detector`` are the
        store's (see :class:`Store`). ``reserve(informer, nbytes)`` may refuse
        the first list (see the module docstring).

        Raises ValueError for both ``namespace`` and ``namespaces``, an empty
        ``namespaces``, or options :class:`WatchOptions` refuses.
        """
        if namespaces is not None:
            if namespace is not None:
                raise ValueError("give namespace or namespaces, not both")
            if isinstance(namespaces, str) or not namespaces:
                raise ValueError(f"namespaces must be a non-empty collection of names, "
                                 f"got {namespaces!r}")
        targets = [namespace] if namespaces is None else sorted(set(namespaces))
        options = WatchOptions(label_selector=label_selector, field_selector=field_selector,
                               page_size=page_size, liveness_timeout=liveness_timeout,
                               relist_period=relist_period, metadata_only=metadata_only,
                               shard_selector=shard_selector, list_from=list_from,
                               drop_managed_fields=transform in _DROPPING_MANAGED_FIELDS)
        self.resource = resource
        self.store = Store(shared_read_memory=shared_read_memory, detector=detector,
                           name=str(resource))
        self.transform = transform
        self.resync_period = resync_period
        self.admit = admit
        self.clock = clock
        self.client = client
        self.reserve = reserve
        self.synced = anyio.Event()
        self._serving: anyio.Event | None = None  # set once a resource waited for is served
        self._closed = False
        self.stopped = anyio.Event()  # set by close()
        self.refusal: SinkRefused | None = None  # why its cache refused it, if it did
        self._handlers: list[EventHandler] = []
        self._version_observers: list[Callable[[ObjectKey, str], None]] = []
        self.watchers = tuple(
            Watcher(client, resource, namespace=target, options=options, clock=clock,
                    backoff=backoff)
            for target in targets)
        # One watcher lists the whole store (replace); several list a namespace each.
        self._unlisted: set[str | None] = {None} if len(targets) == 1 else set(targets)

    # -- set-up --------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        return self.synced.is_set()

    @property
    def metadata_only(self) -> bool:
        """Whether it lists and watches ``PartialObjectMetadata`` (see :class:`WatchOptions`)."""
        return self.watchers[0].options.metadata_only

    async def until_synced_or_stopped(self) -> None:
        """Return once the informer has synced or was closed (whichever first)."""
        if self.has_synced or self.stopped.is_set():
            return
        async with anyio.create_task_group() as tg:
            async def stopped() -> None:
                await self.stopped.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stopped)
            await self.synced.wait()
            tg.cancel_scope.cancel()

    @property
    def watcher(self) -> Watcher:
        """The informer's only watcher (RuntimeError if it watches several namespaces:
        see :attr:`watchers`)."""
        if len(self.watchers) != 1:
            raise RuntimeError(f"{self.resource}: this informer watches "
                               f"{len(self.watchers)} namespaces, one watcher each: "
                               "see watchers")
        return self.watchers[0]

    async def reshard(self) -> None:
        """``admit`` now takes objects it did not: list again, and return once every
        watcher has (the store then holds them, and handlers were told)."""
        tickets = [(watcher, watcher.request_relist()) for watcher in self.watchers]
        for watcher, ticket in tickets:
            await watcher.relisted(ticket)

    def forget(self, which: Callable[[ObjectKey], bool]) -> int:
        """Drop the stored objects whose key ``which`` selects, telling no handler (they
        were not deleted: this replica stopped caring for them); how many."""
        keys = [key for key in self.store if which(key)]
        for key in keys:
            self.store.delete(key)
        return len(keys)

    def add_handler(self, handler: EventHandler) -> None:
        """Register ``handler``; if objects are stored already it gets ``on_add`` for each."""
        self._handlers.append(handler)
        if handler.on_add is not None:
            for obj in self.store.list():
                self._call(handler.on_add, obj)

    def remove_handler(self, handler: EventHandler) -> None:
        """Tell ``handler`` nothing more (no ``on_delete`` for what it was told of)."""
        if handler in self._handlers:
            self._handlers.remove(handler)

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Add a named index to the store (see :meth:`Store.add_index`)."""
        self.store.add_index(name, fn)

    def add_version_observer(self, observer: Callable[[ObjectKey, str], None]) -> None:
        """Tell ``observer`` (key, resourceVersion) of every object stored or deleted from
        now on, once the store holds the change (so ``key in store`` tells a write from
        a deletion); it must be cheap."""
        self._version_observers.append(observer)

    # -- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled (resyncing handlers if a period is set).

        Raises :class:`SinkRefused` if ``reserve`` refused the first list (and keeps it
        in :attr:`refusal`)."""
        if self._closed:
            raise RuntimeError(f"{self.resource}: this informer was closed")
        failure: SinkRefused | None = None
        async with anyio.create_task_group() as tg:
            if self.resync_period:
                tg.start_soon(self._resync_loop, self.resync_period)
            try:
                if len(self.watchers) == 1:
                    await self._run_served(self.watchers[0], self)
                else:
                    async with anyio.create_task_group() as watchers:
                        for watcher in self.watchers:
                            watchers.start_soon(self._run_served, watcher,
                                                _NamespaceSink(self, watcher.namespace))
            except* SinkRefused as group:
                failure = group.exceptions[0]  # type: ignore[assignment]
                tg.cancel_scope.cancel()
        if failure is not None:
            self.refusal = failure
            raise failure

    async def _run_served(self, watcher: Watcher, sink: Informer | _NamespaceSink) -> None:
        """Run ``watcher``; while its resource is not served, wait until it is."""
        while True:
            try:
                await watcher.run(sink)
            except NotServed:
                await self._until_served()

    async def _until_served(self) -> None:
        """Wait until the resource is served: one wait, and one pair of log lines, for
        every watcher that found it not served meanwhile."""
        serving = self._serving
        if serving is not None:
            await serving.wait()
            return
        self._serving = serving = anyio.Event()
        extra = {"resource": str(self.resource)}
        logger.info("%s: not served by the API server; waiting for %s", self.resource,
                    awaited(self.resource), extra=extra)
        try:
            await until_served(self.client, self.resource, self.clock)
        finally:
            self._serving = None
            serving.set()
        logger.info("%s: served now; listing", self.resource, extra=extra)

    def close(self) -> None:
        """Forget everything: the store is emptied and no handler or observer is told
        anything more. For a cache that stopped this informer (cancelled :meth:`run`);
        it cannot run again."""
        self._closed = True
        self.stopped.set()
        self._handlers.clear()
        self._version_observers.clear()
        self.store.clear()

    async def _resync_loop(self, period: float) -> None:
        while True:
            await self.clock.sleep(period)
            if self.has_synced:
                self.resync()

    def resync(self) -> None:
        """Tell every handler ``on_update(obj, obj)`` for every stored object (level-triggered)."""
        for obj in self.store.list():
            for handler in self._handlers:
                if handler.on_update is not None:
                    self._call(handler.on_update, obj, orjson.loads(encode(obj)))

    def statistics(self) -> InformerStatistics:
        """This informer's numbers, summed over its watchers when it watches several
        namespaces: ``watching`` only if every watch is open, the event age the
        youngest, and ``last_error`` each failing namespace's, named."""
        stats = [w.statistics() for w in self.watchers]
        activity = [s.last_activity for s in stats if s.last_activity is not None]
        age = self.clock.monotonic() - max(activity) if activity else None
        if len(stats) == 1:
            last_error = stats[0].last_error
        else:
            last_error = "; ".join(f"namespace {w.namespace}: {s.last_error}"
                                   for w, s in zip(self.watchers, stats, strict=True)
                                   if s.last_error is not None) or None
        return InformerStatistics(
            str(self.resource), len(self.store), self.has_synced,
            sum(s.lists for s in stats), sum(max(0, s.lists - 1) for s in stats),
            sum(s.restarts for s in stats), sum(s.dead_watches for s in stats),
            sum(s.events for s in stats), age, all(s.watching for s in stats), last_error,
            self.store.nbytes, awaited(self.resource) if self._serving is not None else None,
            self.store.shared_nbytes)

    # -- the watcher's sink ---------------------------------------------------------------------

    def _prepare(self, obj: Obj) -> Obj:
        return self.transform(obj) if self.transform is not None else obj

    def begin_list(self) -> Listing:
        """A complete list, delivered page by page, that the whole store converges to
        when it is finished (the sink of an informer's only watcher)."""
        return Listing(self, None)

    def _converge(self, fresh: dict[ObjectKey, tuple[Prepared, str]], namespace: str | None,
                  resource_version: str) -> None:
        """Converge the objects of ``namespace`` (None: the whole store) to a complete list.

        An object the list no longer holds is observed at the list's
        ``resource_version``: whatever was written to it up to then is superseded
        (a write whose DELETED event the watch never carried would otherwise be
        waited for by read-your-own-writes until its timeout)."""
        held = self.store if namespace is None else self.store.index_keys(NAMESPACE_INDEX,
                                                                          namespace)
        for key in held:
            if key not in fresh:
                raw = self.store.delete(key)
                assert raw is not None
                self._observe_version(key, resource_version)
                self._notify_delete(orjson.loads(raw))
        for key, (prepared, rv) in fresh.items():
            self._upsert(key, prepared, rv)
        self._unlisted.discard(namespace)
        if not self._unlisted and not self.synced.is_set():
            self.synced.set()

    def apply(self, event_type: str, obj: Obj) -> None:
        if self.admit is not None and not self.admit(obj):
            return  # another replica's shard: never stored, never handled
        prepared = self._prepare(obj)
        key = object_key(prepared)
        if event_type == "DELETED":
            held = self.store.delete(key)
            self._observe_version(key, resource_version_of(prepared))
            if held is not None:  # else a relist told it already (as client-go's DeltaFIFO)
                self._notify_delete(prepared)  # a DELETED event carries the last state
        else:
            self._upsert(key, self.store.prepare(prepared), resource_version_of(prepared), prepared)

    def _observe_version(self, key: ObjectKey, resource_version: str) -> None:
        if resource_version:
            for observer in self._version_observers:
                observer(key, resource_version)

    def _upsert(self, key: ObjectKey, prepared: Prepared, rv: str, obj: Obj | None = None
                ) -> None:
        """Store ``prepared`` (``obj`` decoded, if at hand) and tell handlers, unless the
        store holds it already."""
        stored = self.store.get_raw(key)
        old = None
        raw = prepared[0]
        if stored is not None and stored != raw and self._handlers:
            old = orjson.loads(stored)
        if stored == raw or (old is not None and rv and resource_version_of(old) == rv):
            self._observe_version(key, rv)
            return  # nothing new: a replayed or relisted unchanged object
        self.store.put_prepared(key, prepared)
        self._observe_version(key, rv)
        for i, handler in enumerate(self._handlers):
            # Each handler its own copies, decoded only for a callback that takes them.
            if stored is None:
                if handler.on_add is not None:
                    self._call(handler.on_add, obj if i == 0 and obj is not None
                               else orjson.loads(raw))
            elif handler.on_update is not None:
                assert old is not None
                self._call(handler.on_update, old if i == 0 else orjson.loads(stored),
                           obj if i == 0 and obj is not None else orjson.loads(raw))

    def _notify_delete(self, obj: Obj) -> None:
        for i, handler in enumerate(self._handlers):
            if handler.on_delete is not None:
                self._call(handler.on_delete, obj if i == 0 else orjson.loads(encode(obj)))

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:
            logger.exception("%s: event handler %r failed", self.resource, fn)


class _NamespaceSink(_PagedSink):
    """Where the watcher of one of an informer's several namespaces delivers."""

    __slots__ = ("_informer", "_namespace")

    def __init__(self, informer: Informer, namespace: str | None) -> None:
        self._informer, self._namespace = informer, namespace

    def begin_list(self) -> Listing:
        return Listing(self._informer, self._namespace)

    def apply(self, event_type: str, obj: Obj) -> None:
        self._informer.apply(event_type, obj)


class Listing:
    """One list in progress: each page prepared as it arrives, stored once complete.

    :meth:`add` encodes and indexes a page's objects (:meth:`Store.prepare`)
    and keeps only that, so a list never holds more than one page of decoded
    dicts; :meth:`finish` converges the store (or its namespace) to the
    complete list and tells the handlers. Until then neither the store nor a
    handler sees anything of it: a list that fails midway (a 410 on a continue
    token, a lost connection) is dropped, and the store stays what the last
    complete list and the watch events since made it.
    """

    __slots__ = ("_bytes", "_fresh", "_informer", "_namespace", "_reserve")

    def __init__(self, informer: Informer, namespace: str | None) -> None:
        self._informer, self._namespace = informer, namespace
        self._fresh: dict[ObjectKey, tuple[Prepared, str]] = {}
        self._bytes = 0
        self._reserve = None if informer.has_synced else informer.reserve

    def add(self, objects: list[Obj]) -> None:
        """The objects of one page (ValueError for one that cannot be stored;
        :class:`SinkRefused` from the informer's ``reserve``)."""
        informer, fresh = self._informer, self._fresh
        admit, transform, store = informer.admit, informer.transform, informer.store
        added = 0
        for obj in objects:
            if admit is not None and not admit(obj):
                continue
            prepared = transform(obj) if transform is not None else obj
            ready = store.prepare(prepared)
            added += len(ready[0])
            fresh[object_key(prepared)] = ready, resource_version_of(prepared)
        if self._reserve is not None:
            self._bytes += added
            self._reserve(informer, self._bytes)

    def finish(self, resource_version: str) -> None:
        """The list is complete, at ``resource_version``: converge to it."""
        fresh, self._fresh = self._fresh, {}
        self._informer._converge(fresh, self._namespace, resource_version)
