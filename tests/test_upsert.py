"""Create-or-update, create-or-patch and server-side apply through the client."""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit import Client, Conflict, NotFound
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster
from reconcilekit.upsert import Outcome, create_or_patch, create_or_update, merge_patch


def writes(client: Client) -> int:
    stats = client.statistics().requests
    return sum(n for (verb, _), n in stats.items() if verb in ("create", "update", "patch"))


async def test_create_then_nothing_then_an_update(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace

    def want(color: str) -> Any:
        def mutate(cm: dict[str, Any]) -> None:
            cm.setdefault("data", {})["color"] = color
            cm["metadata"].setdefault("labels", {})["app"] = "web"
        return mutate

    outcome, made = await create_or_update(client, CONFIG_MAPS, "cfg", ns, want("blue"))
    assert outcome is Outcome.CREATED and made["data"] == {"color": "blue"}
    before = writes(client)
    outcome, same = await create_or_update(client, CONFIG_MAPS, "cfg", ns, want("blue"))
    assert outcome is Outcome.UNCHANGED and writes(client) == before  # a read, no write
    assert same["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
    outcome, changed = await create_or_update(client, CONFIG_MAPS, "cfg", ns, want("red"))
    assert outcome is Outcome.UPDATED and changed["data"] == {"color": "red"}


async def test_a_conflict_is_retried_on_a_fresh_read_and_loses_nothing(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, ns)
    calls = 0

    async def mutate(cm: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # someone else writes between our read and our write
            await client.patch(CONFIG_MAPS, "cfg", {"data": {"other": "x"}}, ns)
        cm["data"]["a"] = "2"

    outcome, stored = await create_or_update(client, CONFIG_MAPS, "cfg", ns, mutate)
    assert outcome is Outcome.UPDATED and calls == 2
    assert stored["data"] == {"a": "2", "other": "x"}  # the other write survived

    async def never_wins(cm: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1  # a different write every time: each of our updates comes too late
        await client.patch(CONFIG_MAPS, "cfg", {"data": {"n": str(calls)}}, ns)
        cm["data"]["a"] = "3"

    with pytest.raises(Conflict):
        await create_or_update(client, CONFIG_MAPS, "cfg", ns, never_wins, attempts=2)


async def test_create_or_patch_sends_only_what_changed(apiserver: Cluster,
                                                       client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "cfg"}, "data": {"a": "1"}}, ns)

    async def mutate(cm: dict[str, Any]) -> None:
        await client.patch(CONFIG_MAPS, "cfg", {"data": {"other": "x"}}, ns)  # no conflict
        cm["data"]["a"] = "2"
        cm["metadata"].pop("labels", None)

    outcome, stored = await create_or_patch(client, CONFIG_MAPS, "cfg", ns, mutate)
    assert outcome is Outcome.UPDATED
    assert stored["data"] == {"a": "2", "other": "x"}
    assert merge_patch({"a": 1, "b": {"c": 1, "d": 2}, "e": 1},
                       {"a": 1, "b": {"c": 2, "d": 2}}) == {"b": {"c": 2}, "e": None}


async def test_mutate_may_not_rename(apiserver: Cluster, client: Client) -> None:
    def rename(cm: dict[str, Any]) -> None:
        cm["metadata"]["name"] = "elsewhere"

    with pytest.raises(ValueError, match="mutate changed the object's name or namespace"):
        await create_or_update(client, CONFIG_MAPS, "cfg", apiserver.namespace, rename)
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAPS, "cfg", apiserver.namespace)


async def test_apply_owns_fields_conflicts_and_dry_runs(apiserver: Cluster,
                                                        client: Client) -> None:
    ns = apiserver.namespace
    intent = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cfg", "namespace": ns}, "data": {"a": "1", "b": "1"}}
    checked = await client.apply(CONFIG_MAPS, intent, field_manager="alice", dry_run=True)
    assert checked["data"] == {"a": "1", "b": "1"}
    with pytest.raises(NotFound):  # a dry run stores nothing
        await client.get(CONFIG_MAPS, "cfg", ns)
    await client.apply(CONFIG_MAPS, intent, field_manager="alice")
    theirs = {**intent, "data": {"a": "2"}}
    with pytest.raises(Conflict) as conflict:
        await client.apply(CONFIG_MAPS, theirs, field_manager="bob")
    assert ".data.a" in str(conflict.value)
    taken = await client.apply(CONFIG_MAPS, theirs, field_manager="bob", force=True)
    assert taken["data"] == {"a": "2", "b": "1"}
    # alice stops applying b, which she alone owned: the server removes it.
    kept = await client.apply(CONFIG_MAPS, {**intent, "data": {}}, field_manager="alice")
    assert kept.get("data") == {"a": "2"}
    with pytest.raises(ValueError, match=r"needs metadata\.name"):
        await client.apply(CONFIG_MAPS, {"metadata": {}}, field_manager="alice")
