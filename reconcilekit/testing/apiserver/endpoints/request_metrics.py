"""``/metrics``: kube-apiserver's ``apiserver_request_total``, counted per request.

Each server keeps its own Prometheus registry, so servers in one process
count apart. A request about a resource is counted once its answer is
known, under kube-apiserver's labels: ``verb`` as its metrics name it
(``GET``, ``LIST`` for a GET of a collection, ``WATCH``, ``POST``, ``PUT``,
``PATCH``, ``APPLY`` for an apply patch, ``DELETE`` for one object or a
collection), ``dry_run`` (the ``dryRun`` values, sorted, comma-joined),
``group``, ``version``, ``resource``, ``subresource``, ``scope``
(``resource`` for a named object or a create, ``namespace``, ``cluster``),
``component`` (``apiserver``) and the answer's ``code``. Requests that name
no resource (discovery, health, ``/metrics`` itself) are not counted.
``GET /metrics`` answers the Prometheus text format to an authenticated
user, and kube-apiserver's 403 to an anonymous one.
"""

from __future__ import annotations

from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from ..machinery.request_info import ResourceRequest

__all__ = ["PATH", "RequestMetrics"]

PATH = "/metrics"
_LABELS = ("verb", "dry_run", "group", "version", "resource", "subresource", "scope",
           "component", "code")
_APPLY = "application/apply-patch+yaml"


class RequestMetrics:
    """One server's request counters and their text exposition."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "apiserver_request", "Counter of apiserver requests broken out for each verb, "
            "dry run value, group, version, resource, scope, component, and HTTP response "
            "code.", _LABELS, registry=self.registry)

    def count(self, request: web.Request, req: ResourceRequest, verb: str,
              code: int) -> None:
        """Count one answered request about ``req`` (``verb``: the server's own verb)."""
        r = req.rtype.resource
        self.requests.labels(
            verb=_reported_verb(request, verb), dry_run=",".join(
                sorted(request.query.getall("dryRun", []))),
            group=r.group, version=r.version, resource=r.plural,
            subresource=req.subresource or "",
            scope="resource" if req.name or verb == "create" else (
                "namespace" if req.namespace else "cluster"),
            component="apiserver", code=str(code)).inc()

    def answer(self) -> web.Response:
        """The exposition (the authorizer decided who may read it)."""
        return web.Response(body=generate_latest(self.registry),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})


def _reported_verb(request: web.Request, verb: str) -> str:
    if verb in ("list", "watch"):
        return verb.upper()
    if request.method == "PATCH" and request.headers.get(
            "Content-Type", "").split(";")[0].strip() == _APPLY:
        return "APPLY"
    return request.method.upper()
