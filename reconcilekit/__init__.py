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

from ._cache.budget import CacheMemoryBudgetExceeded as CacheMemoryBudgetExceeded
from ._cache.cache import Cache as Cache
from ._cache.cache import CacheSyncTimeout as CacheSyncTimeout
from ._cache.cache import InformerUse as InformerUse
from ._cache.informer import EventHandler as EventHandler
from ._cache.informer import Transform as Transform
from ._cache.informer import metadata_only as metadata_only
from ._cache.informer import strip_managed_fields as strip_managed_fields
from ._cache.mutation_detector import CachedObjectMutated as CachedObjectMutated
from ._cache.scope import ALL_NAMESPACES as ALL_NAMESPACES
from ._cache.scope import CacheScope as CacheScope
from ._cache.scope import CacheScopeError as CacheScopeError
from ._cache.store import IndexFunc as IndexFunc
from ._client.client import Client as Client
from ._client.client import ClientOptions as ClientOptions
from ._client.retry import RetryPolicy as RetryPolicy
from ._client.transport import RequestRecord as RequestRecord
from ._client.writes import WriteRecord as WriteRecord
from ._controller.builder import ControllerBuilder as ControllerBuilder
from ._controller.controller import Controller as Controller
from ._controller.fairness import fairness_by_object as fairness_by_object
from ._controller.mappers import Mapper as Mapper
from ._controller.mappers import enqueue_object as enqueue_object
from ._controller.mappers import enqueue_owner as enqueue_owner
from ._controller.predicates import Predicate as Predicate
from ._controller.predicates import all_of as all_of
from ._controller.predicates import annotations_changed as annotations_changed
from ._controller.predicates import any_of as any_of
from ._controller.predicates import generation_changed as generation_changed
from ._controller.predicates import label_selector_predicate as label_selector_predicate
from ._controller.predicates import labels_changed as labels_changed
from ._controller.predicates import negate as negate
from ._controller.predicates import predicate as predicate
from ._controller.predicates import resource_version_changed as resource_version_changed
from ._controller.reconciler import Reconciler as Reconciler
from ._controller.reconciler import Request as Request
from ._controller.reconciler import Result as Result
from ._controller.reconciler import TerminalError as TerminalError
from ._coordination.leader_election import LeaderElection as LeaderElection
from ._coordination.leader_election import LeadershipLost as LeadershipLost
from ._coordination.sharded_controllers import Sharding as Sharding
from ._expectations.expectations import Expectations as Expectations
from ._expectations.reservations import Reservations as Reservations
from ._expectations.resource_versions import (
    ResourceVersionExpectations as ResourceVersionExpectations,
)
from ._foundations.clock import Clock as Clock
from ._foundations.clock import SystemClock as SystemClock
from ._foundations.conflict_retry import retry_on_conflict as retry_on_conflict
from ._foundations.errors import AlreadyExists as AlreadyExists
from ._foundations.errors import APIConnectionError as APIConnectionError
from ._foundations.errors import APIError as APIError
from ._foundations.errors import APITimeoutError as APITimeoutError
from ._foundations.errors import BadRequest as BadRequest
from ._foundations.errors import Conflict as Conflict
from ._foundations.errors import Expired as Expired
from ._foundations.errors import Forbidden as Forbidden
from ._foundations.errors import Gone as Gone
from ._foundations.errors import Invalid as Invalid
from ._foundations.errors import MethodNotAllowed as MethodNotAllowed
from ._foundations.errors import NotFound as NotFound
from ._foundations.errors import ServerError as ServerError
from ._foundations.errors import TooManyRequests as TooManyRequests
from ._foundations.errors import Unauthorized as Unauthorized
from ._foundations.errors import UnsupportedMediaType as UnsupportedMediaType
from ._foundations.errors import describe_error as describe_error
from ._foundations.http_endpoints import EndpointsError as EndpointsError
from ._foundations.logging import ReconcileContextFilter as ReconcileContextFilter
from ._foundations.logging import RepeatFilter as RepeatFilter
from ._foundations.logging import configure_logging as configure_logging
from ._foundations.logging import log_context as log_context
from ._foundations.objects import Obj as Obj
from ._foundations.objects import ObjectKey as ObjectKey
from ._foundations.objects import ObjectList as ObjectList
from ._foundations.objects import Resource as Resource
from ._foundations.objects import TypedResource as TypedResource
from ._foundations.objects import object_key as object_key
from ._foundations.selectors import FieldSelector as FieldSelector
from ._foundations.selectors import LabelSelector as LabelSelector
from ._foundations.selectors import SelectorError as SelectorError
from ._manager.event_recorder import EventRecorder as EventRecorder
from ._manager.manager import Manager as Manager
from ._version import __version__ as __version__

__all__ = [
    "ALL_NAMESPACES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AlreadyExists",
    "BadRequest",
    "Cache",
    "CacheMemoryBudgetExceeded",
    "CacheScope",
    "CacheScopeError",
    "CacheSyncTimeout",
    "CachedObjectMutated",
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
    "InformerUse",
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
    "ObjectList",
    "Predicate",
    "ReconcileContextFilter",
    "Reconciler",
    "RepeatFilter",
    "Request",
    "RequestRecord",
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
    "WriteRecord",
    "all_of",
    "annotations_changed",
    "any_of",
    "configure_logging",
    "describe_error",
    "enqueue_object",
    "enqueue_owner",
    "fairness_by_object",
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
