"""What each part reports: hook interfaces, their Prometheus implementations, statistics.

One naming rule: a name ending in ``Metrics`` without a prefix is a hook
interface a part calls (implement it to report elsewhere); a name starting
with ``Prometheus`` is reconcilekit's implementation, registered on the
:class:`~prometheus_client.CollectorRegistry` it is given (a
:class:`~reconcilekit.Manager` registers them all on its own registry, with
controller-runtime's and client-go's metric names). A name ending in
``Statistics`` is a frozen snapshot a part returns from ``statistics()``;
:class:`RequestRecord` and :class:`WriteRecord` are what client observers see.
"""

from ._client_transport import ClientStatistics as ClientStatistics
from ._client_transport import RequestRecord as RequestRecord
from ._client_writes import WriteRecord as WriteRecord
from ._controller import ReconcileMetrics as ReconcileMetrics
from ._events import EventRecorderStatistics as EventRecorderStatistics
from ._expectations import ExpectationMetrics as ExpectationMetrics
from ._expectations import PrometheusExpectationMetrics as PrometheusExpectationMetrics
from ._informer import InformerStatistics as InformerStatistics
from ._leaderelection import LeaderElectionStatistics as LeaderElectionStatistics
from ._metrics import PrometheusCacheMetrics as PrometheusCacheMetrics
from ._metrics import PrometheusClientMetrics as PrometheusClientMetrics
from ._metrics import PrometheusLeaderElectionMetrics as PrometheusLeaderElectionMetrics
from ._metrics import PrometheusReconcileMetrics as PrometheusReconcileMetrics
from ._queue_metrics import PrometheusQueueMetrics as PrometheusQueueMetrics
from ._queue_metrics import QueueMetrics as QueueMetrics
from ._shard_ring import RingStatistics as RingStatistics
from ._watcher import WatcherStatistics as WatcherStatistics
from ._workqueue import QueueStatistics as QueueStatistics

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
    "RequestRecord",
    "RingStatistics",
    "WatcherStatistics",
    "WriteRecord",
]
