"""reconcilekit: a controller-runtime-style framework for Kubernetes controllers in Python."""

from ._clock import Clock as Clock
from ._clock import SystemClock as SystemClock
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
from ._objects import ObjectKey as ObjectKey
from ._objects import Resource as Resource
from ._objects import object_key as object_key
from ._store import IndexFunc as IndexFunc
from ._store import Store as Store

__all__ = [
    "CleanupDone",
    "CleanupNotDone",
    "CleanupResult",
    "Clock",
    "FinalizeAction",
    "FinalizerClient",
    "FinalizerResult",
    "IndexFunc",
    "ObjectKey",
    "Resource",
    "Store",
    "SystemClock",
    "add_finalizer",
    "delete_then_release",
    "finalize",
    "object_key",
    "remove_finalizer",
]
