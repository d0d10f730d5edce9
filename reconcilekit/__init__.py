"""reconcilekit: a controller-runtime-style framework for Kubernetes controllers in Python.

The root holds what an operator author reaches for on day one: the
:class:`Manager` and how its replicas share the work, the reconcile contract,
controllers and their watches (mappers, predicates), the client and its
errors, the cache, expectations, events, logging and the clock. The rest
lives in modules named after their concept:

* :mod:`reconcilekit.finalizers`: add, remove, delete-then-release, ``finalize``;
* :mod:`reconcilekit.conditions`, :mod:`reconcilekit.ownership`,
  :mod:`reconcilekit.upsert`: status conditions, owner references, create-or-update;
* :mod:`reconcilekit.workqueue`: the work queue and its rate limiters;
* :mod:`reconcilekit.sharding`: the shard ring, shard keys and selectors;
* :mod:`reconcilekit.metrics`: metric hook interfaces, their Prometheus
  implementations, and every part's statistics;
* :mod:`reconcilekit.webhook`: the admission and conversion webhook server;
* :mod:`reconcilekit.lowlevel`: the parts the framework is built from
  (watcher, informer, store, leader elector, backoff, wire constants);
* :mod:`reconcilekit.testing`: the in-process API server and the test kit.
"""

from ._builder import ControllerBuilder as ControllerBuilder
from ._cache import Cache as Cache
from ._cache import CacheSyncTimeout as CacheSyncTimeout
from ._cache_scope import ALL_NAMESPACES as ALL_NAMESPACES
from ._cache_scope import CacheScope as CacheScope
from ._cache_scope import CacheScopeError as CacheScopeError
from ._client import Client as Client
from ._client import ClientOptions as ClientOptions
from ._client_retry import RetryPolicy as RetryPolicy
from ._clock import Clock as Clock
from ._clock import SystemClock as SystemClock
from ._conflict_retry import retry_on_conflict as retry_on_conflict
from ._controller import Controller as Controller
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
from ._events import EventRecorder as EventRecorder
from ._expectations import Expectations as Expectations
from ._http_endpoints import EndpointsError as EndpointsError
from ._informer import EventHandler as EventHandler
from ._informer import Transform as Transform
from ._informer import metadata_only as metadata_only
from ._informer import strip_managed_fields as strip_managed_fields
from ._leaderelection import LeaderElection as LeaderElection
from ._leaderelection import LeadershipLost as LeadershipLost
from ._logging import ReconcileContextFilter as ReconcileContextFilter
from ._logging import RepeatFilter as RepeatFilter
from ._logging import configure_logging as configure_logging
from ._logging import log_context as log_context
from ._manager import Manager as Manager
from ._mappers import Mapper as Mapper
from ._mappers import enqueue_object as enqueue_object
from ._mappers import enqueue_owner as enqueue_owner
from ._objects import Obj as Obj
from ._objects import ObjectKey as ObjectKey
from ._objects import Resource as Resource
from ._objects import TypedResource as TypedResource
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
from ._reconciler import Reconciler as Reconciler
from ._reconciler import Request as Request
from ._reconciler import Result as Result
from ._reconciler import TerminalError as TerminalError
from ._reservations import Reservations as Reservations
from ._rv_expectations import ResourceVersionExpectations as ResourceVersionExpectations
from ._selectors import FieldSelector as FieldSelector
from ._selectors import LabelSelector as LabelSelector
from ._selectors import SelectorError as SelectorError
from ._sharding import Sharding as Sharding
from ._store import IndexFunc as IndexFunc
from ._version import __version__ as __version__

__all__ = [
    "ALL_NAMESPACES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AlreadyExists",
    "BadRequest",
    "Cache",
    "CacheScope",
    "CacheScopeError",
    "CacheSyncTimeout",
    "Client",
    "ClientOptions",
    "Clock",
    "Conflict",
    "Controller",
    "ControllerBuilder",
    "EndpointsError",
    "EventHandler",
    "EventRecorder",
    "Expectations",
    "Expired",
    "FieldSelector",
    "Forbidden",
    "Gone",
    "IndexFunc",
    "Invalid",
    "LabelSelector",
    "LeaderElection",
    "LeadershipLost",
    "Manager",
    "Mapper",
    "MethodNotAllowed",
    "NotFound",
    "Obj",
    "ObjectKey",
    "Predicate",
    "ReconcileContextFilter",
    "Reconciler",
    "RepeatFilter",
    "Request",
    "Reservations",
    "Resource",
    "ResourceVersionExpectations",
    "Result",
    "RetryPolicy",
    "SelectorError",
    "ServerError",
    "Sharding",
    "SystemClock",
    "TerminalError",
    "TooManyRequests",
    "Transform",
    "TypedResource",
    "Unauthorized",
    "UnsupportedMediaType",
    "all_of",
    "annotations_changed",
    "any_of",
    "configure_logging",
    "describe_error",
    "enqueue_object",
    "enqueue_owner",
    "generation_changed",
    "label_selector_predicate",
    "labels_changed",
    "log_context",
    "metadata_only",
    "negate",
    "object_key",
    "predicate",
    "resource_version_changed",
    "retry_on_conflict",
    "strip_managed_fields",
]
