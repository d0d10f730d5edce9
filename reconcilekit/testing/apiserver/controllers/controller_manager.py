"""The in-process server's kube-controller-manager: controllers that act through the API.

The controllers an operator's children depend on (:mod:`.replicaset`,
:mod:`.deployment`, ...) run as kube-controller-manager runs them: each a
level-triggered loop over a queue of object keys, reading the server's
objects and writing back over HTTP as the ``kube-controller-manager`` field
manager (:class:`~.loopback.Loopback`), so their writes pass authentication,
admission and validation and reach watches like any client's.

Guarantees:

* a key is handled by one sync at a time; a key added while it is being
  handled is handled again afterwards (nothing is lost, nothing runs twice
  at once), as client-go's work queue guarantees;
* a sync that fails is retried with per-key exponential backoff (5 ms
  doubling to 1000 s, kube-controller-manager's default rate limiter), on
  the server's clock, so a :class:`~reconcilekit.testing.FakeClock` drives
  every timed retry and every requeue a controller asks for; a conflict is
  retried at once (the write it lost to queued the key again already);
* an API error is one DEBUG line (a conflict or a refusal is routine for a
  controller); any other exception is a bug and logged with its traceback;
* controllers are chosen as ``--controllers`` chooses them: ``"*"`` for all,
  a name to add one, ``-name`` to leave one out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from ...._foundations.clock import Clock
from ..machinery.resources import Registry
from ..registry.generic_store import Storage
from ..storage.versioned_store import ObjKey, Table, TableKey
from .controller_events import record_event
from .loopback import Loopback, LoopbackError

__all__ = ["ANY_TABLE", "Context", "ControllerManager", "Loop", "selected_controllers"]

logger = logging.getLogger("reconcilekit.testing.apiserver.controllers")

Obj: TypeAlias = dict[str, Any]
# What a change to an object of a watched table enqueues: the keys of this loop.
KeysOf: TypeAlias = Callable[[Obj], Iterable[ObjKey]]

_BASE_DELAY, _MAX_DELAY = 0.005, 1000.0
# Watched as a table key: every table's changes (a ResourceQuota counts every kind).
ANY_TABLE: TableKey = ("*", "*")


@dataclass(frozen=True, slots=True)
class Context:
    """What every controller gets: the objects, the API to write through, the clock."""

    storage: Storage
    registry: Registry
    api: Loopback
    clock: Clock

    def objects(self, group: str, plural: str) -> Mapping[ObjKey, Obj]:
        """The stored objects of a resource (empty before its first object)."""
        table = self.storage.tables.get((group, plural))
        return table.objects if table is not None else {}

    def event(self, obj: Obj, event_type: str, reason: str, message: str,
              component: str) -> None:
        """Record an Event about ``obj`` as ``component`` (``deployment-controller``, ...)."""
        record_event(self.storage, self.registry, obj, event_type, reason, message, component)


class Loop:
    """One controller: ``watches`` maps the tables it follows to the keys a change
    enqueues; :meth:`sync` handles one key and may ask to be called again after
    a number of seconds (a deadline it waits for)."""

    name: ClassVar[str]

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx

    def watches(self) -> Mapping[TableKey, KeysOf]:
        raise NotImplementedError

    async def sync(self, key: ObjKey) -> float | None:
        raise NotImplementedError


class _Queue:
    """client-go's work queue semantics for one loop: dirty, processing, backoff."""

    def __init__(self) -> None:
        self.dirty: dict[ObjKey, None] = {}
        self.processing: set[ObjKey] = set()
        self.failures: dict[ObjKey, int] = {}
        self.ready = asyncio.Event()

    def add(self, key: ObjKey) -> None:
        if key in self.dirty:
            return
        self.dirty[key] = None
        if key not in self.processing:
            self.ready.set()

    def take(self) -> ObjKey | None:
        for key in self.dirty:
            if key not in self.processing:
                del self.dirty[key]
                self.processing.add(key)
                return key
        self.ready.clear()
        return None

    def done(self, key: ObjKey) -> None:
        self.processing.discard(key)
        if key in self.dirty:
            self.ready.set()


def selected_controllers(choice: Iterable[str], known: Iterable[str]) -> frozenset[str]:
    """The controllers ``choice`` turns on, read as kube-controller-manager reads
    ``--controllers`` (``*``: all; ``name``: this one; ``-name``: not this one)."""
    known = frozenset(known)
    words = list(choice)
    unknown = sorted({w.lstrip("-") for w in words if w != "*"} - known)
    if unknown:
        raise ValueError(f"unknown controller(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    on = set(known) if "*" in words else set()
    for word in words:
        if word.startswith("-"):
            on.discard(word[1:])
        elif word != "*":
            on.add(word)
    return frozenset(on)


class ControllerManager:
    """The chosen controllers over ``storage``: keys are queued from the storage's
    hooks at once, handled once :meth:`start` gave them the server's API."""

    def __init__(self, storage: Storage, registry: Registry, clock: Clock,
                 loops: Iterable[type[Loop]]) -> None:
        self.storage = storage
        self.registry = registry
        self.clock = clock
        self._classes = list(loops)
        self._loops: list[tuple[Loop, _Queue]] = []
        self._routes: dict[TableKey, list[tuple[KeysOf, _Queue]]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._timers: set[asyncio.Task[None]] = set()
        self._api: Loopback | None = None
        storage.on_changed.append(self._changed)
        storage.on_removed.append(self._route)

    @property
    def names(self) -> list[str]:
        return [cls.name for cls in self._classes]

    def start(self, api: Loopback) -> None:
        """Run every controller on the running event loop, writing through ``api``;
        the objects stored before start are looked at once."""
        if not self._classes:
            return
        self._api = api
        ctx = Context(self.storage, self.registry, api, self.clock)
        for cls in self._classes:
            loop, queue = cls(ctx), _Queue()
            self._loops.append((loop, queue))
            for tkey, keys_of in loop.watches().items():
                self._routes.setdefault(tkey, []).append((keys_of, queue))
                tables = list(self.storage.tables.values()) if tkey == ANY_TABLE else [
                    t for t in [self.storage.tables.get(tkey)] if t is not None]
                for table in tables:
                    for obj in list(table.objects.values()):
                        for key in keys_of(obj):
                            queue.add(key)
            self._tasks.append(asyncio.get_running_loop().create_task(
                self._run(loop, queue), name=f"controller {cls.name}"))

    async def stop(self) -> None:
        """Cancel every controller and close the API connection."""
        tasks, self._tasks = [*self._tasks, *self._timers], []
        self._timers.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._loops.clear()
        self._routes.clear()
        if self._api is not None:
            await self._api.close()
            self._api = None

    def _changed(self, table: Table, obj: Obj, old: Obj | None) -> None:
        """A change is routed by the object before it too: a Pod whose labels no longer
        match a Service concerns that Service."""
        self._route(table, obj)
        if old is not None:
            self._route(table, old)

    def _route(self, table: Table, obj: Obj) -> None:
        resource = table.rtype.resource
        routes = [*self._routes.get((resource.group, resource.plural), ()),
                  *self._routes.get(ANY_TABLE, ())]
        for keys_of, queue in routes:
            for key in keys_of(obj):
                queue.add(key)

    async def _run(self, loop: Loop, queue: _Queue) -> None:
        while True:
            key = queue.take()
            if key is None:
                await queue.ready.wait()
                continue
            try:
                after = await loop.sync(key)
            except LoopbackError as err:
                logger.debug("%s: %s/%s: %s", loop.name, key[0], key[1], err)
                if err.status == 409:
                    # changed since read: that write queued the key again already, and the
                    # next sync reads it afresh (no wait on the clock, fake or not)
                    queue.add(key)
                else:
                    self._retry(queue, key)
            except Exception:
                logger.exception("%s: syncing %s/%s failed", loop.name, key[0], key[1])
                self._retry(queue, key)
            else:
                queue.failures.pop(key, None)
                if after is not None:
                    self._later(queue, key, after)
            finally:
                queue.done(key)
            await asyncio.sleep(0)  # let the writes' other watchers run between syncs

    def _retry(self, queue: _Queue, key: ObjKey) -> None:
        failures = queue.failures.get(key, 0)
        queue.failures[key] = failures + 1
        self._later(queue, key, min(_BASE_DELAY * 2 ** failures, _MAX_DELAY))

    def _later(self, queue: _Queue, key: ObjKey, seconds: float) -> None:
        async def wake() -> None:
            await self.clock.sleep(seconds)
            queue.add(key)
        task = asyncio.get_running_loop().create_task(wake())
        self._timers.add(task)
        task.add_done_callback(self._timers.discard)

