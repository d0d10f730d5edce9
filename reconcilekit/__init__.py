"""reconcilekit: a controller-runtime-style framework for Kubernetes controllers in Python."""

from ._builder import ControllerBuilder as ControllerBuilder
from ._cache import Cache as Cache
from ._cache import CacheSyncTimeout as CacheSyncTimeout
from ._cache_scope import ALL_NAMESPACES as ALL_NAMESPACES
from ._cache_scope import CacheScope as CacheScope
from ._cache_scope import CacheScopeError as CacheScopeError
from ._client import PARTIAL_OBJECT_METADATA as PARTIAL_OBJECT_METADATA
from ._client import PARTIAL_OBJECT_METADATA_LIST as PARTIAL_OBJECT_METADATA_LIST
from ._client import Client as Client
from ._client import ClientOptions as ClientOptions
from ._client_retry import RetryPolicy as RetryPolicy
from ._client_transport import ClientStatistics as ClientStatistics
from ._client_transport import RequestRecord as RequestRecord
from ._client_writes import WriteRecord as WriteRecord
from ._clock import Clock as Clock
from ._clock import SystemClock as SystemClock
from ._controller import Controller as Controller
from ._controller import ReconcileMetrics as ReconcileMetrics
from ._errors import AlreadyExists as AlreadyExists
from ._errors import APIConnectionError as APIConnectionError
from ._errors import APIError as APIError
from ._errors import APITimeoutError as APITimeoutError
from ._errors import BadRequest as BadRequest
from ._errors import Conflict as Conflict
from ._errors import Expired as Expired
from ._errors import Forbidden as Forbidden
from ._errors import Gone as Gone
from ._errors import Invalid as Invalid
from ._errors import MethodNotAllowed as MethodNotAllowed
from ._errors import NotFound as NotFound
from ._errors import ServerError as ServerError
from ._errors import TooManyRequests as TooManyRequests
from ._errors import Unauthorized as Unauthorized
from ._errors import UnsupportedMediaType as UnsupportedMediaType
from ._errors import describe_error as describe_error
from ._errors import error_from_response as error_from_response
from ._errors import error_from_status as error_from_status
from ._event_loop import backend_options as event_loop_options
from ._events import EventRecorder as EventRecorder
from ._events import EventRecorderStatistics as EventRecorderStatistics
from ._expectations import ExpectationMetrics as ExpectationMetrics
from ._expectations import Expectations as Expectations
from ._expectations import PrometheusExpectationMetrics as PrometheusExpectationMetrics
from ._finalizers import CleanupDone as CleanupDone
from ._finalizers import CleanupNotDone as CleanupNotDone
from ._finalizers import CleanupResult as CleanupResult
from ._finalizers import FinalizeAction as FinalizeAction
from ._finalizers import FinalizerClient as FinalizerClient
from ._finalizers import FinalizerResult as FinalizerResult
from ._finalizers import add_finalizer as add_finalizer
from ._finalizers import delete_then_release as delete_then_release
from ._finalizers import finalize as finalize
from ._finalizers import finalizer_ops as finalizer_ops
from ._finalizers import remove_finalizer as remove_finalizer
from ._http_endpoints import EndpointsError as EndpointsError
from ._informer import EventHandler as EventHandler
from ._informer import Informer as Informer
from ._informer import InformerStatistics as InformerStatistics
from ._informer import Transform as Transform
from ._informer import metadata_only as metadata_only
from ._informer import strip_managed_fields as strip_managed_fields
from ._leaderelection import LEASES as LEASES
from ._leaderelection import LeaderElectionStatistics as LeaderElectionStatistics
from ._leaderelection import LeaderElector as LeaderElector
from ._leaderelection import LeadershipLost as LeadershipLost
from ._logging import ReconcileContextFilter as ReconcileContextFilter
from ._logging import RepeatFilter as RepeatFilter
from ._logging import configure_logging as configure_logging
from ._logging import log_context as log_context
from ._manager import Manager as Manager
from ._mappers import Mapper as Mapper
from ._mappers import enqueue_object as enqueue_object
from ._mappers import enqueue_owner as enqueue_owner
from ._metrics import CacheMetricsCollector as CacheMetricsCollector
from ._metrics import ClientMetrics as ClientMetrics
from ._metrics import ControllerMetrics as ControllerMetrics
from ._metrics import LeaderElectionMetrics as LeaderElectionMetrics
from ._objects import ObjectKey as ObjectKey
from ._objects import Resource as Resource
from ._objects import object_key as object_key
from ._predicates import Predicate as Predicate
from ._predicates import all_of as all_of
from ._predicates import annotations_changed as annotations_changed
from ._predicates import any_of as any_of
from ._predicates import generation_changed as generation_changed
from ._predicates import label_selector_predicate as label_selector_predicate
from ._predicates import labels_changed as labels_changed
from ._predicates import negate as negate
from ._predicates import predicate as predicate
from ._predicates import resource_version_changed as resource_version_changed
from ._queue_metrics import PrometheusQueueMetrics as PrometheusQueueMetrics
from ._queue_metrics import QueueMetrics as QueueMetrics
from ._rate_limiters import BucketRateLimiter as BucketRateLimiter
from ._rate_limiters import ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter
from ._rate_limiters import ItemFastSlowRateLimiter as ItemFastSlowRateLimiter
from ._rate_limiters import MaxOfRateLimiter as MaxOfRateLimiter
from ._rate_limiters import RateLimiter as RateLimiter
from ._rate_limiters import default_controller_rate_limiter as default_controller_rate_limiter
from ._reconciler import Reconciler as Reconciler
from ._reconciler import Request as Request
from ._reconciler import Result as Result
from ._reconciler import TerminalError as TerminalError
from ._reservations import Reservations as Reservations
from ._rv_expectations import ResourceVersionExpectations as ResourceVersionExpectations
from ._selectors import FieldSelector as FieldSelector
from ._selectors import LabelSelector as LabelSelector
from ._selectors import SelectorError as SelectorError
from ._shard_ring import RingStatistics as RingStatistics
from ._shard_ring import ShardOwner as ShardOwner
from ._shard_ring import ShardRing as ShardRing
from ._shard_selector import ShardSelector as ShardSelector
from ._shard_selector import ShardSelectorError as ShardSelectorError
from ._shard_selector import fnv1a64 as fnv1a64
from ._shard_selector import shard_key as shard_key
from ._shard_selector import shard_of as shard_of
from ._sharding import Sharding as Sharding
from ._store import IndexFunc as IndexFunc
from ._store import Store as Store
from ._watcher import Backoff as Backoff
from ._watcher import DeadWatchError as DeadWatchError
from ._watcher import Watcher as Watcher
from ._watcher import WatcherStatistics as WatcherStatistics
from ._watcher import WatchSink as WatchSink
from ._workqueue import QueueShutDown as QueueShutDown
from ._workqueue import QueueStatistics as QueueStatistics
from ._workqueue import WorkQueue as WorkQueue

__all__ = [
    "ALL_NAMESPACES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AlreadyExists",
    "Backoff",
    "BadRequest",
    "BucketRateLimiter",
    "Cache",
    "CacheMetricsCollector",
    "CacheScope",
    "CacheScopeError",
    "CacheSyncTimeout",
    "CleanupDone",
    "CleanupNotDone",
    "CleanupResult",
    "Client",
    "ClientMetrics",
    "ClientOptions",
    "ClientStatistics",
    "Clock",
    "Conflict",
    "Controller",
    "ControllerBuilder",
    "ControllerMetrics",
    "DeadWatchError",
    "EndpointsError",
    "EventHandler",
    "EventRecorder",
    "EventRecorderStatistics",
    "ExpectationMetrics",
    "Expectations",
    "Expired",
    "FieldSelector",
    "FinalizeAction",
    "FinalizerClient",
    "FinalizerResult",
    "Forbidden",
    "Gone",
    "IndexFunc",
    "Informer",
    "InformerStatistics",
    "Invalid",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "LEASES",
    "LabelSelector",
    "LeaderElectionMetrics",
    "LeaderElectionStatistics",
    "LeaderElector",
    "LeadershipLost",
    "Manager",
    "Mapper",
    "MaxOfRateLimiter",
    "MethodNotAllowed",
    "NotFound",
    "ObjectKey",
    "PARTIAL_OBJECT_METADATA",
    "PARTIAL_OBJECT_METADATA_LIST",
    "Predicate",
    "PrometheusExpectationMetrics",
    "PrometheusQueueMetrics",
    "QueueMetrics",
    "QueueShutDown",
    "QueueStatistics",
    "RateLimiter",
    "ReconcileContextFilter",
    "ReconcileMetrics",
    "Reconciler",
    "RepeatFilter",
    "Request",
    "RequestRecord",
    "Reservations",
    "Resource",
    "ResourceVersionExpectations",
    "Result",
    "RetryPolicy",
    "RingStatistics",
    "SelectorError",
    "ServerError",
    "ShardOwner",
    "ShardRing",
    "ShardSelector",
    "ShardSelectorError",
    "Sharding",
    "Store",
    "SystemClock",
    "TerminalError",
    "TooManyRequests",
    "Transform",
    "Unauthorized",
    "UnsupportedMediaType",
    "WatchSink",
    "Watcher",
    "WatcherStatistics",
    "WorkQueue",
    "WriteRecord",
    "add_finalizer",
    "all_of",
    "annotations_changed",
    "any_of",
    "configure_logging",
    "default_controller_rate_limiter",
    "delete_then_release",
    "describe_error",
    "enqueue_object",
    "enqueue_owner",
    "error_from_response",
    "error_from_status",
    "event_loop_options",
    "finalize",
    "finalizer_ops",
    "fnv1a64",
    "generation_changed",
    "label_selector_predicate",
    "labels_changed",
    "log_context",
    "metadata_only",
    "negate",
    "object_key",
    "predicate",
    "remove_finalizer",
    "resource_version_changed",
    "shard_key",
    "shard_of",
    "strip_managed_fields",
]
