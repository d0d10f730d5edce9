"""What each part reports: hook interfaces, their Prometheus implementations, statistics.

One naming rule: a name ending in ``Metrics`` without a prefix is a hook
interface a part calls (implement it to report elsewhere); a name starting
with ``Prometheus`` is reconcilekit's implementation, registered on the
:class:`~prometheus_client.CollectorRegistry` it is given (a
:class:`~reconcilekit.Manager` registers them all on its own registry, with
controller-runtime's and client-go's metric names). A name ending in
``Statistics`` is a frozen snapshot a part returns from ``statistics()``.
What a client's observers see (:class:`~reconcilekit.RequestRecord`,
:class:`~reconcilekit.WriteRecord`) is exported beside the client.
"""

from ._cache.informer import InformerStatistics as InformerStatistics
from ._cache.watcher import WatcherStatistics as WatcherStatistics
from ._client.transport import ClientStatistics as ClientStatistics
from ._controller.controller import ReconcileMetrics as ReconcileMetrics
from ._coordination.leader_election import LeaderElectionStatistics as LeaderElectionStatistics
from ._coordination.shard_ring import RingStatistics as RingStatistics
from ._expectations.expectations import ExpectationMetrics as ExpectationMetrics
from ._expectations.expectations import PrometheusExpectationMetrics as PrometheusExpectationMetrics
from ._manager.event_recorder import EventRecorderStatistics as EventRecorderStatistics
from ._manager.prometheus_metrics import PrometheusCacheMetrics as PrometheusCacheMetrics
from ._manager.prometheus_metrics import PrometheusClientMetrics as PrometheusClientMetrics
from ._manager.prometheus_metrics import (
    PrometheusLeaderElectionMetrics as PrometheusLeaderElectionMetrics,
)
from ._manager.prometheus_metrics import PrometheusReconcileMetrics as PrometheusReconcileMetrics
from ._workqueue.queue import QueueStatistics as QueueStatistics
from ._workqueue.queue_metrics import PrometheusQueueMetrics as PrometheusQueueMetrics
from ._workqueue.queue_metrics import QueueMetrics as QueueMetrics

__all__ = [
    "ClientStatistics",
    "EventRecorderStatistics",
    "ExpectationMetrics",
    "InformerStatistics",
    "LeaderElectionStatistics",
    "PrometheusCacheMetrics",
    "PrometheusClientMetrics",
    "PrometheusExpectationMetrics",
    "PrometheusLeaderElectionMetrics",
    "PrometheusQueueMetrics",
    "PrometheusReconcileMetrics",
    "QueueMetrics",
    "QueueStatistics",
    "ReconcileMetrics",
    "RingStatistics",
    "WatcherStatistics",
]
