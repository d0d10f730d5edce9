"""The watcher: list, then watch, forever, without ever losing the truth.

Specification
-------------
Expected flow:

1. List the resource and hand its items to the sink as they arrive: a sink
   with ``begin_list`` gets them in turn and ``finish`` with the list's
   resourceVersion once the last is read (so neither keeps the whole list
   decoded); any other gets the complete list in ``replace``. The sink
   converges to the complete list; a list that fails is never finished.
   With ``list_from`` ``"watch_cache"`` (by default for metadata alone) the
   list is one answer of kube-apiserver's watch cache, read item by item as
   it arrives: the first asks for ``resourceVersion=0`` (what the cache
   holds, as client-go's reflector asks: it may lack the writes of the
   cache's last moments behind etcd, which the watch from its
   resourceVersion then brings), a later one for ``resourceVersionMatch=
   NotOlderThan`` the last resourceVersion seen (never older than what the
   sink holds). If the server cannot answer so (504: its cache behind, or
   the answer not written within its request timeout; 410; 400; 406; an
   answer cut short or not a List) the list is read from etcd instead, as every
   later one, and one INFO line says so. From etcd (``"etcd"``, the default
   for whole objects) it is read in pages of ``page_size``, a consistent read, the
   next page asked for as soon as a page arrives so the server reads it
   while this one is stored (at most two pages held decoded); a list whose
   continue token expires midway (410) starts over from the first page,
   with a new ``begin_list``, up to 3 times.
2. Watch from that resourceVersion with bookmarks and a randomized
   ``timeoutSeconds`` between a half and three quarters of
   ``liveness_timeout`` (so watches of many controllers do not expire
   together). Every ADDED/MODIFIED/DELETED goes to the sink's ``apply``;
   every event and BOOKMARK advances the resume point.
3. When the watch ends cleanly (the server's timeout, a closed connection)
   watch again from the resume point: no relist, nothing logged above DEBUG.
4. When the server says the resume point is too old (410 Gone/Expired, as an
   ERROR event or an HTTP status) relist: step 1 again.
5. On any other failure (connection refused, 5xx, 403) wait with
   exponential backoff and jitter (0.8 s doubling to 30 s, reset after 2
   minutes without failure, as client-go's reflector), then resume; after a
   failed list, list again. A watch line that cannot be read (not JSON, an
   unknown type, an object without ``metadata.name``, a field of the wrong
   type: ``APIError`` with reason ``InvalidResponse``) is an event lost:
   after the backoff the watcher lists again, as client-go's reflector does
   when its decoder fails. A List that cannot be read fails the list.
6. A watch still open ``liveness_timeout`` seconds after it was opened is
   dead: the server promised to end it at its ``timeoutSeconds``, so the
   connection no longer carries what the server sends (a peer gone without
   a FIN, a proxy that keeps the socket open but forwards nothing). It is
   abandoned and resumed like a failure. A quiet resource is not a dead
   watch: kube-apiserver sends no BOOKMARK on a type that has had no event
   since it started, so silence alone proves nothing; an unanswered promise
   to close does. A dead connection is found within ``liveness_timeout``
   (60 s by default) of going dead, whatever the resource's traffic.
7. With ``metadata_only`` the list and the watch ask the server for
   ``PartialObjectMetadata`` (what client-go's metadata informers ask for):
   the answers carry no spec, status or data, which saves the bytes, the
   parsing and the memory of the rest; the sink gets them named as the
   resource (apiVersion and kind), as controller-runtime names them.
8. With ``relist_period`` set, a complete list is made again at least that
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
  * the watcher never gives up: only cancellation stops it, a list the
    server answers 404 (:class:`NotServed`: the resource is not served; the
    caller waits for it and runs the watcher again, which lists), and a sink
    that refuses a list (:class:`SinkRefused`).

Assumptions: the sink's methods are synchronous and do not raise (an
exception from the sink is logged and ends that watch, which is then
resumed; the next relist repairs whatever it missed).

Log: a failure is one WARNING line naming the resource, the error and the
next attempt; the same failure again within a minute is counted, not
repeated.

Time: backoff, watch rotation and dead-watch detection use the injected
clock, so tests drive them with :class:`reconcilekit.testing.FakeClock`.

Settings: ``page_size``, ``liveness_timeout``, ``metadata_only``,
``relist_period``, ``list_from``, the selectors and the shard selector are the watcher's
:class:`WatchOptions`, given when it is made and fixed for its life.
"""

from __future__ import annotations

import functools
import logging
import math
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

import aiohttp
import anyio
import anyio.abc
import anyio.lowlevel

from .._client.answers import INVALID_RESPONSE, watch_event
from .._client.client import PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST, Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.collector import collector_paused
from .._foundations.errors import (
    APIConnectionError,
    APIError,
    Gone,
    NotFound,
    describe_error,
    error_from_status,
)
from .._foundations.logging import RepeatFilter
from .._foundations.objects import Resource
from .backoff import Backoff
from .list_stream import ListSplitter
from .watch_sink import ListSink, SinkRefused, WatchSink, begin_list

__all__ = ["DeadWatchError", "NotServed", "WatchOptions", "Watcher", "WatcherStatistics"]

logger = logging.getLogger("reconcilekit.watcher")
_SYSTEM_CLOCK: Final = SystemClock()
_LIST_RESTARTS: Final = 3  # a list whose continue token expires starts over at most this often


_ADD_BATCH: Final = 50  # objects stored between two yields to the event loop during a list


class _PageAhead:
    """The next list page, read while the current one is stored."""

    __slots__ = ("_done", "_error", "_page")

    def __init__(self) -> None:
        self._done = anyio.Event()
        self._page: dict[str, Any] | None = None
        self._error: Exception | None = None

    async def read(self, request: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            self._page = await request()
        except Exception as err:  # raised where the page is awaited
            self._error = err
        finally:
            self._done.set()

    async def result(self) -> dict[str, Any]:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._page is not None
        return self._page


class _ExpiredMidway(Exception):
    """A list's continue token expired (410) after its first page."""

    def __init__(self, gone: Gone) -> None:
        super().__init__(str(gone))
        self.gone = gone



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


class DeadWatchError(Exception):
    """The watch connection outlived the server's promise to close it."""


class NotServed(Exception):
    """A list answered 404: the API server does not serve the resource (its CRD is not
    installed or not established yet; a list in a namespace that does not exist answers
    an empty list, not 404). :meth:`Watcher.run` raises it instead of retrying, so its
    caller waits until the resource is served (see ``served.py``) and runs it again."""

    def __init__(self, resource: Resource, error: APIError) -> None:
        super().__init__(f"{resource} is not served by the API server: {error.message}")
        self.resource = resource


@dataclass(frozen=True, kw_only=True, slots=True)
class WatchOptions:
    """What a :class:`Watcher` asks the server for, and how it keeps its watch alive.

    One value, validated when made, that an informer shares between the
    watchers of its namespaces:

    ``label_selector``, ``field_selector``
        Sent with every list and watch (None: no selector).
    ``page_size``
        Objects per list page (> 0).
    ``liveness_timeout``
        Seconds after which a watch still open is dead (at least 4: each
        watch asks the server to end it after a half to three quarters of it).
    ``relist_period``
        Seconds (> 0) within which a complete list is made again; None: no
        periodic list.
    ``metadata_only``
        List and watch ``PartialObjectMetadata`` instead of whole objects.
    ``shard_selector``
        Asked before every list for the shard selector to send with it (a
        sharded manager's: its held shards), and sent with the watch after a
        list the server answered with ``shardInfo``; None, or an answer of
        None: no shard selector.
    ``list_from``
        ``"watch_cache"``: each list is one answer from kube-apiserver's watch
        cache, at least as fresh as etcd when it began, read as it arrives
        (falling back to etcd's pages when the server cannot answer so);
        ``"etcd"``: consistent pages of ``page_size`` read from etcd. None (the
        default): the watch cache for metadata alone, etcd for whole objects.
    ``drop_managed_fields``
        The sink never reads ``metadata.managedFields`` (its transform drops
        them): a list from the watch cache of metadata alone cuts them out
        before decoding.
    """

    label_selector: str | None = None
    field_selector: str | None = None
    page_size: int = 500
    liveness_timeout: float = 60.0
    relist_period: float | None = None
    metadata_only: bool = False
    shard_selector: Callable[[], str | None] | None = None
    list_from: Literal["watch_cache", "etcd"] | None = None
    drop_managed_fields: bool = False

    def __post_init__(self) -> None:
        if self.list_from not in (None, "watch_cache", "etcd"):
            raise ValueError(f"list_from must be 'watch_cache', 'etcd' or None, "
                             f"got {self.list_from!r}")
        if self.page_size <= 0:
            raise ValueError(f"page_size must be > 0, got {self.page_size}")
        if self.liveness_timeout < 4:
            raise ValueError("liveness_timeout must be at least 4 seconds (watches last half "
                             f"to three quarters of it), got {self.liveness_timeout}")
        if self.relist_period is not None and self.relist_period <= 0:
            raise ValueError(f"relist_period must be > 0 seconds, got {self.relist_period}")


    @property
    def lists_from_cache(self) -> bool:
        """Whether lists are asked of the watch cache (``list_from``, or its default)."""
        if self.list_from is None:
            return self.metadata_only
        return self.list_from == "watch_cache"


_DEFAULT_OPTIONS: Final = WatchOptions()


class Watcher:
    """List+watch of one resource (optionally one namespace) into a sink.

    ``run(sink)`` runs until cancelled; see the module docstring for the
    protocol it follows.
    """

    def __init__(self, client: Client, resource: Resource, *, namespace: str | None = None,
                 options: WatchOptions = _DEFAULT_OPTIONS, clock: Clock = _SYSTEM_CLOCK,
                 backoff: Backoff | None = None) -> None:
        """Watch ``resource`` through ``client``, in ``namespace`` (None: every namespace,
        or a cluster-scoped resource), as ``options`` say (selectors, page size,
        liveness timeout, relist period, metadata only, shard selector).

        ``clock`` times the backoff, watch rotation and dead-watch detection;
        ``backoff`` is what is waited between failures (the watchers of one
        informer may share one); by default a :class:`Backoff` of its own on
        ``clock``. All of these are fixed for the watcher's life.
        """
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.options = options
        self.clock = clock
        self.backoff = backoff or Backoff(clock=clock)
        self._listed_at = 0.0
        self._rv: str | None = None
        self._newest: str | None = None  # the last resourceVersion seen, kept across relists
        self._from_etcd = False  # the watch cache could not answer a list: etcd's pages
        self._lists = self._watches = self._restarts = self._dead = self._events = 0
        self._last_activity: float | None = None
        self._watching = False
        self._dead_flag = False
        self._last_error: str | None = None
        self._failures = RepeatFilter(clock=clock)
        self._failing = 0  # failures since the last list or watch that worked
        self._relist_wanted = False
        # The shard selector of the last list, sent with the watch only when the server
        # answered that list with shardInfo (one that ignores it is filtered client-side).
        self._shard_in_use: str | None = None
        self.server_sharded: bool | None = None  # None: not asked yet
        self._watch_scope: anyio.CancelScope | None = None
        self._listed = anyio.Event()  # set (and replaced) after each complete list
        self._lists_started = 0  # lists begun, to tell a list begun before a request from after
        self._lists_done = 0  # the number (as begun) of the last list that completed

    @property
    def label_selector(self) -> str | None:
        """The label selector sent with every list and watch (``options.label_selector``)."""
        return self.options.label_selector

    @property
    def field_selector(self) -> str | None:
        """The field selector sent with every list and watch (``options.field_selector``)."""
        return self.options.field_selector

    def statistics(self) -> WatcherStatistics:
        return WatcherStatistics(self._lists, self._watches, self._restarts, self._dead,
                                 self._events, self._rv, self._last_activity, self._watching,
                                 self._last_error)

    def request_relist(self) -> int:
        """List again now (ending the open watch): what is wanted of the server changed.

        Returns a ticket for :meth:`relisted`: a list in progress began before
        the request and does not count."""
        self._relist_wanted = True
        if self._watch_scope is not None:
            self._watch_scope.cancel()
        return self._lists_started + 1

    async def relisted(self, ticket: int) -> None:
        """Return once a list begun after the request that gave ``ticket`` completed."""
        while self._lists_done < ticket:
            await self._listed.wait()

    async def run(self, sink: WatchSink) -> None:
        """List and watch into ``sink`` until cancelled."""
        while True:
            listing = self._rv is None or self._relist_due() or self._relist_wanted
            try:
                if listing:
                    try:
                        await self._list(sink)
                    except BaseException:
                        self._relist_wanted = True  # what was asked for is still wanted
                        raise
                    listing = False
                if not self._relist_wanted:
                    with anyio.CancelScope() as self._watch_scope:
                        await self._watch(sink)
                    self._watch_scope = None
                self._last_error = None
            except Gone as err:
                logger.info("%s: resume point %s expired (%s); relisting",
                            self.resource, self._rv, err.message,
                            extra={"resource": str(self.resource)})
                self._rv = None
            except SinkRefused:
                raise
            except (APIError, APIConnectionError, aiohttp.ClientError, OSError,
                    TimeoutError, ValueError, DeadWatchError) as err:
                self._restarts += 1
                self._last_error = describe_error(err)
                if listing and isinstance(err, NotFound):
                    self._relist_wanted = True  # listed first when run again
                    raise NotServed(self.resource, err) from None
                delay = self.backoff.next_delay()
                self._failing += 1
                what = "list" if listing else "watch"
                # An event that could not be read is lost: only a list can make up for it.
                malformed = not listing and _malformed(err)
                if malformed:
                    self._rv = None
                self._failures.log(logger, logging.WARNING, (what, self._last_error),
                                   "%s: %s failed (attempt %d): %s; %s in %.1fs",
                                   self.resource, what, self._failing, self._last_error,
                                   "relisting" if malformed else "retrying", delay,
                                   extra={"resource": str(self.resource)})
                await self.clock.sleep(delay)
            except Exception as err:  # a sink (handler) bug must not end the watcher
                self._restarts += 1
                self._last_error = describe_error(err)
                delay = self.backoff.next_delay()
                logger.exception("%s: unexpected error; relisting in %.1fs", self.resource,
                                 delay, extra={"resource": str(self.resource)})
                self._rv = None
                await self.clock.sleep(delay)

    async def _list(self, sink: WatchSink) -> None:
        self._relist_wanted = False  # a request from now on wants another list
        self._lists_started += 1
        number = self._lists_started
        asked = self.options.shard_selector
        shards = asked() if asked is not None else None
        restarts = 0
        while True:
            try:
                rv = await self._pages(sink, shards)
                break
            except _ExpiredMidway as err:
                if restarts >= _LIST_RESTARTS:
                    raise err.gone from None
                restarts += 1  # an expired continue token: start over, from a new snapshot
        self._lists += 1
        self._listed_at = self.clock.monotonic()
        self._last_error, self._failing = None, 0
        self._touch()
        self._rv = rv
        self._newest = rv or self._newest
        self._lists_done = number
        self._listed.set()
        self._listed = anyio.Event()

    async def _pages(self, sink: WatchSink, shards: str | None) -> str:
        """Read one list into a new :class:`ListSink`, finish it, and return its
        resourceVersion (Gone if its continue token expires after the first page).

        From the watch cache (``list_from``) when the server answers so; else,
        or when it cannot (see :meth:`_from_cache`), page by page from etcd: the
        next page is asked for as soon as a page arrives, so the server reads
        it from etcd while this one is stored, yielding to the event loop every
        few dozen objects: the list takes the longer of the server's time and
        this process's, not their sum. At most two pages are held decoded.
        """
        failure: Exception | None = None
        async with anyio.create_task_group() as tasks:
            try:
                page = None
                if self.options.lists_from_cache and not self._from_etcd:
                    listing = begin_list(sink)
                    page = await self._from_cache(listing, shards)
                if page is None:
                    listing = begin_list(sink)  # the cache's list, if begun, is dropped
                return await self._read_pages(listing, shards, tasks, page)
            except Exception as err:  # raised as itself, not in an exception group
                failure = err
                tasks.cancel_scope.cancel()
        assert failure is not None
        raise failure

    async def _from_cache(self, listing: ListSink, shards: str | None
                          ) -> dict[str, Any] | None:
        """List from kube-apiserver's watch cache into ``listing``; the List without its
        items (their pages follow if it has a continue token), or None if the server
        cannot answer so (504: its cache behind, or the answer not written within its
        request timeout; a 410, 400 or 406; an answer cut short, as kube-apiserver cuts
        one still being written when its request timeout expires; an answer that
        cannot be read as a List), logged at INFO: the caller then lists from etcd, and
        so does every later list of this watcher.

        The first list asks for ``resourceVersion=0``, what the cache holds (as
        client-go's reflector does): it may lack the writes of the cache's last
        moments behind etcd, which the watch from its resourceVersion brings. A
        later list asks for ``resourceVersionMatch=NotOlderThan`` the newest
        resourceVersion seen, so the store never goes back in time. No limit is
        sent (the cache would ignore it): the answer is one response however
        many objects, read as it arrives (:class:`ListSplitter`), at most a slab
        of it decoded at a time.
        """
        options = self.options
        params = ({"resourceVersion": "0"} if self._newest is None else
                  {"resourceVersion": self._newest, "resourceVersionMatch": "NotOlderThan"})
        if options.label_selector:
            params["labelSelector"] = options.label_selector
        if options.field_selector:
            params["fieldSelector"] = options.field_selector
        if shards is not None:
            params["shardSelector"] = shards
        try:
            response = await self.client.open_stream(
                self.resource.path(self.namespace), params,
                # longer than kube-apiserver's request timeout (60 s), whose 504 says more
                inactivity_timeout=options.liveness_timeout + 30.0,
                accept=PARTIAL_OBJECT_METADATA_LIST if options.metadata_only else None)
            splitter = ListSplitter(f"list of {self.resource.plural}",
                                    drop_managed_fields=options.drop_managed_fields)
            try:
                async for chunk in response.content.iter_any():
                    # A slab's objects are decoded, stored and freed before the collector
                    # resumes, and the loop runs once per slab (some 1.5 ms of work).
                    with collector_paused():
                        delivered = self._deliver_now(listing, splitter.feed(chunk))
                    if delivered:
                        await anyio.lowlevel.checkpoint()
                with collector_paused():
                    items, meta = splitter.finish()
                    self._deliver_now(listing, items)
                    del items
            finally:
                response.release()
        except (APIError, aiohttp.ClientPayloadError) as err:
            if isinstance(err, APIError) and err.status not in (400, 406, 410, 504) and (
                    err.reason != INVALID_RESPONSE):
                raise
            self._from_etcd = True
            logger.info("%s: the watch cache cannot answer the list (%s); listing from etcd "
                        "from now on", self.resource, describe_error(err),
                        extra={"resource": str(self.resource)})
            return None
        return {"metadata": meta, "items": []}

    def _name(self, items: list[dict[str, Any]]) -> None:
        """Name ``items`` as the resource."""
        kind, api_version = self.resource.kind, self.resource.api_version
        if self.options.metadata_only:  # PartialObjectMetadata: named as what they describe
            for item in items:
                item["apiVersion"], item["kind"] = api_version, kind
        else:
            for item in items:  # list items of built-in kinds come without kind/apiVersion
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)

    def _deliver_now(self, listing: ListSink, items: list[dict[str, Any]]) -> int:
        """Name ``items`` and hand them to ``listing`` at once; how many."""
        if items:
            self._name(items)
            listing.add(items)
        return len(items)

    async def _deliver(self, listing: ListSink, items: list[dict[str, Any]]) -> None:
        """Name ``items`` as the resource and hand them to ``listing``, a few dozen at a
        time, letting the event loop run in between (a page ahead gets read)."""
        self._name(items)
        for start in range(0, len(items), _ADD_BATCH):
            listing.add(items[start:start + _ADD_BATCH])
            await anyio.lowlevel.checkpoint()

    async def _read_pages(self, listing: ListSink, shards: str | None,
                          tasks: anyio.abc.TaskGroup, page: dict[str, Any] | None) -> str:
        """Read pages into ``listing`` from the first (or from ``page``, whose items it
        has), finish it and return its resourceVersion."""
        if page is None:
            page = await self._page(None, shards)
        meta = page.get("metadata") or {}
        rv = str(meta.get("resourceVersion") or "")
        if shards is not None:
            self.server_sharded = bool(meta.get("shardInfo"))
        self._shard_in_use = shards if self.server_sharded else None
        while True:
            token = meta.get("continue") or None
            ahead = _PageAhead()
            if token:
                tasks.start_soon(ahead.read, functools.partial(self._page, token, shards))
            items = page.get("items") or []
            del page, meta  # only the page's items, until the sink has them
            await self._deliver(listing, items)  # meanwhile the next page is sent, read
            del items  # (this page and the next are all that is ever held decoded)
            if not token:
                listing.finish(rv)
                return rv
            try:
                page = await ahead.result()
            except Gone as err:
                raise _ExpiredMidway(err) from None
            meta = page.get("metadata") or {}

    async def _page(self, token: str | None, shards: str | None) -> dict[str, Any]:
        options = self.options
        return await self.client.list(
            self.resource, self.namespace, label_selector=options.label_selector,
            field_selector=options.field_selector, limit=options.page_size, continue_=token,
            metadata_only=options.metadata_only, shard_selector=shards)

    def _relist_due(self) -> bool:
        period = self.options.relist_period
        return period is not None and self.clock.monotonic() - self._listed_at >= period

    def _touch(self) -> None:
        self._last_activity = self.clock.monotonic()

    async def _watch(self, sink: WatchSink) -> None:
        options = self.options
        liveness = options.liveness_timeout
        timeout = max(1, int(liveness * (0.5 + random.random() / 4)))
        if options.relist_period is not None:  # end the watch when the next list is due
            left = options.relist_period - (self.clock.monotonic() - self._listed_at)
            timeout = max(1, min(timeout, math.ceil(left)))
        params = {"watch": "true", "allowWatchBookmarks": "true",
                  "timeoutSeconds": str(timeout), "resourceVersion": self._rv or ""}
        if options.label_selector:
            params["labelSelector"] = options.label_selector
        if options.field_selector:
            params["fieldSelector"] = options.field_selector
        if self._shard_in_use:
            params["shardSelector"] = self._shard_in_use
        path = self.resource.path(self.namespace)
        self._watches += 1
        opened = self.clock.monotonic()
        response = await self.client.open_stream(
            path, params, inactivity_timeout=liveness + 30.0,
            accept=PARTIAL_OBJECT_METADATA if options.metadata_only else None)
        self._watching = True
        self._last_error, self._failing = None, 0
        self._touch()
        try:
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._watchdog, opened + liveness,
                                  tg.cancel_scope)
                    async for line in _lines(response):
                        self._handle(sink, line)
                    tg.cancel_scope.cancel()
            except BaseExceptionGroup as group:  # the task group wraps what the loop raised
                raise _only(group) from None
            if self._dead_flag:
                self._dead += 1
                raise DeadWatchError(
                    f"the connection went dead: still open {liveness:.0f}s after "
                    f"it was opened, though the server was to close it after {timeout}s")
            logger.debug("%s: watch ended after %.1fs; resuming from %s", self.resource,
                         self.clock.monotonic() - opened, self._rv)
        finally:
            self._watching = False
            self._dead_flag = False
            response.release()

    async def _watchdog(self, deadline: float, scope: anyio.CancelScope) -> None:
        while True:
            left = deadline - self.clock.monotonic()
            if left <= 0:
                self._dead_flag = True
                scope.cancel()
                return
            await self.clock.sleep(left)

    def _handle(self, sink: WatchSink, line: bytes) -> None:
        type_, obj = watch_event(line)
        self._touch()
        if type_ == "ERROR":
            raise error_from_status(obj)
        rv = obj["metadata"].get("resourceVersion")
        if type_ == "BOOKMARK":
            if rv:
                self._rv = self._newest = rv
            return
        self._events += 1
        if self.options.metadata_only:
            obj["apiVersion"], obj["kind"] = self.resource.api_version, self.resource.kind
        sink.apply(type_, obj)
        if rv:
            self._rv = self._newest = rv


def _malformed(err: BaseException) -> bool:
    """Whether ``err`` says the server's answer could not be read."""
    return (isinstance(err, APIError) and err.reason == INVALID_RESPONSE) or (
        isinstance(err, ValueError) and not isinstance(err, APIError))


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
