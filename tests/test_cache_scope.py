"""Cache scopes: per-resource namespaces, label and field selectors, as controller-runtime's
cache.Options {DefaultNamespaces, ByObject}."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import anyio
import pytest
from cache_helpers import running, sync_timeout

from reconcilekit import (
    ALL_NAMESPACES,
    Cache,
    CacheScope,
    CacheScopeError,
    Client,
    EventHandler,
    LabelSelector,
    Manager,
    NotFound,
    ObjectKey,
    Reconciler,
    Request,
    Resource,
    Result,
    SelectorError,
)
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES, NODES, SECRETS
from reconcilekit.testing import Cluster, FakeClock, eventually

WEB = CacheScope(label_selector="app=web")
# Every namespace holds one (the API server's, or kube-controller-manager's, publisher).
ROOT_CA = "kube-root-ca.crt"


def cm(name: str, *, owner: str = "", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels}, "data": {"owner": owner}}


def by_owner(obj: Mapping[str, Any]) -> list[str]:
    owner = (obj.get("data") or {}).get("owner")
    return [owner] if owner else []


@pytest.fixture
async def spaces(apiserver: Cluster, client: Client) -> AsyncIterator[tuple[str, str, str]]:
    """Three namespaces of the test's own: tests scope the first two and leave the third out."""
    base = apiserver.namespace
    extra = (f"{base}-b", f"{base}-c")
    for name in extra:
        await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": name}})
    yield base, *extra
    for name in extra:
        with contextlib.suppress(NotFound):
            await client.delete(NAMESPACES, name)


class Seen:
    """What an event handler was told, as (event, namespace, name)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def handler(self) -> EventHandler:
        def note(event: str) -> Any:
            def record(*objs: dict[str, Any]) -> None:
                meta = objs[-1]["metadata"]
                if meta["name"] != ROOT_CA:
                    self.events.append((event, meta.get("namespace", ""), meta["name"]))
            return record
        return EventHandler(note("add"), note("update"), note("delete"))

    def namespaces(self) -> set[str]:
        return {ns for _, ns, _ in self.events}

    def has(self, event: str, namespace: str, name: str) -> bool:
        return (event, namespace, name) in self.events


def keys(items: Iterable[ObjectKey]) -> list[tuple[str, str]]:
    """(namespace, name) of each key, leaving out the namespaces' own root CA ConfigMap."""
    return [(k.namespace, k.name) for k in items if k.name != ROOT_CA]


def names(objects: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    return keys(ObjectKey(o["metadata"].get("namespace", ""), o["metadata"]["name"])
                for o in objects)


# -- namespaces ---------------------------------------------------------------------------


async def test_only_objects_in_the_scoped_namespaces_reach_the_store_and_handlers(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, c = spaces
    for ns in spaces:
        await client.create(CONFIG_MAPS, cm("before"), ns)
    cache = Cache(client, default_namespaces={a, b})
    seen = Seen()
    cache.add_handler(CONFIG_MAPS, seen.handler())
    informer = cache.informer_for(CONFIG_MAPS)
    assert [w.namespace for w in informer.watchers] == sorted([a, b])  # one list+watch each
    async with running(cache):
        assert keys(sorted(informer.store)) == sorted([(a, "before"), (b, "before")])
        for ns in (c, a, b):  # the one outside first: it would have arrived by the others
            await client.create(CONFIG_MAPS, cm("after"), ns)
        await eventually(lambda: seen.has("add", a, "after") and seen.has("add", b, "after"))
        await client.delete(CONFIG_MAPS, "before", c)
        await client.delete(CONFIG_MAPS, "before", a)
        await eventually(lambda: seen.has("delete", a, "before"))
        assert seen.namespaces() == {a, b}
        assert c not in {k.namespace for k in informer.store}
        [stats] = cache.statistics()
    assert stats.resource == "configmaps/v1" and stats.synced and stats.watching
    assert stats.lists == 2 and stats.relists == 0 and stats.objects == len(informer.store)


async def test_reads_and_field_indexes_span_every_scoped_namespace(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    for ns in spaces:
        await client.create(CONFIG_MAPS, cm("x", owner="alice"), ns)
        await client.create(CONFIG_MAPS, cm("y", owner="bob"), ns)
    cache = Cache(client, default_namespaces={a, b})
    cache.index_field(CONFIG_MAPS, "data.owner", by_owner)
    async with running(cache):
        assert names(await cache.list(CONFIG_MAPS)) == \
            sorted([(a, "x"), (a, "y"), (b, "x"), (b, "y")])
        assert names(await cache.list(CONFIG_MAPS, b)) == [(b, "x"), (b, "y")]
        assert (await cache.get(CONFIG_MAPS, "y", b))["data"] == {"owner": "bob"}
        alice = await cache.list(CONFIG_MAPS, field=("data.owner", "alice"))
        assert {o["metadata"]["namespace"] for o in alice} == {a, b}
        assert keys(cache.lookup_keys(CONFIG_MAPS, ("data.owner", "bob"))) == \
            sorted([(a, "y"), (b, "y")])
        assert keys(cache.lookup_keys(CONFIG_MAPS, ("data.owner", "bob"), limit=1)) == \
            [min((a, "y"), (b, "y"))]
        assert keys(cache.lookup_keys(CONFIG_MAPS, ("data.owner", "bob"), namespace=b)) == \
            [(b, "y")]
        found = cache.lookup(CONFIG_MAPS, a, field=("data.owner", "alice"))
        assert [o["metadata"]["name"] for o in found] == ["x"]


async def test_a_read_outside_the_scope_raises_naming_the_resource_and_the_scope(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, c = spaces
    await client.create(CONFIG_MAPS, cm("x", owner="alice"), c)
    cache = Cache(client, default_namespaces={a, b})
    cache.index_field(CONFIG_MAPS, "data.owner", by_owner)
    outside = rf"configmaps/v1 in namespace '{c}' is outside .*namespaces {a}, {b}"
    async with running(cache):
        with pytest.raises(CacheScopeError, match=outside) as raised:
            await cache.get(CONFIG_MAPS, "x", c)
        assert raised.value.resource == CONFIG_MAPS
        assert raised.value.scope == cache.scope_of(CONFIG_MAPS)
        with pytest.raises(CacheScopeError, match=outside):
            await cache.list(CONFIG_MAPS, c)
        with pytest.raises(CacheScopeError, match=outside):
            cache.lookup(CONFIG_MAPS, c)
        with pytest.raises(CacheScopeError, match=outside):
            cache.lookup_keys(CONFIG_MAPS, ("data.owner", "alice"), namespace=c)
        # Cluster-scoped resources are cached whole, whatever the default namespaces.
        assert any(o["metadata"]["name"] == c for o in await cache.list(NAMESPACES))


async def test_the_older_namespace_argument_is_a_one_namespace_scope(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    await client.create(CONFIG_MAPS, cm("x"), a)
    await client.create(CONFIG_MAPS, cm("x"), b)
    cache = Cache(client, namespace=a)
    assert cache.scope_of(CONFIG_MAPS) == CacheScope(namespaces={a})
    informer = cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        assert keys(informer.store) == [(a, "x")]
        assert await cache.list(CONFIG_MAPS, b) == []  # as it always answered


async def test_own_writes_are_tracked_only_inside_the_scope(
        client: Client, spaces: tuple[str, str, str]) -> None:
    """A write the cache can never observe would only wait out its timeout."""
    a, b, c = spaces
    cache = Cache(client, default_namespaces={a, b})
    cache.informer_for(CONFIG_MAPS)
    await client.create(CONFIG_MAPS, cm("x"), c)
    assert len(cache.own_writes) == 0
    await client.create(CONFIG_MAPS, cm("x"), b)
    assert len(cache.own_writes) == 1


@pytest.mark.in_process_only
async def test_a_relist_of_one_namespace_leaves_the_others_alone(
        apiserver: Cluster, client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    await client.create(CONFIG_MAPS, cm("x"), a)
    await client.create(CONFIG_MAPS, cm("y"), b)
    cache = Cache(client, default_namespaces={a, b})
    seen = Seen()
    cache.add_handler(CONFIG_MAPS, seen.handler())
    informer = cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        apiserver.faults.drop_events("configmaps")
        await client.delete(CONFIG_MAPS, "x", a)  # its event is lost: only a relist shows it
        apiserver.faults.compact()
        apiserver.faults.close_watches("configmaps")  # resuming gets 410: both relist
        await eventually(lambda: cache.statistics()[0].relists == 2)
        await eventually(lambda: seen.has("delete", a, "x"))
        assert keys(sorted(informer.store)) == [(b, "y")]
        assert sorted(seen.events) == [("add", a, "x"), ("add", b, "y"), ("delete", a, "x")]


@pytest.mark.in_process_only
async def test_sync_waits_for_every_namespace_and_names_the_one_failing(
        apiserver: Cluster, client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    clock = FakeClock()
    apiserver.faults.fail_next(status=403, verb="list", resource="configmaps", namespace=b)
    cache = Cache(client, default_namespaces={a, b}, clock=clock)
    informer = cache.informer_for(CONFIG_MAPS)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await eventually(lambda: informer.statistics().last_error is not None)
        stats = informer.statistics()
        assert not stats.synced and not stats.watching
        assert stats.last_error is not None and stats.last_error.startswith(f"namespace {b}: ")
        assert "403" in stats.last_error
        synced = anyio.Event()

        async def wait() -> None:
            await cache.wait_for_sync(60)
            synced.set()

        tg.start_soon(wait)
        await clock.settle()
        assert not synced.is_set()  # a has listed, b has not
        backoff = min(d for d in clock.deadlines() if d < 60)
        clock.advance(backoff)  # b's retry lists
        await eventually(synced.is_set)
        tg.cancel_scope.cancel()
    assert informer.statistics().last_error is None


# -- selectors -----------------------------------------------------------------------------


async def test_a_label_selector_is_sent_to_the_server_and_leaving_it_is_a_delete(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, _, _ = spaces
    await client.create(CONFIG_MAPS, cm("web", app="web"), a)
    await client.create(CONFIG_MAPS, cm("db", app="db"), a)
    cache = Cache(client, default_namespaces={a}, scopes={CONFIG_MAPS: WEB})
    seen = Seen()
    cache.add_handler(CONFIG_MAPS, seen.handler())
    informer = cache.informer_for(CONFIG_MAPS)
    assert informer.watcher.label_selector == "app=web"  # on every list and watch
    # One scope per resource: its metadata-only informer has it too.
    assert cache.informer_for(CONFIG_MAPS, metadata=True).watcher.label_selector == "app=web"
    async with running(cache):
        assert keys(informer.store) == [(a, "web")]
        with pytest.raises(NotFound):
            await cache.get(CONFIG_MAPS, "db", a)
        # The informer filters nothing itself: a delete for a relabelled object can only
        # come from a server that applies the selector.
        await client.patch(CONFIG_MAPS, "web", {"metadata": {"labels": {"app": "db"}}}, a)
        await eventually(lambda: seen.has("delete", a, "web"))
        assert keys(informer.store) == []
        await client.patch(CONFIG_MAPS, "db", {"metadata": {"labels": {"app": "web"}}}, a)
        await eventually(lambda: seen.has("add", a, "db"))
    assert seen.events == [("add", a, "web"), ("delete", a, "web"), ("add", a, "db")]


async def test_a_field_selector_is_sent_to_the_server(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    for name in ("keep", "drop"):
        await client.create(CONFIG_MAPS, cm(name), a)
        await client.create(CONFIG_MAPS, cm(name), b)
    cache = Cache(client, scopes={
        CONFIG_MAPS: CacheScope(namespaces={a}, field_selector="metadata.name=keep")})
    seen = Seen()
    cache.add_handler(CONFIG_MAPS, seen.handler())
    async with running(cache):
        await client.patch(CONFIG_MAPS, "drop", {"data": {"v": "1"}}, a)
        await client.patch(CONFIG_MAPS, "keep", {"data": {"v": "1"}}, a)
        await eventually(lambda: seen.has("update", a, "keep"))
        assert keys(cache.informer_for(CONFIG_MAPS).store) == [(a, "keep")]
    assert seen.events == [("add", a, "keep"), ("update", a, "keep")]


async def test_a_field_the_server_does_not_support_fails_sync_naming_it(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, _ = spaces
    clock = FakeClock()
    cache = Cache(client, default_namespaces={a, b}, clock=clock,
                  scopes={CONFIG_MAPS: CacheScope(field_selector="data.owner=alice")})
    informer = cache.informer_for(CONFIG_MAPS)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await eventually(
            lambda: (informer.statistics().last_error or "").count("namespace ") == 2)
        err = await sync_timeout(cache, clock)
        tg.cancel_scope.cancel()
    assert err.resources == ["configmaps/v1"]
    message = str(err)
    assert "data.owner" in message and f"namespace {a}: " in message
    assert f"namespace {b}: " in message


# -- resolution, bad input, conflicts -----------------------------------------------------


async def test_scopes_resolve_against_the_default_namespaces(client: Client) -> None:
    cache = Cache(client, default_namespaces={"team-a", "team-b"}, scopes={
        SECRETS: CacheScope(label_selector="app=web"),
        CONFIG_MAPS: CacheScope(namespaces={ALL_NAMESPACES}),
    })
    pods = Resource("", "v1", "Pod", "pods")
    assert cache.scope_of(pods) == CacheScope(namespaces={"team-a", "team-b"})
    assert cache.scope_of(SECRETS) == CacheScope(namespaces={"team-a", "team-b"},
                                                 label_selector="app=web")
    assert cache.scope_of(CONFIG_MAPS).all_namespaces
    assert cache.scope_of(NODES).all_namespaces  # cluster-scoped: always whole
    assert [w.namespace for w in cache.informer_for(CONFIG_MAPS).watchers] == [None]
    assert [w.namespace for w in cache.informer_for(pods).watchers] == ["team-a", "team-b"]
    assert Cache(client).scope_of(pods).all_namespaces
    assert str(cache.scope_of(SECRETS)) == "namespaces team-a, team-b; labels app=web"
    # The same selection in another spelling is the same scope.
    assert CacheScope(label_selector={"matchLabels": {"app": "web"}}) == WEB
    assert CacheScope(label_selector="", field_selector="") == CacheScope()


@pytest.mark.parametrize(("options", "error", "message"), [
    ({"label_selector": "app in (web"}, SelectorError, "invalid label_selector 'app in"),
    ({"label_selector": "Bad Key=x"}, SelectorError, "invalid label_selector"),
    ({"label_selector": LabelSelector.nothing()}, SelectorError, "selects nothing"),
    ({"field_selector": "metadata.name"}, SelectorError, "invalid field_selector"),
    ({"namespaces": set()}, ValueError, "namespaces is empty"),
    ({"namespaces": "team-a"}, TypeError, "not the string 'team-a'"),
    ({"namespaces": {"Team_A"}}, ValueError, "invalid namespace 'Team_A'"),
    ({"namespaces": {ALL_NAMESPACES, "team-a"}}, ValueError, "cannot be combined"),
])
def test_a_bad_scope_is_refused_with_a_clear_error(
        options: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        CacheScope(**options)


async def test_a_bad_cache_configuration_is_refused_with_a_clear_error(client: Client) -> None:
    with pytest.raises(ValueError, match=r"nodes/v1 is cluster-scoped: .* cannot name namespaces"):
        Cache(client, scopes={NODES: CacheScope(namespaces={"team-a"})})
    with pytest.raises(ValueError, match="nodes/v1 is cluster-scoped"):
        Cache(client).require_scope(NODES, CacheScope(namespaces={"team-a"}))
    with pytest.raises(ValueError, match="namespace or default_namespaces, not both"):
        Cache(client, namespace="team-a", default_namespaces={"team-b"})
    with pytest.raises(ValueError, match="namespaces is empty"):
        Cache(client, default_namespaces=[])
    with pytest.raises(TypeError, match="scopes maps a Resource to a CacheScope"):
        Cache(client, scopes={CONFIG_MAPS: "app=web"})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="nodes/v1 is cluster-scoped"):
        Manager(client, http_addr=None,
                cache_scopes={NODES: CacheScope(namespaces={"team-a"})})


async def test_a_second_different_scope_of_a_resource_is_refused(client: Client) -> None:
    cache = Cache(client, default_namespaces={"team-a"})
    assert cache.require_scope(CONFIG_MAPS, WEB) == CacheScope(namespaces={"team-a"},
                                                              label_selector="app=web")
    cache.require_scope(CONFIG_MAPS, CacheScope(label_selector="app = web"))  # the same
    with pytest.raises(CacheScopeError, match=r"configmaps/v1 is already cached with scope "
                       r"\(namespace team-a; labels app=web\), fixed by an earlier "
                       r"require_scope.*cannot also be cached with scope \(namespace team-a; "
                       r"labels app=db\)"):
        cache.require_scope(CONFIG_MAPS, CacheScope(label_selector="app=db"))
    with pytest.raises(CacheScopeError, match=r"cannot also be cached with scope "
                       r"\(namespace team-a\)"):
        cache.require_scope(CONFIG_MAPS)  # the cache's own scope for it: no selector
    # An informer created before any scope was asked for fixes the default.
    cache.informer_for(SECRETS)
    with pytest.raises(CacheScopeError, match="fixed by its informer, created"):
        cache.require_scope(SECRETS, CacheScope(namespaces={"team-b"}))
    cache.require_scope(SECRETS, CacheScope(namespaces={"team-a"}))  # resolves the same
    assert cache.scope_of(SECRETS) == CacheScope(namespaces={"team-a"})


# -- builder and manager ------------------------------------------------------------------


class Recorder(Reconciler):
    def __init__(self) -> None:
        self.requests: set[tuple[str, str]] = set()

    async def reconcile(self, request: Request) -> Result:
        self.requests.add((request.namespace, request.name))
        return Result.done()


async def test_the_builder_asks_the_cache_for_its_scopes(client: Client) -> None:
    manager = Manager(client, http_addr=None, default_namespaces={"team-a"})
    secrets_scope = CacheScope(label_selector="owned-by=widgets")
    manager.controller().named("web").for_(CONFIG_MAPS, scope=WEB) \
        .owns(SECRETS, scope=secrets_scope).complete(Recorder())
    assert manager.cache.scope_of(CONFIG_MAPS) == CacheScope(namespaces={"team-a"},
                                                            label_selector="app=web")
    assert manager.cache.informer_for(SECRETS).watcher.label_selector == "owned-by=widgets"
    # Another controller asking for the same scope shares the informer.
    manager.controller().named("same").watches(
        CONFIG_MAPS, lambda obj: [], scope=WEB).for_(SECRETS, scope=secrets_scope) \
        .complete(Recorder())
    assert len(manager.cache.statistics()) == 2
    # One asking for none means the manager's own scope for it, which differs: refused,
    # and the controller is not created.
    with pytest.raises(CacheScopeError, match="configmaps/v1 is already cached with scope"):
        manager.controller().named("all").for_(CONFIG_MAPS).complete(Recorder())
    assert [c.name for c in manager.controllers] == ["web", "same"]


async def test_the_builder_refuses_conflicting_scopes_in_either_order(client: Client) -> None:
    first = Manager(client, http_addr=None)
    first.controller().named("all").for_(CONFIG_MAPS).complete(Recorder())
    with pytest.raises(CacheScopeError, match=r"scope \(all namespaces\), fixed by an "
                       r"earlier require_scope.*scope \(all namespaces; labels app=web\)"):
        first.controller().named("web").for_(CONFIG_MAPS, scope=WEB).complete(Recorder())
    second = Manager(client, http_addr=None)
    second.controller().named("web").for_(CONFIG_MAPS, scope=WEB).complete(Recorder())
    with pytest.raises(CacheScopeError, match=r"scope \(all namespaces; labels app=web\), "
                       r"fixed by an earlier require_scope.*scope \(all namespaces\)"):
        second.controller().named("all").owns(CONFIG_MAPS).for_(SECRETS).complete(Recorder())
    # A scope set on the manager is what a controller without one asks for.
    third = Manager(client, http_addr=None, cache_scopes={CONFIG_MAPS: WEB})
    third.controller().named("web").for_(CONFIG_MAPS, scope=WEB).complete(Recorder())
    third.controller().named("plain").for_(CONFIG_MAPS).complete(Recorder())
    with pytest.raises(CacheScopeError, match="fixed by the cache's scopes"):
        third.controller().named("db").for_(CONFIG_MAPS, scope=CacheScope(
            label_selector="app=db")).complete(Recorder())


async def test_a_manager_reconciles_and_caches_only_its_scopes(
        client: Client, spaces: tuple[str, str, str]) -> None:
    a, b, c = spaces
    for ns in spaces:
        await client.create(CONFIG_MAPS, cm("web", app="web"), ns)
        await client.create(CONFIG_MAPS, cm("db", app="db"), ns)
    manager = Manager(client, http_addr=None, default_namespaces={a, b},
                      cache_scopes={CONFIG_MAPS: WEB})
    recorder = Recorder()
    manager.controller().for_(CONFIG_MAPS).complete(recorder)
    async with manager:
        await eventually(lambda: recorder.requests == {(a, "web"), (b, "web")})
        await client.create(CONFIG_MAPS, cm("late", app="web"), c)
        await client.create(CONFIG_MAPS, cm("late", app="db"), a)
        await client.create(CONFIG_MAPS, cm("late", app="web"), b)
        await eventually(lambda: (b, "late") in recorder.requests)
        assert recorder.requests == {(a, "web"), (b, "web"), (b, "late")}
        objects = manager.registry.get_sample_value(
            "reconcilekit_cache_objects", {"resource": "configmaps/v1"})
        assert objects == 3
        assert manager.ready() == (True, "ok")
