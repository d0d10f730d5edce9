"""Watcher and informer against the API server: the store always converges.

These run against the ``apiserver`` fixture (a real cluster too, where the
fault-injection tests skip). Waiting for the informer to catch up is a
bounded poll on its state, never a sleep standing in for a timeout; the
dead-watch and backoff timings run on a FakeClock. The one test that waits
for watches to end waits for the server's timeoutSeconds, which no client
clock can drive.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from informer_helpers import SYSTEM_OBJECTS, Recorder, cm, data_of, names, running

from reconcilekit import Client, EventHandler, ObjectKey, strip_managed_fields
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.lowlevel import Backoff, Informer
from reconcilekit.testing import APIServer, Cluster, FakeClock, TCPProxy, eventually


async def force_relist(apiserver: Cluster, client: Client, informer: Informer) -> None:
    """Make the informer's resume point too old (a write it has not seen, then a
    compaction, then a closed watch), so it must relist."""
    before = informer.statistics().relists
    apiserver.faults.pause_events()
    await client.create(CONFIG_MAPS, cm("trigger"), apiserver.namespace)
    apiserver.faults.compact()
    apiserver.faults.close_watches()
    await eventually(lambda: informer.statistics().relists == before + 1)
    apiserver.faults.resume_events()


async def test_initial_list_then_watch_events_reach_store_and_handlers(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", x="1"), ns)
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    informer.add_handler(recorder.handler())
    async with running(informer):
        assert names(informer) == ["a"]
        await client.create(CONFIG_MAPS, cm("b"), ns)
        await client.patch(CONFIG_MAPS, "a", {"data": {"x": "2"}}, ns)
        await client.delete(CONFIG_MAPS, "b", ns)
        await eventually(lambda: len(recorder.events) == 4)
    assert recorder.events == [("add", "a", {"x": "1"}), ("add", "b", None),
                               ("update", "a", ({"x": "1"}, {"x": "2"})), ("delete", "b", None)]
    stats = informer.statistics()
    assert stats.synced and stats.objects == len(informer.store) and stats.lists == 1


async def test_default_transform_strips_managed_fields(apiserver: Cluster, client: Client
                                                       ) -> None:
    made = await client.create(CONFIG_MAPS, cm("a", x="1"), apiserver.namespace)
    assert "managedFields" in made["metadata"]  # (none for an object with no fields set)
    async with running(Informer(client, CONFIG_MAPS, namespace=apiserver.namespace)) as inf:
        stored = inf.store.get(ObjectKey(apiserver.namespace, "a"))
    assert stored is not None and "managedFields" not in stored["metadata"]
    assert strip_managed_fields({"metadata": {"managedFields": []}}) == {"metadata": {}}


async def test_relist_after_410_converges_and_tells_handlers_what_changed(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for name in ("a", "b"):
        await client.create(CONFIG_MAPS, cm(name, v="1"), ns)
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    informer.add_handler(recorder.handler())
    async with running(informer):
        recorder.events.clear()
        faults = apiserver.faults
        faults.pause_events()  # the open watch sees none of what follows...
        await client.delete(CONFIG_MAPS, "a", ns)
        await client.patch(CONFIG_MAPS, "b", {"data": {"v": "2"}}, ns)
        await client.create(CONFIG_MAPS, cm("c"), ns)
        faults.compact()  # ...its history is gone...
        faults.close_watches()  # ...and the resume gets 410 Expired
        await eventually(lambda: informer.statistics().relists == 1)
        faults.resume_events()
        assert names(informer) == ["b", "c"]
        assert data_of(informer, ns, "b") == {"v": "2"}
    assert sorted(recorder.events) == [("add", "c", None), ("delete", "a", {"v": "1"}),
                                       ("update", "b", ({"v": "1"}, {"v": "2"}))]
    # A 410 is the protocol, not a failure: relisted at once, no backoff, no restart.
    assert informer.statistics().watch_restarts == 0


async def test_dropped_events_are_healed_by_the_next_relist(apiserver: Cluster,
                                                            client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", v="1"), ns)
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    async with running(informer):
        apiserver.faults.drop_events("configmaps", 2)
        await client.patch(CONFIG_MAPS, "a", {"data": {"v": "lost"}}, ns)
        await client.create(CONFIG_MAPS, cm("ghost"), ns)
        await client.create(CONFIG_MAPS, cm("seen"), ns)
        await eventually(lambda: "seen" in names(informer))
        assert data_of(informer, ns, "a") == {"v": "1"}  # stale: the event never came
        assert "ghost" not in names(informer)
        await force_relist(apiserver, client, informer)
        assert data_of(informer, ns, "a") == {"v": "lost"}
        assert names(informer) == ["a", "ghost", "seen", "trigger"]


async def test_a_clean_watch_close_resumes_without_relisting(apiserver: Cluster,
                                                             client: Client) -> None:
    ns = apiserver.namespace
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    async with running(informer):
        apiserver.faults.close_watches()
        await client.create(CONFIG_MAPS, cm("after"), ns)
        await eventually(lambda: names(informer) == ["after"])
    assert informer.statistics().lists == 1


async def test_bookmarks_advance_the_resume_point(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    async with running(informer):
        await eventually(lambda: informer.statistics().watching)
        secret = await client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                                               "metadata": {"name": "s"}}, ns)
        rv = secret["metadata"]["resourceVersion"]
        assert informer.watcher.statistics().resource_version != rv
        await eventually(lambda: apiserver.faults.send_bookmarks("configmaps") > 0)
        await eventually(lambda: informer.watcher.statistics().resource_version == rv)


async def test_label_filtered_informer_follows_objects_in_and_out(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", {"app": "x"}), ns)
    await client.create(CONFIG_MAPS, cm("b", {"app": "y"}), ns)
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, label_selector="app=x")
    informer.add_handler(recorder.handler())
    async with running(informer):
        assert names(informer) == ["a"]
        await client.patch(CONFIG_MAPS, "b", {"metadata": {"labels": {"app": "x"}}}, ns)
        await eventually(lambda: names(informer) == ["a", "b"])
        await client.patch(CONFIG_MAPS, "a", {"metadata": {"labels": {"app": "y"}}}, ns)
        await eventually(lambda: names(informer) == ["b"])
    assert ("delete", "a", None) in recorder.events


async def test_an_idle_watch_ends_at_the_server_timeout_and_resumes_quietly(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A resource with no traffic (kube-apiserver sends it no BOOKMARK at all) is not a
    dead watch: each watch ends at its timeoutSeconds and resumes, logged at DEBUG only."""
    caplog.set_level(logging.DEBUG, logger="reconcilekit")
    informer = Informer(client, SECRETS, namespace=apiserver.namespace, liveness_timeout=8)
    async with running(informer):  # watches of 4-6 s on the server's clock
        await eventually(lambda: informer.watcher.statistics().watches >= 3, within=30)
    stats = informer.statistics()
    assert (stats.watch_restarts, stats.dead_watches, stats.relists) == (0, 0, 0)
    assert [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG] == []
    assert "watch ended after" in caplog.text


async def test_a_black_holed_watch_connection_is_found_within_the_bound(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A connection that stops carrying anything without closing is abandoned once it
    outlives the server's promise to end the watch (60 s by default), in one WARNING line,
    and the watch resumes where it was: the event sent into the black hole is not lost."""
    ns = apiserver.namespace
    clock = FakeClock()
    async with TCPProxy(apiserver.configuration.host) as proxy:
        configuration = copy.copy(apiserver.configuration)
        configuration.host = proxy.url
        async with Client(configuration) as via_proxy:
            informer = Informer(via_proxy, CONFIG_MAPS, namespace=ns, clock=clock)
            async with running(informer):
                await eventually(lambda: informer.statistics().watching)
                proxy.stall()
                await client.create(CONFIG_MAPS, cm("late"), ns)
                clock.advance(59)
                await anyio.sleep(0.2)  # a chance to (wrongly) act before the bound
                assert informer.statistics().dead_watches == 0
                clock.advance(1)
                await eventually(lambda: informer.statistics().dead_watches == 1)
                await eventually(lambda: clock.sleepers > 0)
                clock.advance(60)  # past the backoff: a new connection, through the proxy
                await eventually(lambda: names(informer) == ["late"])
    assert informer.statistics().relists == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("configmaps/v1: watch failed (attempt 1): the connection "
                                  "went dead: still open 60s after it was opened")
    assert "_" not in warnings[0].split(":")[0]


async def test_a_metadata_informer_gets_metadata_from_the_server(
        apiserver: Cluster, client: Client) -> None:
    """With no client-side projection at all (transform=None), the store holds no data:
    the server sent PartialObjectMetadata on the list and on the watch. Stored objects are
    named as the resource they describe, as controller-runtime names them."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("listed", {"app": "x"}, big="x" * 1000), ns)
    informer = Informer(client, CONFIG_MAPS, namespace=ns, transform=None, metadata_only=True)
    async with running(informer):
        await client.create(CONFIG_MAPS, cm("watched", big="y" * 1000), ns)
        await eventually(lambda: names(informer) == ["listed", "watched"])
    for obj in informer.store.list():
        assert set(obj) == {"apiVersion", "kind", "metadata"}, obj
        assert (obj["apiVersion"], obj["kind"]) == ("v1", "ConfigMap")
    listed = informer.store.get(ObjectKey(ns, "listed"))
    assert listed is not None and listed["metadata"]["labels"] == {"app": "x"}


async def test_list_failures_back_off_on_the_clock_and_recover(apiserver: Cluster,
                                                               client: Client) -> None:
    clock = FakeClock()  # (403: the client does not retry it; the watcher backs off)
    apiserver.faults.fail_next(2, status=403, verb="list", resource="configmaps")
    informer = Informer(client, CONFIG_MAPS, namespace=apiserver.namespace, clock=clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(informer.run)
        for _ in range(2):
            await eventually(lambda: clock.sleepers > 0)
            clock.advance(60)
        await eventually(lambda: informer.has_synced)
        tg.cancel_scope.cancel()
    stats = informer.statistics()
    assert stats.watch_restarts == 2 and stats.last_error is None


async def test_a_handler_that_raises_does_not_stop_the_informer(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace

    def broken(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    informer.add_handler(EventHandler(on_add=broken))
    informer.add_handler(recorder.handler())
    async with running(informer):
        await client.create(CONFIG_MAPS, cm("a"), ns)
        await eventually(lambda: recorder.events == [("add", "a", None)])
    assert "handler bug" in caplog.text


async def test_handlers_get_copies_they_may_mutate(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace

    def vandal(obj: dict[str, Any]) -> None:
        obj["data"] = {"vandalised": "yes"}

    informer = Informer(client, CONFIG_MAPS, namespace=ns)
    informer.add_handler(EventHandler(on_add=vandal))
    informer.add_handler(EventHandler(on_add=vandal))
    async with running(informer):
        await client.create(CONFIG_MAPS, cm("a", v="1"), ns)
        await eventually(lambda: "a" in names(informer))
        assert data_of(informer, ns, "a") == {"v": "1"}


_OPS = st.lists(st.tuples(st.sampled_from(["create", "relabel", "delete"]),
                          st.sampled_from(["o1", "o2", "o3", "o4"]),
                          st.sampled_from(["red", "blue", ""])), min_size=1, max_size=12)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=_OPS)
def test_index_stays_consistent_under_random_writes(ops: list[tuple[str, str, str]]) -> None:
    """After any sequence of writes the informer's index equals a scan of the server."""

    def team(obj: Mapping[str, Any]) -> list[str]:
        value = (obj["metadata"].get("labels") or {}).get("team")
        return [value] if value else []

    async def scenario() -> None:
        async with APIServer() as server, Client(server.configuration()) as client:
            informer = Informer(client, CONFIG_MAPS, namespace="default")
            informer.add_index("team", team)
            async with running(informer):
                last = "0"
                for op, name, colour in ops:
                    labels = {"team": colour} if colour else {}
                    try:
                        if op == "create":
                            got = await client.create(CONFIG_MAPS, cm(name, labels), "default")
                        elif op == "relabel":
                            got = await client.patch(CONFIG_MAPS, name, {
                                "metadata": {"labels": {"team": colour or None}}}, "default")
                        else:
                            got = await client.delete(CONFIG_MAPS, name, "default")
                    except Exception as err:  # AlreadyExists / NotFound are part of the game
                        assert getattr(err, "status", None) in (404, 409)
                        continue
                    last = got.get("metadata", {}).get("resourceVersion") or str(server.storage.rv)
                await eventually(lambda: int(informer.watcher.statistics().resource_version
                                             or 0) >= int(last))
                truth = [o for o in (await client.list(CONFIG_MAPS, "default"))["items"]
                         if o["metadata"]["name"] not in SYSTEM_OBJECTS]
                assert sorted(o["metadata"]["name"] for o in truth) == names(informer)
                informer.store._check_invariants()
                for colour in ("red", "blue"):
                    expected = {ObjectKey("default", o["metadata"]["name"]) for o in truth
                                if (o["metadata"].get("labels") or {}).get("team") == colour}
                    assert informer.store.index_keys("team", colour) == expected

    asyncio.run(scenario())


async def test_periodic_resync_replays_every_object_to_handlers(apiserver: Cluster,
                                                                client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", v="1"), ns)
    clock = FakeClock()
    recorder = Recorder()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, clock=clock, resync_period=600)
    informer.add_handler(recorder.handler())
    async with running(informer):
        await eventually(lambda: 600.0 in clock.deadlines())
        clock.advance(600)
        await eventually(lambda: ("update", "a", ({"v": "1"}, {"v": "1"})) in recorder.events)


def test_backoff_doubles_to_its_cap_and_resets_after_a_quiet_period() -> None:
    clock = FakeClock()
    backoff = Backoff(initial=0.8, cap=30.0, reset_after=120.0, jitter=0.0, clock=clock)
    delays = [backoff.next_delay() for _ in range(8)]
    assert delays == [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]
    clock.advance(119)
    assert backoff.next_delay() == 30.0
    clock.advance(120)
    assert backoff.next_delay() == 0.8
    jittered = Backoff(initial=1.0, jitter=1.0, clock=clock)
    assert 1.0 <= jittered.next_delay() <= 2.0


async def test_relist_period_repairs_an_event_lost_on_a_healthy_watch(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("a", v="1"), ns)
    clock = FakeClock()
    informer = Informer(client, CONFIG_MAPS, namespace=ns, clock=clock, relist_period=600,
                        liveness_timeout=10_000)
    async with running(informer):
        # A watch counts when it is asked for, before the server holds it: each step waits
        # until the server has the watch it acts on (closing none would wait forever).
        await eventually(lambda: informer.statistics().watching)
        apiserver.faults.drop_events("configmaps", 1)
        await client.patch(CONFIG_MAPS, "a", {"data": {"v": "lost"}}, ns)
        # a clean end: resumes, no 410, nothing repaired
        await eventually(lambda: apiserver.faults.close_watches() == 1)
        await eventually(lambda: informer.watcher.statistics().watches == 2
                         and informer.statistics().watching)
        assert data_of(informer, ns, "a") == {"v": "1"}
        clock.advance(600)  # the period is up: the next watch end lists again
        await eventually(lambda: apiserver.faults.close_watches() == 1)
        await eventually(lambda: data_of(informer, ns, "a") == {"v": "lost"})
    assert informer.statistics().relists == 1
