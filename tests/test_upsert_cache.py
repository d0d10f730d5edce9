"""create_or_update and create_or_patch read through a cache that holds the kind, and send
a GET when none does, when it has not seen our last write, or to retry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from reconcilekit import Cache, CacheScope, Client, RequestRecord
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.testing import Cluster, eventually
from reconcilekit.upsert import Outcome, create_or_patch, create_or_update


@asynccontextmanager
async def running(cache: Cache) -> AsyncIterator[Cache]:
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(30)
        yield cache
        tg.cancel_scope.cancel()


@pytest.fixture
def sent(client: Client) -> list[tuple[str, str]]:
    """The (verb, resource) of every request ``client`` sends from now on."""
    log: list[tuple[str, str]] = []

    def record(request: RequestRecord) -> None:
        if request.verb not in ("list", "watch"):
            log.append((request.verb, request.resource))

    client.add_request_observer(record)
    return log


def color(value: str) -> Any:
    def mutate(cm: dict[str, Any]) -> None:
        cm.setdefault("data", {})["color"] = value
    return mutate


async def seen(cache: Cache, name: str, ns: str, value: str) -> bool:
    try:
        got = await cache.get(CONFIG_MAPS, name, ns)
    except Exception:
        return False
    return (got.get("data") or {}).get("color") == value


async def test_a_cached_kind_is_read_from_the_cache_not_with_a_get(
        apiserver: Cluster, client: Client, sent: list[tuple[str, str]]) -> None:
    ns = apiserver.namespace
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        outcome, _ = await create_or_update(client, CONFIG_MAPS, "cfg", ns, color("blue"))
        assert outcome is Outcome.CREATED and sent == [("create", "configmaps")]
        await eventually(lambda: cache.has_seen_own_write(CONFIG_MAPS, "cfg", ns),
                         what="the cache saw our create")
        sent.clear()
        outcome, _ = await create_or_update(client, CONFIG_MAPS, "cfg", ns, color("blue"))
        assert outcome is Outcome.UNCHANGED and sent == []  # not even a read
        outcome, stored = await create_or_patch(client, CONFIG_MAPS, "cfg", ns, color("red"))
        assert outcome is Outcome.UPDATED and stored["data"] == {"color": "red"}
        assert sent == [("patch", "configmaps")]
        await eventually(lambda: seen(cache, "cfg", ns, "red"), what="the cache saw red")
        sent.clear()
        await create_or_update(client, CONFIG_MAPS, "cfg", ns, color("red"),
                               read_through_cache=False)
        assert sent == [("get", "configmaps")]


async def test_a_cache_sharing_its_reads_still_gives_upsert_a_copy_to_mutate(
        apiserver: Cluster, client: Client, sent: list[tuple[str, str]]) -> None:
    """With ``shared_reads`` on, the read-then-write helpers still mutate a copy: the
    cache's object keeps what the server has (the mutation detector, on under the pytest
    plugin, would fail this test otherwise)."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "cfg"}, "data": {"color": "blue"}}, ns)
    cache = Cache(client, namespace=ns, shared_reads=True)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        shared = await cache.get(CONFIG_MAPS, "cfg", ns)
        sent.clear()
        outcome, stored = await create_or_update(client, CONFIG_MAPS, "cfg", ns, color("red"))
        assert outcome is Outcome.UPDATED and stored["data"] == {"color": "red"}
        assert sent == [("update", "configmaps")]  # read from the cache
        assert shared["data"] == {"color": "blue"}


async def test_a_kind_the_cache_does_not_hold_is_read_with_a_get(
        apiserver: Cluster, client: Client, sent: list[tuple[str, str]]) -> None:
    ns = apiserver.namespace
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    cache.informer_for(SECRETS, metadata=True)  # metadata alone cannot be mutated
    async with running(cache):
        for resource in (SECRETS, CONFIG_MAPS):
            await client.create(resource, {"metadata": {"name": "x"}, "data": {}}, ns)
        sent.clear()
        await create_or_update(client, SECRETS, "x", ns, lambda s: None)
        assert sent == [("get", "secrets")]
        assert not cache.caches(CONFIG_MAPS, "elsewhere")  # outside its scope
    sent.clear()
    await create_or_update(client, CONFIG_MAPS, "x", ns, lambda s: None)
    assert sent == [("get", "configmaps")]  # a stopped cache answers nothing


async def test_an_object_the_cache_cannot_see_is_updated_after_one_refused_create(
        apiserver: Cluster, client: Client, sent: list[tuple[str, str]]) -> None:
    """The cache holds only labelled ConfigMaps: to it the object does not exist, the create
    is refused with AlreadyExists, and the retry reads it from the API server. The cache
    never sees our update of it, so the next read is a GET too: never older than our write."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "hidden"}, "data": {"a": "1"}}, ns)
    cache = Cache(client, namespace=ns,
                  scopes={CONFIG_MAPS: CacheScope(label_selector="shown=yes")})
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        sent.clear()
        outcome, stored = await create_or_update(client, CONFIG_MAPS, "hidden", ns,
                                                 color("green"))
        assert outcome is Outcome.UPDATED
        assert stored["data"] == {"a": "1", "color": "green"}
        assert sent == [("create", "configmaps"), ("get", "configmaps"),
                        ("update", "configmaps")]
        sent.clear()
        outcome, _ = await create_or_patch(client, CONFIG_MAPS, "hidden", ns, color("green"))
        assert outcome is Outcome.UNCHANGED and sent == [("get", "configmaps")]


@pytest.mark.in_process_only
async def test_a_cache_that_cannot_sync_is_not_waited_for(
        apiserver: Cluster, client: Client, sent: list[tuple[str, str]]) -> None:
    """The cache's list of ConfigMaps is refused (403) for as long as the test runs: the
    read is a GET, never a wait for a sync that does not come."""
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "x"}, "data": {}}, ns)
    apiserver.faults.fail_next(10_000, status=403, verb="list", resource="configmaps")
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        sent.clear()
        with anyio.fail_after(30):
            outcome, _ = await create_or_update(client, CONFIG_MAPS, "x", ns, color("blue"))
        assert outcome is Outcome.UPDATED
        assert ("get", "configmaps") in sent and not cache.caches(CONFIG_MAPS, ns)
        tg.cancel_scope.cancel()
