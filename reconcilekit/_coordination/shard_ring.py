"""``ShardRing``: replicas of one controller sharing the key space through Leases.

The key space (the 64-bit hash of each object's namespace or uid, see
:mod:`reconcilekit._foundations.shard_selector`) is cut into ``shards`` equal ranges,
fixed for the life of the ring. Each shard has a Lease,
``<ring>-shard-<i>``; a replica works on the keys of a shard only while it
holds that shard's Lease, with exactly the timing discipline of leader
election (:class:`~reconcilekit.lowlevel.LeaderElector`, one per shard). Membership
is a Lease per replica, ``<ring>-member-<digest of identity>``, renewed like
any other; the live members are those whose member Lease was seen to change
within ``lease_duration``.

Why a Lease per shard and not one per replica with a list of ranges in it:
ownership of a shard is then a single object that the API server lets only
one holder write (optimistic concurrency), so "never two owners" rests on
the same argument as leader election, already tested under chaos; a
replica's view of the membership may lag or be wrong without ever giving a
shard two owners. The price is ``shards`` Lease renewals per
``retry_period`` across the ring (16 shards, 2 s: 8 small writes a second).

Expected flow of :meth:`ShardRing.run`:

1. acquire this replica's member Lease and keep renewing it;
2. every ``retry_period``: list the ring's member Leases, work out the live
   members, and from them the assignment (:func:`assign`: every member
   computes the same one from the same members; balanced to within one
   shard, and stable: a member joining or leaving moves about
   ``shards / members`` shards);
3. for a shard newly assigned: try to acquire its Lease (it is free, or
   released by its last owner, or it expires ``lease_duration`` after its
   owner was last seen renewing it); once held, ``owner.start_shard(i)``
   (queue its keys), then renew it;
4. for a shard no longer assigned: stop taking its keys, ``await
   owner.stop_shard(i, graceful_stop)`` (in-flight reconciles of it finished,
   or cancelled after ``graceful_stop``; its queued keys dropped) while still
   renewing its Lease, then release the Lease, so the next owner may start
   at once;
5. a shard Lease that cannot be renewed for ``renew_deadline`` is given up
   at once: ``stop_shard(i, margin)`` with 80% of ``lease_duration -
   renew_deadline``, before anyone else may take it; so is everything when
   the ring stops.

Guarantees:
  * a key is worked on by at most one replica at a time: a replica starts
    on a shard only holding its Lease, and stops on it (stop_shard returned)
    before releasing it, renewing it meanwhile; if the Lease is lost, it
    stops within ``renew_deadline`` of its last renewal plus the margin it
    gives ``stop_shard``, while the next holder waits ``lease_duration``
    after seeing that renewal (``stop_shard`` must keep to ``within``: it
    cancels what still runs);
  * once the membership stops changing, every shard gets an owner within
    about ``lease_duration + 2 * retry_period``.

Assumptions: every replica uses the same ring name, namespace, ``shards``
and timings, and a unique identity.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio
import anyio.abc

from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import APIConnectionError, APIError, describe_error
from .._foundations.shard_selector import ShardSelector, shard_of, shard_range
from ..kinds import LEASES
from .leader_election import LeaderElector, LeadershipLost

__all__ = ["RingStatistics", "ShardOwner", "ShardRing", "assign"]

logger = logging.getLogger("reconcilekit.sharding")
_SYSTEM_CLOCK: Final = SystemClock()


class ShardOwner(Protocol):
    """What works on the keys of a shard (a manager's controllers)."""

    async def start_shard(self, shard: int) -> None:
        """The shard is ours: queue its keys."""
        ...

    async def stop_shard(self, shard: int, within: float) -> None:
        """The shard is no longer ours: drop its queued keys, and return once nothing of it
        runs any more, cancelling what still runs after ``within`` seconds."""
        ...


@dataclass(frozen=True, slots=True)
class RingStatistics:
    """A snapshot: the live members as last seen, the shards held and assigned, and how
    long the last shard taken waited from its assignment to holding its Lease (its
    previous owner's drain and release, or its Lease's expiry)."""

    members: tuple[str, ...]
    held: tuple[int, ...]
    assigned: tuple[int, ...]
    rebalances: int
    last_handover_seconds: float | None


def assign(members: Iterable[str], shards: int) -> dict[str, frozenset[int]]:
    """Which shards each member owns: a pure function of the members and ``shards``.

    Balanced (each member gets ``shards // n`` or one more) and stable: each
    shard goes to the member that ranks highest for it (rendezvous hashing)
    among those with room, so a member joining or leaving moves few shards.
    """
    ordered = sorted(set(members))
    if not ordered:
        return {}
    base, extra = divmod(shards, len(ordered))
    room = {m: base + (1 if i < extra else 0) for i, m in enumerate(ordered)}
    owned: dict[str, set[int]] = {m: set() for m in ordered}
    ranked = {s: sorted(ordered, key=functools.partial(_score, shard=s), reverse=True)
              for s in range(shards)}
    for shard in range(shards):
        for member in ranked[shard]:
            if len(owned[member]) < room[member]:
                owned[member].add(shard)
                break
    return {m: frozenset(s) for m, s in owned.items()}


def _score(member: str, shard: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{member}\x00{shard}".encode(),
                                          digest_size=8).digest(), "big")


class _ShardTask:
    """One shard's acquire-hold-release task: cancelled before it holds the Lease (or
    when the ring stops), asked to hand over once it does."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.handing_over = anyio.Event()
        self.holding = False

    def acquired(self) -> None:
        """The shard's Lease is held (``holding`` turns True, the one change it makes):
        a hand-over now waits for the owner to stop on the shard instead of cancelling."""
        self.holding = True

    def hand_over(self) -> None:
        self.handing_over.set()
        if not self.holding:
            self.scope.cancel()


class ShardRing:
    """This replica's place in a ring of replicas; see the module docstring."""

    def __init__(self, client: Client, *, name: str, namespace: str, identity: str,
                 shards: int = 16, lease_duration: float = 15.0, renew_deadline: float = 10.0,
                 retry_period: float = 2.0, graceful_stop: float = 30.0,
                 clock: Clock = _SYSTEM_CLOCK) -> None:
        if not 1 <= shards <= 1024:
            raise ValueError(f"shards must be 1 to 1024, got {shards}")
        self.name, self.namespace, self.identity = name, namespace, identity
        self.shards = shards
        self.lease_duration, self.renew_deadline = lease_duration, renew_deadline
        self.retry_period = retry_period
        self.graceful_stop = graceful_stop
        self.clock = clock
        self._client = client
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        self._member_prefix = f"{name}-member-"
        timings: dict[str, Any] = {
            "lease_duration": lease_duration, "renew_deadline": renew_deadline,
            "retry_period": retry_period, "clock": clock,
            "log_level": logging.DEBUG}  # the ring logs what changed, once per rebalance
        self._member = LeaderElector(client, name=f"{self._member_prefix}{digest}",
                                     namespace=namespace, identity=identity, **timings)
        self._electors = [LeaderElector(client, name=f"{name}-shard-{i}",
                                        namespace=namespace, identity=identity, **timings)
                          for i in range(shards)]
        self._held: set[int] = set()
        self._tasks: dict[int, _ShardTask] = {}  # shard -> its acquire/hold task
        self._seen: dict[str, tuple[tuple[Any, ...], float]] = {}  # lease -> (record, when)
        self._members: tuple[str, ...] = ()
        self._assigned: frozenset[int] = frozenset()
        self._rebalances = 0
        self._handover: float | None = None  # assigned -> held, for the last shard taken

    # -- what this replica owns --------------------------------------------------------------

    @property
    def is_member(self) -> bool:
        """Whether this replica holds its member Lease (others count it in)."""
        return self._member.is_leader

    @property
    def held(self) -> frozenset[int]:
        """The shards whose Lease this replica holds and whose keys it may work on."""
        return frozenset(self._held)

    def shard_of(self, key: int) -> int:
        return shard_of(key, self.shards)

    def owns(self, key: int) -> bool:
        return self.shard_of(key) in self._held

    def selector(self, field: str, shards: Iterable[int] | None = None) -> ShardSelector | None:
        """The held shards (or ``shards``) as a selector of ``field``; None for no shard."""
        chosen = self._held if shards is None else set(shards)
        if not chosen:
            return None
        return ShardSelector.of(field, (shard_range(s, self.shards) for s in chosen))

    def statistics(self) -> RingStatistics:
        return RingStatistics(self._members, tuple(sorted(self._held)),
                              tuple(sorted(self._assigned)), self._rebalances, self._handover)

    # -- running -----------------------------------------------------------------------------

    async def run(self, owner: ShardOwner, *,
                  task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Be a member until cancelled; started once the member Lease is held."""
        await self._member.acquire()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._keep_membership)
                task_status.started()
                while True:
                    await self._balance(owner, tg)
                    await self.clock.sleep(self.retry_period)
        finally:
            with anyio.CancelScope(shield=True):
                await self._member.release()

    async def _keep_membership(self) -> None:
        while True:
            try:
                await self._member.hold()
            except LeadershipLost:  # others count us out; our shard Leases still fence us
                await self._member.acquire()

    async def _balance(self, owner: ShardOwner, tg: anyio.abc.TaskGroup) -> None:
        try:
            members = await self._live_members()
        except (APIError, APIConnectionError) as err:
            logger.warning("shard ring %s: cannot list its members (keeping the current "
                           "shards): %s", self.name, describe_error(err))
            return
        assigned = assign(members, self.shards).get(self.identity, frozenset())
        if members != self._members or assigned != self._assigned:
            if self._members:
                self._rebalances += 1
            logger.info("shard ring %s: %d member(s); this replica is assigned %d of %d "
                        "shards", self.name, len(members), len(assigned), self.shards)
        self._members, self._assigned = members, assigned
        for shard in assigned - self._tasks.keys():
            task = _ShardTask()
            self._tasks[shard] = task
            tg.start_soon(self._own, shard, task, owner)
        for shard, task in self._tasks.items():
            if shard not in assigned and not task.handing_over.is_set():
                task.hand_over()  # it leaves _tasks when done: a shard assigned back
                # meanwhile is taken anew by a task of its own after that (one at a time
                # per shard: they share the shard's elector)

    async def _own(self, shard: int, task: _ShardTask, owner: ShardOwner) -> None:
        """Acquire the shard's Lease, work on it, and hand it over when asked.

        Handing over, the Lease is renewed until the owner stopped on the shard
        (however long its reconciles take), then released. Lost, the owner must
        stop within the margin the next holder leaves (``lease_duration -
        renew_deadline``): it is told how long it has.
        """
        elector = self._electors[shard]
        with task.scope:  # cancelled: not acquired yet, or the ring stops
            assigned_at = self.clock.monotonic()
            await elector.acquire()
            task.acquired()
            self._held.add(shard)
            self._handover = self.clock.monotonic() - assigned_at
            stopped = False
            try:
                async with anyio.create_task_group() as work:
                    async def hold() -> None:
                        try:
                            await elector.hold()
                        except LeadershipLost:  # logged by the elector; stop at once
                            work.cancel_scope.cancel()

                    work.start_soon(hold)
                    await owner.start_shard(shard)
                    await task.handing_over.wait()
                    self._held.discard(shard)  # no new keys of it from here on
                    await owner.stop_shard(shard, self.graceful_stop)
                    stopped = True
                    work.cancel_scope.cancel()
            finally:
                self._held.discard(shard)
                with anyio.CancelScope(shield=True):
                    if not stopped:  # lost, or the ring stops: nothing renews it any more
                        await owner.stop_shard(shard, self._margin())
                    await elector.release()
        if self._tasks.get(shard) is task:  # the next round starts another if assigned
            del self._tasks[shard]

    def _margin(self) -> float:
        """How long an owner that lost (or stops renewing) a shard may take to stop on it."""
        return max(0.0, (self.lease_duration - self.renew_deadline) * 0.8)

    async def _live_members(self) -> tuple[str, ...]:
        """Identities of the member Leases seen renewing within ``lease_duration``."""
        listed = await self._client.list(LEASES, self.namespace)
        now = self.clock.monotonic()
        live = {self.identity}
        names = set()
        for lease in listed.get("items") or ():
            name = str((lease.get("metadata") or {}).get("name") or "")
            if not name.startswith(self._member_prefix):
                continue
            names.add(name)
            spec: Mapping[str, Any] = lease.get("spec") or {}
            record = (spec.get("holderIdentity"), spec.get("renewTime"),
                      spec.get("leaseDurationSeconds"))
            seen = self._seen.get(name)
            if seen is None or seen[0] != record:
                seen = self._seen[name] = (record, now)
            duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
            if record[0] and now - seen[1] < max(duration, 1.0) and math.isfinite(duration):
                live.add(str(record[0]))
        for gone in self._seen.keys() - names:
            del self._seen[gone]
        return tuple(sorted(live))

    def __repr__(self) -> str:
        return (f"ShardRing({self.namespace}/{self.name}, {self.identity!r}, "
                f"held={sorted(self._held)})")
