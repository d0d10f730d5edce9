"""Serving one watch request: the initial events, history replay, live events, bookmarks.

The stream is kube-apiserver's: HTTP 200, chunked, one JSON event per line.
A resourceVersion older than the history answers with a single ERROR event
carrying a 410 Expired Status, inside the 200 stream, as the watch cache does.

BOOKMARKs follow kube-apiserver 1.28's watch cache (as measured against it):
to a watch that allows them, every ``bookmark_interval`` (a minute) and 2 s
before its timeout, carrying the resourceVersion of the resource's last
event, and only when that event is newer than the watch's starting point and
than every event replayed to it from history when it opened (whether the
watch's filter showed them or not). So a resource with no event since the
server started gets no bookmark at all, however long the watch, nor does a
watch that saw no event of its resource after it opened; nor a watch with no
resourceVersion (kube-apiserver serves it from etcd).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import orjson
from aiohttp import web

from ...machinery.request_info import ResourceRequest, int_param, resource_version
from ...machinery.status import StatusError
from ...registry.generic_store import Storage
from ...storage.watch_cache import CacheWatcher, encode_event
from ..negotiation import partial_object_metadata

__all__ = ["serve_watch"]

log = logging.getLogger("reconcilekit.testing.apiserver")
Convert = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]

_JSON = "application/json"


async def serve_watch(storage: Storage, req: ResourceRequest, request: web.Request,
                      matches: Callable[[Mapping[str, Any]], bool], bookmark_interval: float,
                      buffer: int, *, metadata_version: str | None = None,
                      convert: Convert | None = None) -> web.StreamResponse:
    """Stream watch events for ``req`` until the timeout, a close, or the client leaves.

    With ``metadata_version`` every object (bookmarks too) is sent as a
    ``PartialObjectMetadata`` of ``meta.k8s.io/<metadata_version>``. Objects
    stored at another version of a custom resource are sent with the
    request's ``apiVersion``, or converted by ``convert`` (a conversion
    webhook). A conversion that fails ends the watch before that event (the
    client watches again from the last resourceVersion it saw, and gets the
    event once the webhook converts it): kube-apiserver's watch cache too
    delivers nothing while it cannot convert.
    """
    query = request.query
    timeout = int_param(query, "timeoutSeconds", 0) or random.uniform(1800, 3600)
    rv_param = query.get("resourceVersion", "")
    initial = query.get("sendInitialEvents", "") in ("true", "1")
    bookmarks = query.get("allowWatchBookmarks", "") in ("true", "1")
    rewrite = None
    if metadata_version is not None:
        version = metadata_version
        convert = None

        def rewrite(obj: dict[str, Any]) -> bytes | None:
            return orjson.dumps(partial_object_metadata(obj, version))
    elif convert is None and req.rtype.crd_name is not None:
        gv = req.rtype.group_version

        def rewrite(obj: dict[str, Any]) -> bytes | None:
            return None if obj.get("apiVersion") == gv else orjson.dumps(
                dict(obj, apiVersion=gv))
    watcher = CacheWatcher(namespace=req.namespace, matches=matches, start_rv=0,
                           rewrite=rewrite, limit=buffer,
                           bookmark_line=(_bookmark_encoder(req, metadata_version)
                                          if bookmarks else None))
    response = web.StreamResponse(status=200, headers={"Content-Type": _JSON,
                                                       "Cache-Control": "no-cache, private"})
    response.enable_chunked_encoding()
    error = _open_watch(storage, req, watcher, rv_param, initial)
    table = storage.table(req.rtype)
    if error is not None:
        await response.prepare(request)
        await response.write(encode_event("ERROR", orjson.dumps(error.body())))
        await response.write_eof()
        return response
    table.watchers.add(watcher)  # before answering: no event may slip past meanwhile
    try:
        await response.prepare(request)
    except ConnectionResetError:  # the client left before the answer began
        table.watchers.discard(watcher)
        return response
    except BaseException:
        table.watchers.discard(watcher)
        raise
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    periodic = bookmarks and (bool(rv_param) or initial)  # etcd-served watches get none
    bookmark_at = _next_bookmark(loop.time(), deadline, bookmark_interval, periodic)
    complete = True  # False once an event could not be converted: nothing more is sent
    try:
        while not watcher.closed:
            now = loop.time()
            if now >= deadline:
                break
            await watcher.wait(max(0.0, min(deadline, bookmark_at) - now))
            if watcher.lines:
                lines = list(watcher.lines)
                watcher.lines.clear()
                if convert is not None:
                    lines, complete = await _converted(lines, req.rtype.group_version, convert)
                await response.write(b"".join(lines))
                if not complete:
                    break
            if loop.time() >= bookmark_at:
                assert watcher.bookmark_line is not None
                if table.last_event_rv > watcher.bookmark_floor:
                    await response.write(watcher.bookmark_line(table.last_event_rv))
                bookmark_at = _next_bookmark(loop.time(), deadline, bookmark_interval, periodic)
        if watcher.lines and not watcher.overflowed and complete:
            lines = list(watcher.lines)
            if convert is not None:
                lines, _ = await _converted(lines, req.rtype.group_version, convert)
            await response.write(b"".join(lines))
        await response.write_eof()
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        table.watchers.discard(watcher)
        watcher.close()
    return response

async def _converted(lines: list[bytes], api_version: str,
                     convert: Convert) -> tuple[list[bytes], bool]:
    """The lines with each object converted to ``api_version``; stops at the first that
    fails (False), which it logs."""
    out: list[bytes] = []
    for line in lines:
        event = orjson.loads(line)
        obj = event.get("object")
        if event.get("type") in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict) and (
                obj.get("apiVersion") != api_version):
            try:
                line = encode_event(event["type"], orjson.dumps(await convert(obj)))
            except StatusError as err:
                log.warning("watch ended: %s", err.message)
                return out, False
        out.append(line)
    return out, True


def _next_bookmark(now: float, deadline: float, interval: float, enabled: bool) -> float:
    """When the watch cache next offers a BOOKMARK: a minute on, or 2 s before the end."""
    if not enabled:
        return math.inf
    at = min(now + interval, deadline - 2.0)
    return at if at > now else math.inf


def _open_watch(storage: Storage, req: ResourceRequest, watcher: CacheWatcher, rv_param: str,
                initial: bool) -> StatusError | None:
    """Queue what precedes live events; an StatusError means the watch is too old."""
    table = storage.table(req.rtype)
    if not rv_param or rv_param == "0" or initial:
        watcher.start_at(storage.rv, (table.objects[key] for key in sorted(table.objects)))
        if initial and watcher.bookmark_line is not None:
            watcher.push(watcher.bookmark_line(storage.rv, initial_events_end=True))
        return None
    rv = resource_version(rv_param)
    if rv < table.oldest_rv:
        oldest = table.history[0].rv if table.history else storage.rv + 1
        return StatusError.expired(f"too old resource version: {rv} ({oldest})")
    watcher.resume_at(rv, table.history, storage.bookmark_rv())
    return None

def _bookmark_encoder(req: ResourceRequest,
                      metadata_version: str | None) -> Callable[..., bytes]:
    r = req.rtype
    kind, gv = r.resource.kind, r.group_version
    if metadata_version is not None:
        kind, gv = "PartialObjectMetadata", f"meta.k8s.io/{metadata_version}"

    def encode(rv: int, initial_events_end: bool = False) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if r.builtin:
            meta["creationTimestamp"] = None
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        return encode_event("BOOKMARK", orjson.dumps(
            {"kind": kind, "apiVersion": gv, "metadata": meta}))

    return encode
