"""What the API server's conformance tests share besides fixtures: the tests' CRDs, the
server's command line run until SIGTERM, a webhook that records what a server sends it,
custom resources in two versions. (The fixtures are in conftest.py, which imports these.)
"""

from __future__ import annotations

import asyncio
import base64
import secrets
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from reconcilekit.testing import Cluster, OperatorProcess
from reconcilekit.testing._tls import ServingCertificate
from reconcilekit.webhook._tls_handshakes import stop_tls_site

GROUP = "test.reconcilekit.dev"


def crd(kind: str, schema: dict[str, Any], *, scope: str = "Namespaced",
        status: bool = False, **names: Any) -> dict[str, Any]:
    """A one-version (v1) CustomResourceDefinition of ``kind`` in the tests' group."""
    plural = f"{kind.lower()}s"
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": schema}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{GROUP}"},
            "spec": {"group": GROUP, "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind,
                               **names},
                     "versions": [version]}}


ANYTHING: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
WIDGET_CRD = crd("Widget", ANYTHING, status=True, listKind="WidgetList", shortNames=["wdg"])
GADGET_CRD = crd("Gadget", ANYTHING, scope="Cluster")


# A namespaced kind with a schema that exercises pruning, defaults, validation and CEL
# rules (test_apiserver_crd_schema.py), and list types (test_apiserver_apply.py).
PROBE_CRD = crd("Probe", {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "x-kubernetes-validations": [
                {"rule": "self.size <= self.maxSize",
                 "message": "size must not exceed maxSize"},
                {"rule": "!has(self.mode) || self.mode != 'bad'",
                 "messageExpression": "'mode ' + self.mode + ' is bad'",
                 "fieldPath": ".mode"},
                {"rule": "self.size == oldSelf.size || self.mode == 'resize'",
                 "message": "size is immutable unless resizing"},
                {"rule": "!has(self.name) || self.name.lowerAscii() != 'root'"},
            ],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 100},
                "maxSize": {"type": "integer", "default": 50},
                "mode": {"type": "string", "enum": ["fast", "slow", "bad", "resize"]},
                "name": {"type": "string", "minLength": 2, "maxLength": 5,
                         "pattern": "^[a-z]+$"},
                "ratio": {"type": "number", "maximum": 10, "exclusiveMaximum": True},
                "even": {"type": "integer", "multipleOf": 2},
                "flag": {"type": "boolean"},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "items": {"type": "string"},
                         "x-kubernetes-list-type": "set"},
                "items": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["key"],
                    "items": {"type": "object", "required": ["key"], "properties": {
                        "key": {"type": "string"},
                        "v": {"type": "string", "default": "dv"}}}},
                "labels": {"type": "object", "maxProperties": 2,
                           "additionalProperties": {"type": "string"}},
                "free": {"type": "object",
                         "x-kubernetes-preserve-unknown-fields": True},
                "note": {"type": "string"},
                "nullable": {"type": "string", "nullable": True},
                "nested": {"type": "object", "default": {},
                           "properties": {"deep": {"type": "integer"},
                                          "level": {"type": "string",
                                                    "default": "info"}}},
                "created": {"type": "string", "format": "date-time"},
                "immut": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self == oldSelf", "message": "immut is immutable"}]},
            },
        },
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}, status=True)


@asynccontextmanager
async def serving_cli(kubeconfig: Path, *args: str) -> AsyncIterator[str]:
    """Run ``python -m reconcilekit.testing --kubeconfig-out KUBECONFIG``; yields the line
    it prints once listening. On exit it is sent SIGTERM and must exit 0."""
    async with OperatorProcess(sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out",
                               str(kubeconfig), *args,
                               name="python -m reconcilekit.testing") as server:
        yield (await server.wait_for_line(" listening on ", within=30)).string
        code = await server.stop()
    assert code == 0, server.log_tail()


# -- a webhook that records what an API server sends it ----------------------------------------

Responder = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True, slots=True)
class WebhookCall:
    """One request an API server made to the :class:`RecordingWebhook`."""

    path: str
    query: dict[str, str]
    headers: dict[str, str]
    review: dict[str, Any]

    @property
    def request(self) -> dict[str, Any]:
        """The review's ``request`` (an AdmissionRequest or a ConversionRequest)."""
        return dict(self.review.get("request") or {})


def convert_all(request: dict[str, Any]) -> dict[str, Any]:
    """A conversion answer that only rewrites apiVersion (what ``strategy: None`` does)."""
    desired = request["desiredAPIVersion"]
    return {"result": {"status": "Success"},
            "convertedObjects": [dict(o, apiVersion=desired) for o in request["objects"]]}


class RecordingWebhook:
    """An HTTPS webhook server on 127.0.0.1 that records every review and answers as told.

    Each path answers with its responder: a function of the review's
    ``request`` returning the ``response`` fields (``uid`` is added unless
    given; the review's apiVersion and kind are echoed), or an aiohttp
    response sent as is. Unprogrammed paths allow (AdmissionReview) or
    convert by rewriting apiVersion (ConversionReview). :meth:`hang` makes
    a path never answer, until the fixture stops.
    """

    def __init__(self) -> None:
        self.certificate = ServingCertificate.generate(("127.0.0.1",),
                                                       common_name="recording-webhook")
        self.calls: list[WebhookCall] = []
        self._responders: dict[str, Responder] = {}
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    @property
    def ca_bundle(self) -> str:
        return base64.b64encode(self.certificate.ca_pem).decode()

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def client_config(self, path: str) -> dict[str, Any]:
        return {"url": self.url(path), "caBundle": self.ca_bundle}

    def answer(self, path: str, responder: Responder) -> None:
        self._responders[path] = responder

    def hang(self, path: str) -> None:
        async def never(request: dict[str, Any]) -> Any:
            await self._release.wait()
            return web.Response(status=503)
        self._responders[path] = never


    def calls_to(self, path: str) -> list[WebhookCall]:
        """The calls to ``path`` that the test's own writes caused, one per write, in order.

        A real control plane adds calls that no test controls: writes of
        kube-controller-manager's own (the root CA ConfigMap it keeps in every
        namespace), left out; and a write admitted more than once: kube-apiserver
        first validates an update or a delete against its watch cache's copy of
        the object, and when that copy was stale it admits the write again against
        the stored one. Consecutive calls for the same write count once, as the
        last (the one against the stored object).
        """
        out: list[WebhookCall] = []
        for call in self.calls:
            if call.path != path or call.request.get("name") in _CONTROL_PLANE_OBJECTS:
                continue
            if out and _same_write(out[-1].request, call.request):
                out[-1] = call
                continue
            out.append(call)
        return out

    def requests_to(self, path: str) -> list[dict[str, Any]]:
        return [c.request for c in self.calls_to(path)]

    async def _handle(self, http: web.Request) -> web.StreamResponse:
        review = await http.json()
        self.calls.append(WebhookCall(http.path, dict(http.query), dict(http.headers), review))
        request = review.get("request") or {}
        responder = self._responders.get(http.path)
        if responder is None:
            responder = convert_all if "desiredAPIVersion" in request else (
                lambda _: {"allowed": True})
        answer = responder(request)
        if asyncio.iscoroutine(answer):
            answer = await answer
        if isinstance(answer, web.StreamResponse):
            return answer
        return web.json_response({"apiVersion": review.get("apiVersion"),
                                  "kind": review.get("kind"),
                                  "response": {"uid": request.get("uid"), **answer}})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False,
                                     shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0,
                           ssl_context=self.certificate.server_context())
        await site.start()
        self._server = site._server
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    async def stop(self) -> None:
        self._release.set()
        if self._runner is not None:
            # kube-apiserver may dial the webhook as it stops (its configurations are still
            # registered): close what is mid-handshake, as reconcilekit's WebhookServer does,
            # rather than leave it to the garbage collector (an "unclosed transport").
            await stop_tls_site(self._runner, self._server)


# -- custom resources in two versions (conversion, equivalent admission) -----------------------

CONVERSION_GROUP = "conversion.reconcilekit.dev"


def two_version_crd(conversion: dict[str, Any] | None = None, *, storage: str = "v2",
                    schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A namespaced CRD served at v1 and v2, stored at ``storage``, named uniquely (CRDs are
    cluster-scoped: tests on a real cluster must not share one)."""
    suffix = secrets.token_hex(3)
    kind, plural = f"Thing{suffix}", f"things{suffix}"
    spec: dict[str, Any] = {
        "group": CONVERSION_GROUP, "scope": "Namespaced",
        "names": {"plural": plural, "singular": f"thing{suffix}", "kind": kind},
        "versions": [{"name": v, "served": True, "storage": v == storage,
                      "schema": {"openAPIV3Schema": schema or ANYTHING}} for v in ("v1", "v2")]}
    if conversion is not None:
        spec["conversion"] = conversion
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{CONVERSION_GROUP}"}, "spec": spec}


@asynccontextmanager
async def installed(apiserver: Cluster, crd: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    """Install ``crd``; yields it as stored. On a real cluster its objects (deleted through
    the storage version, which needs no conversion) and the CRD are removed afterwards."""
    stored = await apiserver.install_crd(crd)
    try:
        yield stored
    finally:
        if not apiserver.in_process:
            spec = crd["spec"]
            version = next(v["name"] for v in spec["versions"] if v["storage"])
            await apiserver.request("DELETE", f"/apis/{spec['group']}/{version}/namespaces/"
                                    f"{apiserver.namespace}/{spec['names']['plural']}")
            await apiserver.request("DELETE", "/apis/apiextensions.k8s.io/v1/"
                                    f"customresourcedefinitions/{crd['metadata']['name']}")


# written in every namespace by kube-controller-manager (its root CA publisher)
_CONTROL_PLANE_OBJECTS = frozenset({"kube-root-ca.crt"})


def _same_write(first: dict[str, Any], second: dict[str, Any]) -> bool:
    """Whether ``second`` admits again the write ``first`` admitted, against another state
    of the object: the same operation, options and new object but for the resourceVersion
    it was computed from, and another old object. (Two webhooks at one path reviewing one
    admission get identical reviews: both count.)"""
    if "operation" not in first:  # a ConversionReview
        return False
    same = all(first.get(k) == second.get(k) for k in (
        "operation", "name", "namespace", "subResource", "dryRun", "options")) and (
        _content(first.get("object")) == _content(second.get("object"))) and (
        _uid(first) == _uid(second) is not None)
    return same and (first.get("oldObject"), (first.get("object") or {}).get("metadata")) != (
        second.get("oldObject"), (second.get("object") or {}).get("metadata"))


def _uid(review: dict[str, Any]) -> Any:
    """The uid of the object a review is about (its old state's, for a delete)."""
    obj = review.get("oldObject") or review.get("object") or {}
    return (obj.get("metadata") or {}).get("uid")


def _content(obj: Any) -> Any:
    if not isinstance(obj, dict):
        return obj
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("resourceVersion", "managedFields")}
    return dict(obj, metadata=meta)
