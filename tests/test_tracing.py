"""Tracing with OpenTelemetry: reconcile spans linked to the watch events that queued them,
API request spans carrying ``traceparent``, webhook review spans, and the reconcile ID
and trace on log records; on both backends, each test with a provider of its own
(OpenTelemetry's global provider can be set once per process: no test sets it)."""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from aiohttp import web
from kubernetes_asyncio.client import Configuration
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import reconcilekit.tracing
from reconcilekit import (
    Cache,
    Client,
    Controller,
    NotFound,
    ReconcileContextFilter,
    Reconciler,
    Request,
    Result,
    enqueue_object,
)
from reconcilekit._tracing import switch
from reconcilekit._tracing.pending_keys import PendingKeys
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster, FakeClock, eventually
from reconcilekit.workqueue import LOW_PRIORITY, ItemExponentialFailureRateLimiter

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


class Traced:
    """The spans a test's provider finished."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("test")

    def spans(self, name: str | None = None, **attributes: Any) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans()
                if (name is None or s.name == name)
                and all((s.attributes or {}).get(k) == v for k, v in attributes.items())]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        return [s for s in self.exporter.get_finished_spans()
                if s.parent is not None and s.parent.span_id == parent.context.span_id]


@pytest.fixture
def traced() -> Iterator[Traced]:
    traced = Traced()
    reconcilekit.tracing.enable(tracer_provider=traced.provider)
    try:
        yield traced
    finally:
        reconcilekit.tracing.disable()
        traced.provider.shutdown()


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Calls(Reconciler):
    """Reconciles ConfigMaps named in ``ours`` with ``behaviour(request, n)``: the n-th
    call's outcome (a Result, or an exception to raise); the others are done at once."""

    def __init__(self, ours: set[str], behaviour: Callable[[Request, int], Any]) -> None:
        self.ours, self.behaviour = ours, behaviour
        self.calls: dict[str, int] = {}

    async def reconcile(self, request: Request) -> Result:
        if request.name not in self.ours:
            return Result.done()  # a real namespace holds kube-root-ca.crt too
        n = self.calls[request.name] = self.calls.get(request.name, 0) + 1
        outcome = await self.behaviour(request, n)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome if isinstance(outcome, Result) else Result.done()


@asynccontextmanager
async def running(cache: Cache, controller: Controller) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(10)
        await tg.start(controller.run)
        yield
        tg.cancel_scope.cancel()


def reconciles(traced: Traced, name: str) -> list[ReadableSpan]:
    return sorted((s for s in traced.spans() if s.name.startswith("reconcile ")
                   and (s.attributes or {}).get("reconcilekit.request.name") == name),
                  key=lambda s: s.start_time or 0)


async def test_a_reconcile_span_links_the_event_that_queued_it_and_has_a_span_per_request(
        apiserver: Cluster, client: Client, traced: Traced) -> None:
    """On kube-apiserver the requests that carried ``traceparent`` succeed too."""
    ns = apiserver.namespace

    async def behaviour(request: Request, n: int) -> Any:
        await client.get(CONFIG_MAPS, request.name, ns)
        await client.patch(CONFIG_MAPS, request.name, {"data": {"seen": "yes"}}, ns)
        with pytest.raises(NotFound):
            await client.get(CONFIG_MAPS, "missing", ns)
        return Result.done()

    reconciler = Calls({"a"}, behaviour)
    cache = Cache(client, namespace=ns)
    controller = Controller("traced", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await client.create(CONFIG_MAPS, cm("a"), ns)
        await eventually(lambda: reconciles(traced, "a"))
    span = reconciles(traced, "a")[0]
    attributes = dict(span.attributes or {})
    assert span.name == "reconcile traced" and span.kind == SpanKind.CONSUMER
    assert span.parent is None and span.status.status_code == StatusCode.UNSET
    assert attributes["reconcilekit.controller"] == "traced"
    assert attributes["k8s.namespace.name"] == ns
    assert attributes["reconcilekit.result"] == "success"
    assert attributes["reconcilekit.attempt"] == 1 and attributes["reconcilekit.requeues"] == 0
    assert attributes["reconcilekit.queue.priority"] == 0  # a watch event, not the list
    assert UUID.match(str(attributes["reconcilekit.reconcile_id"]))
    assert float(attributes["reconcilekit.queue.wait_seconds"]) >= 0  # type: ignore[arg-type]
    assert attributes["reconcilekit.queue.events"] >= 1  # type: ignore[operator]
    [event] = traced.spans("watch event configmaps ADDED", **{"reconcilekit.object.name": "a"})
    assert event.kind == SpanKind.PRODUCER and event.parent is None
    assert (event.attributes or {})["reconcilekit.requests"] == (f"{ns}/a",)
    assert event.context.span_id in {link.context.span_id for link in span.links}
    requests = sorted(traced.children(span), key=lambda s: s.start_time or 0)
    assert [(s.name, s.kind, (s.attributes or {}).get("http.response.status_code"),
             s.status.status_code) for s in requests] == [
        ("get configmaps", SpanKind.CLIENT, 200, StatusCode.UNSET),
        ("patch configmaps", SpanKind.CLIENT, 200, StatusCode.UNSET),
        ("get configmaps", SpanKind.CLIENT, 404, StatusCode.ERROR)]
    get = dict(requests[0].attributes or {})
    assert get["http.request.method"] == "GET" and get["k8s.namespace.name"] == ns
    assert get["url.path"] == f"/api/v1/namespaces/{ns}/configmaps/a"
    assert {s.context.trace_id for s in requests} == {span.context.trace_id}


async def test_a_failed_reconcile_records_its_backoff_and_the_retry_its_wait(
        apiserver: Cluster, client: Client, traced: Traced) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("flaky"), ns)
    clock = FakeClock()

    async def behaviour(request: Request, n: int) -> Any:
        if n == 1:
            return RuntimeError("first attempt fails")
        return Result.requeue_after(30) if n == 2 else Result.done()

    reconciler = Calls({"flaky"}, behaviour)
    limiter: ItemExponentialFailureRateLimiter[Request] = ItemExponentialFailureRateLimiter(
        base_delay=2.0, max_delay=100.0)
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("flaky", reconciler, cache, rate_limiter=limiter, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: len(reconciles(traced, "flaky")) == 1)
        await eventually(lambda: controller.queue.statistics().waiting == 1)
        clock.advance(2.5)  # the backoff, and half a second in the queue's delay heap
        await eventually(lambda: len(reconciles(traced, "flaky")) == 2)
        await eventually(lambda: controller.queue.statistics().waiting == 1)
        clock.advance(30)
        await eventually(lambda: len(reconciles(traced, "flaky")) == 3)
    failed, retried, requeued = (dict(s.attributes or {}) for s in reconciles(traced, "flaky"))
    first = reconciles(traced, "flaky")[0]
    assert first.status.status_code == StatusCode.ERROR
    assert [e.name for e in first.events] == ["exception"]
    assert failed["reconcilekit.result"] == "error"
    assert failed["error.type"] == "RuntimeError"
    assert failed["reconcilekit.retry_after_seconds"] == 2.0
    assert failed["reconcilekit.queue.priority"] == LOW_PRIORITY  # from the initial list
    assert retried["reconcilekit.queue.priority"] == LOW_PRIORITY  # retried at its priority
    assert retried["reconcilekit.attempt"] == 2 and retried["reconcilekit.requeues"] == 1
    assert retried["reconcilekit.queue.delay_seconds"] == 2.0
    assert retried["reconcilekit.queue.delay_reason"] == "rate_limited"
    assert retried["reconcilekit.queue.wait_seconds"] == 0.5
    assert retried["reconcilekit.result"] == "requeue_after"
    assert retried["reconcilekit.requeue_after_seconds"] == 30
    assert requeued["reconcilekit.queue.delay_reason"] == "requeue_after"
    assert requeued["reconcilekit.queue.delay_seconds"] == 30
    assert requeued["reconcilekit.attempt"] == 1  # success forgot the backoff
    assert len({a["reconcilekit.reconcile_id"] for a in (failed, retried, requeued)}) == 3


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(ReconcileContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[Records]:
    handler = Records()
    log = logging.getLogger("user.reconciler")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.setLevel(logging.NOTSET)


def logging_reconciler() -> Calls:
    async def behaviour(request: Request, n: int) -> Any:
        logging.getLogger("user.reconciler").info("reconciling %s", request.name)
        return Result.requeue_after(0.01) if n == 1 else Result.done()

    return Calls({"logged"}, behaviour)


async def test_log_records_in_a_reconcile_carry_its_id_and_with_tracing_its_span(
        apiserver: Cluster, client: Client, traced: Traced, records: Records) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("logged"), ns)
    cache = Cache(client, namespace=ns)
    controller = Controller("logged", logging_reconciler(), cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: len(reconciles(traced, "logged")) == 2)
    spans = reconciles(traced, "logged")
    assert len(records.records) == 2
    for record, span in zip(records.records, spans, strict=True):
        assert record.reconcile_id == (span.attributes or {})["reconcilekit.reconcile_id"]
        assert record.trace_id == f"{span.context.trace_id:032x}"
        assert record.span_id == f"{span.context.span_id:016x}"
        assert record.controller == "logged" and record.key == f"{ns}/logged"


async def test_without_tracing_records_carry_the_reconcile_id_and_no_span_is_made(
        apiserver: Cluster, client: Client, records: Records) -> None:
    ns = apiserver.namespace
    unused = Traced()  # a provider never given to reconcilekit
    await client.create(CONFIG_MAPS, cm("logged"), ns)
    cache = Cache(client, namespace=ns)
    reconciler = logging_reconciler()
    controller = Controller("logged", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    with unused.tracer.start_as_current_span("the application's own"):
        async with running(cache, controller):
            await eventually(lambda: reconciler.calls.get("logged") == 2)
    ids = [record.reconcile_id for record in records.records]
    assert len(ids) == 2 and ids[0] != ids[1] and all(UUID.match(i) for i in ids)
    assert [(r.trace_id, r.span_id) for r in records.records] == [("", "")] * 2
    assert [s.name for s in unused.spans()] == ["the application's own"]


async def test_with_the_global_no_op_provider_reconciles_run_and_record_nothing(
        apiserver: Cluster, client: Client, records: Records) -> None:
    """``enable()`` with no provider takes the global one, a no-op here (no test sets it)."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("logged"), ns)
    cache = Cache(client, namespace=ns)
    reconciler = logging_reconciler()
    controller = Controller("logged", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    reconcilekit.tracing.enable()
    try:
        async with running(cache, controller):
            await eventually(lambda: reconciler.calls.get("logged") == 2)
    finally:
        reconcilekit.tracing.disable()
    assert [(r.trace_id, r.span_id) for r in records.records] == [("", "")] * 2
    assert all(UUID.match(r.reconcile_id) for r in records.records)


async def test_the_traceparent_of_the_request_span_is_sent_with_the_request(
        traced: Traced) -> None:
    """A server of the test's own records the headers it is sent (the in-process API
    server does not show them, kube-apiserver only to its own tracing)."""
    received: list[dict[str, str]] = []

    async def answer(request: web.Request) -> web.Response:
        received.append(dict(request.headers))
        return web.json_response({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "a", "namespace": "ns"}})

    app = web.Application()
    app.router.add_get("/api/v1/namespaces/ns/configmaps/a", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        async with Client(Configuration(host=f"http://127.0.0.1:{port}")) as client:
            await client.get(CONFIG_MAPS, "a", "ns")  # outside any span: not traced
            with traced.tracer.start_as_current_span("the application's own") as parent:
                await client.get(CONFIG_MAPS, "a", "ns")
    finally:
        await runner.cleanup()
    assert "traceparent" not in {k.lower() for k in received[0]}
    [request] = traced.spans("get configmaps")
    assert request.parent is not None
    assert request.parent.span_id == parent.get_span_context().span_id
    context = request.context
    assert received[1]["traceparent"] == (
        f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}")


def test_pending_keys_link_the_first_events_count_the_rest_and_stay_bounded() -> None:
    keys = PendingKeys(max_keys=2, max_links=3)
    for i in range(5):
        keys.event(["a"], f"event {i}", now=float(i))
    keys.event(["a"], None, now=9.0)  # an event with nothing to link: counted
    record = keys.take("a")
    assert record is not None and keys.take("a") is None
    assert (record.since, record.links, record.events) == (0.0, ["event 0", "event 1",
                                                                  "event 2"], 6)
    keys.scheduled("b", now=10.0, delay=5.0, reason="rate_limited")
    keys.event(["b"], "event", now=12.0)  # queued before its backoff ended: pending now
    keys.scheduled("b", now=13.0, delay=1.0, reason="requeue_after")  # keeps its record
    record = keys.take("b")
    assert record is not None
    assert (record.since, record.delay, record.reason, record.events) == (12.0, None, "", 1)
    for key in ("c", "d", "e"):
        keys.event([key], None, now=20.0)
    assert len(keys) == 2 and keys.take("c") is None  # the oldest forgotten
    with pytest.raises(ValueError, match="max_keys must be >= 1"):
        PendingKeys(max_keys=0)


def test_enable_refuses_what_is_not_a_tracer_provider() -> None:
    with pytest.raises(TypeError, match="must be an OpenTelemetry TracerProvider, not str"):
        reconcilekit.tracing.enable(tracer_provider="jaeger")  # type: ignore[arg-type]
    assert switch.active is None


def test_a_reconcile_id_is_a_fresh_version_4_uuid() -> None:
    from reconcilekit._foundations.logging import new_reconcile_id

    ids = {new_reconcile_id() for _ in range(1000)}
    assert len(ids) == 1000
    assert all(uuid.UUID(i).version == 4 and UUID.match(i) for i in ids)
