"""Generated bad input for the client, the watcher and the informer: spoiled list and watch bodies.

A small HTTP server in the test (:class:`Spoiler`) stands in front of the API
server (in-process or kube-apiserver) and answers the client's lists and
watches with what the API server said, except for the answers it is told to
spoil: truncated, not JSON, fields of the wrong type, objects without a
name, unknown event types, objects nested deeper than the cache can hold,
huge (valid) objects.

What must hold:
  * a list call returns a List or raises an :class:`APIError` naming what
    was wrong (never a KeyError, TypeError or orjson's error);
  * an informer fed spoiled answers never loses an object: once they stop,
    its store equals the server's list, and its watcher is watching again;
  * no failure logs a traceback or anything above WARNING, and each takes at
    most one line.
"""

from __future__ import annotations

import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import orjson
import pytest
from aiohttp import web
from fuzz_support import Deep, LogWindow, assert_quiet_failure, dumps, explore
from hypothesis import strategies as st
from kubernetes_asyncio.client import Configuration

from reconcilekit import APIError, Client
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.lowlevel import Backoff, Informer
from reconcilekit.testing import Cluster, eventually

LABEL = "fuzz.reconcilekit.dev/run"


@dataclass(frozen=True)
class Spoil:
    """One way to spoil an answer: ``what`` names it, ``at`` picks the item or offset."""

    what: str
    at: int = 0

    def list_body(self, answer: dict[str, Any]) -> bytes:
        items = answer.get("items") or []
        item = items[self.at % len(items)] if items else {"metadata": {}}
        raw = orjson.dumps(answer)
        match self.what:
            case "truncate":
                return raw[:self.at % max(1, len(raw))]
            case "not-json":
                return b"<html><body>502 Bad Gateway</body></html>"
            case "empty":
                return b""
            case "json-array":
                return b"[1, 2, 3]"
            case "status-not-list":
                return orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Success"})
            case "items-not-list":
                answer["items"] = [{"x": 1}, "x", 5][self.at % 3]
            case "item-not-object":
                items[self.at % len(items)] = [5, "x", None, []][self.at % 4]
            case "metadata-not-object":
                item["metadata"] = ["x", [], 5][self.at % 3]
            case "no-name":
                item["metadata"]["name"] = [None, 5, "", {}][self.at % 4]
            case "namespace-not-string":
                item["metadata"]["namespace"] = [5, {}, ["a"]][self.at % 3]
            case "rv-not-string":
                item["metadata"]["resourceVersion"] = [5, {}, []][self.at % 3]
            case "list-rv-not-string":
                answer.setdefault("metadata", {})["resourceVersion"] = [7, {}, []][self.at % 3]
            case "list-metadata-not-object":
                answer["metadata"] = ["x", 5, []][self.at % 3]
            case "continue-not-string":
                answer.setdefault("metadata", {})["continue"] = [5, {}, ["a"]][self.at % 3]
            case "deep":
                item["data"] = Deep(300 + self.at % 700)
            case "huge":  # valid: an annotation of 2 MB
                item["metadata"].setdefault("annotations", {})["big"] = "x" * 2_000_000
        return dumps(answer)

    def watch_line(self) -> bytes:
        meta: Any = {"name": "spoiled", "namespace": "x", "resourceVersion": "1"}
        match self.what:
            case "garbage":
                return b"this is not json\n"
            case "truncate":
                return b'{"type":"ADDED","object":{"metadata":{"name":'  # then the end
            case "json-array":
                return b"[1, 2]\n"
            case "unknown-type":
                return orjson.dumps({"type": "SNAPSHOT", "object": {"metadata": meta}}) + b"\n"
            case "type-not-string":
                return orjson.dumps({"type": 5, "object": {"metadata": meta}}) + b"\n"
            case "object-not-object":
                return orjson.dumps({"type": "ADDED", "object": "x"}) + b"\n"
            case "metadata-not-object":
                return orjson.dumps({"type": "MODIFIED", "object": {"metadata": "x"}}) + b"\n"
            case "no-name":
                return orjson.dumps({"type": "ADDED", "object": {"metadata": {
                    "namespace": "x", "resourceVersion": "1"}}}) + b"\n"
            case "rv-not-string":
                return orjson.dumps({"type": "DELETED", "object": {"metadata": {
                    "name": "spoiled", "resourceVersion": {"a": 1}}}}) + b"\n"
            case "bookmark-metadata-not-object":
                return orjson.dumps({"type": "BOOKMARK", "object": {"metadata": 5}}) + b"\n"
            case "error-junk":
                return orjson.dumps({"type": "ERROR", "object": {"code": "x", "reason": 5}}) + b"\n"
            case "deep":
                return dumps({"type": "ADDED", "object": {"metadata": meta,
                                                           "data": Deep(300 + self.at % 700)}}
                             ) + b"\n"
        raise AssertionError(self.what)


LIST_SPOILS = st.builds(Spoil, st.sampled_from([
    "truncate", "not-json", "empty", "json-array", "status-not-list", "items-not-list",
    "item-not-object", "metadata-not-object", "no-name", "namespace-not-string",
    "rv-not-string", "list-rv-not-string", "list-metadata-not-object", "continue-not-string",
    "deep", "huge"]), st.integers(0, 10_000))
WATCH_SPOILS = st.builds(Spoil, st.sampled_from([
    "garbage", "truncate", "json-array", "unknown-type", "type-not-string", "object-not-object",
    "metadata-not-object", "no-name", "rv-not-string", "bookmark-metadata-not-object",
    "error-junk", "deep"]), st.integers(0, 10_000))


class Spoiler:
    """Plain HTTP in front of ``upstream``: GETs are passed on, and the next answers spoiled.

    ``lists`` and ``watches`` hold the spoils for the next list answers and
    the next watches (a spoiled watch starts with the bad line; a truncated
    one ends there). Only GET is served: the tests write through the API
    server directly.
    """

    def __init__(self, upstream: Client) -> None:
        self.upstream = upstream
        self.lists: deque[Spoil] = deque()
        self.watches: deque[Spoil] = deque()
        self.url = ""

    @property
    def pending(self) -> int:
        return len(self.lists) + len(self.watches)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        params = dict(request.query)
        if params.get("watch") in ("true", "1"):
            return await self._watch(request, params)
        try:
            answer = await self.upstream.request("GET", request.path, params=params)
        except APIError as err:
            return web.Response(status=err.status, body=orjson.dumps(err.body),
                                content_type="application/json")
        body = self.lists.popleft().list_body(answer) if self.lists else orjson.dumps(answer)
        return web.Response(body=body, content_type="application/json")

    async def _watch(self, request: web.Request, params: dict[str, str]) -> web.StreamResponse:
        response = web.StreamResponse()
        response.content_type = "application/json"
        spoil = self.watches.popleft() if self.watches else None
        try:
            upstream = await self.upstream.open_stream(request.path, params)
        except APIError as err:
            return web.Response(status=err.status, body=orjson.dumps(err.body),
                                content_type="application/json")
        try:
            await response.prepare(request)
            if spoil is not None:
                await response.write(spoil.watch_line())
                if spoil.what == "truncate":
                    return response
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
        except (ConnectionError, OSError):
            pass  # the client went away (it may: the line it read was bad)
        finally:
            upstream.release()
        return response


@asynccontextmanager
async def spoiler(apiserver: Cluster) -> AsyncIterator[tuple[Spoiler, Client, Client]]:
    """The spoiler, a client of the API server, and a client that reads through the spoiler."""
    async with Client(apiserver.configuration) as upstream:
        spoiling = Spoiler(upstream)
        app = web.Application()
        app.router.add_get("/{tail:.*}", spoiling.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        try:
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            spoiling.url = f"http://127.0.0.1:{port}"
            async with Client(Configuration(host=spoiling.url)) as client:
                yield spoiling, upstream, client
        finally:
            await runner.cleanup()


def configmap(name: str, run: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": {LABEL: run}}, "data": data}


async def test_a_spoiled_list_answer_is_a_clear_error(apiserver: Cluster) -> None:
    run = uuid.uuid4().hex[:8]
    ns = apiserver.namespace
    async with spoiler(apiserver) as (spoiling, upstream, client):
        for i in range(3):
            await upstream.create(CONFIG_MAPS, configmap(f"fuzz-list-{i}", run, i=str(i)), ns)
        selector = f"{LABEL}={run}"

        async def check(spoil: Spoil) -> None:
            calls: list[Callable[[], Any]] = [
                lambda: client.list(CONFIG_MAPS, ns, label_selector=selector),
                lambda: client.list_all(CONFIG_MAPS, ns, label_selector=selector, limit=2)]
            for call in calls:
                spoiling.lists.clear()
                spoiling.lists.append(spoil)
                try:
                    listed = await call()
                except APIError as err:
                    assert spoil.what != "huge", err
                    assert err.reason == "InvalidResponse" or err.status >= 400, err
                    assert str(err) and len(str(err)) < 600, str(err)[:800]
                    continue
                names = {o["metadata"]["name"] for o in listed["items"]}
                assert all(isinstance(o, dict) for o in listed["items"]), spoil
                assert names <= {f"fuzz-list-{i}" for i in range(3)}, spoil

        await explore(LIST_SPOILS, check, max_examples=60)


async def test_an_informer_fed_spoiled_answers_converges_and_keeps_watching(
        apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    run = uuid.uuid4().hex[:8]
    ns = apiserver.namespace
    selector = f"{LABEL}={run}"
    async with spoiler(apiserver) as (spoiling, upstream, client):
        await upstream.create(CONFIG_MAPS, configmap("fuzz-big", run, blob="y" * 1_000_000), ns)
        informer = Informer(client, CONFIG_MAPS, namespace=ns, label_selector=selector,
                            backoff=Backoff(initial=0.01, cap=0.05, jitter=0.5))
        logs = LogWindow(caplog)
        counter = iter(range(1_000_000))

        async def truth() -> dict[str, str]:
            listed = await upstream.list(CONFIG_MAPS, ns, label_selector=selector)
            return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                    for o in listed["items"]}

        def cached() -> dict[str, str]:
            """The store's objects of this run: a well-formed event the spoiler makes up
            (the deep one) is stored as sent, but it is not the server's and has no label."""
            return {o["metadata"]["name"]: o["metadata"]["resourceVersion"]
                    for o in informer.store.list()
                    if (o["metadata"].get("labels") or {}).get(LABEL) == run}

        async def write() -> None:
            """Create one object and change or delete another, so there are events."""
            await upstream.create(CONFIG_MAPS, configmap(f"fuzz-{next(counter)}", run), ns)
            names = sorted(n for n in await truth() if n != "fuzz-big")
            if len(names) > 4:
                await upstream.delete(CONFIG_MAPS, names[0], ns)
            if names:
                await upstream.patch(CONFIG_MAPS, names[-1], {"data": {"n": str(next(counter))}},
                                     ns)

        async def check(spoils: tuple[list[Spoil], list[Spoil]]) -> None:
            lists, watches = spoils
            spoiling.lists.clear()  # what a failed example before this one left
            spoiling.watches.clear()
            logs.take()
            plan = [(None, None), *((s, spoiling.lists) for s in lists),
                    *((s, spoiling.watches) for s in watches)]
            for spoil, queue in plan:  # each for the next list or watch, which a relist opens
                if spoil is not None and queue is not None:
                    queue.append(spoil)
                await write()
                informer.watcher.request_relist()
                await eventually(lambda: spoiling.pending == 0, what="every spoil served")
            await write()
            expected = await truth()
            await eventually(lambda: cached() == expected and informer.watcher.statistics()
                             .watching, what=f"the store equals the server after {spoils}")
            assert_quiet_failure(logs.take(), allowed=len(lists) + len(watches))

        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            with anyio.fail_after(30):
                await informer.synced.wait()
            await explore(st.tuples(st.lists(LIST_SPOILS, max_size=2),
                                    st.lists(WATCH_SPOILS, max_size=2)),
                          check, max_examples=30)
            tg.cancel_scope.cancel()


# -- the defects the generated answers found, one example each ------------------------------------

@pytest.mark.parametrize(("spoil", "problem"), [
    (Spoil("items-not-list"), "the list of configmaps's items is not a list: {'x': 1}"),
    (Spoil("metadata-not-object"),
     "the list of configmaps's items[0].metadata is not an object: 'x'"),
    (Spoil("no-name"),
     "the list of configmaps's items[0].metadata.name is not a non-empty string: None"),
    (Spoil("empty"), "the answer to the list of configmaps is not a List (no items): {}"),
])
async def test_a_list_answer_that_is_not_a_list_raises_invalid_response(
        apiserver: Cluster, spoil: Spoil, problem: str) -> None:
    """Such answers used to be returned as they were, for the caller (``list_all``, the
    watcher, the informer) to fail on with a KeyError, TypeError or AttributeError."""
    run = uuid.uuid4().hex[:8]
    async with spoiler(apiserver) as (spoiling, upstream, client):
        await upstream.create(CONFIG_MAPS, configmap("fuzz-one", run), apiserver.namespace)
        for call in (client.list, client.list_all):
            spoiling.lists.append(spoil)
            with pytest.raises(APIError) as caught:
                await call(CONFIG_MAPS, apiserver.namespace, label_selector=f"{LABEL}={run}")
            assert (caught.value.status, caught.value.reason) == (200, "InvalidResponse")
            assert caught.value.message == problem


@pytest.mark.parametrize("spoil", [Spoil("metadata-not-object"), Spoil("no-name"),
                                   Spoil("rv-not-string"), Spoil("garbage")])
async def test_an_unreadable_watch_event_is_one_line_and_a_relist(
        apiserver: Cluster, spoil: Spoil, caplog: pytest.LogCaptureFixture) -> None:
    """An event whose metadata was not an object used to end the watch with an
    AttributeError traceback; one without a name was stored under an empty key; an
    unreadable line was skipped by resuming after it: the event it carried was lost
    unless the server replayed it."""
    run = uuid.uuid4().hex[:8]
    ns = apiserver.namespace
    async with spoiler(apiserver) as (spoiling, upstream, client):
        informer = Informer(client, CONFIG_MAPS, namespace=ns, label_selector=f"{LABEL}={run}",
                            backoff=Backoff(initial=0.01, cap=0.05, jitter=0.5))
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            with anyio.fail_after(30):
                await informer.synced.wait()
            await eventually(lambda: informer.watcher.statistics().watching)
            logs = LogWindow(caplog)
            spoiling.watches.append(spoil)  # for the watch after the relist
            informer.watcher.request_relist()
            await eventually(lambda: spoiling.pending == 0)
            created = await upstream.create(CONFIG_MAPS, configmap("fuzz-after", run), ns)
            await eventually(lambda: [o["metadata"]["resourceVersion"]
                                      for o in informer.store.list()]
                             == [created["metadata"]["resourceVersion"]])
            await eventually(lambda: informer.watcher.statistics().watching)
            tg.cancel_scope.cancel()
    records = logs.take()
    assert_quiet_failure(records, allowed=1)
    [line] = [r.getMessage() for r in records if r.levelno >= logging.INFO]
    assert line.startswith("configmaps/v1: watch failed (attempt 1): 200 InvalidResponse: ")
    assert "; relisting in " in line
    assert informer.watcher.statistics().lists >= 2  # the first list, and the relist


async def test_an_object_nested_deeper_than_orjson_writes_is_cached(apiserver: Cluster) -> None:
    """orjson writes at most 255 levels: a deeper object (a custom resource may nest that
    deep) used to fail every list with a TypeError traceback, so the informer never synced."""
    run = uuid.uuid4().hex[:8]
    ns = apiserver.namespace
    async with spoiler(apiserver) as (spoiling, upstream, client):
        await upstream.create(CONFIG_MAPS, configmap("fuzz-deep", run), ns)
        informer = Informer(client, CONFIG_MAPS, namespace=ns, label_selector=f"{LABEL}={run}",
                            backoff=Backoff(initial=0.01, cap=0.05, jitter=0.5))
        spoiling.lists.append(Spoil("deep"))  # 300 levels in the first list's object
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            with anyio.fail_after(30):
                await informer.synced.wait()
            tg.cancel_scope.cancel()
    [cached] = informer.store.list()
    depth, value = 0, cached["data"]
    while isinstance(value, list):
        depth, value = depth + 1, value[0]
    assert depth == 300 and informer.watcher.statistics().restarts == 0
