"""The tracing hooks made of OpenTelemetry spans; imported only when tracing is enabled.

Spans (all from the tracer ``reconcilekit`` of the provider given to
:func:`reconcilekit.tracing.enable`, else of the global one):

* ``watch event <resource> <type>`` (PRODUCER, a trace of its own): a
  controller's handler mapping one event to the keys it queues (an event
  that queues none makes no span);
* ``reconcile <controller>`` (CONSUMER, a trace of its own), linked to the
  watch events that queued the key since its last reconcile (the first
  :data:`~reconcilekit._tracing.pending_keys.MAX_LINKS`; the others counted),
  with the queue wait and the delay the key was scheduled with; current
  while the reconciler runs;
* ``<verb> <resource>`` (CLIENT): one attempt of one API request made within
  a span (a reconcile, a webhook review, the application's own), its
  ``traceparent`` (and whatever else the global propagator writes) sent with
  it; requests made outside any span (informers' lists and watches, Lease
  renewals, Events written in the background) are not traced;
* ``<type> webhook <name>`` and ``conversion webhook`` (SERVER): one review,
  a child of the ``traceparent`` the API server sent if it sent one;
  current while the handler runs.

Attribute names follow OpenTelemetry's semantic conventions where one
exists (``http.request.method``, ``url.path``, ``http.response.status_code``,
``error.type``, ``k8s.namespace.name``), ``reconcilekit.*`` otherwise. A span
that does not record (no SDK provider, or not sampled) gets no attributes
computed beyond those a sampler reads at its start.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from .._foundations.clock import Clock
from .._foundations.objects import Resource
from .._version import __version__
from .pending_keys import PendingKeys
from .traced_parts import TracedController

__all__ = ["OpenTelemetryHooks"]

K = TypeVar("K", bound=Hashable)

_ROOT = otel_context.Context()  # the parent of a span that starts a trace of its own
MAX_NAMED_REQUESTS = 8
"""Keys a watch event span names (``reconcilekit.requests``); all are counted."""


def _failed(span: Span, error: BaseException) -> None:
    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.set_attribute("error.type", type(error).__qualname__)


@contextlib.contextmanager
def _current(span: Span, context: otel_context.Context) -> Iterator[None]:
    """``span`` current (``context`` holds it) while the block runs, and ended after
    it, with the exception the block raised recorded."""
    token = otel_context.attach(context)
    try:
        yield
    except BaseException as err:
        _failed(span, err)
        raise
    finally:
        otel_context.detach(token)
        span.end()


def _request_attributes(request: Hashable) -> dict[str, AttributeValue]:
    namespace = getattr(request, "namespace", "")
    attributes: dict[str, AttributeValue] = {"reconcilekit.request.name":
                                             str(getattr(request, "name", request))}
    if namespace:
        attributes["k8s.namespace.name"] = str(namespace)
    return attributes


class _Reconcile:
    """The ``ReconcileTrace`` of one reconcile: its span, current until :meth:`end`."""

    __slots__ = ("_clock", "_failed", "_pending", "_request", "_span", "_token")

    def __init__(self, span: Span, token: object, pending: PendingKeys, request: Hashable,
                 clock: Clock) -> None:
        self._span, self._token, self._pending = span, token, pending
        self._request, self._clock = request, clock
        self._failed = False

    def retry(self, error: BaseException, delay: float | None) -> None:
        self._failed = True
        if self._span.is_recording():
            _failed(self._span, error)
            if delay is not None:
                self._span.set_attribute("reconcilekit.retry_after_seconds", delay)
        if delay is not None:
            self._pending.scheduled(self._request, self._clock.monotonic(), delay,
                                    "rate_limited")

    def terminal(self, error: BaseException) -> None:
        self._failed = True
        if self._span.is_recording():
            _failed(self._span, error)
            self._span.set_attribute("reconcilekit.terminal", True)

    def requeue(self, seconds: float) -> None:
        self._span.set_attribute("reconcilekit.requeue_after_seconds", seconds)
        self._pending.scheduled(self._request, self._clock.monotonic(), seconds,
                                "requeue_after")

    def end(self, outcome: str) -> None:
        if outcome == "error" and not self._failed:  # a BaseException: cancelled
            outcome = "cancelled"
        self._span.set_attribute("reconcilekit.result", outcome)
        otel_context.detach(self._token)  # type: ignore[arg-type]
        self._span.end()


class _ClientRequest:
    """The ``ClientRequestTrace`` of one request attempt."""

    __slots__ = ("_span", "headers")

    def __init__(self, span: Span, headers: Mapping[str, str]) -> None:
        self._span, self.headers = span, headers

    def answered(self, status: int) -> None:
        self._span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self._span.set_status(Status(StatusCode.ERROR))
            self._span.set_attribute("error.type", str(status))


class _ServerRequest:
    """The ``ServerRequestTrace`` of one webhook review."""

    __slots__ = ("_span",)

    def __init__(self, span: Span) -> None:
        self._span = span

    def answered(self, status: int) -> None:
        self._span.set_attribute("http.response.status_code", status)
        if status >= 500:  # a server span's error: its own failure, not the caller's
            self._span.set_status(Status(StatusCode.ERROR))
            self._span.set_attribute("error.type", str(status))


class OpenTelemetryHooks:
    """:class:`~reconcilekit._tracing.traced_parts.TracingHooks` made of OpenTelemetry spans
    (module docstring); ``tracer_provider`` None: the global provider, as it is when
    each span starts (one set later is used from then on)."""

    def __init__(self, tracer_provider: TracerProvider | None = None) -> None:
        self.tracer = trace.get_tracer("reconcilekit", __version__,
                                       tracer_provider=tracer_provider)
        self._pending: weakref.WeakKeyDictionary[TracedController, PendingKeys] = (
            weakref.WeakKeyDictionary())

    def pending(self, controller: TracedController) -> PendingKeys:
        """``controller``'s pending keys (made on first use, forgotten with it)."""
        keys = self._pending.get(controller)
        if keys is None:
            keys = self._pending[controller] = PendingKeys()
        return keys

    # -- controllers ------------------------------------------------------------------------

    def watch_event(self, controller: TracedController, resource: Resource, event: str,
                    obj: Mapping[str, Any], requests: Callable[[], Iterable[K]]) -> list[K]:
        started = time.time_ns()
        name = f"watch event {resource.group_resource} {event}"
        try:
            keys = list(requests())
        except BaseException as err:
            span = self.tracer.start_span(name, context=_ROOT, kind=SpanKind.PRODUCER,
                                          start_time=started)
            _failed(span, err)
            span.end()
            raise
        if not keys:  # an event that queues nothing is no part of any reconcile's story
            return keys
        unique = list(dict.fromkeys(keys))  # an update maps the old and the new object
        span = self.tracer.start_span(name, context=_ROOT, kind=SpanKind.PRODUCER,
                                      start_time=started)
        link = span.get_span_context()
        self.pending(controller).event(unique, link if link.is_valid else None,
                                       controller.clock.monotonic())
        if span.is_recording():
            metadata = obj.get("metadata") or {}
            attributes: dict[str, AttributeValue] = {
                "reconcilekit.controller": controller.name,
                "reconcilekit.resource": resource.group_resource,
                "reconcilekit.event.type": event,
                "reconcilekit.object.name": str(metadata.get("name", "")),
                "reconcilekit.object.uid": str(metadata.get("uid", "")),
                "reconcilekit.object.resource_version":
                    str(metadata.get("resourceVersion", "")),
                "reconcilekit.requests": [str(key) for key in unique[:MAX_NAMED_REQUESTS]],
                "reconcilekit.requests.count": len(unique)}
            if metadata.get("namespace"):
                attributes["k8s.namespace.name"] = str(metadata["namespace"])
            span.set_attributes(attributes)
        span.end()
        return keys

    def reconcile(self, controller: TracedController, request: Hashable,
                  reconcile_id: str, priority: int) -> _Reconcile:
        clock = controller.clock
        pending = self.pending(controller)
        record = pending.take(request)
        requeues = controller.queue.num_requeues(request)
        attributes = _request_attributes(request)
        attributes.update({"reconcilekit.controller": controller.name,
                           "reconcilekit.reconcile_id": reconcile_id,
                           "reconcilekit.attempt": requeues + 1,
                           "reconcilekit.requeues": requeues,
                           "reconcilekit.queue.priority": priority})
        links = None
        if record is not None:
            attributes["reconcilekit.queue.wait_seconds"] = max(
                0.0, clock.monotonic() - record.since)
            if record.delay is not None:
                attributes["reconcilekit.queue.delay_seconds"] = record.delay
                attributes["reconcilekit.queue.delay_reason"] = record.reason
            if record.events:
                attributes["reconcilekit.queue.events"] = record.events
                if record.events > len(record.links):
                    attributes["reconcilekit.links.dropped"] = record.events - len(record.links)
            links = [Link(context) for context in record.links]  # type: ignore[arg-type]
        span = self.tracer.start_span(f"reconcile {controller.name}", context=_ROOT,
                                      kind=SpanKind.CONSUMER, attributes=attributes,
                                      links=links)
        token = otel_context.attach(trace.set_span_in_context(span))
        return _Reconcile(span, token, pending, request, clock)

    # -- requests ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def client_request(self, method: str, url: str, path: str, labels: tuple[str, str],
                       headers: Mapping[str, str]) -> Iterator[_ClientRequest | None]:
        if not trace.get_current_span().get_span_context().is_valid:
            yield None
            return
        verb, resource = labels
        attributes: dict[str, AttributeValue] = {
            "http.request.method": method, "url.full": url, "url.path": path,
            "reconcilekit.api.verb": verb, "reconcilekit.api.resource": resource}
        _, found, rest = path.partition("/namespaces/")
        if found and rest.split("/", 1)[0]:
            attributes["k8s.namespace.name"] = rest.split("/", 1)[0]
        span = self.tracer.start_span(f"{verb} {resource}", kind=SpanKind.CLIENT,
                                      attributes=attributes)
        context = trace.set_span_in_context(span)
        carrier = dict(headers)
        propagate.inject(carrier, context=context)
        with _current(span, context):
            yield _ClientRequest(span, carrier)

    @contextlib.contextmanager
    def server_request(self, name: str, path: str, headers: Mapping[str, str],
                       attributes: Mapping[str, str]) -> Iterator[_ServerRequest]:
        parent = propagate.extract(headers, context=_ROOT)
        span = self.tracer.start_span(name, context=parent, kind=SpanKind.SERVER,
                                      attributes={"http.request.method": "POST",
                                                  "url.path": path, **attributes})
        with _current(span, trace.set_span_in_context(span)):
            yield _ServerRequest(span)

    def annotate(self, attributes: Mapping[str, str | int | bool]) -> None:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(attributes)

    # -- logging ----------------------------------------------------------------------------

    def current_ids(self) -> tuple[str, str] | None:
        context = trace.get_current_span().get_span_context()
        if not context.is_valid:
            return None
        return f"{context.trace_id:032x}", f"{context.span_id:016x}"
