"""What the traced parts call when tracing is on: the hooks, and the traces they return.

The controller, the client's transport and the webhook server check
:data:`reconcilekit._tracing.switch.active` at each event, reconcile, request
and review; when it is None (tracing off, the default) they call nothing
here. This module names the calls without importing OpenTelemetry: the
implementation (``otel_hooks``) is imported only by
:func:`reconcilekit.tracing.enable`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

from .._foundations.clock import Clock
from .._foundations.objects import Resource

__all__ = ["ClientRequestTrace", "ReconcileTrace", "ServerRequestTrace", "TracedController",
           "TracingHooks"]

K = TypeVar("K", bound=Hashable)


class _CountsRequeues(Protocol):
    def num_requeues(self, item: Any) -> int: ...


class TracedController(Protocol):
    """What the hooks read of a controller (:class:`reconcilekit.Controller` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def queue(self) -> _CountsRequeues: ...


class ReconcileTrace(Protocol):
    """One reconcile's span, current until :meth:`end`; told how the reconcile ended."""

    def retry(self, error: BaseException, delay: float | None) -> None:
        """The reconcile raised; the key was scheduled again after ``delay`` seconds
        (None: not scheduled, it is queued already or the queue is shutting down)."""

    def terminal(self, error: BaseException) -> None:
        """The reconcile raised a ``TerminalError``: not retried."""

    def requeue(self, seconds: float) -> None:
        """The reconcile asked to be run again after ``seconds``."""

    def end(self, outcome: str) -> None:
        """The reconcile is over (``success``, ``requeue_after`` or ``error``); the span
        ends and is no longer current."""


class ClientRequestTrace(Protocol):
    """One API request's span; ``headers`` are the request's, with ``traceparent``."""

    headers: Mapping[str, str]

    def answered(self, status: int) -> None: ...


class ServerRequestTrace(Protocol):
    """One webhook review's span, current while the review is served."""

    def answered(self, status: int) -> None: ...


class TracingHooks(Protocol):
    """The calls the traced parts make while tracing is on."""

    def watch_event(self, controller: TracedController, resource: Resource, event: str,
                    obj: Mapping[str, Any], requests: Callable[[], Iterable[K]]) -> list[K]:
        """A handler of ``controller`` maps an ``event`` (``ADDED``, ``MODIFIED``,
        ``DELETED``) of ``obj``: calls ``requests`` (the mapping) and returns its keys,
        which the controller then queues; each key remembers the event."""

    def reconcile(self, controller: TracedController, request: Hashable,
                  reconcile_id: str, priority: int) -> ReconcileTrace:
        """A worker of ``controller`` starts reconciling ``request``, handed out at
        ``priority``."""

    def client_request(self, method: str, url: str, path: str, labels: tuple[str, str],
                       headers: Mapping[str, str]
                       ) -> AbstractContextManager[ClientRequestTrace | None]:
        """An API request is about to be sent: its span while the block runs, or None
        when no span is current (only requests made within a span are traced)."""

    def server_request(self, name: str, path: str, headers: Mapping[str, str],
                       attributes: Mapping[str, str]
                       ) -> AbstractContextManager[ServerRequestTrace]:
        """A webhook request is served: its span, current while the block runs, a
        child of the ``traceparent`` in ``headers`` if there is one."""

    def annotate(self, attributes: Mapping[str, str | int | bool]) -> None:
        """Set ``attributes`` on the current span (what a review was about, and its
        answer), if it records."""

    def current_ids(self) -> tuple[str, str] | None:
        """The current span's trace and span IDs in hexadecimal, or None."""
