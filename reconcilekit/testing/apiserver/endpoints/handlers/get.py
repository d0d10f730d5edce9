"""The ``get`` and ``list`` verbs (k8s.io/apiserver's ``handlers/get.go``), and the
selection a list, a watch and a deletecollection share.

A list is read from the store at a resourceVersion: now, an exact earlier one
(a snapshot of each resource's event history; 410 once compacted), or a
continue token's (:mod:`...storage.continue_tokens`); its objects are
converted to the request's version only once chosen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from ....._foundations.selectors import FieldSelector, LabelSelector, SelectorError
from ...machinery.request_info import ResourceRequest, int_param, resource_version
from ...machinery.status import Cause, StatusError
from ...storage.continue_tokens import decode_continue, encode_continue, start_key
from ...storage.shard_filter import shard_filter
from ..filters import json_response
from ..negotiation import OBJECT, Rendering, partial_object_metadata
from ..tables import table
from .write_path import WritePath

__all__ = ["check_list_options", "everything", "get", "list_item", "list_objects",
           "selection"]

_UNKNOWN_FIELD = re.compile(r'^"(.*)" is not a known field selector: ')


def everything(obj: Mapping[str, Any]) -> bool:
    """The selection of a request with no selector."""
    return True


async def get(path: WritePath, req: ResourceRequest, shown: Rendering = OBJECT) -> web.Response:
    """``get``: the object, in the request's version and rendering."""
    assert req.name is not None
    storage = path.storage
    obj = await path.shown(req, storage.get(req.rtype, req.namespace or "", req.name))
    if shown.form == "table":
        return json_response(table(path.strategy(req).table_convertor(req.rtype), [obj], {
            "resourceVersion": obj["metadata"]["resourceVersion"]}, storage.now()))
    if shown.form == "metadata":
        return json_response(partial_object_metadata(obj, shown.version))
    return json_response(obj)


def selection(req: ResourceRequest, query: Mapping[str, str], *, sharded: bool
              ) -> Callable[[Mapping[str, Any]], bool]:
    """What a list, watch or deletecollection selects: its label, field and shard
    selectors (:func:`everything` when it has none); 400 for a bad selector."""
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
    shards = shard_filter(query, sharded)
    if labels.is_empty and fields.is_empty and shards is None:
        return everything
    return lambda obj: labels.matches((obj.get("metadata") or {}).get("labels")) and (
        fields.matches(obj)) and (shards is None or shards.matches(obj))


async def list_objects(path: WritePath, req: ResourceRequest, query: Mapping[str, str],
                       shown: Rendering = OBJECT, *, sharded: bool) -> web.Response:
    """``list``: the selected objects at a resourceVersion (now, an exact one, or a
    continue token's), a page at a time when ``limit`` is given, as the etcd3 store
    pages them (a full page continues when any object follows it)."""
    storage = path.storage
    matches = selection(req, query, sharded=sharded)
    limit = int_param(query, "limit", 0)
    int_param(query, "timeoutSeconds", 0)  # parsed (and refused if bad) as for a watch
    token = query.get("continue")
    rv_param = query.get("resourceVersion", "")
    check_list_options(rv_param, query.get("resourceVersionMatch", ""), token)
    start = ""
    if token:
        if rv_param:
            raise StatusError.bad_request(
                "specifying resource version is not allowed when using continue")
        list_rv, start = decode_continue(token)
        objects = storage.snapshot(req.rtype, list_rv)
    elif rv_param and rv_param != "0":
        wanted = resource_version(rv_param)
        match = query.get("resourceVersionMatch", "")
        # Exact, or the legacy form (a limit and no match): etcd lists at that revision
        if match == "Exact" or (not match and limit > 0):
            if wanted > storage.rv:  # etcd's own error, passed on
                raise StatusError(500, "", "etcdserver: mvcc: required revision is a "
                                  "future revision")
            list_rv = wanted
            objects = storage.snapshot(
                req.rtype, wanted, expired="The resourceVersion for the provided list is "
                "too old.")
        elif wanted > storage.rv:  # the watch cache says when to retry, etcd not
            raise StatusError(504, "Timeout", f"Timeout: Too large resource version: {wanted}, "
                              f"current: {storage.rv}", {"causes": [{
                               "reason": "ResourceVersionTooLarge",
                               "message": "Too large resource version"}],
                               **({} if limit > 0 else {"retryAfterSeconds": 1})})
        else:
            list_rv, objects = storage.rv, storage.table(req.rtype).objects
    else:
        if rv_param == "0":  # served by the watch cache, which ignores the limit
            limit = 0
        list_rv, objects = storage.rv, storage.table(req.rtype).objects
    ns = req.namespace
    keys = sorted(k for k in objects if (ns is None or k[0] == ns) and k > start_key(start))
    # The etcd3 store's GetList: a full page continues when any object follows it;
    # the count of the rest is given only for an unfiltered list (etcd's count would
    # include what a selector leaves out).
    filtered = matches is not everything
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
    selected = [await path.shown(req, obj) for obj in selected]
    builtin = req.rtype.builtin
    items = [list_item(o, builtin) for o in selected]
    meta: dict[str, Any] = {"resourceVersion": str(list_rv)}
    if next_key is not None:
        meta["continue"] = encode_continue(list_rv, next_key)
        if not filtered:
            meta["remainingItemCount"] = remaining
    if (shards := shard_filter(query, sharded)) is not None:
        shards.mark_list(meta)
    if shown.form == "table":
        return json_response(table(path.strategy(req).table_convertor(req.rtype), selected,
                                   meta, storage.now()))
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


def check_list_options(rv: str, match: str, token: str | None) -> None:
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


def list_item(obj: dict[str, Any], builtin: bool) -> dict[str, Any]:
    """List items of built-in kinds carry no kind/apiVersion, as kube-apiserver sends them."""
    if not builtin:
        return obj
    return {k: v for k, v in obj.items() if k not in ("kind", "apiVersion")}
