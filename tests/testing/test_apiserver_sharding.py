"""Sharded list and watch (KEP-5866, ``shardSelector``) as kube-apiserver v1.36 serves it.

Sources: k8s.io/apiserver/pkg/sharding/parser.go (the grammar and its errors),
storage/cacher's GetList and watch filter (a page counts matching objects
only; no remainingItemCount for a filtered list; events filtered by the
object), meta/v1 ListMeta.shardInfo ("its presence on a list response
indicates the list is a filtered subset"), test/integration/apiserver and
test/e2e sharding tests (echo, disjoint completeness, pages, namespace
shards, ADDED/MODIFIED/DELETED partitioned, the gate off).

kube-apiserver v1.28 (the control plane of CI's second pass) has no such
parameter and ignores it: every object, no ``shardInfo``. That difference is
the signal a client falls back on (it then filters itself); the first test
checks each server gives it. The others need the in-process server, which
serves v1.36's behaviour with the ShardedListAndWatch gate on and ignores the
parameter with it off.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest

from reconcilekit import Client
from reconcilekit._foundations.shard_selector import KEY_SPACE
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES
from reconcilekit.sharding import ShardSelector, fnv1a64
from reconcilekit.testing import APIServer, Cluster
from reconcilekit.testing._pytest_plugin import backend

from k8s_objects import configmap, widget

UID, NS = "object.metadata.uid", "object.metadata.namespace"
LOWER = ShardSelector.of(UID, [(0, KEY_SPACE // 2)])
UPPER = ShardSelector.of(UID, [(KEY_SPACE // 2, KEY_SPACE)])
QUARTERS = [ShardSelector.of(UID, [(i << 62, (i + 1) << 62)]) for i in range(4)]
LABEL = "shard-test"

needs_sharding = pytest.mark.skipif(
    backend() != "in-process",
    reason="kube-apiserver v1.28 has no sharded list and watch (KEP-5866, alpha in v1.36)")


async def _configmaps(client: Client, namespace: str, n: int, prefix: str = "cm"
                      ) -> list[dict[str, Any]]:
    return [await client.create(CONFIG_MAPS, configmap(f"{prefix}-{i:02}", labels={LABEL: "y"}),
                                namespace) for i in range(n)]


def _names(objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs)


def _in(selector: ShardSelector, objs: list[dict[str, Any]]) -> list[str]:
    return _names([o for o in objs if selector.matches(o)])


async def _events(stream: AsyncIterator[dict[str, Any]], n: int) -> list[tuple[str, str]]:
    """The next ``n`` events as (type, name), BOOKMARKs left out."""
    got: list[tuple[str, str]] = []
    async with asyncio.timeout(10):
        while len(got) < n:
            event = await anext(stream)
            if event["type"] != "BOOKMARK":
                got.append((event["type"], event["object"]["metadata"]["name"]))
    return got


async def test_a_client_sees_the_shard_with_shard_info_or_everything_without(
        apiserver: Cluster, client: Client) -> None:
    """What a client sees is its signal: shardInfo means the server filtered (v1.36 with
    the gate on), none means it did not (v1.28 here), and the client filters itself."""
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 12)
    listed = await client.list(CONFIG_MAPS, ns, label_selector={LABEL: "y"},
                               shard_selector=LOWER)
    paged = await client.list_all(CONFIG_MAPS, ns, label_selector={LABEL: "y"}, limit=5,
                                  shard_selector=str(LOWER))
    iterated = [o async for o in client.iter_list(CONFIG_MAPS, ns, label_selector={LABEL: "y"},
                                                  limit=5, shard_selector=LOWER)]
    rv = listed["metadata"]["resourceVersion"]
    response = await client.open_stream(CONFIG_MAPS.path(ns), {
        "watch": "true", "resourceVersion": rv, "labelSelector": f"{LABEL}=y"},
        shard_selector=LOWER)
    try:
        more = await _configmaps(client, ns, 8, prefix="w")
        # v1.36 with ShardedListAndWatch: the shard; v1.28 does not know the parameter
        expected = _in(LOWER, more) if apiserver.in_process else _names(more)
        watched: list[str] = []
        async with asyncio.timeout(10):
            while len(watched) < len(expected):
                watched.append(orjson.loads(await response.content.readline())
                               ["object"]["metadata"]["name"])
    finally:
        response.release()
    assert sorted(watched) == expected
    if apiserver.in_process:
        assert listed["metadata"]["shardInfo"] == {"selector": str(LOWER)}
        assert paged["metadata"]["shardInfo"] == {"selector": str(LOWER)}
        wanted = _in(LOWER, made)
        assert 0 < len(wanted) < len(made)
    else:
        assert "shardInfo" not in listed["metadata"]
        assert "shardInfo" not in paged["metadata"]
        wanted = _names(made)
    assert _names(listed["items"]) == _names(paged["items"]) == _names(iterated) == wanted


@needs_sharding
async def test_uid_shards_partition_a_list_and_each_says_which_shard_it_is(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 24)
    seen: list[str] = []
    for quarter in QUARTERS:
        got = await apiserver.request("GET", CONFIG_MAPS.path(ns), params={
            "shardSelector": str(quarter), "labelSelector": f"{LABEL}=y"})
        assert got.status == 200, got
        assert got.body["metadata"]["shardInfo"] == {"selector": str(quarter)}
        assert _names(got.body["items"]) == _in(quarter, made)
        seen += _names(got.body["items"])
    assert sorted(seen) == _names(made)  # disjoint, and complete
    whole = await apiserver.request("GET", CONFIG_MAPS.path(ns))
    assert "shardInfo" not in whole.body["metadata"]  # no selector: the whole collection


@needs_sharding
async def test_a_union_selects_every_range_and_is_echoed_as_written(
        apiserver: Cluster, client: Client) -> None:
    # The echo is the parsed selector's String(): the ranges in the order given, neither
    # sorted nor merged, each printed shardRange(<field>, '<start>', '<end>').
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 16)
    q = [str(s) for s in QUARTERS]
    sent = (f'shardRange( {UID},"0xc000000000000000", "0x10000000000000000" )||'
            f"({q[0]}) || {q[1]}")
    got = await apiserver.request("GET", CONFIG_MAPS.path(ns), params={
        "shardSelector": sent, "labelSelector": f"{LABEL}=y"})
    assert got.body["metadata"]["shardInfo"] == {"selector": f"{q[3]} || {q[0]} || {q[1]}"}
    union = ShardSelector.of(UID, [(0, 2 << 62), (3 << 62, KEY_SPACE)])
    assert _names(got.body["items"]) == _in(union, made)
    assert ShardSelector.parse(sent) == union


@needs_sharding
async def test_pages_count_the_shards_objects_and_every_page_says_shard_info(
        apiserver: Cluster, client: Client) -> None:
    # storage's GetList: a page fills with matching objects only; remainingItemCount is
    # left out for a filtered list; the continue token holds no selector, so a page asked
    # for without one is the unfiltered rest.
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 20)
    path = CONFIG_MAPS.path(ns)
    params = {"shardSelector": str(LOWER), "limit": "3", "labelSelector": f"{LABEL}=y"}
    pages: list[list[str]] = []
    token = ""
    while True:
        got = await apiserver.request("GET", path, params=dict(params, **(
            {"continue": token} if token else {})))
        meta = got.body["metadata"]
        assert meta["shardInfo"] == {"selector": str(LOWER)}
        assert "remainingItemCount" not in meta
        pages.append(_names(got.body["items"]))
        token = meta.get("continue", "")
        if not token:
            break
    # (the last page may be empty: a full page continues while any object follows it)
    assert all(len(p) == 3 for p in pages[:-1]) and len(pages[-1]) <= 3
    assert [n for p in pages for n in p] == _in(LOWER, made)

    first = await apiserver.request("GET", path, params=params)
    rest = await apiserver.request("GET", path, params={
        "continue": first.body["metadata"]["continue"], "labelSelector": f"{LABEL}=y"})
    assert "shardInfo" not in rest.body["metadata"]
    last = first.body["items"][-1]["metadata"]["name"]
    assert _names(rest.body["items"]) == [n for n in _names(made) if n > last]


@needs_sharding
async def test_label_field_and_shard_selectors_all_apply(apiserver: Cluster,
                                                         client: Client) -> None:
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 12)
    await _configmaps(client, ns, 6, prefix="other")
    for obj in made[:6]:
        await client.patch(CONFIG_MAPS, obj["metadata"]["name"],
                           {"metadata": {"labels": {"half": "first"}}}, ns)
    chosen = made[2]["metadata"]["name"]
    got = await apiserver.request("GET", CONFIG_MAPS.path(ns), params={
        "shardSelector": str(LOWER), "labelSelector": "half=first"})
    assert _names(got.body["items"]) == _in(LOWER, made[:6])
    got = await apiserver.request("GET", CONFIG_MAPS.path(ns), params={
        "shardSelector": str(LOWER), "fieldSelector": f"metadata.name={chosen}"})
    assert _names(got.body["items"]) == _in(LOWER, made[2:3])
    assert got.body["metadata"]["shardInfo"] == {"selector": str(LOWER)}


@needs_sharding
async def test_a_namespace_shard_keeps_each_namespace_whole(apiserver: Cluster,
                                                            client: Client) -> None:
    namespaces = ["team-a", "team-b", "team-c"]
    made: list[dict[str, Any]] = []
    for ns in namespaces:
        await client.create(NAMESPACES,
                            {"metadata": {"name": ns}})
        made += await _configmaps(client, ns, 3, prefix=ns)
    key = fnv1a64("team-b")
    only_b = ShardSelector.of(NS, [(key, key + 1)])
    everything_else = ShardSelector.of(NS, [(0, key), (key + 1, KEY_SPACE)])
    got = await apiserver.request("GET", "/api/v1/configmaps", params={
        "shardSelector": str(only_b), "labelSelector": f"{LABEL}=y"})
    assert {o["metadata"]["namespace"] for o in got.body["items"]} == {"team-b"}
    assert len(got.body["items"]) == 3
    rest = await apiserver.request("GET", "/api/v1/configmaps", params={
        "shardSelector": str(everything_else), "labelSelector": f"{LABEL}=y"})
    assert rest.body["metadata"]["shardInfo"] == {"selector": str(everything_else)}
    assert {o["metadata"]["namespace"] for o in rest.body["items"]} == {"team-a", "team-c"}


@needs_sharding
async def test_every_resource_is_sharded_built_in_and_custom(
        apiserver: Cluster, client: Client, widgets: str, gadgets: str) -> None:
    ns = apiserver.namespace
    for i in range(6):
        await apiserver.request("POST", widgets, json=widget(f"w{i}"))
        await apiserver.request("POST", gadgets, json={
            "apiVersion": "test.reconcilekit.dev/v1", "kind": "Gadget",
            "metadata": {"name": f"g{i}"}})
        await client.create(NAMESPACES,
                            {"metadata": {"name": f"ns-{i}"}})
    for path in (widgets, gadgets, "/api/v1/namespaces", CONFIG_MAPS.path(ns)):
        everything = (await apiserver.request("GET", path)).body["items"]
        halves = []
        for half in (LOWER, UPPER):
            got = await apiserver.request("GET", path, params={"shardSelector": str(half)})
            assert got.body["metadata"]["shardInfo"] == {"selector": str(half)}, path
            assert _names(got.body["items"]) == _in(half, everything), path
            halves += _names(got.body["items"])
        assert sorted(halves) == _names(everything), path


@needs_sharding
async def test_a_watch_delivers_the_events_of_its_shards_objects_only(
        apiserver: Cluster, client: Client) -> None:
    # test/e2e sharding: complementary watches partition ADDED, MODIFIED and DELETED.
    # uid and namespace never change, so no object moves between shards.
    ns = apiserver.namespace
    path = CONFIG_MAPS.path(ns)
    rv = (await client.list(CONFIG_MAPS, ns))["metadata"]["resourceVersion"]
    async with apiserver.watch(path, {"resourceVersion": rv, "shardSelector": str(LOWER),
                                      "allowWatchBookmarks": "true"}) as lower, \
            apiserver.watch(path, {"resourceVersion": rv,
                                   "shardSelector": str(UPPER)}) as upper:
        made = await _configmaps(client, ns, 10)
        for obj in made:
            await client.patch(CONFIG_MAPS, obj["metadata"]["name"], {"data": {"x": "1"}}, ns)
        for obj in made:
            await client.delete(CONFIG_MAPS, obj["metadata"]["name"], ns)
        for stream, half in ((lower, LOWER), (upper, UPPER)):
            names = [o["metadata"]["name"] for o in made if half.matches(o)]
            expected = ([("ADDED", n) for n in names] + [("MODIFIED", n) for n in names]
                        + [("DELETED", n) for n in names])
            assert await _events(stream, len(expected)) == expected


@needs_sharding
@pytest.mark.parametrize("start", ["no resourceVersion", "0", "sendInitialEvents",
                                   "history"])
async def test_every_watch_path_is_filtered(apiserver: Cluster, client: Client,
                                            start: str) -> None:
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 10)
    params = {"shardSelector": str(LOWER), "labelSelector": f"{LABEL}=y"}
    match start:
        case "0":
            params["resourceVersion"] = "0"
        case "sendInitialEvents":
            params.update(sendInitialEvents="true", allowWatchBookmarks="true",
                          resourceVersionMatch="NotOlderThan")
        case "history":  # replayed from the history: the creations themselves
            params["resourceVersion"] = str(int(made[0]["metadata"]["resourceVersion"]) - 1)
    async with apiserver.watch(CONFIG_MAPS.path(ns), params) as events:
        initial = await _events(events, len(_in(LOWER, made)))
        assert sorted(initial) == [("ADDED", n) for n in _in(LOWER, made)]
        if start == "sendInitialEvents":
            end = await anext(events)
            assert end["type"] == "BOOKMARK"
            assert end["object"]["metadata"]["annotations"] == {
                "k8s.io/initial-events-end": "true"}


@needs_sharding
async def test_deletecollection_deletes_the_shard_only(apiserver: Cluster,
                                                       client: Client) -> None:
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 12)
    got = await apiserver.request("DELETE", CONFIG_MAPS.path(ns), params={
        "shardSelector": str(LOWER), "labelSelector": f"{LABEL}=y"})
    assert got.status == 200
    left = await client.list(CONFIG_MAPS, ns, label_selector={LABEL: "y"})
    assert _names(left["items"]) == _in(UPPER, made)


@needs_sharding
@pytest.mark.parametrize(("selector", "message"), [
    (" ", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    ("shardRange(object.metadata.name, '0x0000000000000000', '0x8000000000000000')",
     'unsupported field path "object.metadata.name"; supported: object.metadata.uid, '
     "object.metadata.namespace"),
    ("shardRange(object.metadata.uid, '0x0', '0x8000000000000000')",
     'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
     '(did you mean "0x0000000000000000"?)'),
    ("shardRange(object.metadata.uid, '0x8000000000000000', '0x0000000000000000')",
     "shard range start 0x8000000000000000 must be less than end 0x0000000000000000"),
    ("shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') && true",
     'unsupported function "_&&_"; only shardRange() and || are allowed'),
    ("nonsense", "unexpected expression kind 3; expected shardRange() call or || operator"),
    ("shardRange(", "CEL parse error: Syntax error: mismatched input '<EOF>' expecting {'[', "
     "'{', '(', ')', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
     "STRING, BYTES, IDENTIFIER}"),
])
@pytest.mark.parametrize("verb", ["list", "watch", "deletecollection"])
async def test_a_bad_shard_selector_is_a_400_with_the_parsers_message(
        apiserver: Cluster, verb: str, selector: str, message: str) -> None:
    method = "DELETE" if verb == "deletecollection" else "GET"
    params = {"shardSelector": selector, **({"watch": "true"} if verb == "watch" else {})}
    got = await apiserver.request(method, CONFIG_MAPS.path(apiserver.namespace), params=params)
    assert got.status == 400, got
    assert got.body["reason"] == "BadRequest"
    assert got.body["message"] == f"invalid shard selector: {message}"


@needs_sharding
async def test_an_empty_shard_selector_is_no_selector(apiserver: Cluster,
                                                      client: Client) -> None:
    made = await _configmaps(client, apiserver.namespace, 4)
    got = await apiserver.request("GET", CONFIG_MAPS.path(apiserver.namespace),
                                  params={"shardSelector": ""})
    assert "shardInfo" not in got.body["metadata"]
    assert set(_names(made)) <= set(_names(got.body["items"]))


async def test_with_the_feature_gate_off_the_parameter_is_ignored() -> None:
    async with APIServer(sharded_list_watch=False) as server, \
            Client(server.configuration()) as client:
        made = await _configmaps(client, "default", 6)
        listed = await client.list(CONFIG_MAPS, "default", label_selector={LABEL: "y"},
                                   shard_selector=LOWER, limit=4)
        bad = await client.list(CONFIG_MAPS, "default", label_selector={LABEL: "y"},
                                shard_selector="nonsense")
        response = await client.open_stream(CONFIG_MAPS.path("default"), {
            "watch": "true", "labelSelector": f"{LABEL}=y"}, shard_selector="nonsense")
        try:
            async with asyncio.timeout(10):
                watched = [orjson.loads(await response.content.readline())
                           ["object"]["metadata"]["name"] for _ in made]
        finally:
            response.release()
    assert "shardInfo" not in listed["metadata"]
    assert listed["metadata"]["continue"]  # paged over every object, not the shard's
    assert _names(listed["items"]) == _names(made)[:4]
    assert _names(bad["items"]) == _names(made)
    assert sorted(watched) == _names(made)
