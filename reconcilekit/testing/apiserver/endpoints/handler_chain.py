"""The HTTP face of the test API server: the filter chain, then the verbs' handlers.

Every request goes through :data:`FILTERS` in order (:mod:`.filters`), then
to the handler of its verb. Every failure is answered with a ``kind: Status``
body and kube-apiserver's code; an unexpected exception becomes a 500
InternalError Status (and is logged), never a traceback or a dropped connection.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from aiohttp import web
from multidict import CIMultiDict

from ...._foundations.go_compat import go_quote
from ..admission.chain import Admission
from ..apiextensions.version_conversion import Converter
from ..controllers.builtin_controllers import Lifecycle
from ..machinery.request_info import (
    ResourceRequest,
    resource_version,
)
from ..machinery.request_user import RequestUser
from ..machinery.resources import Registry
from ..machinery.status import StatusError
from ..registry.generic_store import Storage
from ..webhook_client.https_client import WebhookClient
from .access_filters import authenticate, authorize, impersonate, uid_lookup
from .faults import Faults
from .filters import (
    Filter,
    Next,
    Scope,
    ServerContext,
    ServerSettings,
    answer_errors,
    compress,
    count_requests,
    inject_faults,
    json_response,
    resolve_resource,
    serve_discovery,
    serve_metrics,
    serve_open_paths,
    serve_openapi,
    warn_deprecated,
)
from .handlers.create import create
from .handlers.delete import delete, delete_collection
from .handlers.get import get, list_item, list_objects, selection
from .handlers.patch import is_apply, patch
from .handlers.reviews import component_statuses, review
from .handlers.scale import get_scale, patch_scale, update_scale
from .handlers.token_request import request_token
from .handlers.update import bind, update
from .handlers.watch import serve_watch
from .handlers.write_options import DeleteOptions, WriteOptions
from .handlers.write_path import WritePath
from .negotiation import rendering
from .request_body import decode_body
from .tables import table

__all__ = ["FILTERS", "Handler"]

_BOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
          "code": 201}

# The way in of every request, outermost first (k8s.io/apiserver's DefaultBuildHandlerChain):
# each filter answers the request or passes it on; what passes them all is dispatched to
# the handler of its verb (Handler.dispatch).
FILTERS: tuple[Filter, ...] = (
    count_requests,  # apiserver_request_total, by the answer's code
    answer_errors,  # a StatusError or an unexpected exception -> its Status body
    compress,  # gzip a large answer
    authenticate,  # bearer token -> user; no header: system:anonymous
    impersonate,  # Impersonate-* headers -> the user the request acts as
    authorize,  # RBAC: the user may make the request, or 403
    serve_open_paths,  # /version, /healthz, /livez, /readyz
    serve_metrics,  # /metrics
    serve_openapi,  # /openapi/v2 and /openapi/v3
    serve_discovery,  # discovery; refuses other non-resource paths
    resolve_resource,  # the resource and verb (counted)
    warn_deprecated,  # a deprecated custom resource version's warning
    inject_faults,  # the latency and failures a test asked for
)


def _warnings(warnings: list[str]) -> CIMultiDict[str] | None:
    """``Warning: 299 - "TEXT"`` headers, one per warning, as kube-apiserver sends them."""
    if not warnings:
        return None
    return CIMultiDict(("Warning", f"299 - {go_quote(w)}") for w in warnings)


def _link(step: Filter, context: ServerContext, next_: Next) -> Next:
    """``step`` in front of ``next_``."""
    async def run(request: web.Request, scope: Scope) -> web.StreamResponse:
        return await step(context, request, scope, next_)
    return run


class Handler:
    """One aiohttp handler for every path: the :data:`FILTERS`, then the verb's handler."""

    def __init__(self, registry: Registry, storage: Storage, lifecycle: Lifecycle,
                 faults: Faults, requests: Counter[tuple[str, str]],
                 settings: ServerSettings) -> None:
        self.registry = registry
        self.storage = storage
        self.lifecycle = lifecycle
        self.faults = faults
        self.requests = requests
        self.settings = settings
        self.webhooks = client = WebhookClient()
        self.converter = Converter(storage, client)
        admission = Admission(storage, registry, client, self.converter,
                              owner_references=settings.owner_references_permission)
        self.writes = WritePath(storage, lifecycle, admission, self.converter)
        context = ServerContext(registry, storage, faults, requests, settings)
        chain: Next = self.dispatch
        for step in reversed(FILTERS):
            chain = _link(step, context, chain)
        self._chain = chain

    async def handle(self, request: web.Request) -> web.StreamResponse:
        return await self._chain(request, Scope())

    async def dispatch(self, request: web.Request, scope: Scope) -> web.StreamResponse:
        """The handler of the request's verb, once every filter let it through."""
        req, verb, who = scope.resource, scope.verb, scope.who
        assert req is not None
        if req.name is not None:
            self.storage.check_key(req.rtype, req.namespace, req.name)
        if req.subresource == "scale":
            return await self._scale(request, req, verb, who)
        if not req.rtype.stored or req.subresource == "token":
            return await self._answer_request(request, req, verb, who)
        match verb:
            case "get":
                if request.query.get("resourceVersion"):  # checked before the object is read
                    resource_version(request.query["resourceVersion"])
                return await get(self.writes, req, rendering(
                    request.headers.get("Accept", ""), req.rtype, is_list=False))
            case "list":
                return await list_objects(self.writes, req, request.query, rendering(
                    request.headers.get("Accept", ""), req.rtype, is_list=True),
                    sharded=self.settings.sharded_list_watch)
            case "watch":
                shown = rendering(request.headers.get("Accept", ""), req.rtype, is_list=False)
                return await serve_watch(self.storage, req, request, self._selection(
                    req, request.query), self.settings.bookmark_interval,
                    self.settings.watch_buffer,
                    metadata_version=shown.version if shown.form == "metadata" else None,
                    convert=self._watch_conversion(req))
            case "create" if req.subresource == "binding":
                bind(self.writes, req, await _body(request, req), self._manager(request))
                return json_response(_BOUND, 201)
            case "create":
                opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []),
                                          "CreateOptions")
                obj = await create(self.writes, req, await _body(request, req),
                                   self._manager(request), opts, user=who)
                return json_response(self._out(req, obj), 201, _warnings(opts.warnings))
            case "update":
                opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []),
                                          "UpdateOptions")
                obj = await update(self.writes, req, await _body(request, req),
                                   self._manager(request), opts, user=who)
                return json_response(self._out(req, obj), 200, _warnings(opts.warnings))
            case "patch":
                content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
                opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []),
                                          "PatchOptions", apply=is_apply(req, content_type))
                code, obj = await patch(self.writes, req, content_type, await request.read(),
                                        self._manager(request), opts, user=who)
                return json_response(self._out(req, obj), code, _warnings(opts.warnings))
            case "delete":
                options = DeleteOptions.parse(await request.read(), request.query,
                                              request.query.getall("dryRun", []),
                                              request.headers.get("Content-Type", ""))
                warnings: list[str] = []
                obj, gone = await delete(self.writes, req, options, user=who, warnings=warnings)
                return json_response(self._deleted(req, obj, gone), 200, _warnings(warnings))
            case _:  # deletecollection: its ListOptions are read before its body
                selection = self._selection(req, request.query)
                options = DeleteOptions.parse(await request.read(), request.query,
                                              request.query.getall("dryRun", []),
                                              request.headers.get("Content-Type", ""))
                warnings = []
                deleted = await delete_collection(self.writes, req, selection, options,
                                                  user=who, warnings=warnings)
                return json_response({
                    "kind": req.rtype.list_kind, "apiVersion": req.rtype.group_version,
                    "metadata": {"resourceVersion": str(self.storage.rv)},
                    "items": [list_item(self._out(req, o), req.rtype.builtin)
                              for o in deleted]}, 200, _warnings(warnings))

    async def _answer_request(self, request: web.Request, req: ResourceRequest, verb: str,
                              who: RequestUser) -> web.Response:
        """What is answered and never stored: a review, a binding, the component statuses,
        a ServiceAccount's TokenRequest."""
        plural = req.rtype.resource.plural
        if plural == "componentstatuses":
            if verb not in ("get", "list"):
                raise StatusError.method_not_allowed()
            answer = component_statuses(req.name)
            shown = rendering(request.headers.get("Accept", ""), req.rtype,
                              is_list=req.name is None)
            if shown.form != "table":
                return json_response(answer)
            return json_response(table(
                self.writes.strategy(req).table_convertor(req.rtype),
                answer["items"] if req.name is None else [answer], {}, self.storage.now()))
        if req.subresource is None and req.name is not None:
            raise StatusError.not_found_path()
        if verb != "create":
            raise StatusError.method_not_allowed()
        body = await _body(request, req)
        if req.subresource == "token":
            return json_response(request_token(self.writes, req, body, self._manager(request),
                                               self.settings.tokens), 201)
        if plural == "bindings":  # the collection: the Pod the binding names
            pods = self.registry.lookup("", "v1", "pods")
            assert pods is not None
            name = str((body.get("metadata") or {}).get("name") or "")
            bind(self.writes, ResourceRequest(pods, req.namespace, name, "binding"), body,
                 self._manager(request))
            return json_response(_BOUND, 201)
        opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []),
                                  "CreateOptions")
        answer = review(self.writes, req, body, who, self._manager(request), opts,
                        self.settings.tokens, uid_lookup(self.storage))
        return json_response(answer, 201, _warnings(opts.warnings))

    async def _scale(self, request: web.Request, req: ResourceRequest, verb: str,
                     who: RequestUser) -> web.Response:
        """``/scale``: GET, PUT and PATCH of the object's ``autoscaling/v1`` Scale."""
        if verb == "get":
            return json_response(get_scale(self.writes, req))
        kind = "PatchOptions" if verb == "patch" else "UpdateOptions"
        opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []), kind)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            scale = await patch_scale(self.writes, req, content_type, await request.read(),
                                      self._manager(request), opts, user=who)
        else:
            body = decode_body(request.headers.get("Content-Type", ""), await request.read(),
                               "Scale")
            scale = await update_scale(self.writes, req, body, self._manager(request), opts,
                                       user=who)
        return json_response(scale, 200, _warnings(opts.warnings))

    # -- helpers ------------------------------------------------------------------------

    def _out(self, req: ResourceRequest, obj: dict[str, Any]) -> dict[str, Any]:
        gv = req.rtype.group_version
        return obj if obj.get("apiVersion") == gv else dict(obj, apiVersion=gv)

    def _deleted(self, req: ResourceRequest, obj: dict[str, Any],
                 gone: bool) -> dict[str, Any]:
        """A DELETE's answer: the object, or a Success Status where kube-apiserver sends one.

        A kind whose strategy returns the deleted object (Pods, Services) answers with
        it; other kinds (custom resources too) answer a removal with ``status: Success``
        and the object's details.
        """
        r = req.rtype.resource
        if not gone or self.storage.strategies.of(req.rtype).return_deleted_object:
            return self._out(req, obj)
        details: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if r.group:
            details["group"] = r.group
        details["kind"] = r.plural
        details["uid"] = obj["metadata"]["uid"]
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def _selection(self, req: ResourceRequest, query: Mapping[str, str]
                   ) -> Callable[[Mapping[str, Any]], bool]:
        return selection(req, query, sharded=self.settings.sharded_list_watch)

    def _manager(self, request: web.Request) -> str:
        manager = request.query.get("fieldManager")
        if manager:
            return manager
        agent = request.headers.get("User-Agent", "")
        return agent.split("/", 1)[0] or "unknown"

    # -- watch --------------------------------------------------------------------------

    def _watch_conversion(self, req: ResourceRequest
                          ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None:
        """How a watch converts each stored object: None when rewriting apiVersion
        is all it takes (built-in kinds, CRDs converted with ``strategy: None``)."""
        if not self.converter.converts(req.rtype):
            return None
        return lambda obj: self.writes.shown(req, obj)


# -- request parsing helpers ---------------------------------------------------------


async def _body(request: web.Request, req: ResourceRequest) -> dict[str, Any]:
    """A create's or update's body, by its media type (:mod:`.request_body`)."""
    return decode_body(request.headers.get("Content-Type", ""), await request.read(),
                       req.rtype.resource.kind)
