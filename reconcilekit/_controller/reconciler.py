"""The reconcile contract: ``Reconciler``, ``Request``, ``Result``, ``TerminalError``."""

from __future__ import annotations

import abc
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._foundations.objects import ObjectKey, object_key

__all__ = ["Reconciler", "Request", "Result", "TerminalError"]


@dataclass(frozen=True, slots=True, order=True)
class Request:
    """What to reconcile: only the object's key. Level-triggered, never the event.

    ``namespace`` is ``""`` for cluster-scoped objects.
    """

    namespace: str
    name: str
    # Computed once: a key is hashed several times on its way through a work queue.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.namespace, self.name)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def for_object(cls, obj: Mapping[str, Any]) -> Request:
        key = object_key(obj)
        return cls(key.namespace, key.name)

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


@dataclass(frozen=True, slots=True)
class Result:
    """How a reconcile ended. Build it with :meth:`done` or :meth:`requeue_after`.

    ``priority``: the priority the requeue goes into the work queue at
    (higher is served first; see :class:`~reconcilekit.workqueue.WorkQueue`);
    None: the priority the key was handed out at, as for a retry after an
    exception (0 for keys of ordinary events,
    :data:`~reconcilekit.workqueue.LOW_PRIORITY` for keys of an initial list
    or a resync). It needs a requeue: ``Result(priority=...)`` alone is refused.
    """

    requeue_after_seconds: float | None = None
    priority: int | None = None

    def __post_init__(self) -> None:
        if self.priority is not None:
            if type(self.priority) is not int:
                raise TypeError(f"a Result's priority is an int, not {self.priority!r}")
            if self.requeue_after_seconds is None:
                raise ValueError("a Result's priority is the priority of its requeue: "
                                 "use Result.requeue_after(seconds, priority=...)")

    @classmethod
    def done(cls) -> Result:
        """Reconciled: nothing to do until the next change."""
        return _DONE

    @classmethod
    def requeue_after(cls, seconds: float, *, priority: int | None = None) -> Result:
        """Reconciled for now; reconcile the same key again after ``seconds``, at
        ``priority`` (None: the priority it was handed out at)."""
        if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
            raise ValueError(f"requeue_after needs a finite number of seconds > 0, got {seconds!r}")
        return cls(float(seconds), priority)


_DONE: Result = Result()


class TerminalError(Exception):
    """Raised by a reconcile that must not be retried (e.g. an invalid spec).

    The error is logged and counted; the key is forgotten until the object
    changes again.
    """


class Reconciler(abc.ABC):
    """Subclass this and implement :meth:`reconcile`."""

    @abc.abstractmethod
    async def reconcile(self, request: Request) -> Result:
        """Make the world match the object named by ``request``.

        The contract:
          * ``request`` is only a key: read the current state (from the
            cache) and act on it, never on what changed. Being called again
            for the same state must be harmless (idempotent).
          * return :meth:`Result.done` when there is nothing more to do, or
            :meth:`Result.requeue_after` to look again after a delay (at the
            priority the key was handed out at, or the one given);
          * raise any exception to be retried with per-key exponential
            backoff under the controller's overall rate limit, at the
            priority the key was handed out at; the error is logged with the
            key;
          * raise :class:`TerminalError` when retrying cannot help: it is
            logged and counted, and the key is not retried;
          * one key is never reconciled by two workers at once; a change that
            arrives while the key is being reconciled triggers exactly one
            more reconcile afterwards;
          * cancellation (shutdown, or the per-reconcile deadline) may happen
            at any ``await``.
        """
