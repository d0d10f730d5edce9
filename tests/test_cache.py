"""Cache: shared informers, cached reads without API calls, field indexes, sync."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio
import pytest
from cache_helpers import running, sync_timeout

from reconcilekit import Cache, CacheSyncTimeout, Client, NotFound, Resource
from reconcilekit.kinds import CONFIG_MAPS, PODS
from reconcilekit.testing import Cluster, FakeClock, eventually

MISSING = Resource("nothing.example.com", "v1", "Thing", "things")


def pod(name: str, node: str = "", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


def by_node(obj: Mapping[str, Any]) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


async def test_one_informer_per_resource_is_shared(client: Client) -> None:
    cache = Cache(client)
    assert cache.informer_for(PODS) is cache.informer_for(PODS)
    assert cache.informer_for(PODS, metadata=True) is not cache.informer_for(PODS)


async def test_reads_come_from_the_cache_not_the_api_server(apiserver: Cluster,
                                                            client: Client) -> None:
    ns = apiserver.namespace
    for i in range(3):
        await client.create(PODS, pod(f"p{i}", app="web" if i else "db"), ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(PODS)
    async with running(cache):
        sent = client.statistics().requests  # counted by the client, on any backend
        gets, lists = sent.get(("get", "pods"), 0), sent.get(("list", "pods"), 0)
        got = await cache.get(PODS, "p1", ns)
        assert got["metadata"]["name"] == "p1"
        web = await cache.list(PODS, ns, label_selector="app=web")
        assert [o["metadata"]["name"] for o in web] == ["p1", "p2"]
        with pytest.raises(NotFound, match='pods "nope" not found in the cache'):
            await cache.get(PODS, "nope", ns)
        sent = client.statistics().requests
        assert sent.get(("get", "pods"), 0) == gets
        assert sent.get(("list", "pods"), 0) == lists


async def test_field_index_answers_matching_fields(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a", "node-1"), ns)
    await client.create(PODS, pod("b", "node-2"), ns)
    cache = Cache(client, namespace=ns)
    cache.index_field(PODS, "spec.nodeName", by_node)
    async with running(cache):
        found = await cache.list(PODS, ns, field=("spec.nodeName", "node-2"))
        assert [o["metadata"]["name"] for o in found] == ["b"]
        await client.create(PODS, pod("c", "node-2"), ns)
        await eventually(lambda: len(cache.informer_for(PODS).store) == 3)
        found = await cache.list(PODS, ns, field=("spec.nodeName", "node-2"))
        assert [o["metadata"]["name"] for o in found] == ["b", "c"]
        assert await cache.list(PODS, "elsewhere", field=("spec.nodeName", "node-2")) == []


async def test_mutating_a_cached_object_cannot_corrupt_the_cache(apiserver: Cluster,
                                                                 client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "c"}, "data": {"k": "v"}}, ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        got = await cache.get(CONFIG_MAPS, "c", ns)
        got["data"]["k"] = "mutated"
        listed = await cache.list(CONFIG_MAPS, ns)
        listed[0]["metadata"]["name"] = "renamed"
        again = await cache.get(CONFIG_MAPS, "c", ns)
        assert again["data"] == {"k": "v"}


async def test_metadata_only_informer_keeps_only_metadata(apiserver: Cluster,
                                                          client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a", "node-1", app="x"), ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(PODS, metadata=True)
    async with running(cache):
        got = await cache.get(PODS, "a", ns, metadata=True)
    assert set(got) == {"apiVersion", "kind", "metadata"}
    assert got["metadata"]["labels"] == {"app": "x"}
    assert "managedFields" not in got["metadata"]


async def test_wait_for_sync_names_the_resource_that_did_not_sync(client: Client) -> None:
    clock = FakeClock()
    cache = Cache(client, clock=clock)
    cache.informer_for(CONFIG_MAPS)
    cache.informer_for(MISSING)  # its CRD is not installed: the list answers 404
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        missing = cache.informer_for(MISSING)
        await eventually(lambda: missing.statistics().waiting_for is not None)
        await eventually(lambda: cache.informer_for(CONFIG_MAPS).has_synced)
        err = await sync_timeout(cache, clock)
        tg.cancel_scope.cancel()
    assert isinstance(err, CacheSyncTimeout)
    assert err.resources == ["things.nothing.example.com/v1"]
    assert ("things.nothing.example.com/v1 (last error: not served by the API server (404); "
            "waiting for CustomResourceDefinition things.nothing.example.com to be "
            "established and serve v1)") in str(err)
    assert "configmaps" not in str(err)


async def test_reading_a_cache_that_is_not_running_fails_at_once(client: Client) -> None:
    cache = Cache(client)
    with pytest.raises(RuntimeError, match="not running"):
        await cache.get(CONFIG_MAPS, "x", "default")
    with pytest.raises(RuntimeError, match="not running"):
        await cache.wait_for_sync(1)


async def test_informers_added_while_running_start_and_sync(apiserver: Cluster,
                                                           client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("late"), ns)
    cache = Cache(client, namespace=ns)
    async with running(cache):
        got = await cache.get(PODS, "late", ns)  # creates, starts and waits for the informer
    assert got["metadata"]["name"] == "late"


async def test_read_your_own_writes(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        apiserver.faults.pause_events()
        await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "mine"}}, ns)
        assert not cache.has_seen_own_write(CONFIG_MAPS, "mine", ns)
        apiserver.faults.resume_events()
        await eventually(lambda: cache.has_seen_own_write(CONFIG_MAPS, "mine", ns))
        assert (await cache.get(CONFIG_MAPS, "mine", ns))["metadata"]["name"] == "mine"


async def test_a_write_the_cache_holds_already_is_seen_at_once(
        apiserver: Cluster, client: Client) -> None:
    """A write answered with the version the cache holds (a no-op patch: no new
    resourceVersion, no event) is seen at once. The cache keeps no record per object it
    observed (that cost memory for every cached object): it asks its store instead."""
    ns = apiserver.namespace
    made = await client.create(CONFIG_MAPS, {"metadata": {"name": "same"},
                                             "data": {"k": "v"}}, ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        assert len(cache.own_writes._seen) == 0  # nothing recorded for the synced objects
        patched = await client.patch(CONFIG_MAPS, "same", {"data": {"k": "v"}}, ns)
        assert patched["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        assert cache.has_seen_own_write(CONFIG_MAPS, "same", ns)
        assert len(cache.own_writes) == 0


async def test_a_write_whose_deletion_only_a_relist_shows_is_seen(
        apiserver: Cluster, client: Client) -> None:
    """Our write to an object, then its deletion by someone else, both unseen by the
    watch (dropped events); a relist finds the object gone: our write is superseded and
    the cache has seen it (it waited for its timeout before, the key stale meanwhile)."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "doomed"}}, ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        await eventually(lambda: cache.has_seen_own_write(CONFIG_MAPS, "doomed", ns))
        apiserver.faults.drop_events("configmaps", 2)
        await client.patch(CONFIG_MAPS, "doomed", {"data": {"k": "v"}}, ns)
        async with Client(apiserver.configuration) as other:
            await other.delete(CONFIG_MAPS, "doomed", ns)
        assert not cache.has_seen_own_write(CONFIG_MAPS, "doomed", ns)
        apiserver.faults.compact()  # the watch resumes into a 410: a relist
        apiserver.faults.close_watches()
        await eventually(lambda: cache.has_seen_own_write(CONFIG_MAPS, "doomed", ns))
        assert "doomed" not in {c["metadata"]["name"] for c in await cache.list(CONFIG_MAPS, ns)}


async def test_statistics_per_informer(apiserver: Cluster, client: Client) -> None:
    cache = Cache(client, namespace=apiserver.namespace)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        stats = cache.statistics()
    assert [s.resource for s in stats] == ["configmaps/v1"]
    assert stats[0].synced and stats[0].lists == 1 and stats[0].relists == 0


async def test_mappers_read_field_indexes_synchronously(apiserver: Cluster,
                                                        client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a", "node-1", app="x"), ns)
    await client.create(PODS, pod("b", "node-1", app="y"), ns)
    cache = Cache(client, namespace=ns)
    with pytest.raises(RuntimeError, match="no informer for pods"):
        cache.lookup(PODS, ns)
    cache.index_field(PODS, "spec.nodeName", by_node)
    async with running(cache):
        keys = cache.lookup_keys(PODS, ("spec.nodeName", "node-1"), namespace=ns)
        assert [k.name for k in keys] == ["a", "b"]
        assert cache.lookup_keys(PODS, ("spec.nodeName", "node-1"), namespace="other") == []
        found = cache.lookup(PODS, ns, field=("spec.nodeName", "node-1"),
                             label_selector={"matchLabels": {"app": "y"}})
        assert [o["metadata"]["name"] for o in found] == ["b"]
        listed = await cache.list(PODS, ns, label_selector={
            "matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]})
        assert [o["metadata"]["name"] for o in listed] == ["a"]


async def test_lookup_keys_with_a_limit_gives_the_first_keys(apiserver: Cluster,
                                                             client: Client) -> None:
    ns = apiserver.namespace
    for name in ("c", "a", "b"):
        await client.create(PODS, pod(name, "node-1"), ns)
    cache = Cache(client, namespace=ns)
    cache.index_field(PODS, "spec.nodeName", by_node)
    async with running(cache):
        first = cache.lookup_keys(PODS, ("spec.nodeName", "node-1"), limit=2)
        assert [k.name for k in first] == ["a", "b"]
        scoped = cache.lookup_keys(PODS, ("spec.nodeName", "node-1"), namespace=ns, limit=1)
        assert [k.name for k in scoped] == ["a"]


async def test_own_writes_are_tracked_only_for_watched_resources(apiserver: Cluster,
                                                                 client: Client) -> None:
    """Writes to kinds the cache never watches (Events, say) would only wait out
    their timeout and log it; the benchmark's claim storm showed thousands."""
    ns = apiserver.namespace
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    await client.create(Resource("", "v1", "Secret", "secrets"), {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, ns)
    assert len(cache.own_writes) == 0
    await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                     "metadata": {"name": "c"}}, ns)
    assert len(cache.own_writes) == 1
