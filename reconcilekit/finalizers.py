"""Finalizers: add and remove one safely, delete then release, and the Apply/Cleanup runner.

Every helper writes with JSON patches that ``test`` the state they were
computed from, retries a lost race on a fresh read (:func:`~reconcilekit.retry_on_conflict`),
never adds a finalizer to an object being deleted, and issues the DELETE
before it strips a finalizer (:func:`delete_then_release`).
"""

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

__all__ = [
    "CleanupDone",
    "CleanupNotDone",
    "CleanupResult",
    "FinalizeAction",
    "FinalizerClient",
    "FinalizerResult",
    "add_finalizer",
    "delete_then_release",
    "finalize",
    "finalizer_ops",
    "remove_finalizer",
]
