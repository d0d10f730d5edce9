"""The HTTP face of the test API server: the filter chain, then the verbs' handlers.

Every request goes through :data:`FILTERS` in order (:mod:`.filters`), then
to the handler of its verb. Every failure is answered with a ``kind: Status``
body and kube-apiserver's code; an unexpected exception becomes a 500
InternalError Status (and is logged), never a traceback or a dropped connection.
"""

from __future__ import annotations

import base64
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web
from multidict import CIMultiDict

from ...._foundations.go_compat import go_quote
from ...._foundations.selectors import FieldSelector, LabelSelector, SelectorError
from ..admission.chain import Admission
from ..apiextensions.version_conversion import Converter
from ..controllers.builtin_controllers import Lifecycle
from ..machinery.decoding import go_base64_decode
from ..machinery.request_info import (
    ResourceRequest,
    int_param,
    resource_version,
)
from ..machinery.request_user import RequestUser
from ..machinery.resources import Registry
from ..machinery.status import Cause, DecodeError, StatusError
from ..registry.generic_store import Storage
from ..storage.shard_filter import shard_filter
from ..webhook_client.https_client import WebhookClient
from . import self_subject_review as self_subject_review
from .faults import Faults
from .filters import (
    Filter,
    Next,
    Scope,
    ServerContext,
    ServerSettings,
    answer_errors,
    authenticate,
    compress,
    inject_faults,
    json_response,
    resolve_resource,
    serve_discovery,
    serve_open_paths,
    serve_openapi_v2,
    serve_self_subject_review,
    warn_deprecated,
)
from .handlers.create import create
from .handlers.delete import delete, delete_collection
from .handlers.patch import patch
from .handlers.scale import get_scale, patch_scale, update_scale
from .handlers.update import bind, update
from .handlers.watch import serve_watch
from .handlers.write_options import DeleteOptions, WriteOptions
from .handlers.write_path import WritePath
from .negotiation import OBJECT, Rendering, partial_object_metadata, rendering
from .request_body import decode_body
from .tables import table

__all__ = ["FILTERS", "Handler"]

# The way in of every request, outermost first (k8s.io/apiserver's DefaultBuildHandlerChain):
# each filter answers the request or passes it on; what passes them all is dispatched to
# the handler of its verb (Handler.dispatch).
FILTERS: tuple[Filter, ...] = (
    answer_errors,  # a StatusError or an unexpected exception -> its Status body
    compress,  # gzip a large answer
    authenticate,  # bearer token -> user; no header: anonymous
    serve_open_paths,  # /version, /healthz, /livez, /readyz
    serve_openapi_v2,
    serve_self_subject_review,
    serve_discovery,  # discovery and OpenAPI v3; refuses other non-resource paths
    resolve_resource,  # the resource and verb (counted); refuses anonymous users
    warn_deprecated,  # a deprecated custom resource version's warning
    inject_faults,  # the latency and failures a test asked for
)


def _everything(obj: Mapping[str, Any]) -> bool:
    """The filter of a request with no selector."""
    return True


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
        self.writes = WritePath(storage, lifecycle, Admission(storage, registry, client,
                                                              self.converter), self.converter)
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
        if req.subresource == "scale":
            return await self._scale(request, req, verb, who)
        match verb:
            case "get":
                if request.query.get("resourceVersion"):  # checked before the object is read
                    resource_version(request.query["resourceVersion"])
                return await self._get(req, rendering(request.headers.get("Accept", ""),
                                                      req.rtype, is_list=False))
            case "list":
                return await self._list(req, request.query, rendering(
                    request.headers.get("Accept", ""), req.rtype, is_list=True))
            case "watch":
                shown = rendering(request.headers.get("Accept", ""), req.rtype, is_list=False)
                return await serve_watch(self.storage, req, request, self._filter(
                    req, request.query), self.settings.bookmark_interval,
                    self.settings.watch_buffer,
                    metadata_version=shown.version if shown.form == "metadata" else None,
                    convert=self._watch_conversion(req))
            case "create" if req.subresource == "binding":
                bind(self.writes, req, await _body(request, req), self._manager(request))
                return json_response({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                      "status": "Success", "code": 201}, 201)
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
                opts = WriteOptions.parse(request.query, request.query.getall("dryRun", []),
                                          "PatchOptions")
                content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
                code, obj = await patch(self.writes, req, content_type, await request.read(),
                                        self._manager(request),
                                        bool(request.query.get("fieldManager")),
                                        opts, user=who)
                return json_response(self._out(req, obj), code, _warnings(opts.warnings))
            case "delete":
                options = DeleteOptions.parse(await request.read(), request.query,
                                              request.query.getall("dryRun", []))
                warnings: list[str] = []
                obj, gone = await delete(self.writes, req, options, user=who, warnings=warnings)
                return json_response(self._deleted(req, obj, gone), 200, _warnings(warnings))
            case _:
                options = DeleteOptions.parse(await request.read(), request.query,
                                              request.query.getall("dryRun", []))
                warnings = []
                deleted = await delete_collection(
                    self.writes, req, self._filter(req, request.query), options, user=who,
                    warnings=warnings)
                return json_response({
                    "kind": req.rtype.list_kind, "apiVersion": req.rtype.group_version,
                    "metadata": {"resourceVersion": str(self.storage.rv)},
                    "items": [_list_item(self._out(req, o), req.rtype.builtin)
                              for o in deleted]}, 200, _warnings(warnings))

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

    def _namespace(self, req: ResourceRequest) -> str:
        return req.namespace or ""

    def _deleted(self, req: ResourceRequest, obj: dict[str, Any],
                 gone: bool) -> dict[str, Any]:
        """A DELETE's answer: the object, or a Success Status where kube-apiserver sends one.

        Pods and Services answer with the object; other kinds (custom resources too)
        answer a removal with ``status: Success`` and the object's details.
        """
        r = req.rtype.resource
        if not gone or (req.rtype.builtin and r.group == "" and r.plural in ("pods",
                                                                             "services")):
            return self._out(req, obj)
        details: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if r.group:
            details["group"] = r.group
        details["kind"] = r.plural
        details["uid"] = obj["metadata"]["uid"]
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details}

    def _manager(self, request: web.Request) -> str:
        manager = request.query.get("fieldManager")
        if manager:
            return manager
        agent = request.headers.get("User-Agent", "")
        return agent.split("/", 1)[0] or "unknown"

    # -- reads --------------------------------------------------------------------------

    def _watch_conversion(self, req: ResourceRequest
                          ) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]] | None:
        """How a watch converts each stored object: None when rewriting apiVersion
        is all it takes (built-in kinds, CRDs converted with ``strategy: None``)."""
        if not self.converter.converts(req.rtype):
            return None
        return lambda obj: self.writes.shown(req, obj)

    async def _get(self, req: ResourceRequest, shown: Rendering = OBJECT) -> web.Response:
        assert req.name is not None
        obj = await self.writes.shown(req, self.storage.get(req.rtype, self._namespace(req),
                                                            req.name))
        if shown.form == "table":
            return json_response(table(req.rtype, [obj], {
                "resourceVersion": obj["metadata"]["resourceVersion"]}, self.storage.now()))
        if shown.form == "metadata":
            return json_response(partial_object_metadata(obj, shown.version))
        return json_response(obj)

    def _filter(self, req: ResourceRequest,
                query: Mapping[str, str]) -> Callable[[Mapping[str, Any]], bool]:
        try:
            labels = LabelSelector.parse(query.get("labelSelector", ""))
            fields = FieldSelector.parse(query.get("fieldSelector", ""))
            fields.validate(req.rtype.field_labels)
        except SelectorError as err:
            unknown = _UNKNOWN_FIELD.match(str(err))
            if unknown and not req.rtype.builtin:  # a custom resource's field label converter
                raise StatusError.bad_request(
                    f"field label not supported: {unknown.group(1)}") from None
            raise StatusError.bad_request(str(err)) from None
        shards = shard_filter(query, self.settings.sharded_list_watch)
        if labels.is_empty and fields.is_empty and shards is None:
            return _everything
        return lambda obj: labels.matches((obj.get("metadata") or {}).get("labels")) and (
            fields.matches(obj)) and (shards is None or shards.matches(obj))

    async def _list(self, req: ResourceRequest, query: Mapping[str, str],
                    shown: Rendering = OBJECT) -> web.Response:
        matches = self._filter(req, query)
        limit = int_param(query, "limit", 0)
        int_param(query, "timeoutSeconds", 0)  # parsed (and refused if bad) as for a watch
        token = query.get("continue")
        rv_param = query.get("resourceVersion", "")
        _check_list_options(rv_param, query.get("resourceVersionMatch", ""), token)
        start = ""
        if token:
            if rv_param:
                raise StatusError.bad_request(
                    "specifying resource version is not allowed when using continue")
            list_rv, start = _decode_continue(token)
            objects = self.storage.snapshot(req.rtype, list_rv)
        elif rv_param and rv_param != "0":
            wanted = resource_version(rv_param)
            match = query.get("resourceVersionMatch", "")
            # Exact, or the legacy form (a limit and no match): etcd lists at that revision
            if match == "Exact" or (not match and limit > 0):
                if wanted > self.storage.rv:  # etcd's own error, passed on
                    raise StatusError(500, "", "etcdserver: mvcc: required revision is a "
                                      "future revision")
                list_rv = wanted
                objects = self.storage.snapshot(
                    req.rtype, wanted, expired="The resourceVersion for the provided list is "
                    "too old.")
            elif wanted > self.storage.rv:  # the watch cache says when to retry, etcd not
                raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {wanted}, "
                                  f"current: {self.storage.rv}", {"causes": [{
                                   "reason": "ResourceVersionTooLarge",
                                   "message": "Too large resource version"}],
                                   **({} if limit > 0 else {"retryAfterSeconds": 1})})
            else:
                list_rv, objects = self.storage.rv, self.storage.table(req.rtype).objects
        else:
            if rv_param == "0":  # served by the watch cache, which ignores the limit
                limit = 0
            list_rv, objects = self.storage.rv, self.storage.table(req.rtype).objects
        ns = req.namespace
        keys = sorted(k for k in objects if (ns is None or k[0] == ns) and k > _split(start))
        # The etcd3 store's GetList: a full page continues when any object follows it;
        # the count of the rest is given only for an unfiltered list (etcd's count would
        # include what a selector leaves out).
        filtered = matches is not _everything
        selected: list[dict[str, Any]] = []
        remaining = 0
        last_key: tuple[str, str] | None = None
        for key in keys:
            obj = objects[key]
            if limit and len(selected) >= limit:
                remaining += 1
                if filtered:
                    break
                continue
            if matches(obj):
                selected.append(obj)
                last_key = key
        next_key = last_key if remaining else None
        # converted once chosen: a conversion webhook is awaited, and writes go on meanwhile
        selected = [await self.writes.shown(req, obj) for obj in selected]
        builtin = req.rtype.builtin
        items = [_list_item(o, builtin) for o in selected]
        meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
        if next_key is not None:
            meta["continue"] = _encode_continue(list_rv, next_key)
            if not filtered:
                meta["remainingItemCount"] = remaining
        if (shards := shard_filter(query, self.settings.sharded_list_watch)) is not None:
            shards.mark_list(meta)
        if shown.form == "table":
            return json_response(table(req.rtype, selected, meta, self.storage.now()))
        if shown.form == "metadata":
            return json_response({
                "kind": "PartialObjectMetadataList", "apiVersion": f"meta.k8s.io/{shown.version}",
                "metadata": meta,
                "items": [partial_object_metadata(o, shown.version) for o in selected]})
        if not builtin:  # an unstructured list: an empty continue kept, keys sorted
            meta = dict(sorted({"continue": "", **meta}.items()))
        return json_response({"kind": req.rtype.list_kind,
                              "apiVersion": req.rtype.group_version,
                              "metadata": meta, "items": items})


# -- request parsing helpers ---------------------------------------------------------


async def _body(request: web.Request, req: ResourceRequest) -> dict[str, Any]:
    """A create's or update's body, by its media type (:mod:`.request_body`)."""
    return decode_body(request.headers.get("Content-Type", ""), await request.read(),
                       req.rtype.resource.kind)


_UNKNOWN_FIELD = re.compile(r'^"(.*)" is not a known field selector: ')


def _check_list_options(rv: str, match: str, token: str | None) -> None:
    """``ValidateListOptions`` for a list (422 on ListOptions)."""
    if not match:
        return
    causes = []
    if not rv:
        causes.append(Cause("FieldValueForbidden", "Forbidden: resourceVersionMatch is "
                            "forbidden unless resourceVersion is provided",
                            "resourceVersionMatch"))
    if token:
        causes.append(Cause("FieldValueForbidden", "Forbidden: resourceVersionMatch is "
                            "forbidden when continue is provided", "resourceVersionMatch"))
    if match not in ("Exact", "NotOlderThan"):
        causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{match}": supported '
                            'values: "Exact", "NotOlderThan", ""', "resourceVersionMatch"))
    if match == "Exact" and rv == "0":
        causes.append(Cause("FieldValueForbidden", 'Forbidden: resourceVersionMatch "exact" is '
                            'forbidden for resourceVersion "0"', "resourceVersionMatch"))
    if causes:
        raise StatusError.invalid_options("ListOptions", causes)


def _encode_continue(rv: int, key: tuple[str, str]) -> str:
    """A continue token as kube-apiserver writes one: unpadded URL-safe base64 of JSON."""
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": f"{key[0]}/{key[1]}"})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, str]:
    """The (resourceVersion, start key) of a continue token, with storage's errors (400)."""
    invalid = "invalid continue token: continue key is not valid"
    try:
        data = orjson.loads(go_base64_decode(token, raw_url=True))
    except (DecodeError, orjson.JSONDecodeError) as err:
        raise StatusError.bad_request(f"{invalid}: {err}") from None
    if not isinstance(data, dict) or data.get("v") != "meta.k8s.io/v1":
        version = data.get("v") if isinstance(data, dict) else None
        raise StatusError.bad_request(f"{invalid}: server does not recognize this encoded "
                                      f"version {version or ''}".rstrip())
    rv, start = data.get("rv"), data.get("start")
    if not isinstance(rv, int) or rv <= 0:
        raise StatusError.bad_request(f"{invalid}: incorrect encoded start resourceVersion "
                                      "(version meta.k8s.io/v1)")
    if not isinstance(start, str) or not start:
        raise StatusError.bad_request(f"{invalid}: encoded start key empty (version "
                                      "meta.k8s.io/v1)")
    return rv, start


def _split(start: str) -> tuple[str, str]:
    """The (namespace, name) after which a continued list resumes."""
    if not start:
        return ("", "")
    ns, _, name = start.partition("/")
    return (ns, name)


def _list_item(obj: dict[str, Any], builtin: bool) -> dict[str, Any]:
    """List items of built-in kinds carry no kind/apiVersion, as kube-apiserver sends them."""
    if not builtin:
        return obj
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
