"""An informer's list, page by page: stored only once complete, never half.

The list is read in pages of ``WatchOptions.page_size``; each page is encoded for the
store as it arrives and its dicts dropped, and the store converges to the whole
list at the end. These check what that must not change: a list that fails midway
leaves the store (and the handlers) as they were, an expired continue token
starts the list over, and objects deleted while the pages are read are still
reported deleted (by the watch that follows the list). Fault injection is
in-process only; the rest runs on both backends.
"""

from __future__ import annotations

import copy
from typing import Any

import anyio
import pytest
from informer_helpers import Recorder, cm, data_of, names, running

from reconcilekit import Client
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.lowlevel import Informer, Watcher, WatchOptions
from reconcilekit.testing import Cluster, FakeClock, TCPProxy, eventually


async def test_a_list_is_read_in_pages_and_told_once_per_object(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for i in range(5):
        await client.create(CONFIG_MAPS, cm(f"o{i}", v="1"), ns)
    lists: list[int | None] = []
    client.add_request_observer(
        lambda r: lists.append(r.status) if r.verb == "list" else None)
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, page_size=2)
    informer.add_handler(recorder.handler())
    informer.add_index("v", lambda o: [(o.get("data") or {}).get("v", "")])
    async with running(informer):
        assert names(informer) == [f"o{i}" for i in range(5)]
        # five ConfigMaps and kube-root-ca.crt, two a page
        assert lists == [200, 200, 200]
        assert sorted(recorder.events) == [("add", f"o{i}", {"v": "1"}) for i in range(5)]
        assert len(informer.store.index_keys("v", "1")) == 5
        informer.store._check_invariants()
        recorder.events.clear()
        # a relist of what the store holds already tells nothing
        await informer.watcher.relisted(informer.watcher.request_relist())
        assert recorder.events == [] and len(lists) == 6


@pytest.mark.parametrize("status", [403, 500])
async def test_a_list_that_fails_midway_leaves_the_store_as_it_was(
        apiserver: Cluster, client: Client, status: int) -> None:
    ns = apiserver.namespace
    for name in ("a", "b", "c"):
        await client.create(CONFIG_MAPS, cm(name, v="1"), ns)
    faults = apiserver.faults
    clock = FakeClock()
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, clock=clock, page_size=1)
    informer.add_handler(recorder.handler())
    armed = False

    def fail_the_second_page(record: Any) -> None:
        nonlocal armed
        if armed and record.verb == "list" and record.status == 200:
            armed = False  # (a 500 is retried by the client: fail every attempt)
            faults.fail_next(1 if status == 403 else 20, status=status, verb="list")

    client.add_request_observer(fail_the_second_page)
    async with running(informer):
        recorder.events.clear()
        faults.pause_events()  # the open watch sees none of what follows...
        await client.delete(CONFIG_MAPS, "a", ns)
        await client.patch(CONFIG_MAPS, "b", {"data": {"v": "2"}}, ns)
        await client.create(CONFIG_MAPS, cm("d"), ns)
        faults.compact()  # ...and must relist, whose second page fails
        armed = True
        faults.close_watches()
        await eventually(lambda: informer.statistics().last_error is not None)
        faults.clear()
        # The first page (b at v=2) was read, but nothing of the list is stored or told.
        assert names(informer) == ["a", "b", "c"]
        assert data_of(informer, ns, "b") == {"v": "1"}
        assert recorder.events == []
        informer.store._check_invariants()
        await eventually(lambda: clock.sleepers > 0)
        clock.advance(60)  # past the backoff: the list again, whole
        await eventually(lambda: names(informer) == ["b", "c", "d"])
        faults.resume_events()
    assert sorted(recorder.events) == [("add", "d", None), ("delete", "a", {"v": "1"}),
                                       ("update", "b", ({"v": "1"}, {"v": "2"}))]


async def test_a_continue_token_expiring_midway_starts_the_list_over(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for name in ("a", "b", "c"):
        await client.create(CONFIG_MAPS, cm(name, v="1"), ns)
    faults = apiserver.faults
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, page_size=1)
    informer.add_handler(recorder.handler())
    lists: list[int | None] = []
    armed = False

    def expire_the_second_page(record: Any) -> None:
        nonlocal armed
        if record.verb != "list":
            return
        lists.append(record.status)
        if armed and record.status == 200:
            armed = False
            faults.fail_next(1, status=410, verb="list")

    client.add_request_observer(expire_the_second_page)
    async with running(informer):
        recorder.events.clear()
        lists.clear()
        faults.pause_events()
        await client.delete(CONFIG_MAPS, "a", ns)
        await client.patch(CONFIG_MAPS, "b", {"data": {"v": "2"}}, ns)
        faults.compact()
        armed = True
        faults.close_watches()
        await eventually(lambda: informer.statistics().relists == 1)
        faults.resume_events()
        assert names(informer) == ["b", "c"]
    # a page, the 410, then the list again from its first page: b, c, kube-root-ca.crt
    assert lists == [200, 410, 200, 200, 200]
    assert sorted(recorder.events) == [("delete", "a", {"v": "1"}),
                                       ("update", "b", ({"v": "1"}, {"v": "2"}))]
    assert informer.statistics().watch_restarts == 0  # the protocol, not a failure


async def test_objects_deleted_while_the_pages_are_read_are_reported_deleted(
        apiserver: Cluster, client: Client) -> None:
    """The list is a snapshot: objects deleted after its first page are still in it, and
    the watch from its resourceVersion reports their deletion; each handler hears it once."""
    ns = apiserver.namespace
    for i in range(6):
        await client.create(CONFIG_MAPS, cm(f"o{i}"), ns)
    async with TCPProxy(apiserver.configuration.host) as proxy:
        configuration = copy.copy(apiserver.configuration)
        configuration.host = proxy.url
        async with Client(configuration) as slow:
            first_page = anyio.Event()
            slow.add_request_observer(
                lambda r: first_page.set() if r.verb == "list" and r.status == 200 else None)
            recorder = Recorder()
            informer = Informer(slow, CONFIG_MAPS, namespace=ns, page_size=2)
            informer.add_handler(recorder.handler())
            async with running(informer):
                recorder.events.clear()
                first_page = anyio.Event()
                proxy.latency = 0.1  # each page takes a while: the deletions come between
                ticket = informer.watcher.request_relist()
                await first_page.wait()
                await client.delete(CONFIG_MAPS, "o0", ns)  # in the page already read
                await client.delete(CONFIG_MAPS, "o5", ns)  # in a page still to come
                await informer.watcher.relisted(ticket)
                proxy.latency = 0.0
                await eventually(lambda: names(informer) == ["o1", "o2", "o3", "o4"])
    assert sorted(recorder.events) == [("delete", "o0", None), ("delete", "o5", None)]


async def test_a_deletion_is_told_once_though_the_watch_reports_it_after_a_relist(
        client: Client) -> None:
    """As client-go's DeltaFIFO: a DELETED event for an object a relist already removed
    (and told ``on_delete`` of) is not a second deletion."""
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace="ns")
    informer.add_handler(recorder.handler())
    kept = dict(cm("kept"), metadata={"name": "kept", "namespace": "ns",
                                      "resourceVersion": "5"})
    gone = dict(cm("gone"), metadata={"name": "gone", "namespace": "ns",
                                      "resourceVersion": "6"})
    informer.replace([kept, gone], "6")
    informer.replace([kept], "8")
    informer.apply("DELETED", dict(gone, metadata={**gone["metadata"],
                                                   "resourceVersion": "7"}))
    assert recorder.events == [("add", "kept", None), ("add", "gone", None),
                               ("delete", "gone", None)]


class _PageRecorder:
    """A watch sink that records, at each batch of a list's objects it is given, how
    many list requests its client has started (answered or in flight)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.batches: list[tuple[int, int]] = []  # (objects, list requests started)
        self.names: list[str] = []
        self.finished = anyio.Event()

    def begin_list(self) -> _PageRecorder:
        return self

    def add(self, objects: list[dict[str, Any]]) -> None:
        stats = self.client.statistics()
        answered = sum(n for (verb, _), n in stats.requests.items() if verb == "list")
        self.batches.append((len(objects), answered + stats.in_flight))
        self.names += (o["metadata"]["name"] for o in objects)

    def finish(self, resource_version: str) -> None:
        self.finished.set()

    def replace(self, objects: list[dict[str, Any]], resource_version: str) -> None:
        raise AssertionError("a sink with begin_list is given pages")

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        pass


async def test_the_next_page_is_asked_for_while_a_page_is_stored(
        apiserver: Cluster, client: Client) -> None:
    """The server reads page n + 1 while page n goes into the store, in batches of 50
    with the event loop let run between them; the pages still arrive whole and in
    order."""
    ns = apiserver.namespace
    for i in range(129):  # and kube-root-ca.crt: 130 objects, pages of 60, 60 and 10
        await client.create(CONFIG_MAPS, cm(f"o{i:03}"), ns)
    watcher = Watcher(client, CONFIG_MAPS, namespace=ns, options=WatchOptions(page_size=60))
    sink = _PageRecorder(client)
    async with anyio.create_task_group() as tg:
        tg.start_soon(watcher.run, sink)
        await sink.finished.wait()
        tg.cancel_scope.cancel()
    # page 1's first batch: only its own request; its second: page 2's sent as well
    assert sink.batches == [(50, 1), (10, 2), (50, 2), (10, 3), (10, 3)]
    assert sink.names == sorted(["kube-root-ca.crt", *(f"o{i:03}" for i in range(129))])
