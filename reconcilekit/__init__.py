"""reconcilekit: a controller-runtime-style framework for Kubernetes controllers in Python."""

from ._cache import Cache as Cache
from ._cache import CacheSyncTimeout as CacheSyncTimeout
from ._client import Client as Client
from ._client import ClientOptions as ClientOptions
from ._client_retry import RetryPolicy as RetryPolicy
from ._client_transport import ClientStatistics as ClientStatistics
from ._client_transport import RequestRecord as RequestRecord
from ._client_writes import WriteRecord as WriteRecord
from ._clock import Clock as Clock
from ._clock import SystemClock as SystemClock
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
from ._errors import error_from_response as error_from_response
from ._errors import error_from_status as error_from_status
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
from ._finalizers import remove_finalizer as remove_finalizer
from ._informer import EventHandler as EventHandler
from ._informer import Informer as Informer
from ._informer import InformerStatistics as InformerStatistics
from ._informer import Transform as Transform
from ._informer import metadata_only as metadata_only
from ._informer import strip_managed_fields as strip_managed_fields
from ._objects import ObjectKey as ObjectKey
from ._objects import Resource as Resource
from ._objects import object_key as object_key
from ._queue_metrics import PrometheusQueueMetrics as PrometheusQueueMetrics
from ._queue_metrics import QueueMetrics as QueueMetrics
from ._rate_limiters import BucketRateLimiter as BucketRateLimiter
from ._rate_limiters import ItemExponentialFailureRateLimiter as ItemExponentialFailureRateLimiter
from ._rate_limiters import ItemFastSlowRateLimiter as ItemFastSlowRateLimiter
from ._rate_limiters import MaxOfRateLimiter as MaxOfRateLimiter
from ._rate_limiters import RateLimiter as RateLimiter
from ._rate_limiters import default_controller_rate_limiter as default_controller_rate_limiter
from ._rv_expectations import ResourceVersionExpectations as ResourceVersionExpectations
from ._store import IndexFunc as IndexFunc
from ._store import Store as Store
from ._watcher import Backoff as Backoff
from ._watcher import Watcher as Watcher
from ._watcher import WatcherStatistics as WatcherStatistics
from ._watcher import WatchSink as WatchSink
from ._workqueue import QueueShutDown as QueueShutDown
from ._workqueue import QueueStatistics as QueueStatistics
from ._workqueue import WorkQueue as WorkQueue

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AlreadyExists",
    "Backoff",
    "BadRequest",
    "BucketRateLimiter",
    "Cache",
    "CacheSyncTimeout",
    "CleanupDone",
    "CleanupNotDone",
    "CleanupResult",
    "Client",
    "ClientOptions",
    "ClientStatistics",
    "Clock",
    "Conflict",
    "EventHandler",
    "ExpectationMetrics",
    "Expectations",
    "Expired",
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
    "MaxOfRateLimiter",
    "MethodNotAllowed",
    "NotFound",
    "ObjectKey",
    "PrometheusExpectationMetrics",
    "PrometheusQueueMetrics",
    "QueueMetrics",
    "QueueShutDown",
    "QueueStatistics",
    "RateLimiter",
    "RequestRecord",
    "Resource",
    "ResourceVersionExpectations",
    "RetryPolicy",
    "ServerError",
    "Store",
    "SystemClock",
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
    "default_controller_rate_limiter",
    "delete_then_release",
    "error_from_response",
    "error_from_status",
    "finalize",
    "metadata_only",
    "object_key",
    "remove_finalizer",
    "strip_managed_fields",
]
