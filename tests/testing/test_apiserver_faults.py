"""Fault injection: watch closes, compaction (410), failures, latency, lost events."""

from __future__ import annotations

import asyncio

import pytest

from reconcilekit.testing import Cluster

from k8s_objects import configmap

pytestmark = pytest.mark.in_process_only


async def test_watch_from_a_compacted_resource_version_gets_410_in_a_200_stream(
        apiserver: Cluster, configmaps: str) -> None:
    old = (await apiserver.request("POST", configmaps, json=configmap("a"))).body
    await apiserver.request("POST", configmaps, json=configmap("b"))
    apiserver.faults.compact()
    async with apiserver.watch(configmaps, {
            "resourceVersion": old["metadata"]["resourceVersion"]}) as events:
        got = [e async for e in events]
    # The watch cache answers an old resourceVersion with an ERROR event in an
    # HTTP 200 stream (storage/cacher: "too old resource version: %d (%d)").
    assert len(got) == 1 and got[0]["type"] == "ERROR"
    status = got[0]["object"]
    assert status["kind"] == "Status" and status["code"] == 410
    assert status["reason"] == "Expired"
    assert status["message"].startswith(
        f"too old resource version: {old['metadata']['resourceVersion']} (")


async def test_history_is_bounded() -> None:
    from reconcilekit.testing import APIServer

    async with APIServer(history_limit=3) as server:
        from reconcilekit.testing._cluster import Cluster as C

        cluster = C(server.configuration(), server=server)
        path = "/api/v1/namespaces/default/configmaps"
        first = (await cluster.request("POST", path, json=configmap("a"))).body
        for i in range(5):
            await cluster.request("POST", path, json=configmap(f"n{i}"))
        async with cluster.watch(path, {
                "resourceVersion": first["metadata"]["resourceVersion"]}) as events:
            got = await anext(events)
        await cluster.close()
    assert got["type"] == "ERROR" and got["object"]["code"] == 410


async def test_close_watches_ends_open_streams(apiserver: Cluster, configmaps: str) -> None:
    rv = (await apiserver.request("POST", configmaps, json=configmap("a"))).body[
        "metadata"]["resourceVersion"]
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        while apiserver.faults.close_watches() == 0:  # noqa: ASYNC110 (until registered)
            await asyncio.sleep(0)
        got = [e async for e in events]
    assert got == []


async def test_fail_next_matches_verb_resource_and_name(apiserver: Cluster, configmaps: str
                                                        ) -> None:
    faults = apiserver.faults
    faults.fail_next(2, status=500, verb="create", resource="configmaps")
    faults.fail_next(1, status=429, verb="get", name="b", retry_after=7)
    for _ in range(2):
        got = await apiserver.request("POST", configmaps, json=configmap("a"))
        assert got.status == 500 and got.body["reason"] == "InternalError"
    assert (await apiserver.request("POST", configmaps, json=configmap("a"))).status == 201
    assert (await apiserver.request("GET", f"{configmaps}/a")).status == 200
    throttled = await apiserver.request("GET", f"{configmaps}/b")
    assert throttled.status == 429 and throttled.headers["Retry-After"] == "7"
    assert throttled.body["details"]["retryAfterSeconds"] == 7
    faults.fail_next(status=504, verb="list")
    assert (await apiserver.request("GET", configmaps)).status == 504
    faults.fail_next(status=409, verb="update")
    cm = (await apiserver.request("GET", f"{configmaps}/a")).body
    assert (await apiserver.request("PUT", f"{configmaps}/a", json=cm)).status == 409


async def test_request_counters_by_verb_and_resource(apiserver: Cluster, configmaps: str
                                                     ) -> None:
    server = apiserver.require_server()
    await apiserver.request("POST", configmaps, json=configmap("a"))
    await apiserver.request("GET", f"{configmaps}/a")
    await apiserver.request("GET", f"{configmaps}/a")
    await apiserver.request("GET", configmaps)
    assert server.request_count("get", "configmaps") == 2
    assert server.request_count("list", "configmaps") == 1
    assert server.request_count("create") == 1


async def test_latency_delays_matching_requests(apiserver: Cluster, configmaps: str) -> None:
    apiserver.faults.add_latency(0.2, verb="list")
    loop = asyncio.get_running_loop()
    started = loop.time()
    await apiserver.request("GET", configmaps)
    # A lower bound only: injected latency is a minimum, never a timing budget.
    assert loop.time() - started >= 0.2
    apiserver.faults.clear()


async def test_dropped_events_are_never_seen_but_a_relist_shows_the_change(
        apiserver: Cluster, configmaps: str) -> None:
    rv = (await apiserver.request("POST", configmaps, json=configmap("a"))).body[
        "metadata"]["resourceVersion"]
    apiserver.faults.drop_events("configmaps", 1)
    await apiserver.request("PATCH", f"{configmaps}/a", json={"data": {"lost": "1"}},
                            content_type="application/merge-patch+json")
    await apiserver.request("POST", configmaps, json=configmap("b"))
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        first = await anext(events)
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "b"
    listed = await apiserver.request("GET", f"{configmaps}/a")
    assert listed.body["data"] == {"lost": "1"}


async def test_paused_events_are_delivered_in_order_on_resume(
        apiserver: Cluster, configmaps: str) -> None:
    rv = (await apiserver.request("POST", configmaps, json=configmap("a"))).body[
        "metadata"]["resourceVersion"]
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        apiserver.faults.pause_events()
        await apiserver.request("POST", configmaps, json=configmap("b"))
        await apiserver.request("POST", configmaps, json=configmap("c"))
        pending = asyncio.ensure_future(anext(events))
        await asyncio.sleep(0.05)
        assert not pending.done()
        apiserver.faults.resume_events()
        first = await pending
        second = await anext(events)
    assert [first["object"]["metadata"]["name"], second["object"]["metadata"]["name"]] == [
        "b", "c"]


async def test_send_bookmarks_advances_the_resume_point(apiserver: Cluster, configmaps: str
                                                        ) -> None:
    rv = (await apiserver.request("POST", configmaps, json=configmap("a"))).body[
        "metadata"]["resourceVersion"]
    other = f"/api/v1/namespaces/{apiserver.namespace}/secrets"
    made = await apiserver.request("POST", other, json={
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
    async with apiserver.watch(configmaps, {"resourceVersion": rv,
                                            "allowWatchBookmarks": "true"}) as events:
        while apiserver.faults.send_bookmarks("configmaps") == 0:  # noqa: ASYNC110
            await asyncio.sleep(0)
        bookmark = await anext(events)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "ConfigMap"
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(
        made.body["metadata"]["resourceVersion"])
