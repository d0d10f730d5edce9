"""``Cache``: shared informers per resource, cached reads, field indexes, sync.

Every controller of a manager reads through one cache: one informer (one
list+watch, one store) per resource however many controllers use it.

Guarantees:
  * ``get`` and ``list`` never touch the API server; they answer from the
    store once that resource's informer has synced (waiting for it if it was
    just created) and return fresh dicts the caller may mutate, or with
    ``shared=True`` the cache's own decoded objects, which the caller must not
    mutate (a :class:`MutationDetector`, on where tests run, fails a test
    that does);
  * ``wait_for_sync(timeout)`` either returns with every informer synced or
    raises :class:`CacheSyncTimeout` naming each resource that did not sync
    and its last error, or what it waits for (a kind whose CRD is not
    installed yet): it never hangs;
  * read-your-own-writes: every write made through the client given to the
    cache is remembered with the resourceVersion it returned, and
    :meth:`has_seen_own_write` stays False until the cache has seen that
    object at that version or newer (or the expectation timed out, which is
    logged and counted), so a reconciler can avoid acting on a cache that
    predates its own last write.

Scope (controller-runtime's ``cache.Options``): ``default_namespaces`` and
``scopes={resource: CacheScope(...)}`` say which namespaces, labels and
fields of each resource the cache lists, watches and holds; see
:class:`CacheScope`. Each resource has one scope per cache, fixed by the
first of: ``scopes``, :meth:`Cache.require_scope`, or the creation of its
informer (which takes the default). Then:
  * one list+watch per namespace of the scope, merged into one store: reads,
    field indexes and handlers see every namespace of it as one;
  * selectors are sent to the server, so nothing outside the scope is
    listed, watched, stored or handed to a handler;
  * a read naming a namespace outside the scope raises
    :class:`CacheScopeError`, never answers "nothing" (except under the
    older ``namespace=``, whose reads elsewhere find nothing, as they did);
  * asking for a second, different scope of a resource raises
    :class:`CacheScopeError`: what one controller watches is never widened
    or narrowed behind its back by another.

Informers come and go (controller-runtime's ``GetInformer`` and
``RemoveInformer``, counted): :meth:`Cache.acquire` gives one user's hold on
a resource's informer (an :class:`InformerUse`; a controller's watch takes
one), and when the last hold is released the informer stops: its watches
are closed, its store is emptied and dropped, its metrics series end, and
read-your-own-writes stops waiting for its objects. An informer created
without a hold (:meth:`informer_for`, :meth:`index_field`, a read) is the
cache's for good. A read of a resource whose informer stopped starts a new
one, as the first read did. With ``memory_budget`` a new informer is
refused (:class:`CacheMemoryBudgetExceeded`) rather than hold more than the
budget (see ``budget.py``).

Reading from a cache that is not running raises RuntimeError at once.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar, overload

import anyio
import anyio.abc
import orjson

from .._client.client import Client
from .._client.writes import WriteRecord
from .._expectations.resource_versions import ResourceVersionExpectations
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import NotFound
from .._foundations.objects import (
    Obj,
    ObjectKey,
    Resource,
    TypedResource,
    resource_version_of,
)
from .._foundations.selectors import LabelSelector
from .budget import CacheMemoryBudgetExceeded, MemoryBudget
from .informer import (
    EventHandler,
    Informer,
    InformerStatistics,
    metadata_only,
    strip_managed_fields,
)
from .mutation_detector import DETECTOR, MutationDetector, detection_default
from .scope import CacheScope, CacheScopeError, resolve_scope
from .store import DEFAULT_SHARED_READ_MEMORY

__all__ = ["Cache", "CacheSyncTimeout", "InformerUse"]

logger = logging.getLogger("reconcilekit.cache")

_SYSTEM_CLOCK: Final = SystemClock()
Objs = list[Obj]  # spelled here: the class below has a method named ``list``
_T = TypeVar("_T")
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


class InformerUse:
    """One user's hold on a shared informer (from :meth:`Cache.acquire`).

    Invariant: released at most once; while held, :attr:`informer` stays in
    its cache (it may still be refused by the memory budget on its first
    list: reads then raise :class:`CacheMemoryBudgetExceeded`).
    """

    __slots__ = ("_cache", "_key", "informer", "released")

    def __init__(self, cache: Cache, key: _InformerKey, informer: Informer) -> None:
        self._cache, self._key, self.informer = cache, key, informer
        self.released = False

    def release(self) -> None:
        """Let go of the informer; the last user to let go stops it. Idempotent."""
        if not self.released:
            self.released = True
            self._cache._release(self._key, self.informer)

    def __repr__(self) -> str:
        state = "released" if self.released else "held"
        return f"InformerUse({self.informer.resource}, {state})"


@dataclass(frozen=True, slots=True)
class _FixedScope:
    """The resolved scope a resource is cached with, and what fixed it (for errors)."""

    scope: CacheScope
    fixed_by: str
    strict: bool  # False: reads of other namespaces find nothing (the older namespace=)


class Cache:
    """Shared informers for one client, and the reads controllers make from them.

    Invariants: every resource with an informer is in ``_scopes``, and its
    informers (full and metadata-only) list and watch exactly that scope;
    a scope in ``_scopes`` is resolved (its ``namespaces`` is never None)
    and never changes. Every informer is made with the cache's ``admit`` and
    ``shard_selector``. ``_readable`` holds only full informers of
    ``_informers`` that have synced, each with whether its scope is every
    namespace. An informer is in ``_informers`` while it is pinned (made
    without a hold) or held (``_users`` > 0); once neither, it is stopped
    (its run cancelled, :meth:`Informer.close` called) and dropped from every
    mapping. While the cache runs, each informer of ``_informers`` runs in its
    own cancel scope in ``_running``.
    """

    def __init__(self, client: Client, *, namespace: str | None = None,
                 default_namespaces: Iterable[str] | None = None,
                 scopes: Mapping[Resource, CacheScope] | None = None,
                 clock: Clock = _SYSTEM_CLOCK, resync_period: float | None = None,
                 relist_period: float | None = None, liveness_timeout: float = 60.0,
                 own_write_timeout: float = 60.0,
                 admit: Callable[[Obj], bool] | None = None,
                 shard_selector: Callable[[], str | None] | None = None,
                 shared_read_memory: int = DEFAULT_SHARED_READ_MEMORY,
                 shared_reads: bool | Iterable[Resource] = False,
                 detect_mutations: bool | None = None,
                 memory_budget: int | None = None) -> None:
        """Cache what ``client`` reads; its writes are remembered for read-your-own-writes.

        ``namespace`` (one namespace) or ``default_namespaces`` (a set; one
        list+watch each) scope every namespaced resource without a scope of
        its own in ``scopes``; neither means all namespaces. Cluster-scoped
        resources are always cached whole.

        ``resync_period``, ``relist_period`` and ``liveness_timeout`` are
        every informer's (see :class:`Informer`); ``own_write_timeout``: how
        long a write is waited for before :meth:`has_seen_own_write` gives up
        on it (logged and counted). ``admit`` says which objects every
        informer stores, beyond the server's selection (a sharded manager's:
        its replica's shards), and ``shard_selector`` gives the same as a
        shard selector asked of the server (one that honours it sends only
        those objects; ``admit`` filters them either way); both are asked
        again on every decision, so they may answer differently as what the
        replica holds changes. ``clock`` times everything.

        ``shared_read_memory``: per informer, the memory (estimated) the
        decoded objects kept for ``shared=True`` reads may take; beyond it the
        least recently read are dropped (0: keep none, every shared read
        decodes). ``shared_reads``: which reads that do not say ``shared=``
        are shared: none (False, the default: copies), all (True), or those of
        the resources given (controller-runtime's per-kind
        ``UnsafeDisableDeepCopy``); with it, ``shared=False`` still asks for
        a copy. ``detect_mutations``: whether shared objects are checked for
        changes by their readers (see :class:`MutationDetector`); None: as
        :func:`detection_default` says (on where tests run, else off).
        ``memory_budget``: the JSON bytes all stores together may hold before
        a new informer is refused (None: no limit; see ``budget.py``).

        Raises ValueError for both ``namespace`` and ``default_namespaces``,
        TypeError for a ``scopes`` entry that is not a Resource and a
        CacheScope.
        """
        if namespace is not None and default_namespaces is not None:
            raise ValueError("give namespace or default_namespaces, not both "
                             "(default_namespaces={ns} is namespace=ns, with strict reads)")
        self.client = client
        self.namespace = namespace
        defaults = CacheScope(namespaces=default_namespaces if namespace is None
                              else {namespace} if namespace else None)
        # None: every namespace.
        self.default_namespaces = None if defaults.all_namespaces else defaults.namespaces
        self._scopes: dict[Resource, _FixedScope] = {}
        self._configured: dict[Resource, CacheScope] = {}
        for resource, scope in (scopes or {}).items():
            if not isinstance(resource, Resource) or not isinstance(scope, CacheScope):
                raise TypeError(f"scopes maps a Resource to a CacheScope, got {resource!r}: "
                                f"{scope!r}")
            self._configured[resource] = scope
            self._scopes[resource] = self._resolve(resource, scope, "the cache's scopes")
        self.clock = clock
        self.resync_period = resync_period
        self.relist_period = relist_period
        self.liveness_timeout = liveness_timeout
        self._informers: dict[_InformerKey, Informer] = {}
        self._users: dict[_InformerKey, int] = {}
        self._pinned: set[_InformerKey] = set()
        self._running: dict[Informer, anyio.CancelScope] = {}
        self.memory_budget = MemoryBudget(memory_budget)
        # Full informers that have synced, and whether their scope is every namespace.
        self._readable: dict[Resource, tuple[Informer, bool]] = {}
        self.admit = admit
        self.shard_selector = shard_selector
        if shared_read_memory < 0:
            raise ValueError(f"shared_read_memory must be >= 0 bytes, got {shared_read_memory}")
        self.shared_read_memory = shared_read_memory
        self._shared_reads: bool | frozenset[Resource] = (
            shared_reads if isinstance(shared_reads, bool) else frozenset(shared_reads))
        self.mutation_detector: MutationDetector | None = DETECTOR if (
            detection_default() if detect_mutations is None else detect_mutations) else None
        self._tg: anyio.abc.TaskGroup | None = None
        self.own_writes: ResourceVersionExpectations[tuple[Resource, ObjectKey]] = (
            ResourceVersionExpectations(name="cache", timeout=own_write_timeout, clock=clock))
        client.add_write_observer(self._on_write)
        client.read_caches.add(self)

    # -- informers -----------------------------------------------------------------------

    def informers(self) -> list[Informer]:
        """Every informer this cache has made so far."""
        return list(self._informers.values())

    def informer_for(self, resource: Resource, *, metadata: bool = False) -> Informer:
        """The shared informer of ``resource`` (created, and started if running, on first use).

        It lists and watches the resource's scope (:meth:`scope_of`): one
        watcher per namespace of it, with its selectors. Creating it fixes
        that scope, if nothing asked for one before.

        ``metadata=True`` gives a metadata-only informer: it lists and watches
        ``PartialObjectMetadata`` (the server sends no spec, status or data)
        and its store keeps apiVersion, kind and metadata, for kinds that only
        map events.
        """
        key = _InformerKey(resource, metadata)
        informer = self._informers.get(key)
        if informer is None:
            informer = self._new_informer(key)
            self._pinned.add(key)
        return informer

    def existing_informer(self, resource: Resource, *, metadata: bool = False
                          ) -> Informer | None:
        """The informer of ``resource`` if the cache has one now; creates none."""
        return self._informers.get(_InformerKey(resource, metadata))

    def acquire(self, resource: Resource, *, metadata: bool = False) -> InformerUse:
        """A hold on the shared informer of ``resource`` (as :meth:`informer_for` makes it);
        when every hold is released (and nothing made it without one), it stops.

        Raises :class:`CacheMemoryBudgetExceeded` if a new informer would not fit
        the memory budget."""
        key = _InformerKey(resource, metadata)
        informer = self._informers.get(key) or self._new_informer(key)
        self._users[key] = self._users.get(key, 0) + 1
        return InformerUse(self, key, informer)

    def _release(self, key: _InformerKey, informer: Informer) -> None:
        users = self._users.get(key, 0) - 1
        if users > 0:
            self._users[key] = users
            return
        self._users.pop(key, None)
        if key not in self._pinned and self._informers.get(key) is informer:
            self._stop(key, informer)

    def _stop(self, key: _InformerKey, informer: Informer) -> None:
        """Stop ``informer`` and forget it: nothing of it is held afterwards."""
        del self._informers[key]
        if self._readable.get(key.resource, (None,))[0] is informer:
            del self._readable[key.resource]
        scope = self._running.pop(informer, None)
        if scope is not None:
            scope.cancel()
        objects, nbytes = len(informer.store), informer.store.nbytes
        informer.close()
        if not any(k.resource == key.resource for k in self._informers):
            self.own_writes.forget_where(lambda wanted: wanted[0] == key.resource)
        logger.info("stopped the %sinformer of %s: no user left (%d objects, %.1f MiB "
                    "freed)", "metadata-only " if key.metadata_only else "", key.resource,
                    objects, nbytes / 2**20, extra={"resource": str(key.resource)})

    def _new_informer(self, key: _InformerKey) -> Informer:
        resource, metadata = key.resource, key.metadata_only
        self.memory_budget.admit(resource, self._held())
        fixed = self._scopes.get(resource)
        if fixed is None:
            fixed = self._scopes[resource] = self._resolve(
                resource, None, "its informer, created (by a watch, index_field or a read) "
                "before any scope was asked for")
        namespaces, labels, fields = _watch_arguments(fixed.scope)
        informer = Informer(
            self.client, resource, namespaces=namespaces,
            label_selector=labels, field_selector=fields,
            transform=metadata_only if metadata else strip_managed_fields,
            metadata_only=metadata,
            resync_period=self.resync_period, relist_period=self.relist_period,
            liveness_timeout=self.liveness_timeout,
            admit=self.admit, shard_selector=self.shard_selector,
            clock=self.clock, shared_read_memory=self.shared_read_memory,
            detector=self.mutation_detector,
            reserve=None if self.memory_budget.limit is None else self._reserve)
        informer.add_version_observer(self._observer(resource, informer))
        self._informers[key] = informer
        if self._tg is not None:
            self._tg.start_soon(self._run_informer, key, informer)
        return informer

    def _held(self) -> Iterable[tuple[str, int]]:
        return ((str(i.resource), i.store.nbytes) for i in self._informers.values())

    def _reserve(self, informer: Informer, nbytes: int) -> None:
        """The memory budget's word on ``nbytes`` more of ``informer``'s first list."""
        self.memory_budget.admit(informer.resource, self._held(), nbytes)

    async def _run_informer(self, key: _InformerKey, informer: Informer) -> None:
        """Run ``informer`` until cancelled or stopped; one refused by the memory budget
        is stopped and dropped, and its readers get the error."""
        with anyio.CancelScope() as scope:
            self._running[informer] = scope
            try:
                await informer.run()
            except CacheMemoryBudgetExceeded as err:
                logger.error("%s", err, extra={"resource": str(key.resource)})
                if self._informers.get(key) is informer:
                    self._pinned.discard(key)
                    self._users.pop(key, None)
                    self._stop(key, informer)
            finally:
                if self._running.get(informer) is scope:
                    del self._running[informer]

    # -- scopes --------------------------------------------------------------------------

    def scope_of(self, resource: Resource) -> CacheScope:
        """The resolved scope ``resource`` is cached with (or would be, if nothing asked yet).

        Its ``namespaces`` is never None: ``{ALL_NAMESPACES}`` stands for
        every namespace (and for any cluster-scoped resource).
        """
        fixed = self._scopes.get(resource)
        if fixed is not None:
            return fixed.scope
        return self._resolve(resource, None, "").scope

    def require_scope(self, resource: Resource, scope: CacheScope | None = None) -> CacheScope:
        """Cache ``resource`` with ``scope``; returns it resolved (see :meth:`scope_of`).

        ``None`` asks for the scope the cache was built with for it (its
        ``scopes`` entry, else the default namespaces). The first call (or
        the first informer of ``resource``) fixes its scope; a later call
        asking for a different resolved scope raises :class:`CacheScopeError`
        naming both, because the informer is shared: widening it would hand
        other watchers objects they excluded, narrowing it would hide
        objects from them. Call it before anything creates the informer
        (a watch, :meth:`index_field`, a read). Raises ValueError for
        namespaces given to a cluster-scoped resource.
        """
        wanted = self._resolve(resource, scope if scope is not None
                               else self._configured.get(resource),
                               "an earlier require_scope (as a builder's for_, owns and watches "
                               "make)")
        fixed = self._scopes.setdefault(resource, wanted)
        if fixed.scope != wanted.scope:
            raise CacheScopeError(
                f"{resource} is already cached with scope ({fixed.scope}), fixed by "
                f"{fixed.fixed_by}; it cannot also be cached with scope ({wanted.scope}): "
                "a cache holds one scope per resource, shared by every controller that "
                "watches it. Ask for the same scope everywhere (a builder's scope= on each "
                "for_/owns/watches of it), or set it once with Manager(cache_scopes=...)",
                resource, fixed.scope)
        return fixed.scope

    def _resolve(self, resource: Resource, scope: CacheScope | None,
                 fixed_by: str) -> _FixedScope:
        resolved = resolve_scope(resource, scope, self.default_namespaces)
        from_default = scope is None or scope.namespaces is None
        return _FixedScope(resolved, fixed_by,
                           strict=not (from_default and self.namespace is not None))

    def _check_namespace(self, resource: Resource, namespace: str | None) -> None:
        """Raise :class:`CacheScopeError` if ``namespace`` is outside ``resource``'s scope."""
        fixed = self._scopes.get(resource)
        if (not namespace or fixed is None or _holds(fixed.scope, namespace)
                or not fixed.strict):
            return
        raise CacheScopeError(
            f"{resource} in namespace {namespace!r} is outside this cache's scope for it "
            f"({fixed.scope}): the cache never lists or watches it, so it cannot answer. "
            "Widen the scope (Manager(default_namespaces=... or cache_scopes=...)), or read "
            "that namespace from the API server with the client", resource, fixed.scope)

    # -- indexes and handlers ----------------------------------------------------------------

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
                for key, informer in self._informers.items():
                    tg.start_soon(self._run_informer, key, informer)
                task_status.started()
                await anyio.sleep_forever()  # informers created later start in this group
        finally:
            self._tg = None
            if self.mutation_detector is not None:
                self.mutation_detector.check()  # logged now; the pytest plugin fails the test

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
                    await informer.until_synced_or_stopped()
                tg.cancel_scope.cancel()
        refused = [i.refusal for i in informers if i.refusal is not None]
        if refused:
            raise refused[0]
        unsynced = {str(i.resource): _why_unsynced(i.statistics()) for i in informers
                    if not i.has_synced and not i.stopped.is_set()}
        if unsynced:
            raise CacheSyncTimeout(timeout, unsynced)

    def statistics(self) -> list[InformerStatistics]:
        return [i.statistics() for i in self._informers.values()]

    # -- reads -----------------------------------------------------------------------------------

    async def _synced(self, resource: Resource, metadata: bool,
                      namespace: str | None) -> Informer:
        if self._tg is None:
            raise RuntimeError("the cache is not running: start Cache.run() first")
        informer = self.informer_for(resource, metadata=metadata)
        self._check_namespace(resource, namespace)
        while not informer.has_synced:
            await informer.until_synced_or_stopped()
            if informer.refusal is not None:
                raise informer.refusal
            if informer.stopped.is_set():  # its last user let go meanwhile: a new one
                informer = self.informer_for(resource, metadata=metadata)
        if not metadata and self._tg is not None:
            self._readable[resource] = (informer, self._scopes[resource].scope.all_namespaces)
        return informer

    def _shares(self, resource: Resource) -> bool:
        """Whether a read of ``resource`` that does not say is shared (``shared_reads``)."""
        every = self._shared_reads
        return every if isinstance(every, bool) else resource in every

    def _ready(self, resource: Resource, metadata: bool,
               namespace: str | None) -> Informer | None:
        """What :meth:`_synced` answers, found by one lookup in the common case (a running
        cache's synced full informer; its scope checked); None: ask it."""
        ready = self._readable.get(resource) if not metadata and self._tg is not None else None
        if ready is None:
            return None
        informer, everywhere = ready
        if not everywhere:
            self._check_namespace(resource, namespace)
        return informer

    def _registered(self, resource: Resource, metadata: bool,
                    namespace: str | None) -> Informer:
        informer = self._informers.get(_InformerKey(resource, metadata))
        if informer is None:
            raise RuntimeError(f"no informer for {resource} in this cache: register one "
                               "(index_field, informer_for or a watch) before reading it")
        self._check_namespace(resource, namespace)
        return informer

    @overload
    async def get(self, resource: TypedResource[_T], name: str,  # type: ignore[overload-overlap]
                  namespace: str | None = None, *, metadata: Literal[False] = False,
                  shared: bool | None = None) -> _T: ...
    @overload
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  metadata: bool = False, shared: bool | None = None) -> Obj: ...
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  metadata: bool = False, shared: bool | None = None) -> Any:
        """The cached object; raises :class:`NotFound` when the cache has none.

        A fresh copy the caller may change; with ``shared=True`` the cache's
        own object, the same for every reader until the object changes, which
        the caller must not change (no copy is made; see
        docs/concepts/cache.md for what each costs). ``shared=None`` (the
        default): as the cache's ``shared_reads`` says for ``resource``.

        An object outside the resource's label or field selector is not in
        the cache: NotFound. A namespace outside its scope raises
        :class:`CacheScopeError` (as do :meth:`list`, :meth:`lookup` and
        :meth:`lookup_keys`).
        """
        informer = self._ready(resource, metadata, namespace)
        if informer is None:
            informer = await self._synced(resource, metadata, namespace)
        # A plain tuple finds what an ObjectKey does (it is one), without building one.
        obj = informer.store.get((namespace or "" if resource.namespaced else "", name),
                                 shared=self._shares(resource) if shared is None else shared)
        if obj is None:
            raise NotFound(f'{resource.group_resource} "{name}" not found in the cache',
                           status=404, reason="NotFound",
                           details={"name": name, "kind": resource.plural})
        return obj

    @overload
    async def list(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                   namespace: str | None = None, *,
                   label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
                   field: tuple[str, str] | None = None,
                   metadata: Literal[False] = False, shared: bool | None = None
                   ) -> builtins.list[_T]: ...
    @overload
    async def list(self, resource: Resource, namespace: str | None = None, *,
                   label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
                   field: tuple[str, str] | None = None, metadata: bool = False,
                   shared: bool | None = None) -> Objs: ...
    async def list(self, resource: Resource, namespace: str | None = None, *,
                   label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
                   field: tuple[str, str] | None = None, metadata: bool = False,
                   shared: bool | None = None) -> Any:
        """Cached objects, sorted by namespace/name, filtered by namespace, labels and field.

        ``label_selector`` is a selector string (``"app=web,tier!=db"``), a
        metav1.LabelSelector dict (``matchLabels``/``matchExpressions``) or a
        :class:`LabelSelector`. A field lookup costs O(matches); a label
        selector is evaluated once per distinct set of labels (or per
        candidate, when there are fewer), and only selected objects are
        decoded. ``shared``: as for :meth:`get`, the cache's own objects.
        """
        informer = self._ready(resource, metadata, namespace)
        if informer is None:
            informer = await self._synced(resource, metadata, namespace)
        return self._read(informer, namespace, label_selector, field,
                          self._shares(resource) if shared is None else shared)

    @overload
    def lookup(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
               namespace: str | None = None, *,
               label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
               field: tuple[str, str] | None = None,
               metadata: Literal[False] = False, shared: bool | None = None
               ) -> builtins.list[_T]: ...
    @overload
    def lookup(self, resource: Resource, namespace: str | None = None, *,
               label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
               field: tuple[str, str] | None = None, metadata: bool = False,
               shared: bool | None = None) -> Objs: ...
    def lookup(self, resource: Resource, namespace: str | None = None, *,
               label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
               field: tuple[str, str] | None = None, metadata: bool = False,
               shared: bool | None = None) -> Any:
        """:meth:`list` without waiting, for mappers (which are synchronous).

        Answers from what the informer holds now: before it has synced that
        may be less than the server has (a mapper then sees the rest as their
        events arrive). Raises RuntimeError if no informer of ``resource``
        exists (register it, e.g. with :meth:`index_field` or a watch, first).
        """
        informer = self._registered(resource, metadata, namespace)
        return self._read(informer, namespace, label_selector, field,
                          self._shares(resource) if shared is None else shared)

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
        informer = self._registered(resource, metadata, namespace)
        name = _FIELD_PREFIX + field[0]
        if limit is not None and namespace is None:
            return informer.store.first_index_keys(name, field[1], limit)
        keys = sorted(k for k in informer.store.index_keys(name, field[1])
                      if namespace is None or k.namespace == namespace)
        return keys if limit is None else keys[:limit]

    @staticmethod
    def _read(informer: Informer, namespace: str | None,
              label_selector: str | Mapping[str, Any] | LabelSelector | None,
              field: tuple[str, str] | None, shared: bool) -> Objs:
        return informer.store.read(
            namespace=namespace,
            index=None if field is None else (_FIELD_PREFIX + field[0], field[1]),
            labels=None if label_selector is None else LabelSelector.of(label_selector),
            shared=shared)

    def caches(self, resource: Resource, namespace: str | None = None) -> bool:
        """Whether :meth:`get` of ``resource`` in ``namespace`` answers from this cache now.

        True when the cache runs, holds a full (not metadata-only) informer of
        ``resource`` that has synced (a read never waits on a list that may
        never succeed, a Forbidden one say), and ``namespace`` is in its
        scope. Registers nothing.
        """
        fixed = self._scopes.get(resource)
        informer = self._informers.get(_InformerKey(resource, False))
        if self._tg is None or fixed is None or informer is None or not informer.has_synced:
            return False
        return not resource.namespaced or _holds(fixed.scope, namespace or "")

    # -- read-your-own-writes ----------------------------------------------------------------------

    def has_seen_own_write(self, resource: Resource, name: str,
                           namespace: str | None = None) -> bool:
        """False while the cache predates the last write this client made to the object."""
        key = ObjectKey(namespace or "" if resource.namespaced else "", name)
        return self.own_writes.satisfied((resource, key))

    def _observer(self, resource: Resource, informer: Informer
                  ) -> Callable[[ObjectKey, str], None]:
        """What tells :attr:`own_writes` of ``informer``'s changes: only of objects a write
        waits for, and of deletions (the store no longer holds them: the version is
        remembered for a write answered after it). No entry per object stored: the
        version the store holds is observed when a write is expected instead."""
        own_writes, store = self.own_writes, informer.store

        def observe(key: ObjectKey, resource_version: str) -> None:
            wanted = (resource, key)
            if key not in store or own_writes.waiting(wanted):
                own_writes.observed(wanted, resource_version)
        return observe

    def _on_write(self, record: WriteRecord) -> None:
        # Only what this cache watches can ever be observed: an expectation for
        # anything else (Events, say) would only wait for its timeout.
        informers = [informer for informer_key, informer in self._informers.items()
                     if informer_key.resource == record.resource]
        if not informers:
            return
        if not _holds(self._scopes[record.resource].scope, record.key.namespace):
            return  # outside the scope: never observed either
        if record.resource_version and not record.deleted:
            key = (record.resource, record.key)
            for informer in informers:
                # What the cache holds already counts (it observed no version of its own).
                raw = informer.store.get_raw(record.key)
                held = "" if raw is None else resource_version_of(orjson.loads(raw))
                if held:
                    self.own_writes.observed(key, held)
            self.own_writes.expect(key, record.resource_version)
        elif record.deleted:
            self.own_writes.delete((record.resource, record.key))


def _why_unsynced(stats: InformerStatistics) -> str | None:
    """What keeps an informer from syncing, for :class:`CacheSyncTimeout`."""
    if stats.waiting_for is not None:
        return f"not served by the API server (404); waiting for {stats.waiting_for}"
    return stats.last_error


def _holds(scope: CacheScope, namespace: str) -> bool:
    """Whether objects of ``namespace`` (``""``: cluster-scoped) fall in a resolved scope."""
    assert scope.namespaces is not None
    return scope.all_namespaces or namespace in scope.namespaces


def _watch_arguments(scope: CacheScope) -> tuple[list[str] | None, str | None, str | None]:
    """An informer's ``namespaces``, ``label_selector`` and ``field_selector`` for ``scope``."""
    assert scope.namespaces is not None
    return (None if scope.all_namespaces else sorted(scope.namespaces),
            None if scope.label_selector is None else str(scope.label_selector),
            None if scope.field_selector is None else str(scope.field_selector))
