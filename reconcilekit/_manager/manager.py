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

from .._cache.cache import Cache, CacheSyncTimeout
from .._cache.scope import CacheScope
from .._cache.store import DEFAULT_SHARED_READ_MEMORY
from .._client.client import Client
from .._controller.builder import ControllerBuilder
from .._controller.controller import Controller
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
                 clock: Clock = _SYSTEM_CLOCK,
                 registry: CollectorRegistry | None = None,
                 webhook_server: WebhookServer | None = None) -> None:
        """``coordination`` says how replicas share the work: one leader at a time
        (:class:`LeaderElection`), each its own shards (:class:`Sharding`), or
        None: every replica reconciles everything (one replica only).
        ``cache_shared_read_memory`` and ``cache_shared_reads`` are the cache's
        ``shared_read_memory`` and ``shared_reads`` (see :class:`Cache`)."""
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
                           shared_reads=cache_shared_reads)
        PrometheusCacheMetrics(self.registry, self.cache.statistics)
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
                       reconcile_timeout: float | None = None) -> Controller:
        """Create a controller wired to this manager's cache and metrics, and add it
        (``primary`` and the options as :class:`Controller`'s)."""
        if any(c.name == name for c in self.controllers):
            raise ValueError(f"a controller named {name!r} already exists in this manager")
        controller = Controller(
            name, reconciler, self.cache, primary=primary,
            max_concurrent_reconciles=max_concurrent_reconciles,
            rate_limiter=rate_limiter, reconcile_timeout=reconcile_timeout, clock=self.clock,
            metrics=PrometheusReconcileMetrics(self.registry, name),
            queue_metrics=PrometheusQueueMetrics(self.registry, name))
        self.add(controller)
        return controller

    def expectations(self, controller: str, *,
                     timeout: float = 300.0) -> Expectations[Request]:
        """:class:`Expectations` for ``controller`` on the manager's clock, their timeouts
        counted in ``reconcilekit_expectation_timeouts_total{controller}``."""
        return Expectations(name=controller, timeout=timeout, clock=self.clock,
                            metrics=PrometheusExpectationMetrics(self.registry, controller))

    def add(self, controller: Controller) -> None:
        if self._running:
            raise RuntimeError("controllers must be added before the manager runs")
        self.controllers.append(controller)

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
                  if not s.watching and s.last_error is not None]
        if broken:
            return False, "watch failing: " + ", ".join(broken)
        return True, "ok"

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
            for expected in (LeadershipLost, CacheSyncTimeout, EndpointsError,
                             WebhookSetupError):
                found = _first(group, expected)
                if found is not None:
                    raise found from None
            raise
        finally:
            self._running = False

    async def _run(self, tg: anyio.abc.TaskGroup,
                   task_status: anyio.abc.TaskStatus[None]) -> None:
        if self.http_addr is not None:
            await tg.start(serve_endpoints, self.http_addr, self.registry, self.ready,
                           self._set_port)
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
            for controller in self.controllers:
                gate = self._shards.gate(controller) if self._shards is not None else None
                await workers.start(functools.partial(controller.run, gate=gate))
            logger.info("started %d controller(s)", len(self.controllers))
            self._started.set()
            await self._stop.wait()
            logger.info("shutting down: finishing in-flight reconciles (grace %.0fs)",
                        self.graceful_shutdown_timeout)
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
        not sync, the endpoints or webhooks could not be served (logged in one line
        with the reason).
        """
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._stop_on_signal)
            try:
                await self.run()
            except (LeadershipLost, CacheSyncTimeout, EndpointsError, WebhookSetupError) as err:
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
