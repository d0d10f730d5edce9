"""Controller, leader election and cache metrics, on a registry the manager owns.

Names, labels, help texts and buckets of the ``controller_runtime_*`` and
``leader_election_*`` families are controller-runtime's
(``pkg/internal/controller/metrics/metrics.go``, ``pkg/metrics/leaderelection.go``),
so existing dashboards and alerts work unchanged. The ``reconcilekit_*``
families are this library's own.

Nothing here touches prometheus_client's process-global ``REGISTRY``: every
class takes the :class:`~prometheus_client.CollectorRegistry` to report to.

No ``*_created`` series: prometheus_client adds a ``<name>_created``
sample (the creation time) to every counter and histogram child, which
controller-runtime does not export and which doubles the series count. Its
only switches are process-wide (``prometheus_client.disable_created_metrics()``,
``PROMETHEUS_DISABLE_CREATED_SERIES=true``), so this module never flips
them; instead its families are registered through a collector that leaves
those samples out, which affects nothing else in the process.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .._cache.informer import InformerStatistics
from .._client.transport import RequestRecord
from .._foundations.metric_families import FamiliesPerRegistry

__all__ = ["PrometheusCacheMetrics", "PrometheusClientMetrics", "PrometheusReconcileMetrics",
           "PrometheusLeaderElectionMetrics"]

# controller-runtime's buckets for controller_runtime_reconcile_time_seconds.
RECONCILE_TIME_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0,
    10.0, 15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip

# Consecutive failures; with client-go's default backoff (5 ms doubling) a key
# reaches the 1000 s cap after about 18 failures, so 32 and more means hours.
RETRY_BUCKETS: Final = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)

RESULTS: Final = ("success", "error", "requeue", "requeue_after")


class _WithoutCreated(Collector):
    """Collects ``metrics`` (built with ``registry=None``) minus their ``_created`` samples."""

    def __init__(self, metrics: Iterable[Counter | Gauge | Histogram]) -> None:
        self._metrics = tuple(metrics)

    def describe(self) -> Iterable[Metric]:
        return [family for metric in self._metrics for family in metric.describe()]

    def collect(self) -> Iterable[Metric]:
        families = []
        for metric in self._metrics:
            for family in metric.collect():  # a fresh Metric on every call
                created = family.name + "_created"
                family.samples = [s for s in family.samples if s.name != created]
                families.append(family)
        return families


class _ControllerFamilies:
    __slots__ = ("active", "errors", "max_concurrent", "panics", "retries",
                 "terminal", "time", "timeouts", "total")  # fmt: skip

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("controller",)
        self.total = Counter(
            "controller_runtime_reconcile_total",
            "Total number of reconciliations per controller",
            ("controller", "result"),
            registry=None,
        )
        self.errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            labels,
            registry=None,
        )
        self.terminal = Counter(
            "controller_runtime_terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            labels,
            registry=None,
        )
        self.panics = Counter(
            "controller_runtime_reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            labels,
            registry=None,
        )
        self.timeouts = Counter(
            "controller_runtime_reconcile_timeouts_total",
            "Total number of reconciliation timeouts per controller",
            labels,
            registry=None,
        )
        self.time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            labels,
            registry=None,
            buckets=RECONCILE_TIME_BUCKETS,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            labels,
            registry=None,
        )
        self.active = Gauge(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            labels,
            registry=None,
        )
        self.retries = Histogram(
            "reconcilekit_reconcile_retries",
            "Consecutive failed reconciles of a key before it succeeded or was forgotten, "
            "per controller",
            labels,
            registry=None,
            buckets=RETRY_BUCKETS,
        )
        registry.register(_WithoutCreated((
            self.total, self.errors, self.terminal, self.panics, self.timeouts, self.time,
            self.max_concurrent, self.active, self.retries)))


def _leader_gauge(registry: CollectorRegistry) -> Gauge:
    return Gauge(
        "leader_election_master_status",
        "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
        "backup, 1 indicates master. 'name' is the string used to identify the lease. "
        "Please make sure to group by name.",
        ("name",),
        registry=registry,
    )


# One set of families per registry: every controller and lease of a manager share its registry.
_CONTROLLER_FAMILIES: Final = FamiliesPerRegistry(_ControllerFamilies, "a controller")
_LEADER_FAMILIES: Final = FamiliesPerRegistry(_leader_gauge, "a lease")


class PrometheusReconcileMetrics:
    """controller-runtime's ``controller_runtime_*`` metrics for one controller.

    Every series carries ``controller=<controller>``:

    * ``controller_runtime_reconcile_total{controller,result}``, ``result`` one
      of ``success``, ``error``, ``requeue``, ``requeue_after``;
    * ``controller_runtime_reconcile_errors_total``,
      ``controller_runtime_terminal_reconcile_errors_total``,
      ``controller_runtime_reconcile_panics_total``,
      ``controller_runtime_reconcile_timeouts_total``;
    * ``controller_runtime_reconcile_time_seconds`` (histogram, controller-runtime's
      buckets from 5 ms to 60 s);
    * ``controller_runtime_max_concurrent_reconciles`` and
      ``controller_runtime_active_workers`` (gauges);
    * ``reconcilekit_reconcile_retries`` (histogram, buckets 1 to 128): how
      many consecutive failures a key had when it finally succeeded or was
      forgotten. controller-runtime has nothing like it; its workqueue
      ``retries_total`` counts retries, not how long keys stay broken. It is
      per controller, never per key: a key label would make one series per
      object ever reconciled, which no Prometheus survives.

    Guarantees:
      * every series above exists from construction, counters at 0 (as
        controller-runtime's ``initMetrics``), so ``rate()`` and absence
        alerts work before the first reconcile;
      * each method changes exactly one family, never raises for valid
        arguments, and costs one or two prometheus_client updates.

    How controller-runtime's controller reports one reconcile, which
    reconcilekit's controller copies: ``worker_started()``; then on a
    retried error ``error()``; on a terminal error ``terminal_error()`` and
    ``error()`` (a terminal error counts among the errors too); when the
    reconcile timeout fired also ``timeout()``; then ``worker_finished()``
    and ``observe(result, seconds)`` with ``result="error"`` for both kinds
    of error.

    Python has no panics: an exception is an error. The panics series stays
    at 0 and exists for dashboards and alerts written for controller-runtime.

    Any number of controllers may share one ``registry``; a second
    ``PrometheusReconcileMetrics`` with the same ``controller`` on it raises ValueError.
    """

    __slots__ = ("_active", "_errors", "_max_concurrent", "_registry", "_retries",
                 "_terminal", "_time", "_timeouts", "_total", "controller")  # fmt: skip

    def __init__(self, registry: CollectorRegistry, controller: str) -> None:
        families = _CONTROLLER_FAMILIES.claim(registry, controller)
        self._registry = registry
        self.controller = controller
        self._total = {result: families.total.labels(controller, result) for result in RESULTS}
        self._errors = families.errors.labels(controller)
        self._terminal = families.terminal.labels(controller)
        families.panics.labels(controller)
        self._timeouts = families.timeouts.labels(controller)
        self._time = families.time.labels(controller)
        self._max_concurrent = families.max_concurrent.labels(controller)
        self._active = families.active.labels(controller)
        self._retries = families.retries.labels(controller)

    def observe(self, result: str, seconds: float) -> None:
        """One reconcile ended with ``result`` after ``seconds``.

        Raises ValueError for a ``result`` outside ``success``, ``error``,
        ``requeue``, ``requeue_after`` (an unknown label value would be a new
        series that no dashboard knows).
        """
        child = self._total.get(result)
        if child is None:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}; got {result!r}")
        child.inc()
        self._time.observe(seconds)

    def release(self) -> None:
        """The controller is gone: its name may be claimed again, continuing its series."""
        self._active.set(0)
        _CONTROLLER_FAMILIES.release(self._registry, self.controller)

    def error(self) -> None:
        """A reconcile raised (retried, or terminal: see the class docstring)."""
        self._errors.inc()

    def terminal_error(self) -> None:
        """A reconcile raised ``TerminalError``; call :meth:`error` as well."""
        self._terminal.inc()

    def timeout(self) -> None:
        """A reconcile was cancelled by the controller's reconcile timeout."""
        self._timeouts.inc()

    def worker_started(self) -> None:
        """A worker took a key; ``active_workers`` goes up by one."""
        self._active.inc()

    def worker_finished(self) -> None:
        """A worker is done with its key; ``active_workers`` goes down by one."""
        self._active.dec()

    def set_max_concurrent(self, n: int) -> None:
        """The controller runs ``n`` workers (0 until this is called)."""
        self._max_concurrent.set(n)

    def observe_retries(self, n: int) -> None:
        """A key left backoff after ``n`` consecutive failures; ValueError if ``n < 0``."""
        if n < 0:
            raise ValueError(f"retries must be >= 0, got {n}")
        self._retries.observe(n)

    def __repr__(self) -> str:
        return f"PrometheusReconcileMetrics(controller={self.controller!r})"


class PrometheusLeaderElectionMetrics:
    """``leader_election_master_status{name}``: 1 while this process leads lease ``name``, else 0.

    The series exists from construction at 0 (a standby reports 0, so
    ``sum by (name)`` is 1 when exactly one replica leads). Several leases
    may share one ``registry``; a second instance for the same ``name`` on it
    raises ValueError.
    """

    __slots__ = ("_child", "name")

    def __init__(self, registry: CollectorRegistry, name: str) -> None:
        gauge = _LEADER_FAMILIES.claim(registry, name)
        self.name = name
        self._child = gauge.labels(name)
        self._child.set(0)

    def set_leader(self, leading: bool) -> None:
        """This process started (True) or stopped (False) leading the lease."""
        self._child.set(1 if leading else 0)

    def __repr__(self) -> str:
        return f"PrometheusLeaderElectionMetrics(name={self.name!r})"


class PrometheusCacheMetrics(Collector):
    """Informer health computed at scrape time from ``statistics()`` (``Cache.statistics``).

    Registers itself on ``registry`` and reports, per ``resource``
    (``pods/v1``, ``leases.coordination.k8s.io/v1``):

    * counters ``reconcilekit_cache_relists_total``,
      ``reconcilekit_watch_restarts_total``, ``reconcilekit_dead_watches_total``;
    * gauges ``reconcilekit_cache_objects``, ``reconcilekit_cache_bytes``
      (the JSON the stores hold), ``reconcilekit_cache_shared_read_bytes``
      (the decoded objects kept for shared reads, estimated),
      ``reconcilekit_cache_last_event_age_seconds`` (left out while an
      informer has seen nothing yet), ``reconcilekit_cache_synced`` and
      ``reconcilekit_watch_open`` (1 or 0), ``reconcilekit_cache_waiting``
      (1 while the API server does not serve the resource and its informer
      waits for it: a CRD not installed yet);
    * with a ``budget``, the gauge ``reconcilekit_cache_memory_budget_bytes``
      (what ``reconcilekit_cache_bytes`` may sum to before a new informer is
      refused).

    A resource's series end when its informers stop (their last user let go).

    Guarantees:
      * values are read when the registry is collected: exact at scrape
        time, no background task, nothing stored between scrapes;
      * the counters come from the informers' own monotonic counts, so they
        only go down when the cache itself is replaced (which Prometheus
        treats as a counter reset);
      * one series per resource: informers of the same resource (a full and
        a metadata-only one) are merged: counters summed, ``objects`` the
        larger store, ``synced`` and ``watch_open`` 1 only if true for all,
        the event age the youngest;
      * no ``_created`` samples.

    A second collector on the same registry raises ValueError (duplicate
    series), like any prometheus_client metric.
    """

    def __init__(self, registry: CollectorRegistry,
                 statistics: Callable[[], list[InformerStatistics]], *,
                 budget: int | None = None) -> None:
        self._statistics = statistics
        self._budget = budget
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return list(self._families({}))

    def collect(self) -> Iterable[Metric]:
        return list(self._families(_merge(self._statistics())))

    def _families(self, rows: dict[str, _Row]) -> Iterator[Metric]:
        labels = ("resource",)
        objects = GaugeMetricFamily("reconcilekit_cache_objects",
                                    "Objects held in the cache, per resource", labels=labels)
        held = GaugeMetricFamily("reconcilekit_cache_bytes", "JSON bytes the cache holds for "
                                 "its objects (indexes and the interpreter not counted), per "
                                 "resource", labels=labels)
        relists = CounterMetricFamily("reconcilekit_cache_relists",
                                      "Lists after the first one (410 Expired or a failed "
                                      "watch resume), per resource", labels=labels)
        restarts = CounterMetricFamily("reconcilekit_watch_restarts",
                                       "Watches started again after the first one, per resource",
                                       labels=labels)
        dead = CounterMetricFamily("reconcilekit_dead_watches",
                                   "Watches abandoned because their connection outlived the "
                                   "server's timeout, per resource", labels=labels)
        age = GaugeMetricFamily("reconcilekit_cache_last_event_age_seconds",
                                "Seconds since the last watch event or bookmark, per resource",
                                labels=labels)
        synced = GaugeMetricFamily("reconcilekit_cache_synced",
                                   "1 once the cache has listed the resource, per resource",
                                   labels=labels)
        open_ = GaugeMetricFamily("reconcilekit_watch_open",
                                  "1 while a watch is open, per resource", labels=labels)
        shared = GaugeMetricFamily("reconcilekit_cache_shared_read_bytes",
                                   "Decoded objects kept for shared reads (estimated bytes), "
                                   "per resource", labels=labels)
        waiting = GaugeMetricFamily("reconcilekit_cache_waiting",
                                    "1 while the API server does not serve the resource (its "
                                    "CRD not installed or established yet), per resource",
                                    labels=labels)
        for resource, row in sorted(rows.items()):
            value = [resource]
            objects.add_metric(value, row.objects)
            held.add_metric(value, row.bytes)
            relists.add_metric(value, row.relists)
            restarts.add_metric(value, row.watch_restarts)
            dead.add_metric(value, row.dead_watches)
            if row.last_event_age is not None:
                age.add_metric(value, row.last_event_age)
            synced.add_metric(value, 1 if row.synced else 0)
            open_.add_metric(value, 1 if row.watching else 0)
            shared.add_metric(value, row.shared_bytes)
            waiting.add_metric(value, 1 if row.waiting else 0)
        yield from (objects, held, relists, restarts, dead, age, synced, open_, shared, waiting)
        if self._budget is not None:
            yield GaugeMetricFamily("reconcilekit_cache_memory_budget_bytes",
                                    "JSON bytes the cache may hold before it refuses a new "
                                    "informer", value=self._budget)

    def __repr__(self) -> str:
        return f"PrometheusCacheMetrics({self._statistics!r})"


class _Row:
    __slots__ = ("bytes", "dead_watches", "last_event_age", "objects", "relists",
                 "shared_bytes", "synced", "waiting", "watch_restarts", "watching")  # fmt: skip

    def __init__(self, stats: InformerStatistics) -> None:
        self.objects = stats.objects
        self.bytes = stats.bytes
        self.relists = stats.relists
        self.watch_restarts = stats.watch_restarts
        self.dead_watches = stats.dead_watches
        self.last_event_age = stats.last_event_age
        self.synced = stats.synced
        self.watching = stats.watching
        self.shared_bytes = stats.shared_bytes
        self.waiting = stats.waiting_for is not None

    def merge(self, stats: InformerStatistics) -> None:
        self.objects = max(self.objects, stats.objects)
        self.bytes += stats.bytes  # two stores (full, metadata-only) hold two copies
        self.relists += stats.relists
        self.watch_restarts += stats.watch_restarts
        self.dead_watches += stats.dead_watches
        ages = [a for a in (self.last_event_age, stats.last_event_age) if a is not None]
        self.last_event_age = min(ages) if ages else None
        self.synced = self.synced and stats.synced
        self.watching = self.watching and stats.watching
        self.shared_bytes += stats.shared_bytes
        self.waiting = self.waiting or stats.waiting_for is not None


def _merge(statistics: Iterable[InformerStatistics]) -> dict[str, _Row]:
    rows: dict[str, _Row] = {}
    for stats in statistics:
        row = rows.get(stats.resource)
        if row is None:
            rows[stats.resource] = _Row(stats)
        else:
            row.merge(stats)
    return rows


class PrometheusClientMetrics:
    """Every request the manager's client sends, as a request observer counts it.

    ``rest_client_requests_total{code, method, host}`` is client-go's (what
    controller-runtime exports); ``reconcilekit_client_requests_total{verb,
    resource, code}`` breaks the same attempts down by kube-apiserver verb and
    resource, so "how many 409s on pod updates" is one query. ``code`` is
    the HTTP status, or ``<error>`` when no answer came.
    """

    __slots__ = ("_by_resource", "_host", "_requests")

    def __init__(self, registry: CollectorRegistry, host: str) -> None:
        self._host = host
        self._requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ("code", "method", "host"), registry=None)
        self._by_resource = Counter(
            "reconcilekit_client_requests_total",
            "Requests the client sent (each attempt), by verb, resource and status code.",
            ("verb", "resource", "code"), registry=None)
        registry.register(_WithoutCreated((self._requests, self._by_resource)))

    def observe(self, record: RequestRecord) -> None:
        code = "<error>" if record.status is None else str(record.status)
        self._requests.labels(code, record.method, self._host).inc()
        self._by_resource.labels(record.verb, record.resource, code).inc()
