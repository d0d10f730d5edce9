"""Webhook reviews as server spans: posted directly with a ``traceparent`` (the span is its
child), and called by the API server of the backend for a Manager's server."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import aiohttp
import anyio
import orjson
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import reconcilekit.tracing
from reconcilekit import Client, Manager, Resource
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster, eventually
from reconcilekit.webhook import AdmissionRequest, ServingCertificate, Verdict, WebhookServer

WIDGETS = Resource("example.com", "v1", "Widget", "widgets")
VALIDATE = "/validate-example-com-v1-widget"


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, TracerProvider]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reconcilekit.tracing.enable(tracer_provider=provider)
    try:
        yield exporter, provider
    finally:
        reconcilekit.tracing.disable()
        provider.shutdown()


def review(size: int) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), "operation": "CREATE",
                        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                        "resource": {"group": "example.com", "version": "v1",
                                     "resource": "widgets"},
                        "name": "w", "namespace": "ns", "userInfo": {"username": "alice"},
                        "object": {"apiVersion": "example.com/v1", "kind": "Widget",
                                   "metadata": {"name": "w", "namespace": "ns"},
                                   "spec": {"size": size}}}}


async def test_a_review_is_a_server_span_child_of_the_traceparent_sent(
        exporter: tuple[InMemorySpanExporter, TracerProvider]) -> None:
    spans, provider = exporter
    server = WebhookServer(host="127.0.0.1", port=0)

    @server.validator(WIDGETS)
    async def validate(request: AdmissionRequest) -> Verdict:
        assert request.object is not None
        if request.object["spec"]["size"] > 10:
            return Verdict.deny("spec.size: must be at most 10")
        return Verdict.allow()

    caller = provider.get_tracer("test").start_span("kube-apiserver, say")
    context = caller.get_span_context()
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-01"
    assert isinstance(server.certificate, ServingCertificate)
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        connector = aiohttp.TCPConnector(ssl=server.certificate.client_context())
        async with aiohttp.ClientSession(connector=connector) as session:
            for body, headers in ((review(3), {"traceparent": traceparent}),
                                  (review(11), {}), (b"not a review", {})):
                raw = body if isinstance(body, bytes) else orjson.dumps(body)
                async with session.post(server.base_url + VALIDATE, data=raw,
                                        headers=headers) as answer:
                    await answer.read()
        tg.cancel_scope.cancel()
    allowed, denied, bad = spans.get_finished_spans()
    assert allowed.name == "validating webhook validate.widgets.example.com"
    assert allowed.kind == SpanKind.SERVER
    assert allowed.parent is not None and allowed.parent.span_id == context.span_id
    assert allowed.context.trace_id == context.trace_id
    assert denied.parent is None and bad.parent is None
    attributes = [dict(s.attributes or {}) for s in (allowed, denied, bad)]
    assert [(a.get("reconcilekit.admission.allowed"), a.get("reconcilekit.admission.code"),
             a["http.response.status_code"]) for a in attributes] == [
        (True, 200, 200), (False, 403, 200), (None, None, 400)]
    assert attributes[0]["reconcilekit.admission.operation"] == "CREATE"
    assert attributes[0]["reconcilekit.admission.kind"] == "Widget"
    assert attributes[0]["reconcilekit.webhook.type"] == "validating"
    assert attributes[0]["url.path"] == VALIDATE
    assert {s.status.status_code for s in (allowed, denied, bad)} == {StatusCode.UNSET}


async def test_a_review_the_api_server_asks_for_is_a_span(
        apiserver: Cluster, client: Client,
        exporter: tuple[InMemorySpanExporter, TracerProvider]) -> None:
    spans, _ = exporter
    ns = apiserver.namespace
    server = WebhookServer(name=f"rk-{ns}", host="127.0.0.1", port=0,
                           install_configurations=True, remove_configurations_on_exit=True)

    @server.validator(CONFIG_MAPS, name="validate.configmaps.reconcilekit.dev",
                      namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": ns}})
    async def validate(request: AdmissionRequest) -> Verdict:
        return Verdict.allow()

    def reviewed() -> list[Any]:
        return [s for s in spans.get_finished_spans()
                if s.name == "validating webhook validate.configmaps.reconcilekit.dev"
                and (s.attributes or {}).get("reconcilekit.admission.name") == "probe"]

    async def create_reviewed() -> bool:
        # kube-apiserver loads configurations through an informer: dry runs until one
        # is reviewed (the in-process server reads them at each request)
        await apiserver.request("POST", CONFIG_MAPS.path(ns) + "?dryRun=All",
                                json={"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "probe"}})
        return bool(reviewed())

    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server):
        await eventually(create_reviewed, within=20)
    span = reviewed()[0]
    attributes = dict(span.attributes or {})
    assert span.kind == SpanKind.SERVER
    assert attributes["reconcilekit.admission.operation"] == "CREATE"
    assert attributes["k8s.namespace.name"] == ns
    assert attributes["reconcilekit.admission.allowed"] is True
    assert attributes["http.response.status_code"] == 200
