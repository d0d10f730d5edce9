"""``Controller``: watches feeding a rate-limited queue, drained by N workers.

Guarantees:
  * one key is never reconciled by two workers at once, and a key changed
    while it is being reconciled is reconciled once more afterwards (the
    work queue's invariants);
  * a reconcile that raises is logged with its key and retried with per-key
    exponential backoff under an overall token bucket; success (or
    ``Result.requeue_after``) resets the key's backoff; ``TerminalError`` is
    logged and not retried; no exception ever ends a worker;
  * the initial list does not starve new events: keys of objects listed
    before the informer synced (or replayed to a handler added late), of
    resyncs (an update whose old and new resourceVersion are equal) and of
    a shard just taken are queued at ``LOW_PRIORITY``, other events' at 0,
    so a new event waits behind at most one of them (the work queue's
    aging turn); against starvation the other way, one low-priority key is
    handed out after every few (the queue's ``aging``) of higher priority
    however busy the queue is;
  * keys of one priority are served fairly across ``fairness(request)``
    (the namespace by default): many keys queued in one namespace delay a
    key of another by at most one key per other busy namespace;
  * a retry after an exception goes in at the priority the key was handed
    out at; a requeue (``Result.requeue_after``) at the Result's
    ``priority``, or else at that one too;
  * an optional per-reconcile deadline cancels a reconcile that takes too
    long, which then counts as a failure and is retried;
  * ``shutdown(grace)`` stops intake and lets in-flight reconciles finish
    within ``grace`` seconds; the caller cancels what is left;
  * run with a ``gate`` (a sharded manager runs its controllers with one), a
    key the gate does not admit when a worker takes it is dropped, not
    reconciled; and
    ``drain(which, grace)`` returns once no reconcile of a key ``which``
    selects is running, cancelling those still running after ``grace``.

The controller's own log records carry ``controller`` and ``key``; records
made during a reconcile (the controller's and user code's) get them, and the
reconcile's ``reconcile_id`` (a fresh UUID per reconcile), from
:class:`reconcilekit.ReconcileContextFilter` (installed by
:func:`reconcilekit.configure_logging`). With tracing on
(:func:`reconcilekit.tracing.enable`), each event a handler maps and each
reconcile is a span (see ``reconcilekit/_tracing/otel_hooks.py``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

import anyio
import anyio.abc

from .._cache.cache import Cache, InformerUse
from .._cache.informer import EventHandler, Informer
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import (
    APIConnectionError,
    APIError,
    Conflict,
    ServerError,
    TooManyRequests,
    describe_error,
)
from .._foundations.logging import RepeatFilter, log_context, new_reconcile_id
from .._foundations.objects import Resource
from .._tracing import switch as tracing
from .._workqueue.queue import LOW_PRIORITY, QueueShutDown, WorkQueue
from .._workqueue.queue_metrics import QueueMetrics
from .._workqueue.rate_limiters import RateLimiter
from .fairness import Fairness, ObjectFairness, by_namespace, lane_function
from .mappers import Mapper
from .predicates import Predicate
from .reconciler import Reconciler, Request, Result, TerminalError

__all__ = ["Controller", "ReconcileMetrics"]

logger = logging.getLogger("reconcilekit.controller")
_SYSTEM_CLOCK: Final = SystemClock()


class ReconcileMetrics(Protocol):
    """What a controller reports (see ``PrometheusReconcileMetrics`` for the Prometheus one)."""

    def observe(self, result: str, seconds: float) -> None: ...
    def error(self) -> None: ...
    def terminal_error(self) -> None: ...
    def timeout(self) -> None: ...
    def worker_started(self) -> None: ...
    def worker_finished(self) -> None: ...
    def set_max_concurrent(self, n: int) -> None: ...
    def observe_retries(self, n: int) -> None: ...


def _resource_version(obj: Mapping[str, Any]) -> object:
    metadata = obj.get("metadata")
    return metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None


class Controller:
    """Reconciles the keys its watches produce. Stands alone; the builder is sugar over it."""

    def __init__(self, name: str, reconciler: Reconciler, cache: Cache, *,
                 primary: Resource | None = None,
                 max_concurrent_reconciles: int = 1,
                 rate_limiter: RateLimiter[Request] | None = None,
                 reconcile_timeout: float | None = None, clock: Clock = _SYSTEM_CLOCK,
                 metrics: ReconcileMetrics | None = None,
                 queue_metrics: QueueMetrics | None = None,
                 fairness: Fairness = by_namespace) -> None:
        """A controller ``name`` (non-empty: it labels logs and metrics) that reconciles
        with ``reconciler`` the keys its watches of ``cache`` produce.

        ``primary``: the resource it reconciles (a builder's ``for_``), whose
        cached objects :meth:`enqueue_matching` queues and whose uid a
        sharded manager keyed by uid hashes; None: not known.
        ``max_concurrent_reconciles`` (>= 1) workers take keys from a work
        queue limited by ``rate_limiter`` (None: the default controller rate
        limiter); a reconcile is cancelled after ``reconcile_timeout``
        seconds (> 0; None: never). ``clock`` times retries and drains;
        ``metrics`` and ``queue_metrics`` are told what happens (None:
        nothing is). ``fairness(request)``: what the keys of one priority are
        served fairly (round-robin) across; the default is the request's
        namespace; :func:`fairness_by_object` reads it from the object (of
        ``primary``); None: first come, first served.
        """
        if not name:
            raise ValueError("a controller needs a name (it labels its logs and metrics)")
        if max_concurrent_reconciles < 1:
            raise ValueError(f"max_concurrent_reconciles must be >= 1, "
                             f"got {max_concurrent_reconciles}")
        if reconcile_timeout is not None and reconcile_timeout <= 0:
            raise ValueError(f"reconcile_timeout must be > 0, got {reconcile_timeout}")
        self.name = name
        self.reconciler = reconciler
        self.cache = cache
        self.max_concurrent_reconciles = max_concurrent_reconciles
        self.reconcile_timeout = reconcile_timeout
        self.clock = clock
        self.metrics = metrics
        self.queue: WorkQueue[Request] = WorkQueue(
            name=name, rate_limiter=rate_limiter, clock=clock, metrics=queue_metrics,
            fairness=lane_function(fairness, cache, primary, name, clock),
            lanes_change=isinstance(fairness, ObjectFairness))
        self._in_flight = 0
        self.primary = primary
        self._running: dict[Request, anyio.CancelScope] = {}
        self._finished = anyio.Event()  # set (and replaced) each time a reconcile ends
        self._repeats = RepeatFilter(clock=clock)
        self._tracebacks = RepeatFilter(window=math.inf, clock=clock)
        self._stopped = anyio.Event()
        self._watches: list[tuple[InformerUse, EventHandler]] = []
        self.started = anyio.Event()  # set once its workers run
        if metrics is not None:
            metrics.set_max_concurrent(max_concurrent_reconciles)

    # -- watches -----------------------------------------------------------------------

    def watch(self, resource: Resource, mapper: Mapper[Any], *,
              predicates: Iterable[Predicate[Any]] = (), metadata: bool = False) -> None:
        """Enqueue ``mapper(obj)`` for every event of ``resource`` that passes ``predicates``.

        Update events enqueue what both the old and the new object map to, so
        an object that stops pointing at a key still gets that key reconciled.
        Adds before the informer synced (the initial list), adds replayed to
        this handler from the store, and resyncs (an update whose old and new
        resourceVersion are equal) enqueue at ``LOW_PRIORITY``; the rest at 0.
        The watch holds the cache's informer of ``resource`` (see
        :meth:`Cache.acquire`) until :meth:`release_watches`.
        """
        preds = tuple(predicates)
        add = self._enqueue
        use = self.cache.acquire(resource, metadata=metadata)
        informer = use.informer
        replaying = True  # add_handler replays what is stored already: that is initial too

        def on_add(obj: Mapping[str, Any]) -> None:
            if all(p.create(obj) for p in preds):
                requests = mapper(obj) if (t := tracing.active) is None else t.watch_event(
                    self, resource, "ADDED", obj, lambda: mapper(obj))
                initial = replaying or not informer.has_synced
                add(requests, LOW_PRIORITY if initial else 0)

        def on_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
            if all(p.update(old, new) for p in preds):
                resync = _resource_version(old) == _resource_version(new)
                priority = LOW_PRIORITY if resync else 0
                if (t := tracing.active) is None:
                    add([*mapper(old), *mapper(new)], priority)
                else:
                    add(t.watch_event(self, resource, "MODIFIED", new,
                                      lambda: [*mapper(old), *mapper(new)]), priority)

        def on_delete(obj: Mapping[str, Any]) -> None:
            if all(p.delete(obj) for p in preds):
                add(mapper(obj) if (t := tracing.active) is None else t.watch_event(
                    self, resource, "DELETED", obj, lambda: mapper(obj)))

        handler = EventHandler(on_add, on_update, on_delete)
        self._watches.append((use, handler))
        informer.add_handler(handler)
        replaying = False

    @property
    def watched(self) -> list[Informer]:
        """The informers this controller's watches hold."""
        return [use.informer for use, _ in self._watches]

    def release_watches(self) -> None:
        """End every watch: its handler is told nothing more and its hold on the informer
        is released (the last hold stops the informer, see :meth:`Cache.acquire`)."""
        self._end_watches(lambda informer: True)

    def unwatch(self, resource: Resource, *, metadata: bool = False) -> int:
        """End the watches of ``resource`` (of its metadata-only informer with
        ``metadata=True``), as :meth:`release_watches` ends all; how many ended. Keys
        they queued already are still reconciled."""
        return self._end_watches(lambda informer: informer.resource == resource
                                 and informer.metadata_only == metadata)

    def _end_watches(self, which: Callable[[Informer], bool]) -> int:
        ending = [(use, handler) for use, handler in self._watches if which(use.informer)]
        self._watches = [watch for watch in self._watches if watch not in ending]
        for use, handler in ending:
            use.informer.remove_handler(handler)
            use.release()
        return len(ending)

    def _enqueue(self, requests: Iterable[Request], priority: int = 0) -> None:
        add = self.queue.add
        for request in requests:
            add(request, priority)

    # -- running --------------------------------------------------------------------------

    async def run(self, *, gate: Callable[[Request], bool] | None = None,
                  task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Run the workers until the queue shuts down or the task is cancelled.

        With a ``gate``, a key it does not admit when a worker takes it is
        dropped instead of reconciled (a sharded manager's: keys of shards
        this replica does not hold); it is asked once per key taken."""
        try:
            async with anyio.create_task_group() as tg:
                for _ in range(self.max_concurrent_reconciles):
                    tg.start_soon(self._worker, gate)
                task_status.started()
                self.started.set()
        finally:
            self._stopped.set()

    async def shutdown(self, grace: float) -> bool:
        """Stop taking keys (pending ones are dropped: the next leader or start relists
        them) and wait up to ``grace`` seconds for in-flight reconciles to finish.

        Returns True if every worker finished in time; the caller cancels the rest.
        """
        self.queue.shutdown()
        with anyio.move_on_after(grace):
            await self._stopped.wait()
        return self._stopped.is_set()

    @property
    def in_flight(self) -> int:
        return self._in_flight

    async def drain(self, which: Callable[[Request], bool], grace: float) -> int:
        """Return once no reconcile of a key ``which`` selects is running; those still
        running after ``grace`` seconds (of the controller's clock) are cancelled.
        Returns how many were cancelled."""
        deadline = self.clock.monotonic() + grace
        cancelled = 0
        while busy := [r for r in self._running if which(r)]:
            left = deadline - self.clock.monotonic()
            if left <= 0 and not cancelled:
                for request in busy:
                    self._running[request].cancel()  # each ends at its next await
                cancelled = len(busy)
                logger.warning("cancelled %d reconcile(s) still running after %.1fs: %s",
                               cancelled, grace, ", ".join(map(str, busy[:5])),
                               extra={"controller": self.name})
            await self._next_finish(left if not cancelled else None)
        return cancelled

    async def _next_finish(self, within: float | None) -> None:
        """Wait until a reconcile ends, or ``within`` seconds of the clock pass."""
        finished = self._finished
        async with anyio.create_task_group() as tg:
            if within is not None:
                async def wake() -> None:
                    await self.clock.sleep(within)
                    tg.cancel_scope.cancel()
                tg.start_soon(wake)
            await finished.wait()
            tg.cancel_scope.cancel()

    def enqueue_matching(self, which: Callable[[Request], bool]) -> int:
        """Queue every cached object of the ``primary`` resource whose key ``which``
        selects (a shard this replica just took), at ``LOW_PRIORITY`` as an
        initial list is; how many."""
        if self.primary is None:
            return 0
        store = self.cache.informer_for(self.primary).store
        requests = [r for r in (Request(key.namespace, key.name) for key in store)
                    if which(r)]
        self._enqueue(requests, LOW_PRIORITY)
        return len(requests)

    async def _worker(self, gate: Callable[[Request], bool] | None) -> None:
        while True:
            try:
                request, priority = await self.queue.get_with_priority()
            except QueueShutDown:
                return
            if gate is not None and not gate(request):
                self.queue.forget(request)  # not this replica's key: dropped
                self.queue.done(request)
                continue
            try:
                with anyio.CancelScope() as scope:
                    self._running[request] = scope
                    await self._reconcile(request, priority)
            finally:
                self._running.pop(request, None)
                self._finished.set()
                self._finished = anyio.Event()
                self.queue.done(request)

    async def _reconcile(self, request: Request, priority: int) -> None:
        metrics = self.metrics
        started = self.clock.monotonic()
        self._in_flight += 1
        if metrics is not None:
            metrics.worker_started()
        outcome = "error"
        extra: dict[str, object] = {"controller": self.name, "key": str(request)}
        reconcile_id = new_reconcile_id()
        trace = None if (t := tracing.active) is None else t.reconcile(self, request,
                                                                         reconcile_id, priority)
        with log_context(self.name, str(request), reconcile_id=reconcile_id):
            try:
                result = await self._call(request)
            except TerminalError as err:
                if trace is not None:
                    trace.terminal(err)
                logger.error("reconcile failed permanently, not retrying: %s", err, extra=extra)
                self._forget(request)
                if metrics is not None:
                    metrics.terminal_error()
                    metrics.error()
            except Exception as err:
                delay = self.queue.add_rate_limited(request, priority)
                if trace is not None:
                    trace.retry(err, delay)
                self._log_failure(request, err, delay, extra)
                if metrics is not None:
                    metrics.error()
            else:
                seconds = result.requeue_after_seconds
                self._forget(request)
                if seconds is not None:
                    self.queue.add_after(request, seconds,
                                         priority if result.priority is None else result.priority)
                    outcome = "requeue_after"
                    if trace is not None:
                        trace.requeue(seconds)
                else:
                    outcome = "success"
            finally:
                self._in_flight -= 1
                if metrics is not None:
                    metrics.worker_finished()
                    metrics.observe(outcome, self.clock.monotonic() - started)
                if trace is not None:
                    trace.end(outcome)

    async def _call(self, request: Request) -> Result:
        if self.reconcile_timeout is None:
            result = await self.reconciler.reconcile(request)
        else:
            try:
                with anyio.fail_after(self.reconcile_timeout):
                    result = await self.reconciler.reconcile(request)
            except TimeoutError:
                if self.metrics is not None:
                    self.metrics.timeout()
                raise
        if not isinstance(result, Result):
            raise TypeError(f"reconcile must return a Result, not {type(result).__name__} "
                            "(use Result.done() or Result.requeue_after(seconds))")
        return result

    def _log_failure(self, request: Request, err: Exception, delay: float | None,
                     extra: dict[str, object]) -> None:
        """One line per failure; a traceback only for what is not an API answer or outage.

        A Conflict is routine (INFO: the retry reads the cache, which has caught
        up); other API errors and lost connections are weather (WARNING, the
        same one repeating within a minute counted, not repeated: per key, or
        across keys for an outage: no connection, 5xx, 429); anything else
        is a bug, in the reconciler or here: its traceback is logged the first
        time per key, one line after that.
        """
        # The rate limiter counted this failure unless it scheduled nothing.
        attempt = self.queue.num_requeues(request) + (delay is None)
        if delay is not None:
            retry = f"retrying in {delay:.2f}s"
        elif self.queue.shutting_down:
            retry = "not retried: shutting down"
        else:  # a change came in meanwhile: the key is queued again already
            retry = "queued again already"
        what = describe_error(err)
        if isinstance(err, Conflict):
            logger.info("reconcile failed (attempt %d): %s; %s", attempt, what, retry,
                        extra=extra)
            return
        if isinstance(err, APIError | APIConnectionError):
            # An outage fails every key alike: one line a minute for all of them.
            outage = isinstance(err, APIConnectionError | ServerError | TooManyRequests)
            key = (type(err), getattr(err, "status", 0)) if outage else (
                request, type(err), err.args)
            self._repeats.log(logger, logging.WARNING, key,
                              "reconcile failed (attempt %d): %s; %s", attempt, what, retry,
                              extra=extra)
            return
        signature = (request, type(err), str(err))
        if not self._tracebacks.log(logger, logging.ERROR, signature,
                                    "reconcile failed (attempt %d): %s; %s", attempt, what,
                                    retry, extra=extra, exc_info=err):
            self._repeats.log(logger, logging.ERROR, signature,
                              "reconcile failed again (attempt %d): %s; %s (traceback "
                              "logged before)", attempt, what, retry, extra=extra)

    def _forget(self, request: Request) -> None:
        retries = self.queue.num_requeues(request)
        if retries and self.metrics is not None:
            self.metrics.observe_retries(retries)
        self.queue.forget(request)

    def __repr__(self) -> str:
        return f"Controller({self.name!r}, workers={self.max_concurrent_reconciles})"
