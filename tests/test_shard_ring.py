"""ShardRing: replicas share the shards through Leases, never two owners at once.

The rings run on one FakeClock against the API server (in-process, or
kube-apiserver in CI's second pass); the test moves time in steps of a
second and lets the Lease traffic of each step finish before the next.
Every ``start_shard`` checks that no other replica is working on the shard.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest

from reconcilekit import Client
from reconcilekit._coordination.shard_ring import LEASES, ShardRing, assign
from reconcilekit._foundations.shard_selector import KEY_SPACE, shard_range
from reconcilekit.sharding import shard_of
from reconcilekit.testing import Cluster, FakeClock

SHARDS = 16


@pytest.mark.parametrize("shards", [1, 2, 3, 5, 7, 16, 24, 100])
def test_a_shards_selector_range_holds_exactly_the_keys_shard_of_gives_it(shards: int
                                                                           ) -> None:
    # The watch asks the server for shard_range's keys, owns() reconciles shard_of's:
    # they must agree at every boundary, also where 2**64 / shards is not a whole number.
    ends = [shard_range(s, shards) for s in range(shards)]
    assert ends[0][0] == 0 and ends[-1][1] == KEY_SPACE
    assert all(ends[s][1] == ends[s + 1][0] for s in range(shards - 1))
    for shard, (start, end) in enumerate(ends):
        assert shard_of(start, shards) == shard_of(end - 1, shards) == shard
        if start:
            assert shard_of(start - 1, shards) == shard - 1


@pytest.mark.parametrize(("key", "shards"), [(0, 0), (-1, 4), (KEY_SPACE, 4)])
def test_shard_of_refuses_what_is_not_a_key_or_a_shard_count(key: int, shards: int) -> None:
    with pytest.raises(ValueError, match=r"the key must be in \[0, 2\*\*64\) and shards "
                                         r"at least 1"):
        shard_of(key, shards)


def test_assignment_is_balanced_deterministic_and_stable() -> None:
    members = [f"replica-{i}" for i in range(3)]
    three = assign(members, SHARDS)
    assert three == assign(list(reversed(members)), SHARDS)
    assert sorted(len(s) for s in three.values()) == [5, 5, 6]
    assert set().union(*three.values()) == set(range(SHARDS))
    four = assign([*members, "replica-3"], SHARDS)
    assert [len(s) for s in four.values()] == [4, 4, 4, 4]
    moved = sum(len(three[m] - four[m]) for m in members)
    assert moved <= 6  # about SHARDS / 4 go to the newcomer, not a reshuffle
    assert assign([], SHARDS) == {}


class Owners:
    """Every replica's ShardOwner, checking that a shard has one owner at a time."""

    def __init__(self) -> None:
        self.owner: dict[int, str] = {}
        self.violations: list[str] = []
        self.started: list[tuple[float, str, int]] = []

    def of(self, identity: str, clock: FakeClock) -> Replica:
        return Replica(self, identity, clock)


class Replica:
    def __init__(self, owners: Owners, identity: str, clock: FakeClock) -> None:
        self.owners, self.identity, self.clock = owners, identity, clock

    async def start_shard(self, shard: int) -> None:
        other = self.owners.owner.get(shard)
        if other is not None:
            self.owners.violations.append(f"{self.identity} started shard {shard} while "
                                          f"{other} works on it")
        self.owners.owner[shard] = self.identity
        self.owners.started.append((self.clock.monotonic(), self.identity, shard))

    async def stop_shard(self, shard: int, within: float) -> None:
        if self.owners.owner.get(shard) == self.identity:
            del self.owners.owner[shard]


async def run_until(clock: FakeClock, client: Client, done: Callable[[], bool], *,
                    limit: float = 120.0, step: float = 1.0) -> float:
    """Advance ``clock`` a ``step`` at a time until ``done()``; the clock time it took."""
    start = clock.monotonic()
    await clock.until_parked(client)
    while not done():
        assert clock.monotonic() - start < limit, "the ring did not settle"
        clock.advance(step)
        await clock.until_parked(client)
    return clock.monotonic() - start


@asynccontextmanager
async def ring_replicas(client: Client, namespace: str, clock: FakeClock, owners: Owners,
                        count: int, ring: str) -> AsyncIterator[dict[str, tuple[ShardRing,
                                                                           anyio.CancelScope]]]:
    """``count`` replicas of ring ``ring``, each cancellable on its own."""
    replicas: dict[str, tuple[ShardRing, anyio.CancelScope]] = {}
    async with anyio.create_task_group() as tg:
        async def start(identity: str) -> None:
            member = ShardRing(client, name=ring, namespace=namespace, identity=identity,
                               shards=SHARDS, clock=clock)
            scope = anyio.CancelScope()
            replicas[identity] = (member, scope)

            async def run(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                with scope:
                    await member.run(owners.of(identity, clock), task_status=task_status)
            await tg.start(run)
        for i in range(count):
            await start(f"replica-{i}")
        yield replicas
        tg.cancel_scope.cancel()


def held_by(replicas: dict[str, tuple[ShardRing, anyio.CancelScope]]) -> dict[str, int]:
    return {name: len(ring.held) for name, (ring, scope) in replicas.items()
            if not scope.cancel_called}


async def test_replicas_share_every_shard_and_hand_over_when_one_leaves(
        apiserver: Cluster) -> None:
    clock, owners = FakeClock(), Owners()
    ring = f"ring-{uuid.uuid4().hex[:6]}"
    async with Client(apiserver.configuration) as client, \
            ring_replicas(client, apiserver.namespace, clock, owners, 3, ring) as replicas:
        took = await run_until(clock, client,
                               lambda: sorted(held_by(replicas).values()) == [5, 5, 6]
                               and len(owners.owner) == SHARDS)
        assert took <= 2 * 2 + 2  # free Leases: a couple of retry periods
        for name, (member, _) in replicas.items():
            assert member.held == assign(replicas, SHARDS)[name]
            assert member.is_member
            assert member.statistics().members == tuple(sorted(replicas))

        _, leaving = replicas["replica-2"]
        leaving.cancel()  # a clean stop: its shards are released, not left to expire
        took = await run_until(clock, client, lambda: sorted(held_by(replicas).values()) == [8, 8]
                               and len(owners.owner) == SHARDS)
        assert took < 15  # well before its Leases could have expired
    assert owners.violations == []


async def test_the_shards_of_a_replica_that_stopped_renewing_wait_out_their_lease(
        apiserver: Cluster, client: Client) -> None:
    """A replica that died holds its Leases until they expire: nobody starts on its shards
    before ``lease_duration`` after their last renewal was seen."""
    clock, owners = FakeClock(), Owners()
    ring = f"ring-{uuid.uuid4().hex[:6]}"
    ns = apiserver.namespace
    ghost = ShardRing(client, name=ring, namespace=ns, identity="ghost", shards=SHARDS,
                      clock=clock)
    ghost_shards = {3, 7, 11}
    for shard in ghost_shards:  # as the ghost's last renewal left them
        await client.create(LEASES, {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": f"{ring}-shard-{shard}"},
            "spec": {"holderIdentity": "ghost", "leaseDurationSeconds": 15,
                     "renewTime": "2026-11-25T00:00:00.000000Z"}}, ns)
    assert not ghost.held
    async with ring_replicas(client, ns, clock, owners, 2, ring) as replicas:
        await run_until(clock, client, lambda: len(owners.owner) == SHARDS - len(ghost_shards))
        await run_until(clock, client, lambda: len(owners.owner) == SHARDS, limit=40)
        assert sorted(held_by(replicas).values()) == [8, 8]
    first_start = {shard: at for at, _, shard in reversed(owners.started)}
    for shard in ghost_shards:
        assert first_start[shard] >= 15, (shard, first_start[shard])
    assert owners.violations == []


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c
