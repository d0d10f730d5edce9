"""Informers that come and go: counted holds, a kind whose CRD comes later, controllers
added to and removed from a running manager, the memory budget, and what /readyz and the
metrics say about each informer.

On a real cluster the CRDs (group lifecycle.reconcilekit.dev) are deleted when the
session ends; the objects go with the test's namespace.
"""

from __future__ import annotations

import logging
from typing import Any, TypedDict

import aiohttp
import anyio
import pytest
from cache_helpers import running

from reconcilekit import (
    Cache,
    CacheMemoryBudgetExceeded,
    Client,
    Manager,
    Reconciler,
    Request,
    Resource,
    Result,
)
from reconcilekit.crd import CustomKind, Version, install_crds
from reconcilekit.kinds import CONFIG_MAPS, CUSTOM_RESOURCE_DEFINITIONS, SECRETS, ObjectMeta
from reconcilekit.testing import Cluster, FakeClock, eventually

GROUP = "lifecycle.reconcilekit.dev"


class Widget(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta


def _kind(kind: str, plural: str) -> CustomKind[Widget]:
    return CustomKind(group=GROUP, kind=kind, plural=plural,
                      versions=[Version("v1", Widget, storage=True)])


class Recording(Reconciler):
    """Records every key it reconciles."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def reconcile(self, request: Request) -> Result:
        self.seen.append(str(request))
        return Result.done()


def _config_map(name: str, size: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"blob": "x" * size}}


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("reconcilekit") and r.levelno >= logging.WARNING]


async def test_an_informer_stops_when_its_last_holder_lets_go(apiserver: Cluster,
                                                              client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, _config_map("a", 100), ns)
    cache = Cache(client, namespace=ns)
    first = cache.acquire(CONFIG_MAPS)
    second = cache.acquire(CONFIG_MAPS)
    informer = first.informer
    assert second.informer is informer
    async with running(cache):
        assert "a" in [o["metadata"]["name"] for o in await cache.list(CONFIG_MAPS, ns)]
        await eventually(lambda: informer.watchers[0].statistics().watching)
        await client.patch(CONFIG_MAPS, "a", {"data": {"more": "y"}}, ns)  # an own write
        first.release()
        first.release()  # idempotent: the second holder still holds it
        assert cache.informers() == [informer] and len(informer.store) >= 1

        second.release()
        assert cache.informers() == [] and cache.statistics() == []
        assert informer.stopped.is_set() and len(informer.store) == 0
        assert informer.store.nbytes == 0
        await eventually(lambda: not informer.watchers[0].statistics().watching)
        assert cache.has_seen_own_write(CONFIG_MAPS, "a", ns)  # nothing left to wait for

        # A read starts a new informer (the cache's own, for good), as a first read does.
        again = await cache.get(CONFIG_MAPS, "a", ns)
        assert again["data"] == {"blob": "x" * 100, "more": "y"}
        (renewed,) = cache.informers()
        assert renewed is not informer
        cache.acquire(CONFIG_MAPS).release()
        assert cache.informers() == [renewed]  # made without a hold: never stopped


async def test_a_controller_added_while_running_waits_quietly_for_its_crd_then_reconciles(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    gadgets = _kind("Gadget", "gadgets")
    apiserver.delete_at_end(CUSTOM_RESOURCE_DEFINITIONS.path(name=f"gadgets.{GROUP}"))
    caplog.set_level(logging.INFO, logger="reconcilekit")
    manager = Manager(client, namespace=ns, http_addr="127.0.0.1:0")
    first = Recording()
    manager.controller().named("configmaps").for_(CONFIG_MAPS).complete(first)
    late = Recording()
    async with manager:
        manager.controller().named("gadgets").for_(gadgets.resource).complete(late)
        (controller,) = [c for c in manager.controllers if c.name == "gadgets"]
        (informer,) = controller.watched
        await eventually(lambda: informer.statistics().waiting_for is not None)
        assert manager.ready() == (True, "ok")  # the manager is ready; the late one waits
        async with aiohttp.ClientSession() as http, http.get(
                f"http://127.0.0.1:{manager.http_port}/readyz?verbose") as resp:
            assert resp.status == 200
            detail = await resp.text()
        assert (f"[-]informer {gadgets.resource}: waiting for CustomResourceDefinition "
                f"gadgets.{GROUP} to be established and serve v1, 0 objects") in detail
        assert "[+]informer configmaps/v1: synced, " in detail
        assert "[-]controller gadgets: not started, 0 queued" in detail
        assert "[+]controller configmaps: running" in detail
        assert detail.endswith("readyz check passed\n")

        await install_crds(client, [gadgets])
        await client.create(gadgets.resource, {"metadata": {"name": "g1"}}, ns)
        await eventually(lambda: late.seen == [f"{ns}/g1"])
        assert controller.started.is_set() and informer.has_synced

    said = [r.getMessage() for r in caplog.records if r.name.startswith("reconcilekit")]
    resource = str(gadgets.resource)
    assert said.count(f"{resource}: not served by the API server; waiting for "
                      f"CustomResourceDefinition gadgets.{GROUP} to be established and "
                      "serve v1") == 1
    assert said.count(f"{resource}: served now; listing") == 1
    assert said.count("started controller gadgets") == 1
    assert _warnings(caplog) == []


async def test_removing_a_controller_stops_the_informers_only_it_held(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    caplog.set_level(logging.INFO, logger="reconcilekit")
    manager = Manager(client, namespace=ns, http_addr=None)
    both, config_maps_only = Recording(), Recording()
    manager.controller().named("both").for_(CONFIG_MAPS).owns(SECRETS).complete(both)
    manager.controller().named("cms").for_(CONFIG_MAPS).complete(config_maps_only)
    await client.create(SECRETS, {"metadata": {"name": "s"}, "stringData": {"k": "v"}}, ns)
    async with manager:
        resources = {s.resource for s in manager.cache.statistics()}
        assert resources == {"configmaps/v1", "secrets/v1"}
        await manager.remove("both")
        assert [c.name for c in manager.controllers] == ["cms"]
        assert {s.resource for s in manager.cache.statistics()} == {"configmaps/v1"}
        with pytest.raises(KeyError, match="no controller 'both'"):
            await manager.remove("both")

        await client.create(CONFIG_MAPS, _config_map("after"), ns)
        await eventually(lambda: f"{ns}/after" in config_maps_only.seen)
        assert f"{ns}/after" not in both.seen  # removed: it reconciles nothing more

        # added back while running: its Secrets informer starts again and syncs first
        again = Recording()
        manager.controller().named("both").for_(CONFIG_MAPS).owns(SECRETS).complete(again)
        await eventually(lambda: f"{ns}/after" in again.seen)
    said = [r.getMessage() for r in caplog.records if r.name.startswith("reconcilekit")]
    assert any(m.startswith("stopped the informer of secrets/v1: no user left (1 objects")
               for m in said), said
    assert "removed controller both" in said
    assert _warnings(caplog) == []


async def test_a_running_controller_watches_a_kind_for_a_while(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    manager = Manager(client, namespace=ns, http_addr=None)
    recording = Recording()
    controller = manager.controller().named("cms").for_(CONFIG_MAPS).complete(recording)
    async with manager:
        controller.watch(SECRETS, lambda obj: [Request(ns, "from-a-secret")])
        await client.create(SECRETS, {"metadata": {"name": "s"}}, ns)
        await eventually(lambda: f"{ns}/from-a-secret" in recording.seen)
        assert {s.resource for s in manager.cache.statistics()} == {"configmaps/v1",
                                                                     "secrets/v1"}
        assert controller.unwatch(SECRETS, metadata=True) == 0
        assert controller.unwatch(SECRETS) == 1
        assert {s.resource for s in manager.cache.statistics()} == {"configmaps/v1"}
        recording.seen.clear()
        await client.create(SECRETS, {"metadata": {"name": "t"}}, ns)
        await client.create(CONFIG_MAPS, _config_map("after"), ns)  # it still reconciles
        await eventually(lambda: f"{ns}/after" in recording.seen)
        assert f"{ns}/from-a-secret" not in recording.seen


async def test_the_memory_budget_refuses_a_new_informer_with_a_clear_error(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    for i in range(8):
        await client.create(CONFIG_MAPS, _config_map(f"cm-{i}", 20_000), ns)
    # Room for the ConfigMaps (about 160 kB of JSON), not for them twice over.
    cache = Cache(client, namespace=ns, memory_budget=250_000)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        held = cache.statistics()[0].bytes
        assert 160_000 < held < 250_000
        use = cache.acquire(CONFIG_MAPS, metadata=True)  # small: it fits
        await cache.list(CONFIG_MAPS, ns, metadata=True)
        use.release()
        for i in range(8):
            await client.create(SECRETS, {"metadata": {"name": f"s-{i}"},
                                          "stringData": {"blob": "y" * 20_000}}, ns)
        with pytest.raises(CacheMemoryBudgetExceeded) as refused:
            await cache.list(SECRETS, ns)
        assert refused.value.resource == SECRETS and refused.value.budget == 250_000
        assert str(refused.value).startswith(
            "cannot cache secrets/v1: the cache's memory budget is 0.2 MiB and it would hold ")
        assert "configmaps/v1 0.2 MiB" in str(refused.value)
        assert "Raise the budget (Manager(cache_memory_budget=...))" in str(refused.value)
        # nothing of it is kept, and the ConfigMaps are untouched
        assert {s.resource for s in cache.statistics()} == {"configmaps/v1"}
        assert cache.statistics()[0].bytes == held

        # At the budget already, a new informer is refused at once.
        for i in range(8, 14):
            await client.create(CONFIG_MAPS, _config_map(f"cm-{i}", 20_000), ns)
        await eventually(lambda: cache.statistics()[0].bytes >= 250_000)
        with pytest.raises(CacheMemoryBudgetExceeded, match="cannot cache secrets/v1"):
            cache.acquire(SECRETS)
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("cannot cache secrets/v1")


async def test_a_manager_whose_informer_is_refused_says_so_and_exits(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for i in range(4):
        await client.create(CONFIG_MAPS, _config_map(f"cm-{i}", 20_000), ns)
    manager = Manager(client, namespace=ns, http_addr=None, cache_memory_budget=50_000)
    manager.controller().for_(CONFIG_MAPS).complete(Recording())
    with pytest.raises(CacheMemoryBudgetExceeded, match="cannot cache configmaps/v1"):
        await manager.run()


async def test_a_resource_with_no_crd_to_wait_for_is_polled_quietly(
        client: Client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="reconcilekit")
    missing = Resource("", "v1", "Gizmo", "gizmos", namespaced=True)
    clock = FakeClock()
    cache = Cache(client, clock=clock)
    informer = cache.informer_for(missing)

    def lists() -> int:
        return client.statistics().requests.get(("list", "gizmos"), 0)

    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await eventually(lambda: informer.statistics().waiting_for is not None)
        assert informer.statistics().waiting_for == "the API server to serve it"
        for count in range(lists() + 1, lists() + 4):  # each pause ends in one more list
            await eventually(lambda: bool(clock.deadlines()))
            clock.advance(clock.deadlines()[0] - clock.monotonic())
            await eventually(lambda n=count: lists() == n)
        tg.cancel_scope.cancel()
    assert not informer.has_synced
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    assert said == ["gizmos/v1: not served by the API server; waiting for the API server "
                    "to serve it"]


async def test_a_controller_added_while_the_caches_sync_starts_once_its_own_informers_synced(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """The manager starts the controllers whose informers synced; one added while it
    waited, watching a kind still not served, waits for that kind instead of starting
    on an empty cache."""
    ns = apiserver.namespace
    sprockets, cogs = _kind("Sprocket", "sprockets"), _kind("Cog", "cogs")
    for kind in (sprockets, cogs):
        apiserver.delete_at_end(CUSTOM_RESOURCE_DEFINITIONS.path(name=f"{kind.plural}.{GROUP}"))
    caplog.set_level(logging.INFO, logger="reconcilekit")
    manager = Manager(client, namespace=ns, http_addr="127.0.0.1:0")
    first, late = Recording(), Recording()
    manager.controller().named("sprockets").for_(sprockets.resource).complete(first)
    (early,) = manager.controllers
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.start)
        (waiting,) = early.watched
        await eventually(lambda: waiting.statistics().waiting_for is not None)
        manager.controller().named("cogs").for_(cogs.resource).complete(late)
        (added,) = [c for c in manager.controllers if c.name == "cogs"]
        (cog_informer,) = added.watched

        await install_crds(client, [sprockets])  # the caches the manager waited for sync
    try:
        await early.started.wait()
        assert not cog_informer.has_synced and not added.started.is_set()
        await client.create(sprockets.resource, {"metadata": {"name": "s1"}}, ns)
        await eventually(lambda: first.seen == [f"{ns}/s1"])
        assert not added.started.is_set()  # still waiting for its own kind

        await install_crds(client, [cogs])
        await client.create(cogs.resource, {"metadata": {"name": "c1"}}, ns)
        await eventually(lambda: late.seen == [f"{ns}/c1"])
        assert added.started.is_set() and cog_informer.has_synced
    finally:
        await manager.shutdown()
    said = [r.getMessage() for r in caplog.records if r.name.startswith("reconcilekit")]
    assert said.count("started 1 controller(s)") == 1
    assert said.count(f"controller cogs: starting once {cogs.resource} synced") == 1
    assert said.count("started controller cogs") == 1
    assert _warnings(caplog) == []
