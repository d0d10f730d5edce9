"""The filters in front of the handlers, each one small step of a request's way in.

As in k8s.io/apiserver's DefaultBuildHandlerChain, a request goes through
the filters in the order :data:`..handler_chain.FILTERS` declares; each either
answers it or passes it on (``next_``), with what it learned in the
:class:`Scope`. Every failure is a :class:`StatusError`; the outermost filter
answers it with a ``kind: Status`` body and kube-apiserver's code, and an
unexpected exception with a 500 InternalError Status (logged), never a
traceback or a dropped connection.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from aiohttp import web

from ...._foundations.go_compat import go_quote
from ..machinery.request_info import KUBE_GROUPS, ResourceRequest, parse_resource_path, verb_for
from ..machinery.request_user import ANONYMOUS, RequestUser
from ..machinery.resources import Registry
from ..machinery.status import PageNotFound, StatusError
from ..machinery.token_authenticator import TokenAuthenticator
from ..registry.generic_store import Storage
from . import request_metrics
from .faults import Faults
from .openapi import V2_PROTOBUF, Published, v2_document, v3_document, v3_root
from .request_metrics import RequestMetrics

__all__ = ["VERSION_INFO", "Filter", "Next", "Scope", "ServerContext", "ServerSettings",
           "answer_errors", "compress", "inject_faults", "json_response",
           "resolve_resource", "serve_discovery", "serve_open_paths", "serve_openapi",
           "count_requests", "serve_metrics", "status_response",
           "warn_deprecated"]

log = logging.getLogger("reconcilekit.testing.apiserver")

# the kube-apiserver release whose answers the server gives (checked in CI against it)
VERSION_INFO = {
    "major": "1", "minor": "28", "gitVersion": "v1.28.7+reconcilekit",
    "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.21.7", "compiler": "gc",
    "platform": "linux/amd64",
}
_OPEN_PATHS = frozenset({"/version", "/healthz", "/livez", "/readyz"})
_JSON = "application/json"
# kube-apiserver gzips an answer (not a watch) larger than 128 KiB for a client that
# accepts gzip, at level 1 (APIResponseCompression, on by default: responsewriters).
_GZIP_THRESHOLD = 128 * 1024


@dataclass(slots=True)
class ServerSettings:
    tokens: TokenAuthenticator  # bearer token -> user
    bookmark_interval: float
    watch_buffer: int
    address: Callable[[], str]
    sharded_list_watch: bool = True  # the ShardedListAndWatch feature gate
    owner_references_permission: bool = False  # OwnerReferencesPermissionEnforcement on


@dataclass(slots=True)
class ServerContext:
    """What the filters read of the server: the same for every request."""

    registry: Registry
    storage: Storage
    faults: Faults
    requests: Counter[tuple[str, str]]  # (verb, resource or path) -> requests served
    settings: ServerSettings
    metrics: RequestMetrics = field(default_factory=RequestMetrics)  # for /metrics


class Resolved:
    """What the request turned out to be about, for the filters outside the one that
    learns it (they read it once the request is answered: its metrics)."""

    __slots__ = ("resource", "verb")

    def __init__(self) -> None:
        self.resource: ResourceRequest | None = None
        self.verb = ""

    def learn(self, resource: ResourceRequest, verb: str) -> None:
        self.resource, self.verb = resource, verb


@dataclass(frozen=True, slots=True)
class Scope:
    """What the filters learned of one request so far: a filter that learns more passes
    the next one a new scope (as kube-apiserver's filters derive a request context);
    ``resolved`` is shared by all of them, for the outer ones."""

    path: str = "/"
    parts: list[str] = field(default_factory=list)
    user: RequestUser = ANONYMOUS  # set by authenticate (and impersonate)
    resource: ResourceRequest | None = None  # set by resolve_resource
    verb: str = ""
    resolved: Resolved = field(default_factory=Resolved)

    @property
    def who(self) -> RequestUser:
        """Who the user is to admission and SelfSubjectReview."""
        return self.user


Next = Callable[[web.Request, Scope], Awaitable[web.StreamResponse]]
Filter = Callable[[ServerContext, web.Request, Scope, Next], Awaitable[web.StreamResponse]]


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None,
                  *, newline: bool = True) -> web.Response:
    """``body`` as JSON, ending with a newline as kube-apiserver's encoder ends its objects,
    lists, Status answers and discovery documents (its OpenAPI documents, written
    whole, end without one: ``newline=False``). orjson writes at most 255 levels of
    nesting (a Status quoting a value sent nested deeper, an object stored so): deeper
    answers are written by the standard library's encoder."""
    try:
        raw = orjson.dumps(body, option=orjson.OPT_APPEND_NEWLINE if newline else None)
    except orjson.JSONEncodeError:
        raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + (
            b"\n" if newline else b"")
    return web.Response(body=raw, status=status, content_type=_JSON, headers=headers)


def status_response(err: StatusError) -> web.Response:
    if isinstance(err, PageNotFound):
        return web.Response(text=err.message + "\n", status=err.code,
                            content_type="text/plain", charset="utf-8",
                            headers={"X-Content-Type-Options": "nosniff"})
    return json_response(err.body(), err.code, err.headers)


async def count_requests(ctx: ServerContext, request: web.Request, scope: Scope,
                         next_: Next) -> web.StreamResponse:
    """``apiserver_request_total``: each answered request about a resource, by its code."""
    response = await next_(request, scope)
    if scope.resolved.resource is not None:
        ctx.metrics.count(request, scope.resolved.resource, scope.resolved.verb,
                          response.status)
    return response


async def serve_metrics(ctx: ServerContext, request: web.Request, scope: Scope,
                        next_: Next) -> web.StreamResponse:
    """``GET /metrics``: the Prometheus exposition of the server's counters."""
    if scope.path != request_metrics.PATH or request.method != "GET":
        return await next_(request, scope)
    ctx.requests[("get", scope.path)] += 1
    return ctx.metrics.answer()


async def answer_errors(ctx: ServerContext, request: web.Request, scope: Scope,
                        next_: Next) -> web.StreamResponse:
    """A failure becomes its Status; an unexpected exception a 500 InternalError."""
    try:
        return await next_(request, scope)
    except StatusError as err:
        return status_response(err)
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception as exc:
        log.exception("internal error serving %s %s", request.method, request.path)
        return status_response(StatusError.internal(f"{type(exc).__name__}: {exc}"))


async def compress(ctx: ServerContext, request: web.Request, scope: Scope,
                   next_: Next) -> web.StreamResponse:
    """Gzip a large answer for a client that accepts it (a Status or a watch never)."""
    response = await next_(request, scope)
    if not isinstance(response, web.Response) or response.body is None:
        return response
    body = response.body
    if (not isinstance(body, bytes) or len(body) <= _GZIP_THRESHOLD
        or "gzip" not in request.headers.get("Accept-Encoding", "")):
        return response
    response.body = gzip.compress(body, compresslevel=1)
    response.headers["Content-Encoding"] = "gzip"
    return response


async def serve_open_paths(ctx: ServerContext, request: web.Request, scope: Scope,
                           next_: Next) -> web.StreamResponse:
    """``/version``, ``/healthz``, ``/livez``, ``/readyz`` (RBAC lets anyone read them)."""
    if scope.path not in _OPEN_PATHS:
        return await next_(request, scope)
    ctx.requests[("get", scope.path)] += 1
    if scope.path == "/version":  # indented, with no newline after, as kube-apiserver's
        return web.Response(body=orjson.dumps(VERSION_INFO, option=orjson.OPT_INDENT_2),
                            content_type=_JSON)
    return web.Response(text="ok")


async def serve_openapi(ctx: ServerContext, request: web.Request, scope: Scope,
                        next_: Next) -> web.StreamResponse:
    """``/openapi/v2`` and ``/openapi/v3`` (:mod:`.openapi`), as kube-openapi's handlers
    answer: the v2 document as JSON (empty as protobuf, which kubectl then does without);
    the v3 index (``text/plain``, as kube-apiserver labels it); a v3 document with its
    ``ETag``, 304 to an ``If-None-Match`` naming it, ``Cache-Control: public, immutable``
    when asked for by its current ``?hash=``, a 301 to its current ``serverRelativeURL``
    when asked for by another, 404 with no body when not served, 406 when the client
    accepts neither JSON nor protobuf (a protobuf client is answered JSON)."""
    parts = scope.parts
    if parts[:1] != ["openapi"] or parts[1:2] not in (["v2"], ["v3"]) or (
            parts[1] == "v2" and len(parts) > 2):
        return await next_(request, scope)
    if request.method != "GET":
        raise StatusError.method_not_allowed()
    ctx.requests[("get", "openapi")] += 1
    if parts[1] == "v2":
        if "protobuf" in request.headers.get("Accept", ""):
            return web.Response(body=b"", content_type=V2_PROTOBUF)
        return _cached(request, v2_document(ctx.registry), {"Vary": "Accept-Encoding"})
    if len(parts) == 2:
        return web.Response(body=v3_root(ctx.registry), content_type="text/plain",
                            charset="utf-8")
    if not _accepts_openapi_v3(request.headers.get("Accept", "")):
        return web.Response(status=406, headers={"Vary": "Accept"})
    path = "/".join(parts[2:])
    document = v3_document(ctx.registry, path)
    if document is None:
        return web.Response(status=404)
    headers = {"Vary": "Accept", "ETag": f'"{document.hash}"'}
    asked = request.query.get("hash")
    if asked is not None and asked != document.hash:
        return web.Response(status=301, headers={
            **headers, "Location": f"/openapi/v3/{path}?hash={document.hash}"})
    if asked is not None:  # cached by its URL, for good
        expires = datetime.now(UTC) + timedelta(days=365)
        headers.update({"Cache-Control": "public, immutable",
                        "Expires": expires.strftime("%a, %d %b %Y %H:%M:%S UTC")})
    return _cached(request, document, headers)


_OPENAPI_V3_TYPES = frozenset({"*/*", "application/*", "application/json",
                               "application/com.github.proto-openapi.spec.v3.v1.0+protobuf"})


def _accepts_openapi_v3(accept: str) -> bool:
    """Whether an ``Accept`` header (none: anything) names a type a v3 document is
    served as."""
    return not accept.strip() or any(
        clause.split(";")[0].strip().lower() in _OPENAPI_V3_TYPES for clause in accept.split(","))


def _cached(request: web.Request, document: Published,
            headers: Mapping[str, str]) -> web.Response:
    """``document`` with its ``ETag``, or 304 when ``If-None-Match`` names it."""
    etag = f'"{document.hash}"'
    all_headers = {**headers, "ETag": etag}
    asked = {tag.strip().removeprefix("W/") for tag in
             request.headers.get("If-None-Match", "").split(",")}
    if etag in asked or "*" in asked:
        return web.Response(status=304, headers=all_headers)
    return web.Response(body=document.body, content_type=_JSON, headers=all_headers)


def _discovery(ctx: ServerContext, parts: list[str]) -> dict[str, Any] | None:
    """The discovery document at ``parts``, if it is one."""
    registry = ctx.registry
    if parts == ["api"]:
        return registry.api_versions(ctx.settings.address())
    if len(parts) == 2 and parts[0] == "api":
        return registry.api_resource_list("", parts[1])
    if parts == ["apis"]:
        return registry.api_group_list()
    if len(parts) == 2 and parts[0] == "apis":
        return registry.api_group(parts[1])
    if len(parts) == 3 and parts[0] == "apis":
        return registry.api_resource_list(parts[1], parts[2])
    return None


async def serve_discovery(ctx: ServerContext, request: web.Request, scope: Scope,
                          next_: Next) -> web.StreamResponse:
    """Discovery documents; any other path outside ``/api/V`` and
    ``/apis/G/V`` is refused (405 but for GET, else 404)."""
    parts = scope.parts
    discovery = _discovery(ctx, parts)
    if discovery is None and parts and parts[0] in ("api", "apis") and not (
            parts[0] == "api" and len(parts) < 2) and not (
            parts[0] == "apis" and len(parts) < 3):
        return await next_(request, scope)
    if discovery is None and (not parts or parts[0] not in ("api", "apis") or (
            parts[0] == "apis" and len(parts) > 1 and parts[1] not in KUBE_GROUPS)):
        raise StatusError.page_not_found()
    if request.method != "GET":
        raise StatusError.method_not_allowed()
    if discovery is None:
        raise StatusError.not_found_path()
    ctx.requests[("get", "discovery")] += 1
    return json_response(discovery, newline=parts[:1] != ["openapi"])


async def resolve_resource(ctx: ServerContext, request: web.Request, scope: Scope,
                           next_: Next) -> web.StreamResponse:
    """The resource and verb a request is about (counted)."""
    req = parse_resource_path(ctx.registry, scope.parts)
    watch = request.query.get("watch", "") in ("true", "1")
    scope = replace(scope, resource=req, verb=verb_for(request.method, req, watch))
    scope.resolved.learn(req, scope.verb)
    ctx.requests[(scope.verb, req.counter_resource)] += 1
    return await next_(request, scope)


async def warn_deprecated(ctx: ServerContext, request: web.Request, scope: Scope,
                          next_: Next) -> web.StreamResponse:
    """A deprecated version's warning, first, on every answer about it (errors
    included), as kube-apiserver's handlers add it: a custom resource's from its CRD, a
    built-in one's as kube-apiserver words it (captured). A watch's stream, sent before
    the warning is known here, goes without."""
    assert scope.resource is not None
    warning = scope.resource.rtype.deprecation_warning
    if warning is None:
        return await next_(request, scope)
    try:
        response = await next_(request, scope)
    except StatusError as err:
        response = status_response(err)
    if not response.prepared:
        others = response.headers.popall("Warning", [])
        for text in (f"299 - {go_quote(warning)}", *others):
            response.headers.add("Warning", text)
    return response


async def inject_faults(ctx: ServerContext, request: web.Request, scope: Scope,
                        next_: Next) -> web.StreamResponse:
    """The latency and failures a test asked for (:class:`Faults`), before the handler."""
    assert scope.resource is not None
    delay = ctx.faults.latency_for(scope.verb, scope.resource)
    if delay > 0:
        await asyncio.sleep(delay)
    injected = ctx.faults.failure_for(scope.verb, scope.resource)
    if injected is not None:
        return status_response(injected)
    return await next_(request, scope)
