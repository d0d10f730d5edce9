"""Sharded list and watch (KEP-5866, ``shardSelector``), as kube-apiserver v1.36 serves it.

kube-apiserver v1.28 (the control plane of CI's second pass) has no such
parameter and ignores it: every object, no ``shardInfo``. That difference is
the signal a client falls back on (it then filters itself), and the first
test checks each server gives it. The in-process server serves the v1.36
behaviour with its feature gate on, ignores the parameter with it off.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import orjson
import pytest

from reconcilekit import Client, Resource, ShardSelector, fnv1a64
from reconcilekit._shard_selector import KEY_SPACE
from reconcilekit.testing import APIServer, Cluster

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps")
UID = "object.metadata.uid"
LOWER = ShardSelector.of(UID, [(0, KEY_SPACE // 2)])


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c


async def _configmaps(client: Client, namespace: str, n: int) -> list[dict[str, Any]]:
    return [await client.create(CONFIGMAPS, {"metadata": {"name": f"cm-{i}"}}, namespace)
            for i in range(n)]


def needs_sharding(apiserver: Cluster) -> None:
    if not apiserver.in_process:
        pytest.skip("this kube-apiserver (before v1.36) has no sharded list and watch")


def _in(selector: ShardSelector, objs: list[dict[str, Any]]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objs if selector.matches(o))


async def test_a_list_is_the_shard_with_shard_info_or_everything_without(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 12)
    listed = await client.list(CONFIGMAPS, ns, shard_selector=LOWER)
    names = sorted(o["metadata"]["name"] for o in listed["items"]
                   if o["metadata"]["name"].startswith("cm-"))
    if apiserver.in_process:  # v1.36 with ShardedListAndWatch
        assert listed["metadata"]["shardInfo"] == {"selector": str(LOWER)}
        assert names == _in(LOWER, made)
        assert 0 < len(names) < 12
    else:  # v1.28: the parameter is not known, the answer is whole
        assert "shardInfo" not in listed["metadata"]
        assert names == sorted(o["metadata"]["name"] for o in made)


async def test_lists_pages_and_watches_are_filtered_by_uid_or_namespace(
        apiserver: Cluster, client: Client) -> None:
    needs_sharding(apiserver)
    ns = apiserver.namespace
    made = await _configmaps(client, ns, 20)
    paged = await client.list_all(CONFIGMAPS, ns, shard_selector=LOWER, limit=3)
    assert sorted(o["metadata"]["name"] for o in paged["items"]
                  if o["metadata"]["name"].startswith("cm-")) == _in(LOWER, made)
    by_namespace = ShardSelector.of("object.metadata.namespace",
                                    [(fnv1a64(ns), fnv1a64(ns) + 1)])
    everything_here = await client.list(CONFIGMAPS, shard_selector=by_namespace)
    assert {o["metadata"]["namespace"] for o in everything_here["items"]} == {ns}

    events: list[str] = []
    with anyio.fail_after(10):
        response = await client.open_stream(CONFIGMAPS.path(ns), {
            "watch": "true", "resourceVersion": paged["metadata"]["resourceVersion"],
            "shardSelector": str(LOWER)})
        try:
            more = [await client.create(CONFIGMAPS, {"metadata": {"name": f"w-{i}"}}, ns)
                    for i in range(12)]
            want = _in(LOWER, more)
            async for line in response.content:
                events.append(orjson.loads(line)["object"]["metadata"]["name"])
                if len(events) == len(want):
                    break
        finally:
            response.release()
    assert sorted(events) == want


@pytest.mark.parametrize(("selector", "problem"), [
    ("shardRange(object.metadata.name, '0x0', '0x1')", "cannot be sharded on"),
    ("shardRange(object.metadata.uid, '0x1', '0x0')", "is not below its end"),
    ("nonsense", "is not shardRange("),
])
async def test_a_bad_shard_selector_is_a_400_naming_it(apiserver: Cluster, selector: str,
                                                       problem: str) -> None:
    needs_sharding(apiserver)
    got = await apiserver.request("GET", CONFIGMAPS.path(apiserver.namespace),
                                  params={"shardSelector": selector})
    assert got.status == 400 and got.body["reason"] == "BadRequest", got
    assert got.body["message"].startswith("invalid shard selector: ")
    assert problem in got.body["message"]


async def test_with_the_feature_gate_off_the_parameter_is_ignored() -> None:
    async with APIServer(sharded_list_watch=False) as server, \
            Client(server.configuration()) as client:
        made = await _configmaps(client, "default", 6)
        listed = await client.list(CONFIGMAPS, "default", shard_selector=LOWER)
        bad = await client.list(CONFIGMAPS, "default", shard_selector="nonsense")
    assert "shardInfo" not in listed["metadata"]
    names = {o["metadata"]["name"] for o in listed["items"]}
    assert {o["metadata"]["name"] for o in made} <= names
    assert len(bad["items"]) == len(listed["items"])
