"""Leader election on a Lease: one leader, takeover only after expiry or release.

These run against the ``apiserver`` fixture (a real cluster too, where the
fault-injection tests skip). Every timeout (lease duration, renew deadline,
retry period) runs on a FakeClock that the test advances; waiting for the
electors' requests to finish is a bounded poll, never a sleep standing in
for a timeout.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from kubernetes_asyncio.client import Configuration

from reconcilekit import Client, LeadershipLost
from reconcilekit.kinds import LEASES
from reconcilekit.lowlevel import LeaderElector
from reconcilekit.testing import Cluster, FakeClock

NAME = "my-controller"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


async def eventually(condition: Callable[[], bool], within: float = 10.0) -> None:
    """Poll ``condition`` until it holds (fails the test after ``within`` seconds)."""
    with anyio.fail_after(within):
        while not condition():  # noqa: ASYNC110 (state changes on I/O, no event to wait on)
            await asyncio.sleep(0.005)


async def tick(clock: FakeClock, parked: int, done: Callable[[], bool] = lambda: False) -> None:
    """Advance ``clock`` to its next deadline, then wait until the woken tasks are
    parked on it again (``parked`` sleepers in all) or ``done()``."""
    deadline = clock.next_deadline()
    assert deadline is not None, "nothing is waiting on the clock"
    clock.advance(deadline - clock.monotonic())
    await eventually(lambda: clock.sleepers == parked or done())


async def hold_until_lost(elector: LeaderElector, clock: FakeClock,
                          lost: list[tuple[float, str]]) -> None:
    """Run ``elector.hold()``; record when (clock time) and why it lost the lease."""
    try:
        await elector.hold()
    except LeadershipLost as exc:
        lost.append((clock.monotonic(), str(exc)))


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c


class Candidates:
    """Electors for one Lease on one FakeClock, each recording its on_change calls."""

    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        self.clock = FakeClock(wall_start=1_700_000_000.123456)
        self.changes: dict[str, list[bool]] = {}

    def elector(self, identity: str, **options: Any) -> LeaderElector:
        changes = self.changes.setdefault(identity, [])
        return LeaderElector(self.client, name=NAME, namespace=self.namespace,
                             identity=identity, clock=self.clock, on_change=changes.append,
                             **options)

    async def spec(self) -> dict[str, Any]:
        lease = await self.client.get(LEASES, NAME, self.namespace)
        return dict(lease["spec"])

    def wall(self) -> str:
        """``clock.time()`` as the MicroTime an elector writes now."""
        when = datetime.fromtimestamp(self.clock.time(), UTC)
        return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.fixture
def candidates(apiserver: Cluster, client: Client) -> Candidates:
    return Candidates(client, apiserver.namespace)


async def test_acquire_creates_an_absent_lease_with_our_record(candidates: Candidates
                                                               ) -> None:
    a = candidates.elector("a")
    await a.acquire()
    assert a.is_leader and candidates.changes["a"] == [True]
    spec = await candidates.spec()
    assert spec == {"holderIdentity": "a", "leaseDurationSeconds": 15,
                    "acquireTime": "2023-11-14T22:13:20.123456Z",
                    "renewTime": "2023-11-14T22:13:20.123456Z", "leaseTransitions": 0}
    assert MICRO_TIME.match(spec["renewTime"])
    stats = a.statistics()
    assert (stats.holder, stats.acquisitions, stats.renewals, stats.lease_transitions) == (
        "a", 1, 0, 0)
    assert stats.last_renew_age == 0.0 and stats.lease == f"{candidates.namespace}/{NAME}"


async def test_lease_duration_is_written_rounded_up(candidates: Candidates) -> None:
    a = candidates.elector("a", lease_duration=7.5, renew_deadline=5.0, retry_period=1.0)
    await a.acquire()
    assert (await candidates.spec())["leaseDurationSeconds"] == 8


async def test_holder_renewing_keeps_a_standby_out(candidates: Candidates) -> None:
    clock = candidates.clock
    a, b = candidates.elector("a"), candidates.elector("b")
    await a.acquire()
    acquired = await candidates.spec()
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.hold)  # parks twice: the renew loop and the deadline watchdog
        tg.start_soon(b.acquire)
        await eventually(lambda: clock.sleepers == 3)
        while clock.monotonic() < 60:
            await tick(clock, 3)
            assert a.is_leader and not b.is_leader
        tg.cancel_scope.cancel()
    spec = await candidates.spec()
    assert spec["holderIdentity"] == "a" and spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == acquired["acquireTime"]
    assert spec["renewTime"] > acquired["renewTime"]
    assert a.statistics().renewals == 30 and a.statistics().failed_attempts == 0
    assert a.is_leader and candidates.changes == {"a": [True], "b": []}
    assert b.statistics().holder == "a"


async def test_standby_takes_over_only_after_lease_duration_without_renewals(
        candidates: Candidates) -> None:
    clock = candidates.clock
    a, b = candidates.elector("a"), candidates.elector("b")
    await a.acquire()  # ...and then stops renewing, as a stalled process would
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.acquire)
        await eventually(lambda: clock.sleepers == 1)
        while not b.is_leader:
            assert clock.monotonic() < 15, "the standby did not take over an expired lease"
            await tick(clock, 1, done=lambda: b.is_leader)
    assert 15 <= clock.monotonic() < 15 + 2 * 2.2  # the first retry after expiry
    spec = await candidates.spec()
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert spec["acquireTime"] == spec["renewTime"] == candidates.wall()
    assert candidates.changes["b"] == [True]
    # The stalled leader, resuming, steps down at once: its last renewal is too old.
    with pytest.raises(LeadershipLost, match=r"no renewal succeeded for 10s"):
        await a.hold()
    assert not a.is_leader and candidates.changes["a"] == [True, False]


async def test_expiry_is_timed_by_the_local_clock_not_the_remote_renew_time(
        candidates: Candidates) -> None:
    """A renewTime years in the past (a holder with a skewed clock) does not let a
    standby in early: it waits leaseDurationSeconds from when it saw the record."""
    await candidates.client.create(LEASES, {
        "metadata": {"name": NAME},
        "spec": {"holderIdentity": "skewed", "leaseDurationSeconds": 15,
                 "acquireTime": "2000-01-01T00:00:00.000000Z",
                 "renewTime": "2000-01-01T00:00:00.000000Z", "leaseTransitions": 3}},
        candidates.namespace)
    clock = candidates.clock
    b = candidates.elector("b")
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.acquire)
        await eventually(lambda: clock.sleepers == 1)
        assert not b.is_leader
        while not b.is_leader:
            assert clock.monotonic() < 15
            await tick(clock, 1, done=lambda: b.is_leader)
    spec = await candidates.spec()
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 4


async def test_release_lets_the_standby_take_over_at_its_next_retry(
        candidates: Candidates) -> None:
    clock = candidates.clock
    a, b = candidates.elector("a"), candidates.elector("b")
    await a.acquire()
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.acquire)
        await eventually(lambda: clock.sleepers == 1)
        await a.release()
        assert not a.is_leader and candidates.changes["a"] == [True, False]
        spec = await candidates.spec()
        assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
        assert spec["leaseTransitions"] == 0
        await tick(clock, 0, done=lambda: b.is_leader)
    assert b.is_leader and clock.monotonic() <= 2 * 2.2  # no lease_duration wait
    spec = await candidates.spec()
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


async def test_release_after_a_renewal_that_landed_unseen_still_hands_over(
        candidates: Candidates) -> None:
    """A renewal cancelled in flight may reach the server: the Lease still names us at a
    version we never saw. Release reads it again and hands it over, instead of leaving
    it to expire (which would hold the next holder up for lease_duration)."""
    a = candidates.elector("a")
    await a.acquire()
    lease = await candidates.client.get(LEASES, NAME, candidates.namespace)
    lease["spec"]["renewTime"] = candidates.wall()  # the renewal that landed unseen
    await candidates.client.update(LEASES, lease)
    await a.release()
    spec = await candidates.spec()
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1


async def test_release_leaves_a_lease_held_by_someone_else_alone(candidates: Candidates
                                                                ) -> None:
    a, b = candidates.elector("a"), candidates.elector("b")
    await a.acquire()
    async with anyio.create_task_group() as tg:
        tg.start_soon(b.acquire)
        await eventually(lambda: candidates.clock.sleepers == 1)
        tg.cancel_scope.cancel()  # acquire is cancellable while it waits
    assert candidates.clock.sleepers == 0
    before = await candidates.client.get(LEASES, NAME, candidates.namespace)
    await b.release()
    after = await candidates.client.get(LEASES, NAME, candidates.namespace)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert candidates.changes["b"] == []


async def test_hold_raises_at_once_when_another_identity_wrote_the_lease(
        candidates: Candidates) -> None:
    clock = candidates.clock
    a = candidates.elector("a")
    await a.acquire()
    lease = await candidates.client.get(LEASES, NAME, candidates.namespace)
    lease["spec"].update(holderIdentity="intruder", renewTime=candidates.wall())
    await candidates.client.update(LEASES, lease)
    lost: list[tuple[float, str]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until_lost, a, clock, lost)
        await eventually(lambda: clock.sleepers == 2)
        await tick(clock, 0, done=lambda: bool(lost))
    assert len(lost) == 1 and "held by 'intruder'" in lost[0][1]
    assert clock.monotonic() == 2  # the first renewal, long before renew_deadline
    assert not a.is_leader and candidates.changes["a"] == [True, False]
    assert (await candidates.spec())["holderIdentity"] == "intruder"


@pytest.mark.in_process_only
async def test_hold_raises_when_renewals_fail_for_renew_deadline(
        apiserver: Cluster, candidates: Candidates) -> None:
    clock = candidates.clock
    a = candidates.elector("a")
    await a.acquire()
    apiserver.faults.fail_next(1000, status=500, verb="update", resource="leases")
    lost: list[tuple[float, str]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until_lost, a, clock, lost)
        await eventually(lambda: clock.sleepers == 2)
        while not lost:
            assert a.is_leader, "gave up before renew_deadline"
            await tick(clock, 2, done=lambda: bool(lost))
    assert lost[0][0] == 10.0 and "no renewal succeeded for 10s" in lost[0][1]
    assert not a.is_leader and candidates.changes["a"] == [True, False]
    stats = a.statistics()
    assert stats.failed_attempts >= 4 and stats.renewals == 0
    assert stats.last_error is not None and "500 InternalError" in stats.last_error
    assert (await candidates.spec())["holderIdentity"] == "a"  # left to expire


@pytest.mark.in_process_only
async def test_a_hanging_renewal_does_not_delay_losing_the_lease(
        apiserver: Cluster, candidates: Candidates) -> None:
    server = apiserver.require_server()
    clock = candidates.clock
    a = candidates.elector("a")
    await a.acquire()
    apiserver.faults.add_latency(3600, verb="update", resource="leases")
    updates = server.request_count("update", "leases")
    lost: list[tuple[float, str]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(hold_until_lost, a, clock, lost)
        await eventually(lambda: clock.sleepers == 2)
        clock.advance(2)  # the renewal is sent and hangs...
        await eventually(lambda: server.request_count("update", "leases") > updates)
        assert a.is_leader
        clock.advance(8)  # ...and is cancelled at the deadline
        await eventually(lambda: bool(lost))
    assert lost[0][0] == 10.0 and "no renewal succeeded" in lost[0][1]
    apiserver.faults.clear()


async def test_renewals_survive_a_conflict_by_reading_again(
        apiserver: Cluster, candidates: Candidates) -> None:
    clock = candidates.clock
    a = candidates.elector("a")
    await a.acquire()
    # A write to the Lease that keeps us as holder (a label) makes the optimistic
    # renewal conflict; the next step reads the lease again and renews it.
    await candidates.client.patch(LEASES, NAME, {"metadata": {"labels": {"x": "y"}}},
                                  candidates.namespace)
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.hold)
        await eventually(lambda: clock.sleepers == 2)
        await tick(clock, 2)
        assert a.is_leader and a.statistics().renewals == 1
        tg.cancel_scope.cancel()
    assert (await candidates.spec())["renewTime"] == candidates.wall()


async def test_candidates_racing_for_an_absent_lease_elect_one(candidates: Candidates
                                                               ) -> None:
    electors = [candidates.elector(name) for name in "abcd"]
    async with anyio.create_task_group() as tg:
        for elector in electors:
            tg.start_soon(elector.acquire)
        await eventually(lambda: candidates.clock.sleepers == 3
                         and sum(e.is_leader for e in electors) == 1)
        tg.cancel_scope.cancel()
    leader = next(e for e in electors if e.is_leader)
    spec = await candidates.spec()
    assert spec["holderIdentity"] == leader.identity and spec["leaseTransitions"] == 0


@pytest.mark.in_process_only
async def test_losing_the_create_race_reads_the_winners_record(
        apiserver: Cluster, candidates: Candidates) -> None:
    server = apiserver.require_server()
    apiserver.faults.add_latency(0.2, verb="create", resource="leases")  # both GETs see 404
    a, b = candidates.elector("a"), candidates.elector("b")
    async with anyio.create_task_group() as tg:
        tg.start_soon(a.acquire)
        tg.start_soon(b.acquire)
        await eventually(lambda: candidates.clock.sleepers == 1 and (a.is_leader or b.is_leader))
        tg.cancel_scope.cancel()
    assert server.request_count("create", "leases") == 2
    leader, loser = (a, b) if a.is_leader else (b, a)
    stats = loser.statistics()
    assert not loser.is_leader and stats.holder == leader.identity
    assert stats.failed_attempts == 0  # AlreadyExists is answered by reading, not retrying


async def test_a_raising_on_change_is_logged_and_changes_nothing(
        candidates: Candidates, caplog: pytest.LogCaptureFixture) -> None:
    def broken(leading: bool) -> None:
        raise RuntimeError("metrics are down")

    a = LeaderElector(candidates.client, name=NAME, namespace=candidates.namespace,
                      identity="a", clock=candidates.clock, on_change=broken)
    with caplog.at_level(logging.ERROR, "reconcilekit.leaderelection"):
        await a.acquire()
    assert a.is_leader and "on_change(True)" in caplog.text


async def test_hold_needs_the_lease(candidates: Candidates) -> None:
    with pytest.raises(RuntimeError, match="acquire"):
        await candidates.elector("a").hold()


@pytest.mark.parametrize(("options", "message"), [
    ({"lease_duration": 10.0}, r"lease_duration \(10.0\) must be greater than renew_deadline"),
    ({"renew_deadline": 2.4}, r"renew_deadline \(2.4\) must be greater than retry_period \* 1.2"),
    ({"retry_period": 0.0}, "retry_period must be a finite number greater than zero"),
    ({"renew_deadline": -1.0}, "renew_deadline must be a finite number greater than zero"),
    ({"lease_duration": float("nan")}, "lease_duration must be a finite number greater"),
    ({"lease_duration": float("inf")}, "lease_duration must be a finite number greater"),
    ({"identity": ""}, "non-empty identity"),
    ({"name": ""}, "non-empty name"),
])
def test_invalid_timings_and_names_are_refused(options: dict[str, Any], message: str) -> None:
    arguments: dict[str, Any] = {"name": NAME, "namespace": "default", "identity": "a"}
    arguments.update(options)
    with pytest.raises(ValueError, match=message):
        LeaderElector(Client(Configuration()), **arguments)
