"""Lists from kube-apiserver's watch cache (``WatchOptions.list_from``): as fresh as a
consistent list, one answer read as it arrives, and etcd's pages when the cache cannot
answer. Fault injection is in-process only; the rest runs on both backends."""

from __future__ import annotations

import logging
from typing import Any

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


async def test_a_metadata_informer_lists_from_the_watch_cache_as_fresh_as_etcd(
        apiserver: Cluster, client: Client) -> None:
    """A write answered before the informer starts is in its first list (the list asks
    for etcd's revision of the moment, not the cache's), and managedFields, cut from
    the answer before decoding, are in no stored object."""
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}", {"app": "x"}), ns)
    written = await client.patch(CONFIG_MAPS, "o2", {"metadata": {"labels": {"app": "y"}}}, ns)
    lists = lists_of(client)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True, page_size=1)
    assert informer.watcher.options.lists_from_cache
    async with running(informer):
        # the revision of the moment (one object), then the whole list at once
        assert lists == [200, 200]
        assert names(informer) == ["o0", "o1", "o2"]
        stored = informer.store.get(ObjectKey(ns, "o2"))
        assert stored is not None
        assert stored["metadata"]["resourceVersion"] == written["metadata"]["resourceVersion"]
        assert stored["metadata"]["labels"] == {"app": "y"}
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
    """The cache's answer refused (504: it did not catch up with etcd in time) after the
    revision was read: the list is read from etcd in pages instead, one INFO line."""
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"o{i}"), ns)
    faults = apiserver.faults
    armed = True

    def refuse_the_cache_list(request: Any) -> None:
        nonlocal armed
        if armed and request.verb == "list" and request.status == 200:
            armed = False  # the revision was read: the next list is the cache's
            faults.fail_next(1, status=status, verb="list")  # (a stream is never retried)

    lists = lists_of(client)
    client.add_request_observer(refuse_the_cache_list)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, metadata_only=True, page_size=3)
    caplog.set_level(logging.INFO, logger="reconcilekit.watcher")
    async with running(informer):
        assert names(informer) == ["o0", "o1", "o2"]
    # the revision, the cache's list refused, then etcd's pages
    assert lists[:2] == [200, status] and lists[2:] == [200] * (len(lists) - 2) != []
    messages = [r.getMessage() for r in caplog.records if r.name == "reconcilekit.watcher"]
    assert any("the watch cache cannot answer the list" in m and "listing from etcd" in m
               for m in messages), messages


def test_list_from_is_checked() -> None:
    with pytest.raises(ValueError, match="list_from must be 'watch_cache', 'etcd' or None"):
        WatchOptions(list_from="cache")  # type: ignore[arg-type]
