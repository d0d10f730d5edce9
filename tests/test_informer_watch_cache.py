"""Lists from kube-apiserver's watch cache (``WatchOptions.list_from``): what the cache
holds at first, never older than what was seen after, one answer read as it arrives, and
etcd's pages when the cache cannot answer. Fault injection is in-process only; the rest
runs on both backends."""

from __future__ import annotations

import copy
import gc
import logging
from typing import Any

import aiohttp
import orjson
import pytest
from informer_helpers import cm, names, running

from reconcilekit import Client, ObjectKey
from reconcilekit._client.transport import RequestRecord
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.lowlevel import Informer, WatchOptions
from reconcilekit.testing import Cluster, eventually


def lists_of(client: Client) -> list[int | None]:
    """The status of every list the client sends from now on."""
    seen: list[int | None] = []

    def record(request: RequestRecord) -> None:
        if request.verb == "list":
            seen.append(request.status)

    client.add_request_observer(record)
    return seen


def streams_of(client: Client) -> list[dict[str, str]]:
    """The query of every stream (a watch, a list from the watch cache) the client opens."""
    seen: list[dict[str, str]] = []
    open_stream = client.open_stream

    async def recorded(path: str, params: Any = None, **options: Any) -> Any:
        seen.append(dict(params or {}))
        return await open_stream(path, params, **options)

    client.open_stream = recorded  # type: ignore[method-assign]
    return seen


async def test_a_metadata_informer_lists_from_the_watch_cache_never_back_in_time(
        apiserver: Cluster, client: Client) -> None:
    """The first list asks for what the cache holds (resourceVersion=0), a relist for no
    older than the last resourceVersion seen; each is one answer, and managedFields, cut
    from it before decoding, are in no stored object."""
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}", {"app": "x"}), ns)
    lists, streams = lists_of(client), streams_of(client)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True, page_size=1)
    assert informer.watcher.options.lists_from_cache
    async with running(informer):
        assert lists == [200] and streams[0]["resourceVersion"] == "0"
        assert "limit" not in streams[0] and "resourceVersionMatch" not in streams[0]
        assert names(informer) == ["o0", "o1", "o2"]
        written = await client.patch(CONFIG_MAPS, "o2", {"metadata": {"labels": {"app": "y"}}},
                                     ns)
        rv = written["metadata"]["resourceVersion"]

        def seen() -> bool:
            stored = informer.store.get(ObjectKey(ns, "o2"))
            return stored is not None and stored["metadata"]["resourceVersion"] == rv

        await eventually(seen)
        await informer.watcher.relisted(informer.watcher.request_relist())
        relist = [q for q in streams if q.get("watch") != "true"][-1]
        assert relist["resourceVersionMatch"] == "NotOlderThan"
        assert int(relist["resourceVersion"]) >= int(rv) and lists == [200, 200]
        stored = informer.store.get(ObjectKey(ns, "o2"))
        assert stored is not None and stored["metadata"]["labels"] == {"app": "y"}
        assert all("managedFields" not in o["metadata"] for o in informer.store.list())
        assert (stored["apiVersion"], stored["kind"]) == ("v1", "ConfigMap")
        informer.store._check_invariants()


async def test_list_from_etcd_reads_pages(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}"), ns)
    lists = lists_of(client)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True, page_size=2,
                        list_from="etcd")
    async with running(informer):
        assert lists == [200, 200]  # four objects, two a page
        assert names(informer) == ["o0", "o1", "o2"]


async def test_whole_objects_list_from_the_watch_cache_when_asked(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", v="1"), ns)
    assert not Informer(client, CONFIG_MAPS, namespace=ns).watcher.options.lists_from_cache
    informer = Informer(client, CONFIG_MAPS, namespace=ns, list_from="watch_cache")
    async with running(informer):
        stored = informer.store.get(ObjectKey(ns, "a"))
        assert stored is not None and stored["data"] == {"v": "1"}
        assert "managedFields" not in stored["metadata"]  # the transform's doing
        await client.create(CONFIG_MAPS, cm("b"), ns)  # and the watch follows the list
        await eventually(lambda: names(informer) == ["a", "b"])


@pytest.mark.parametrize("status", [504, 410])
async def test_a_watch_cache_that_cannot_answer_falls_back_to_etcds_pages(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture,
        status: int) -> None:
    """The cache's answer refused (504: its cache behind, or the answer too slow for the
    server's request timeout): the list is read from etcd in pages instead, and so is
    every later one, with one INFO line."""
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}"), ns)
    apiserver.faults.fail_next(1, status=status, verb="list")  # (a stream is never retried)
    lists = lists_of(client)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True, page_size=2)
    caplog.set_level(logging.INFO, logger="reconcilekit.watcher")
    async with running(informer):
        assert names(informer) == ["o0", "o1", "o2"]
        assert lists == [status, 200, 200]  # the cache's list refused, then etcd's pages
        await informer.watcher.relisted(informer.watcher.request_relist())
        assert lists == [status, 200, 200, 200, 200]
    messages = [r.getMessage() for r in caplog.records if r.name == "reconcilekit.watcher"]
    assert [m for m in messages if "the watch cache cannot answer the list" in m
            and "listing from etcd from now on" in m] == messages[:1], messages


def test_list_from_is_checked() -> None:
    with pytest.raises(ValueError, match="list_from must be 'watch_cache', 'etcd' or None"):
        WatchOptions(list_from="cache")  # type: ignore[arg-type]


class _CutShort:
    """An answer whose body ends before the List does, as kube-apiserver ends one it is
    still writing when its request timeout expires."""

    def __init__(self, body: bytes) -> None:
        self.content = self
        self._body = body

    async def iter_any(self) -> Any:
        yield self._body[:len(self._body) // 2]
        raise aiohttp.ClientPayloadError("Response payload is not completed")

    def release(self) -> None:
        pass


class _CutShortServer:
    """A client whose watch-cache lists are cut short and whose pages answer whole."""

    def __init__(self, objects: list[dict[str, Any]]) -> None:
        self.objects = objects
        self.asked: list[str] = []

    async def open_stream(self, path: str, params: Any, **options: Any) -> _CutShort:
        self.asked.append("cache")
        return _CutShort(orjson.dumps({"kind": "ConfigMapList", "metadata": {
            "resourceVersion": "5"}, "items": self.objects}))

    async def list(self, resource: Any, namespace: Any, **options: Any) -> dict[str, Any]:
        self.asked.append(f"page of {options['limit']}")
        return {"metadata": {"resourceVersion": "5"}, "items": copy.deepcopy(self.objects)}


async def test_a_watch_cache_answer_cut_short_falls_back_to_etcds_pages() -> None:
    objects = [{"metadata": {"name": f"o{i}", "namespace": "ns", "resourceVersion": "5"}}
               for i in range(200)]
    server = _CutShortServer(objects)
    informer = Informer(server, CONFIG_MAPS, namespace="ns",  # type: ignore[arg-type]
                        list_from="watch_cache")
    await informer.watcher._list(informer)
    assert server.asked == ["cache", "page of 500"] and len(informer.store) == 200
    await informer.watcher._list(informer)  # and every later list reads etcd
    assert server.asked == ["cache", "page of 500", "page of 500"]


async def test_a_list_from_the_watch_cache_is_stored_with_the_collector_paused(
        apiserver: Cluster, client: Client) -> None:
    """Each slab of the answer is decoded, stored and freed with the collector paused (a
    collection part-way would walk the decoded objects and everything the cache holds);
    it runs again once the list is stored, and one paused by someone else stays so."""
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}"), ns)
    for paused_before in (False, True):
        seen: list[bool] = []

        def admit(obj: dict[str, Any], seen: list[bool] = seen) -> bool:
            seen.append(gc.isenabled())
            return True

        informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True,
                            admit=admit)
        if paused_before:
            gc.disable()
        try:
            async with running(informer):
                assert names(informer) == ["o0", "o1", "o2"]
                assert seen[:3] == [False] * 3
                assert gc.isenabled() is not paused_before
        finally:
            gc.enable()
