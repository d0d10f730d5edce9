"""Sharded managers: replicas of one controller split the namespaces through a ShardRing.

Three managers in one process share a ring on one FakeClock; objects in
twelve namespaces. Each reconcile records which replica ran it and checks
that no other replica is reconciling the same key at that moment.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from prometheus_client import generate_latest
from test_shard_ring import run_until

from reconcilekit import Client, Manager, Reconciler, Request, Result, Sharding
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES
from reconcilekit.sharding import fnv1a64, shard_of
from reconcilekit.testing import Cluster, FakeClock, eventually


class Ledger:
    def __init__(self) -> None:
        self.running: dict[Request, str] = {}
        self.by: dict[Request, list[str]] = {}
        self.violations: list[str] = []


class Recording(Reconciler):
    def __init__(self, who: str, ledger: Ledger) -> None:
        self.who, self.ledger = who, ledger

    async def reconcile(self, request: Request) -> Result:
        other = self.ledger.running.get(request)
        if other is not None:
            self.ledger.violations.append(f"{self.who} and {other} both reconcile {request}")
        self.ledger.running[request] = self.who
        try:
            await anyio.lowlevel.checkpoint()
            self.ledger.by.setdefault(request, []).append(self.who)
        finally:
            del self.ledger.running[request]
        return Result.done()


@pytest.fixture
async def namespaces(apiserver: Cluster, client: Client) -> AsyncIterator[list[str]]:
    # FNV-1a barely moves its top bits for names that differ only at the end, and the
    # top bits pick the shard: choose names that fall in different shards of 8
    names: list[str] = []
    shards: set[int] = set()
    for i in range(10_000):
        name = f"{apiserver.namespace}-s{i}"
        shard = shard_of(fnv1a64(name), 8)
        if shard not in shards or len(shards) == 8:
            shards.add(shard)
            names.append(name)
        if len(names) == 12:
            break
    for name in names:
        await client.create(NAMESPACES, {"metadata": {"name": name}})
    yield names
    for name in names:
        await client.delete(NAMESPACES, name)


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c


def cm(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}


def assert_metric(exposed: str, name: str, ring: str, value: float) -> None:
    assert f'{name}{{ring="{ring}"}} {float(value)}' in exposed, (name, exposed)


def cached_only_own_shards(managers: dict[str, Manager], wanted: set[Request]) -> None:
    """Each replica's cache holds the objects of its shards and no other; together, all."""
    held: dict[str, set[Request]] = {}
    for who, manager in managers.items():
        assert manager.ring is not None
        store = manager.cache.informer_for(CONFIG_MAPS).store
        held[who] = {Request(k.namespace, k.name) for k in store}
        assert all(manager.ring.owns(fnv1a64(k.namespace)) for k in store), who
    cached = [r for keys in held.values() for r in keys if r in wanted]
    assert sorted(cached) == sorted(wanted)  # each object in exactly one cache


async def test_replicas_split_the_namespaces_and_take_over_from_one_that_stops(
        apiserver: Cluster, client: Client, namespaces: list[str]) -> None:
    clock, ledger = FakeClock(), Ledger()
    sharding = Sharding(name=f"ring-{uuid.uuid4().hex[:6]}", namespace=apiserver.namespace,
                        shards=8)
    managers = {}
    for who in ("a", "b", "c"):
        manager = Manager(client, http_addr=None, clock=clock, identity=who,
                          coordination=sharding, default_namespaces=namespaces)
        manager.controller().for_(CONFIG_MAPS).complete(Recording(who, ledger))
        managers[who] = manager
    wanted = {Request(ns, "settings") for ns in namespaces}
    for ns in namespaces:
        await client.create(CONFIG_MAPS, cm("settings"), ns)
    async with anyio.create_task_group() as tg:
        for manager in managers.values():
            tg.start_soon(manager.run)

        def settled() -> bool:
            rings = [m.ring for m in managers.values() if not m._stop.is_set()]
            held = [len(r.held) for r in rings if r is not None]
            return sum(held) == sharding.shards and max(held) - min(held) <= 1 and \
                wanted <= ledger.by.keys()
        await run_until(clock, client, settled)
        # each namespace's key was reconciled by the replica holding its shard
        for request in wanted:
            owner = [w for w, m in managers.items()
                     if m.ring is not None and m.ring.owns(fnv1a64(request.namespace))]
            assert len(owner) == 1 and ledger.by[request][-1] == owner[0], request
        assert {w for runs in ledger.by.values() for w in runs} == {"a", "b", "c"}
        cached_only_own_shards(managers, wanted)
        for manager in managers.values():  # asked of the server; only v1.36 honours it
            watchers = manager.cache.informer_for(CONFIG_MAPS).watchers
            assert {w.server_sharded for w in watchers} == {apiserver.in_process}

        gone = managers.pop("c")
        gone_ring = gone.ring
        assert gone_ring is not None
        orphaned = [ns for ns in namespaces if gone_ring.owns(fnv1a64(ns))]
        assert orphaned
        gone.stop()
        await run_until(clock, client, settled)
        ledger.by.clear()
        for ns in orphaned:  # changes in c's former namespaces reach a or b
            await client.patch(CONFIG_MAPS, "settings", {"data": {"v": "2"}}, ns)
        await clock.until_parked(client)
        await eventually(lambda: {Request(ns, "settings") for ns in orphaned}
                         <= ledger.by.keys())
        assert {w for runs in ledger.by.values() for w in runs} <= {"a", "b"}
        cached_only_own_shards(managers, wanted)
        for who, manager in managers.items():
            assert manager.ready() == (True, "ok"), who
            exposed = generate_latest(manager.registry).decode()
            assert_metric(exposed, "reconcilekit_shard_ring_members", sharding.name, 2)
            assert manager.ring is not None
            assert_metric(exposed, "reconcilekit_shard_ring_shards_held", sharding.name,
                          len(manager.ring.held))
            assert "reconcilekit_shard_ring_rebalances_total" in exposed
            assert "reconcilekit_shard_objects{" in exposed
        assert not gone.cache.informer_for(CONFIG_MAPS).store  # it let go of everything
        for manager in managers.values():
            manager.stop()
        await run_until(clock, client, lambda: True)
    assert ledger.violations == []
