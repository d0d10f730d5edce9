"""``Manager``: runs the cache, the controllers, leader election and the endpoints.

Expected flow of :meth:`Manager.run`:

1. serve ``/metrics``, ``/healthz`` and ``/readyz`` (if ``http_addr`` is set);
   start the webhook server, if given, and write its configurations if it
   is asked to (before the caches: a kind with a conversion webhook cannot
   be listed without it);
2. start the cache and wait for every informer to sync, failing with
   :class:`CacheSyncTimeout` naming the resources that did not;
3. with leader election: wait to acquire the Lease (a standby keeps its
   cache warm meanwhile), then keep renewing it; a cold standby
   (``LeaderElection(standby="cold")``) acquires the Lease before step 2,
   and is ready meanwhile;
   with sharding instead: join the shard ring (:class:`Sharding`): the
   controllers work on the keys of the shards this replica holds, and the
   cache holds those shards' objects;
4. start every controller's workers;
5. on :meth:`stop` (SIGTERM/SIGINT with :meth:`run_until_signal`): stop
   taking work, let in-flight reconciles finish within
   ``graceful_shutdown_timeout``, release the Lease, remove the webhook
   configurations if asked, stop the webhook server, and return;
6. if the Lease is lost, stop reconciling at once and raise
   :class:`LeadershipLost` (``run_until_signal`` exits non-zero): another
   replica is reconciling now.

Controllers come and go while it runs: one added to a running manager
(:meth:`Manager.add`, which a builder's ``complete`` calls) starts once the
informers of its watches have synced, however long that takes (a kind
whose CRD is installed later is waited for: one INFO line, then it syncs);
:meth:`Manager.remove` stops one (its reconciles finish within a grace
period) and releases its watches: an informer no other controller holds
stops, and its memory is given back.

Everything hangs off the manager: one client, one cache, one metrics
registry; nothing is process-global.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
from prometheus_client import CollectorRegistry

from .._cache.budget import CacheMemoryBudgetExceeded
from .._cache.cache import Cache, CacheSyncTimeout
from .._cache.scope import CacheScope
from .._cache.store import DEFAULT_SHARED_READ_MEMORY
from .._client.client import Client
from .._controller.builder import ControllerBuilder
from .._controller.controller import Controller
from .._controller.fairness import Fairness
from .._controller.reconciler import Reconciler, Request
from .._coordination.leader_election import LeaderElection, LeaderElector, LeadershipLost
from .._coordination.shard_ring import ShardRing
from .._coordination.sharded_controllers import (
    NamespaceShards,
    ShardedControllers,
    Sharding,
    ShardMetricsCollector,
)
from .._expectations.expectations import Expectations, PrometheusExpectationMetrics
from .._foundations.clock import Clock, SystemClock
from .._foundations.event_loop import event_loop_options
from .._foundations.http_endpoints import EndpointsError, serve_endpoints, split_address
from .._foundations.objects import Resource
from .._workqueue.queue_metrics import PrometheusQueueMetrics
from .._workqueue.rate_limiters import RateLimiter
from ..webhook._install import WebhookSetupError
from ..webhook._lifecycle import serve_webhooks, unserve_webhooks
from .event_recorder import EventRecorder
from .prometheus_metrics import (
    PrometheusCacheMetrics,
    PrometheusClientMetrics,
    PrometheusLeaderElectionMetrics,
    PrometheusReconcileMetrics,
)

if TYPE_CHECKING:
    from ..webhook import WebhookServer

__all__ = ["Manager"]

logger = logging.getLogger("reconcilekit.manager")
_SYSTEM_CLOCK: Final = SystemClock()
_DEFAULT_FAIRNESS: Final[Any] = object()  # new_controller's fairness left out
RELEASE_TIMEOUT: Final = 5.0
"""Seconds a stopping manager gives, after its reconciles, to flushing its events,
releasing its Lease and removing its webhook configurations."""


class Manager:
    """Owns the client, the cache and the controllers, and runs them."""

    def __init__(self, client: Client, *, name: str = "reconcilekit",
                 namespace: str | None = None, http_addr: str | None = ":8080",
                 default_namespaces: Iterable[str] | None = None,
                 cache_scopes: Mapping[Resource, CacheScope] | None = None,
                 coordination: LeaderElection | Sharding | None = None,
                 identity: str | None = None, graceful_shutdown_timeout: float = 30.0,
                 cache_sync_timeout: float = 120.0, relist_period: float | None = None,
                 cache_shared_read_memory: int = DEFAULT_SHARED_READ_MEMORY,
                 cache_shared_reads: bool | Iterable[Resource] = False,
                 cache_memory_budget: int | None = None,
                 clock: Clock = _SYSTEM_CLOCK,
                 registry: CollectorRegistry | None = None,
                 webhook_server: WebhookServer | None = None) -> None:
        """``coordination`` says how replicas share the work: one leader at a time
        (:class:`LeaderElection`), each its own shards (:class:`Sharding`), or
        None: every replica reconciles everything (one replica only).
        ``cache_shared_read_memory``, ``cache_shared_reads`` and
        ``cache_memory_budget`` are the cache's ``shared_read_memory``,
        ``shared_reads`` and ``memory_budget`` (see :class:`Cache`)."""
        if http_addr is not None:
            split_address(http_addr)  # fail now, not once running
        if not isinstance(coordination, LeaderElection | Sharding | None):
            raise TypeError("coordination must be a LeaderElection, a Sharding or None, "
                            f"not {type(coordination).__name__}")
        self.name = name
        self.client = client
        self.clock = clock
        self.namespace = namespace
        self.http_addr = http_addr
        self.http_port: int | None = None
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.cache_sync_timeout = cache_sync_timeout
        self.registry = registry if registry is not None else CollectorRegistry()
        # Unique per manager, as controller-runtime's hostname_UUID: two managers in one
        # process (or two processes with one hostname) must never share an identity.
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.ring: ShardRing | None = None
        held: NamespaceShards | None = None  # what a cache sharded by namespace holds
        if isinstance(coordination, Sharding):
            self.ring = ShardRing(
                client, name=coordination.name, namespace=coordination.namespace,
                identity=self.identity, shards=coordination.shards,
                lease_duration=coordination.lease_duration,
                renew_deadline=coordination.renew_deadline,
                retry_period=coordination.retry_period,
                graceful_stop=graceful_shutdown_timeout, clock=clock)
            if coordination.key == "namespace":  # the cache syncs empty: no shard held yet
                held = NamespaceShards(self.ring)
        self.cache = Cache(client, namespace=namespace, default_namespaces=default_namespaces,
                           scopes=cache_scopes, clock=clock, relist_period=relist_period,
                           admit=held.admits if held is not None else None,
                           shard_selector=held.selector if held is not None else None,
                           shared_read_memory=cache_shared_read_memory,
                           shared_reads=cache_shared_reads, memory_budget=cache_memory_budget)
        PrometheusCacheMetrics(self.registry, self.cache.statistics,
                               budget=cache_memory_budget)
        client.add_request_observer(
            PrometheusClientMetrics(self.registry, _host_of(client)).observe)
        self.events = EventRecorder(client, component=name, clock=clock)
        self.webhook_server = webhook_server
        if webhook_server is not None:
            webhook_server.attach_metrics(self.registry)
        self.controllers: list[Controller] = []
        self.coordination = coordination
        self.elector: LeaderElector | None = None
        self._shards: ShardedControllers | None = None
        match coordination:
            case LeaderElection() as election:
                leader_metrics = PrometheusLeaderElectionMetrics(self.registry, election.name)
                self.elector = LeaderElector(
                    client, name=election.name,
                    namespace=election.namespace or namespace or "default",
                    identity=self.identity, lease_duration=election.lease_duration,
                    renew_deadline=election.renew_deadline,
                    retry_period=election.retry_period, clock=clock,
                    on_change=leader_metrics.set_leader)
            case Sharding() as sharding:
                assert self.ring is not None
                ShardMetricsCollector(self.registry, self.ring, sharding, self.controllers)
                self._shards = ShardedControllers(self.ring, sharding, self.controllers,
                                                  self.cache)
        self._stop = anyio.Event()
        self._started = anyio.Event()  # controllers running
        # While controllers run: where a controller added late starts, and each one's scope.
        self._workers: anyio.abc.TaskGroup | None = None
        self._scopes: dict[Controller, anyio.CancelScope] = {}
        self._metrics: dict[Controller, tuple[PrometheusReconcileMetrics,
                                               PrometheusQueueMetrics]] = {}
        self._synced = False
        # A cold standby waiting for the Lease: ready, with no cache to sync yet.
        self._cold_standby = False
        self._running = False
        self._background: asyncio.Task[None] | None = None

    # -- wiring ------------------------------------------------------------------------------

    def controller(self) -> ControllerBuilder:
        """A builder for a controller run by this manager."""
        return ControllerBuilder(self)

    def new_controller(self, name: str, reconciler: Reconciler, *,
                       primary: Resource | None = None,
                       max_concurrent_reconciles: int = 1,
                       rate_limiter: RateLimiter[Request] | None = None,
                       reconcile_timeout: float | None = None,
                       fairness: Fairness = _DEFAULT_FAIRNESS) -> Controller:
        """Create a controller wired to this manager's cache and metrics, and add it
        (``primary`` and the options as :class:`Controller`'s; ``fairness`` left out:
        the controller's default, the request's namespace)."""
        if any(c.name == name for c in self.controllers):
            raise ValueError(f"a controller named {name!r} already exists in this manager")
        metrics = PrometheusReconcileMetrics(self.registry, name)
        queue_metrics = PrometheusQueueMetrics(self.registry, name)
        controller = Controller(
            name, reconciler, self.cache, primary=primary,
            max_concurrent_reconciles=max_concurrent_reconciles,
            rate_limiter=rate_limiter, reconcile_timeout=reconcile_timeout, clock=self.clock,
            metrics=metrics, queue_metrics=queue_metrics,
            **({} if fairness is _DEFAULT_FAIRNESS else {"fairness": fairness}))
        self._metrics[controller] = (metrics, queue_metrics)
        self.add(controller)
        return controller

    def expectations(self, controller: str, *,
                     timeout: float = 300.0) -> Expectations[Request]:
        """:class:`Expectations` for ``controller`` on the manager's clock, their timeouts
        counted in ``reconcilekit_expectation_timeouts_total{controller}``."""
        return Expectations(name=controller, timeout=timeout, clock=self.clock,
                            metrics=PrometheusExpectationMetrics(self.registry, controller))

    def add(self, controller: Controller) -> None:
        """Run ``controller`` with the others; added to a running manager, it starts once
        the informers of its watches have synced (see the module docstring)."""
        if any(c is controller or c.name == controller.name for c in self.controllers):
            raise ValueError(f"a controller named {controller.name!r} already exists in "
                             "this manager")
        self.controllers.append(controller)
        if self._workers is not None:
            self._workers.start_soon(self._start_late, controller)

    async def remove(self, controller: Controller | str, *, grace: float | None = None
                     ) -> None:
        """Stop ``controller`` (or the one of that name) and forget it.

        It takes no more keys; its reconciles in flight get ``grace`` seconds
        (None: ``graceful_shutdown_timeout``) and are then cancelled; its
        watches are released, so informers no other controller holds stop
        (their watches closed, their stores freed). Raises KeyError for a
        controller this manager does not have.
        """
        found = [c for c in self.controllers
                 if c is controller or (isinstance(controller, str) and c.name == controller)]
        if not found:
            raise KeyError(f"no controller {controller!r} in this manager")
        stopping = found[0]
        self.controllers.remove(stopping)
        if not stopping.started.is_set():  # still waiting for its informers
            stopping.queue.shutdown()
        elif not await stopping.shutdown(self.graceful_shutdown_timeout if grace is None
                                         else grace):
            scope = self._scopes.get(stopping)
            if scope is not None:
                scope.cancel()
        stopping.release_watches()
        metrics = self._metrics.pop(stopping, None)
        if metrics is not None:  # made by new_controller: a new one may take its name
            metrics[0].release()
            metrics[1].release(self.registry)
        logger.info("removed controller %s", stopping.name)

    # -- state -------------------------------------------------------------------------------

    def ready(self) -> tuple[bool, str]:
        """For ``/readyz``: caches synced and no watch dead (failing with an error)."""
        if self.webhook_server is not None and not self.webhook_server.serving:
            return False, "webhook server not serving"
        if self._cold_standby:
            return True, "ok (cold standby: caches start with the Lease)"
        if not self._synced:
            return False, "caches not synced"
        if self.ring is not None and not self.ring.is_member:
            return False, f"not a member of shard ring {self.ring.name} yet"
        broken = [s.resource for s in self.cache.statistics()
                  if not s.watching and s.last_error is not None and s.waiting_for is None]
        if broken:
            return False, "watch failing: " + ", ".join(broken)
        return True, "ok"

    def readiness_detail(self) -> list[str]:
        """For ``/readyz?verbose``: a line per informer (``[+]`` synced and watching, ``[-]``
        not) with its objects, the memory it holds and the time since its last event or
        bookmark, then a line per controller; none of them changes :meth:`ready`'s verdict
        beyond what it says."""
        lines = []
        for stats in sorted(self.cache.statistics(), key=lambda s: s.resource):
            if stats.waiting_for is not None:
                state = f"waiting for {stats.waiting_for}"
            elif not stats.synced:
                state = "listing" + (f" (last error: {stats.last_error})"
                                     if stats.last_error else "")
            elif not stats.watching and stats.last_error is not None:
                state = f"watch failing: {stats.last_error}"
            else:
                state = "synced"
            healthy = state == "synced"
            age = ("no event yet" if stats.last_event_age is None
                   else f"last event {stats.last_event_age:.1f}s ago")
            lines.append(f"[{'+' if healthy else '-'}]informer {stats.resource}: {state}, "
                         f"{stats.objects} objects, {stats.bytes / 2**20:.1f} MiB held "
                         f"(+{stats.shared_bytes / 2**20:.1f} MiB shared reads), {age}")
        for controller in self.controllers:
            running = controller.started.is_set()
            lines.append(f"[{'+' if running else '-'}]controller {controller.name}: "
                         f"{'running' if running else 'not started'}, "
                         f"{len(controller.queue)} queued, {controller.in_flight} in flight")
        return lines

    def stop(self) -> None:
        """Begin a graceful shutdown (what SIGTERM does)."""
        self._stop.set()

    @property
    def max_shutdown_time(self) -> float:
        """The most seconds a graceful shutdown takes from :meth:`stop` (SIGTERM) until
        the servers close: ``graceful_shutdown_timeout`` for the reconciles in flight,
        then :data:`RELEASE_TIMEOUT` for the events, the Lease and the webhook
        configurations. A Pod's ``terminationGracePeriodSeconds`` must exceed it."""
        return self.graceful_shutdown_timeout + RELEASE_TIMEOUT

    # -- running -----------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Run until :meth:`stop`; see the module docstring for the flow."""
        if self._running:
            raise RuntimeError("this manager is already running")
        self._running = True
        try:
            async with anyio.create_task_group() as tg:
                await self._run(tg, task_status)
            if self._stop.is_set():
                logger.info("shutdown complete")
        except BaseExceptionGroup as group:
            for expected in (LeadershipLost, CacheSyncTimeout, CacheMemoryBudgetExceeded,
                             EndpointsError, WebhookSetupError):
                found = _first(group, expected)
                if found is not None:
                    raise found from None
            raise
        finally:
            self._running = False

    async def _run(self, tg: anyio.abc.TaskGroup,
                   task_status: anyio.abc.TaskStatus[None]) -> None:
        if self.http_addr is not None:
            await tg.start(functools.partial(
                serve_endpoints, self.http_addr, self.registry, self.ready, self._set_port,
                detail=self.readiness_detail))
        tg.start_soon(self.events.run)
        if self.webhook_server is not None:  # before the caches: conversion webhooks
            await tg.start(serve_webhooks, self.client, self.webhook_server)
        cold = (isinstance(self.coordination, LeaderElection)
                and self.coordination.standby == "cold")
        if cold:
            self._cold_standby = True  # the caches start with the Lease
            task_status.started()
            if not await self._lead(tg):
                return
            self._cold_standby = False
        await tg.start(self.cache.run)
        if not cold:
            task_status.started()
        if not await self._unless_stopped(self.cache.wait_for_sync, self.cache_sync_timeout):
            tg.cancel_scope.cancel()
            return
        self._synced = True
        logger.info("caches synced: %s", ", ".join(s.resource for s in self.cache.statistics()))
        if self.elector is not None and not cold and not await self._lead(tg):
            return
        if self.ring is not None and self._shards is not None:
            await tg.start(self.ring.run, self._shards)
        async with anyio.create_task_group() as workers:
            # Those added while the caches synced may wait for informers of their own.
            synced = [c for c in self.controllers if all(i.has_synced for i in c.watched)]
            for controller in synced:
                await workers.start(self._run_controller, controller)
            logger.info("started %d controller(s)", len(synced))
            self._workers = workers
            for controller in self.controllers:
                if controller not in synced:
                    workers.start_soon(self._start_late, controller)
            self._started.set()
            await self._stop.wait()
            logger.info("shutting down: finishing in-flight reconciles (grace %.0fs)",
                        self.graceful_shutdown_timeout)
            self._workers = None
            async with anyio.create_task_group() as drain:  # each bounded by the grace
                for controller in self.controllers:
                    drain.start_soon(controller.shutdown, self.graceful_shutdown_timeout)
            workers.cancel_scope.cancel()
        with anyio.CancelScope(shield=True), anyio.move_on_after(RELEASE_TIMEOUT):
            await self.events.flush()
            if self.elector is not None:
                await self.elector.release()
            if self.webhook_server is not None:
                await unserve_webhooks(self.client, self.webhook_server)
        tg.cancel_scope.cancel()

    async def _run_controller(self, controller: Controller, *,
                              task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                              ) -> None:
        gate = self._shards.gate(controller) if self._shards is not None else None
        with anyio.CancelScope() as scope:
            self._scopes[controller] = scope
            try:
                await controller.run(gate=gate, task_status=task_status)
            finally:
                del self._scopes[controller]

    async def _start_late(self, controller: Controller) -> None:
        """Start ``controller``, added while running, once its informers synced; one
        refused by the cache's memory budget is logged and removed."""
        informers = controller.watched
        if not all(informer.has_synced for informer in informers):
            logger.info("controller %s: starting once %s synced", controller.name,
                        ", ".join(str(i.resource) for i in informers))
        for informer in informers:
            await informer.until_synced_or_stopped()
            if informer.refusal is not None:
                logger.error("controller %s not started: %s", controller.name,
                             informer.refusal)
                if controller in self.controllers:
                    self.controllers.remove(controller)
                controller.release_watches()
                return
        if controller not in self.controllers or self._workers is None:
            return  # removed (or the manager stopped) meanwhile
        await self._workers.start(self._run_controller, controller)
        logger.info("started controller %s", controller.name)

    async def _lead(self, tg: anyio.abc.TaskGroup) -> bool:
        """Acquire the Lease and keep renewing it in ``tg``; False (``tg`` cancelled) if
        :meth:`stop` came first."""
        assert self.elector is not None
        if not await self._unless_stopped(self.elector.acquire):
            tg.cancel_scope.cancel()
            return False
        tg.start_soon(self.elector.hold)
        return True

    async def _unless_stopped(self, step: Callable[..., Awaitable[None]], *args: Any) -> bool:
        """Run a start-up step (sync, acquiring the Lease); False if :meth:`stop` came first."""
        async with anyio.create_task_group() as tg:
            async def stop_waiting() -> None:
                await self._stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stop_waiting)
            await step(*args)
            tg.cancel_scope.cancel()
            return True
        return False

    async def start(self) -> None:
        """Run the manager in the background; return once its controllers run.

        That is once the caches synced and, with leader election, the Lease is
        held. Raises what stopped the manager if it ended first (a cache sync
        timeout, endpoints that cannot be served). Stop it with
        :meth:`shutdown`, from any task: unlike :meth:`run` in a task group,
        start and shutdown may come from different tasks, as the set-up and
        the teardown of a pytest-asyncio fixture do. ``async with manager:``
        does both.
        """
        if self._background is not None or self._running:
            raise RuntimeError("this manager is already running")
        self._background = task = asyncio.ensure_future(self.run())
        started = asyncio.ensure_future(self._started.wait())
        try:
            await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
        if task.done():
            self._background = None
            task.result()  # raises what ended it
            raise RuntimeError("the manager stopped before its controllers started")

    async def shutdown(self) -> None:
        """Stop a manager :meth:`start` started, gracefully, and wait until it is done.

        Raises what ended it if that was not the stop (a lost Lease, say).
        Does nothing if it is not running.
        """
        task, self._background = self._background, None
        if task is None:
            return
        self.stop()
        await task

    async def __aenter__(self) -> Manager:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    def _set_port(self, port: int) -> None:
        self.http_port = port

    async def serve(self) -> int:
        """Run until SIGTERM or SIGINT, then shut down gracefully; returns the exit code.

        0 after a clean shutdown; 1 when the Lease was lost, the caches did
        not sync (or would exceed the memory budget), the endpoints or webhooks
        could not be served (logged in one line with the reason).
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._stop_on_signal)
            try:
                await self.run()
            except (LeadershipLost, CacheSyncTimeout, CacheMemoryBudgetExceeded, EndpointsError,
                    WebhookSetupError) as err:
                logger.error("exiting: %s", err)
                return 1
            finally:
                tg.cancel_scope.cancel()
        return 0

    def run_until_signal(self) -> int:
        """:meth:`serve` in a new event loop (for a ``main()``); returns the exit code.

        The loop is uvloop's when it is installed (``reconcilekit[fast]``), unless
        ``RECONCILEKIT_EVENT_LOOP=asyncio``.

        The manager's client must not be tied to another event loop: build
        everything inside one ``async def main()`` and ``await manager.serve()``
        when you create the client asynchronously.
        """
        return anyio.run(self.serve, backend="asyncio", backend_options=event_loop_options())

    async def _stop_on_signal(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                logger.info("received %s", signal.Signals(signum).name)
                self.stop()

    def __repr__(self) -> str:
        return f"Manager({self.name!r}, controllers={[c.name for c in self.controllers]})"


def _first(group: BaseExceptionGroup[Any], kind: type[BaseException]) -> BaseException | None:
    """The first exception of ``kind`` anywhere in a (nested) exception group."""
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            inner = _first(exc, kind)
            if inner is not None:
                return inner
        elif isinstance(exc, kind):
            return exc
    return None


def _host_of(client: Client) -> str:
    """``host:port`` of the API server, as client-go's ``host`` label has it."""
    return str(client.configuration.host).split("://", 1)[-1].rstrip("/")
