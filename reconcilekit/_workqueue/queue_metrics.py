"""Work queue metric hooks, and their Prometheus implementation.

The names, labels and buckets are controller-runtime's (``pkg/metrics/workqueue.go``)
so that existing dashboards and alerts work unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from .._foundations.metric_families import FamiliesPerRegistry

__all__ = ["PrometheusQueueMetrics", "QueueMetrics"]

UnfinishedWork = Callable[[], tuple[float, float]]

# controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12), 10 ns to 1000 s.
DURATION_BUCKETS: Final = (
    1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0,
)  # fmt: skip


class QueueMetrics:
    """The hooks a :class:`~reconcilekit.workqueue.WorkQueue` calls; all of them do nothing here.

    Subclass and override what you need. The queue calls:

    * :meth:`bind` once, from its constructor, with two functions to read at
      scrape time: ``depth()`` (keys waiting to be handed out, ``len(queue)``)
      and ``unfinished()`` (``(total, longest)`` seconds that the keys now held
      by workers have been held).
    * :meth:`on_add` each time a key becomes pending (``adds_total``).
    * :meth:`on_get` with the seconds a key was pending before a worker got it
      (``queue_duration_seconds``).
    * :meth:`on_done` with the seconds a worker held a key (``work_duration_seconds``).
    * :meth:`on_retry` for every accepted ``add_after`` / ``add_rate_limited``
      (``retries_total``, which counts delayed adds like client-go does).

    Hooks run inline on the queue's hot path: keep them cheap and never raise.
    A queue built with ``metrics=None`` skips the hooks and the clock reads
    they need altogether.
    """

    __slots__ = ()

    def bind(self, *, depth: Callable[[], int], unfinished: UnfinishedWork) -> None:
        """Called once by the queue that uses these metrics."""

    def on_add(self) -> None:
        """A key became pending."""

    def on_get(self, wait: float) -> None:
        """A key was handed to a worker after ``wait`` seconds pending."""

    def on_done(self, work: float) -> None:
        """A worker finished a key it held for ``work`` seconds."""

    def on_retry(self) -> None:
        """A delayed or rate-limited add was accepted."""


class _Families:
    __slots__ = ("adds", "depth", "latency", "longest", "retries", "unfinished", "work")

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ("name", "controller")
        self.depth = Gauge(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            (*labels, "priority"),
            registry=registry,
        )
        self.adds = Counter(
            "workqueue_adds_total",
            "Total number of adds handled by workqueue",
            labels,
            registry=registry,
        )
        self.latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            labels,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self.work = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            labels,
            registry=registry,
            buckets=DURATION_BUCKETS,
        )
        self.unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been "
            "observed by work_duration. Large values indicate stuck threads. One can deduce "
            "the number of stuck threads by observing the rate at which this increases.",
            labels,
            registry=registry,
        )
        self.longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            labels,
            registry=registry,
        )
        self.retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            labels,
            registry=registry,
        )


# One set of families per registry: every queue of a manager shares its registry.
_FAMILIES: Final = FamiliesPerRegistry(_Families, "a work queue")


class PrometheusQueueMetrics(QueueMetrics):
    """controller-runtime's ``workqueue_*`` metrics for one queue, on a given registry.

    Series carry ``name`` and ``controller`` labels, both set to ``name``
    (older controller-runtime had only ``name``; newer adds ``controller``,
    and ``priority=""`` on ``workqueue_depth``). ``workqueue_depth``,
    ``workqueue_unfinished_work_seconds`` and
    ``workqueue_longest_running_processor_seconds`` are computed when the
    registry is collected, from the queue's own clock, so they are exact at
    scrape time and need no background task.

    Several queues may share one registry (each with its own ``name``);
    ``registry`` is never the process-global default unless you pass it.
    Raises ValueError if ``name`` is already used on ``registry``, and
    RuntimeError if bound to a second queue.
    """

    __slots__ = ("_adds", "_bound", "_depth", "_latency", "_longest", "_retries",
                 "_unfinished", "_work", "name")  # fmt: skip

    def __init__(self, registry: CollectorRegistry, name: str) -> None:
        families = _FAMILIES.claim(registry, name)
        self.name = name
        self._bound = False
        self._depth = families.depth.labels(name, name, "")
        self._adds = families.adds.labels(name, name)
        self._latency = families.latency.labels(name, name)
        self._work = families.work.labels(name, name)
        self._unfinished = families.unfinished.labels(name, name)
        self._longest = families.longest.labels(name, name)
        self._retries = families.retries.labels(name, name)

    def bind(self, *, depth: Callable[[], int], unfinished: UnfinishedWork) -> None:
        if self._bound:
            raise RuntimeError(f"PrometheusQueueMetrics {self.name!r} is already bound to a queue")
        self._bound = True
        self._depth.set_function(depth)
        self._unfinished.set_function(lambda: unfinished()[0])
        self._longest.set_function(lambda: unfinished()[1])

    def on_add(self) -> None:
        self._adds.inc()

    def on_get(self, wait: float) -> None:
        self._latency.observe(wait)

    def on_done(self, work: float) -> None:
        self._work.observe(work)

    def on_retry(self) -> None:
        self._retries.inc()

    def release(self, registry: CollectorRegistry) -> None:
        """Its queue is gone: depth reads 0, and ``name`` may be claimed on ``registry``
        again by the next queue of that name, continuing its series."""
        for gauge in (self._depth, self._unfinished, self._longest):
            gauge.set_function(lambda: 0.0)
        _FAMILIES.release(registry, self.name)

    def __repr__(self) -> str:
        return f"PrometheusQueueMetrics(name={self.name!r})"
