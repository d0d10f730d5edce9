"""Faults from outside the operator's process, refereed from kube-apiserver's audit log.

The CNClaim operator runs as real processes (``python -m examples.cnclaim``)
against a real control plane started by ``ControlPlane(audit=True)``. Each
operator process authenticates as its own user (``operator-0``,
``operator-1``), so kube-apiserver's audit log says which process made each
request, when the server received it and when it answered: the tests check
what must hold on those server-side records, not on the operator's word.
The faults:

* a network partition between the leader and kube-apiserver (a ``TCPProxy``
  per process) lasting past the Lease's expiry;
* seconds of latency on every request;
* SIGKILL of a replica in the middle of a binding (leader election) or of a
  claim's finalizer cleanup (a shard ring), i.e. between the writes of one
  piece of work.

Leases are short here (6 s, renew deadline 4 s, retry 1 s) and pools small,
to keep the control plane's time near a minute and a half in all. Runs only
with kube-apiserver binaries (``RECONCILEKIT_TEST_ASSETS``). Each test prints
what it measured (``pytest -s`` shows it: the figures of docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import datetime
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from examples.cnclaim.demo.scenario import POD_TEMPLATE
from examples.cnclaim.operator import LEASE_NAME, install_crds
from examples.cnclaim.resources import (
    CLAIM_FINALIZER,
    CNCLAIMS,
    CNCLAIMSETS,
    CNPOOLS,
    claimed_by,
    name_of,
    spec_of,
)
from reconcilekit import AlreadyExists, Client
from reconcilekit.kinds import LEASES, NAMESPACES, PODS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import AuditEvent, AuditLog, ControlPlane, NodeSimulator, TCPProxy
from reconcilekit.testing._control_plane import assets_from_env

from cnclaim_processes import Referee, Replicas, lease_holder, log_lines, until_converged

ASSETS = assets_from_env()
USERS = ("operator-0", "operator-1")
LEASE, RENEW, RETRY = 6.0, 4.0, 1.0
# The standby retries every RETRY * [1, 2.2) (client-go's jitter), so it may see an
# expiry that late; the rest of the margin is a loaded machine starting a process.
TAKEOVER_MARGIN = 2.2 * RETRY + 10.0
CONVERGE_WITHIN = 90.0

POOL, SET = "pool", "set"

pytestmark = [
    pytest.mark.skipif(ASSETS is None, reason="faults from outside need kube-apiserver and "
                       "etcd binaries: set RECONCILEKIT_TEST_ASSETS or KUBEBUILDER_ASSETS"),
    pytest.mark.timeout(240),
]


def report(line: str) -> None:
    """Print a measurement (``pytest -s`` shows it; the long run's report)."""
    print(line)


@pytest.fixture(scope="module")
def plane() -> Iterator[ControlPlane]:
    """One control plane for the module (each test works in its own namespace)."""
    assert ASSETS is not None
    control_plane = ControlPlane(ASSETS, users=USERS, audit=True)
    control_plane.start()
    try:
        yield control_plane
    finally:
        control_plane.stop()


def operator_args(kubeconfig: Path, namespace: str, *coordination: str,
                  lease: tuple[float, float, float] = (LEASE, RENEW, RETRY)
                  ) -> Callable[[int, int], Sequence[str]]:
    """The command line of replica ``slot``'s ``start``-th process: its own identity."""
    def args(slot: int, start: int) -> Sequence[str]:
        return ("--kubeconfig", str(kubeconfig).replace("{slot}", str(slot)),
                "--namespace", namespace, *coordination,
                "--identity", f"{namespace}-op{slot}-{start}",
                "--lease-duration", str(lease[0]), "--renew-deadline", str(lease[1]),
                "--retry-period", str(lease[2]), "--workers", "2",
                "--metrics-addr", "127.0.0.1:0", "--no-webhooks", "--log-level", "INFO")
    return args


@dataclass
class Scene:
    """One test's world: an admin client, the audit log, the operator replicas, a referee."""

    namespace: str
    client: Client
    audit: AuditLog
    replicas: Replicas
    referee: Referee

    def writes(self, user: str, *, since: float = 0.0) -> list[AuditEvent]:
        """The successful writes ``user`` made in this namespace, received from ``since``."""
        return [e for e in self.audit.read() if e.user == user and e.write and e.succeeded
                and e.namespace == self.namespace and e.received >= since]

    async def create_workload(self, pool: int, claims: int) -> None:
        ns = self.namespace
        await self.client.create(CNPOOLS, {
            "apiVersion": CNPOOLS.api_version, "kind": "CNPool", "metadata": {"name": POOL},
            "spec": {"replicas": pool, "podTemplate": POD_TEMPLATE}}, ns)
        await self.client.create(CNCLAIMSETS, {
            "apiVersion": CNCLAIMSETS.api_version, "kind": "CNClaimSet",
            "metadata": {"name": SET},
            "spec": {"replicas": claims, "template": {"spec": {"poolName": POOL}}}}, ns)

    async def scale(self, claims: int) -> None:
        await self.client.patch(CNCLAIMSETS, SET, {"spec": {"replicas": claims}},
                                self.namespace)

    async def converged(self, claims: int, idle: int) -> float:
        """Wait until :func:`until_converged` and no claim is left being deleted (its
        finalizer's cleanup done); the seconds that took."""
        began = time.monotonic()
        with anyio.fail_after(CONVERGE_WITHIN):
            while True:
                await until_converged(self.client, self.namespace, pool=POOL, claimset=SET,
                                      claims=claims, idle=idle, within=CONVERGE_WITHIN)
                listed = (await self.client.list(CNCLAIMS, self.namespace))["items"]
                if len(listed) == claims:
                    return time.monotonic() - began
                await anyio.sleep(0.25)

    async def until_written(self, user: str, match: Callable[[AuditEvent], bool]
                            ) -> AuditEvent:
        """The first successful write of ``user`` here that ``match``\\ es, from the events
        the audit log gets from now on (polled every 10 ms)."""
        with anyio.fail_after(CONVERGE_WITHIN):
            while True:
                for event in self.audit.new():
                    if (event.user == user and event.write and event.succeeded
                            and event.namespace == self.namespace and match(event)):
                        return event
                await anyio.sleep(0.01)

    async def no_claim_left_half_done(self) -> None:
        """Every claim here is live, carries the finalizer and is Bound to a Pod that
        exists and is labelled as claimed by it; no Pod is labelled by a missing claim."""
        claims = (await self.client.list(CNCLAIMS, self.namespace))["items"]
        pods = {name_of(p): p for p in (await self.client.list(PODS, self.namespace))["items"]}
        for claim in claims:
            assert not claim["metadata"].get("deletionTimestamp"), f"{name_of(claim)} deleted"
            assert CLAIM_FINALIZER in (claim["metadata"].get("finalizers") or ())
            pod = pods.get(str(spec_of(claim).get("podName") or ""))
            assert pod is not None and claimed_by(pod) == name_of(claim), name_of(claim)
        names = {name_of(c) for c in claims}
        for pod in pods.values():
            assert claimed_by(pod) in names | {""}, f"Pod {name_of(pod)} held by a lost claim"

    def clean_logs(self) -> None:
        """No traceback in any operator's log (a lost Lease is one ERROR line, no more)."""
        for slot in self.replicas.procs:
            assert not log_lines(self.replicas.log(slot), "Traceback"), \
                self.replicas.log(slot).read_text(errors="replace")[-4000:]


@contextlib.asynccontextmanager
async def scene(plane: ControlPlane, namespace: str, tmp_path: Path,
                args: Callable[[int, int], Sequence[str]], slots: int) -> AsyncIterator[Scene]:
    """The CRDs, namespace ``namespace``, the test's informers and referee, a node
    simulator and ``slots`` operator replicas; all stopped (and reaped) on the way out."""
    async with Client(plane.configuration()) as client:
        await install_crds(client)
        with contextlib.suppress(AlreadyExists):
            await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        referee = Referee()
        replicas = Replicas(tmp_path, args)
        claims = Informer(client, CNCLAIMS, namespace=namespace)
        pods = Informer(client, PODS, namespace=namespace)
        on_claims, on_pods = referee.handlers(claims)
        claims.add_handler(on_claims)
        pods.add_handler(on_pods)
        audit = plane.audit_log()
        audit.new()  # from here on
        async with anyio.create_task_group() as tg, NodeSimulator(client, nodes=2,
                                                                   namespace=namespace):
            tg.start_soon(claims.run)
            tg.start_soon(pods.run)
            for slot in range(slots):
                await tg.start(replicas.run, slot)
            yield Scene(namespace, client, audit, replicas, referee)
            tg.cancel_scope.cancel()
    assert not referee.violations, referee.violations


def slot_of_holder(holder: str) -> int:
    """The replica slot of a Lease holder identity ``<ns>-op<slot>-<start>``."""
    return int(holder.rsplit("-", 2)[1].removeprefix("op"))


async def until_holder(client: Client, lease: str, namespace: str,
                       accept: Callable[[str], bool]) -> str:
    """Poll Lease ``namespace/lease`` until its holder is one ``accept`` takes."""
    with anyio.fail_after(CONVERGE_WITHIN):
        while True:
            with contextlib.suppress(Exception):
                holder = await lease_holder(client, lease, namespace)
                if holder and accept(holder):
                    return holder
            await anyio.sleep(0.1)


def is_lease(event: AuditEvent) -> bool:
    return event.resource == "leases"


async def test_a_partitioned_leader_stops_writing_before_another_replica_takes_over(
        plane: ControlPlane, tmp_path: Path) -> None:
    """Partition the leader from kube-apiserver, mid-work, for longer than the Lease.

    Must hold: the partitioned leader steps down (the time of its "lost
    lease" log line; it then exits with code 1) before the other replica's
    first write reaches kube-apiserver (audit timestamps, one clock),
    so no two leaders act at once; the other replica takes over and
    finishes the work while the partition lasts; after healing, the old
    leader's slot runs a follower (restarted, it asks for the Lease in
    vain), everything converges and no Pod was bound twice.

    Measured, not asserted: requests the old leader sent before the cut that
    the partition held and delivered after healing, as TCP would. A write
    among them can take effect after the new leader began (seen: a claim
    create, 201, then deleted by the new leader as one too many): a Lease is
    not a fence (docs/reliability.md).
    """
    ns = "partition"
    async with TCPProxy(plane.url) as p0, TCPProxy(plane.url) as p1:
        proxies = (p0, p1)
        for slot in (0, 1):
            plane.write_kubeconfig(tmp_path / f"kubeconfig-{slot}", user=USERS[slot],
                                   server=proxies[slot].url)
        args = operator_args(tmp_path / "kubeconfig-{slot}", ns, "--leader-elect")
        async with scene(plane, ns, tmp_path, args, slots=2) as world:
            await world.create_workload(pool=3, claims=2)
            await world.converged(claims=2, idle=3)
            holder = await lease_holder(world.client, LEASE_NAME, ns)
            old = slot_of_holder(holder)
            new = 1 - old
            await world.scale(4)
            first = await world.until_written(USERS[old], lambda e: not is_lease(e))
            proxies[old].partition()
            cut = time.time()
            taker = await until_holder(world.client, LEASE_NAME, ns,
                                       lambda h: slot_of_holder(h) == new)
            await world.converged(claims=4, idle=3)  # finished by the new leader alone
            with anyio.fail_after(CONVERGE_WITHIN):  # the old leader stepped down
                while not any(slot == old for slot, _, _ in world.replicas.exits):  # noqa: ASYNC110
                    await anyio.sleep(0.1)
            # The partition lasts longer than a Lease, whatever happened meanwhile: the old
            # leader's last renewal came before the cut, so the step-down, the takeover and
            # the new leader's work can all be over sooner (seen under load: 5.9 s).
            await anyio.sleep(max(0.0, cut + LEASE + 1.0 - time.time()))
            proxies[old].heal()
            healed = time.time()
            await world.converged(claims=4, idle=3)
            # The old slot's process rejoins as a follower: it asks for the Lease, in vain.
            rejoined = f"{ns}-op{old}-{world.replicas.starts[old] - 1}: trying to acquire"
            with anyio.fail_after(CONVERGE_WITHIN):
                while not log_lines(world.replicas.log(old), rejoined):  # noqa: ASYNC110
                    await anyio.sleep(0.1)
            assert await lease_holder(world.client, LEASE_NAME, ns) == taker
            await world.no_claim_left_half_done()
            world.clean_logs()
            exits = [(code, at) for slot, code, at in world.replicas.exits if slot == old]
            events = [e for e in world.audit.read() if e.namespace == ns]
        old_writes = world.writes(USERS[old], since=first.received)
        takeover = min(e.received for e in world.writes(USERS[new], since=cut))
        # the step-down, by the operator's own log (its clock is this machine's)
        line = log_lines(world.replicas.log(old), f"WARNING .* {ns}-op{old}-0 lost lease")[0]
        stopped = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        held = [e for e in events if e.user == USERS[old] and e.received >= healed]
        landed = [e for e in old_writes if e.completed >= takeover]
        report(f"partition of {healed - cut:.1f} s after {first.key} written: the old leader "
               f"stepped down {stopped - cut:.2f} s after the cut and exited "
               f"{exits[0][1] - cut:.2f} s after it (code {exits[0][0]}), the new "
               f"leader's first write {takeover - cut:.2f} s after it (margin "
               f"{takeover - stopped:.2f} s); old leader's requests delivered after the "
               f"heal: {[(e.verb, e.key, e.code) for e in held if e.write]} and "
               f"{sum(1 for e in held if not e.write)} reads; writes that took effect after "
               f"the takeover: {[(e.verb, e.key) for e in landed]}")
        assert exits[0][0] == 1, exits
        assert stopped < takeover, (stopped, takeover)
        # what took effect late was held by the partition, sent before the old leader stopped
        assert all(e.received >= healed for e in landed), landed


async def test_seconds_of_latency_per_request_cause_no_duplicate_writes_nor_a_retry_storm(
        plane: ControlPlane, tmp_path: Path) -> None:
    """Every byte between the operator and kube-apiserver delayed 1 s each way.

    One replica with leader election (client-go's timings: 15 s Lease, 10 s
    renew deadline, 2 s retry). Must hold: the work converges (3 claims
    Bound, 2 Idle Pods); the Lease is never lost (a renewal takes two
    latencies and has connections of its own, so it never waits behind the
    work; it did before, and the leader lost its Lease); no
    write is refused (no 409: the operator's reservations and its waiting
    for its own writes hold while its cache lags by seconds); no object is
    created twice (5 Pods, 3 claims: the expectations hold); each claim's
    binding writes its Pod once and its spec once (status subresources may
    be written once per change of what they count); and the requests stay
    few: reads are served by the operator's cache, so apart from its
    writes it sends a list and a watch per informer (4 informers), at most
    two restarts of each, plus a Lease read (its writes are counted among
    the writes), i.e. at most writes + 4 x 3 x 2 + 1 requests.
    """
    ns = "latency"
    async with TCPProxy(plane.url, latency=1.0) as proxy:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig", user=USERS[0],
                                            server=proxy.url)
        args = operator_args(kubeconfig, ns, "--leader-elect", lease=(15.0, 10.0, 2.0))
        async with scene(plane, ns, tmp_path, args, slots=1) as world:
            began = time.time()
            await world.create_workload(pool=2, claims=3)
            took = await world.converged(claims=3, idle=2)
            world.clean_logs()
            lost = log_lines(world.replicas.log(0), "lost lease")
            ended = time.time()  # not the shutdown's: a renewal cut short, a 409, a release
    requests = [e for e in world.audit.read() if e.user == USERS[0]
                and began <= e.received <= ended]
    writes = [e for e in requests if e.write]
    refused = [(e.verb, e.key, e.code) for e in writes if not e.succeeded]
    creates = Counter(e.resource for e in writes if e.verb == "create" and e.succeeded)
    per_object = Counter(e.key for e in writes if e.succeeded and e.verb != "create"
                         and e.resource not in ("events", "leases") and not e.subresource)
    reads = Counter(e.verb for e in requests if not e.write)
    bound = len(writes) + 4 * 3 * 2 + 1
    report(f"latency 1 s: converged in {took:.1f} s; {len(requests)} requests (bound {bound}): "
           f"{len(writes)} writes, reads {dict(reads)}; creates {dict(creates)}; writes per "
           f"object {dict(per_object)}; refused {refused}; connections {proxy.connections}")
    assert not lost, lost
    assert not refused, refused
    assert creates["pods"] == 5 and creates["cnclaims"] == 3, creates
    assert all(n == 1 for n in per_object.values()), per_object
    assert len(requests) <= bound, reads


async def _kill_mid_work(world: Scene, victim_user: str,
                         match: Callable[[AuditEvent], bool]) -> tuple[AuditEvent, int, float]:
    """SIGKILL the replica whose user makes the first write ``match`` takes; returns that
    write, the slot killed and the time of the kill."""
    event = await world.until_written(victim_user, match) if victim_user else \
        await _first_write_of_any(world, match)
    slot = USERS.index(event.user)
    world.replicas.kill(slot)
    return event, slot, time.time()


async def _first_write_of_any(world: Scene, match: Callable[[AuditEvent], bool]) -> AuditEvent:
    with anyio.fail_after(CONVERGE_WITHIN):
        while True:
            for event in world.audit.new():
                if (event.user in USERS and event.write and event.succeeded
                        and event.namespace == world.namespace and match(event)):
                    return event
            await anyio.sleep(0.01)


def _is_pod_label_write(event: AuditEvent) -> bool:
    return event.resource == "pods" and not event.subresource and event.verb in (
        "update", "patch")


async def test_a_leader_sigkilled_mid_binding_is_succeeded_within_the_lease(
        plane: ControlPlane, tmp_path: Path) -> None:
    """SIGKILL the leader right after the first write of a binding (the Pod's label).

    Must hold: the successor's first write (its Lease acquisition; the standby's,
    or the killed replica's restarted with a new identity) comes no sooner than
    the Lease duration after the killed leader's last renewal (no two leaders),
    and within the Lease duration plus the retry (jittered, 2.2 x 1 s) plus 10 s
    for a loaded machine after the kill (server timestamps); it finishes the binding begun (the
    labelled Pod ends up Bound to that claim); no object lost, no Pod bound
    twice, no claim left with a finalizer and no Pod.
    """
    ns = "kill-leader"
    for slot in (0, 1):
        plane.write_kubeconfig(tmp_path / f"kubeconfig-{slot}", user=USERS[slot])
    args = operator_args(tmp_path / "kubeconfig-{slot}", ns, "--leader-elect")
    async with scene(plane, ns, tmp_path, args, slots=2) as world:
        await world.create_workload(pool=2, claims=1)
        await world.converged(claims=1, idle=2)
        old = slot_of_holder(await lease_holder(world.client, LEASE_NAME, ns))
        await world.scale(3)
        label, killed, at = await _kill_mid_work(world, USERS[old], _is_pod_label_write)
        assert killed == old
        await world.converged(claims=3, idle=2)
        pod = await world.client.get(PODS, label.name, ns)
        claim = await world.client.get(CNCLAIMS, claimed_by(pod), ns)
        await world.no_claim_left_half_done()
        world.clean_logs()
    renewals = [e for e in world.writes(USERS[old]) if is_lease(e) and e.received < at]
    # The successor is the standby or the killed replica restarted (as a kubelet restarts
    # it, with a new identity): whichever writes the Lease first after the kill.
    successor = [e for user in USERS for e in world.writes(user, since=at) if is_lease(e)]
    takeover = min(e.received for e in successor)
    report(f"leader SIGKILLed after writing {label.key}: successor's first write "
           f"{takeover - at:.2f} s after the kill, {takeover - renewals[-1].completed:.2f} s "
           f"after the last renewal (Lease {LEASE:g} s)")
    assert spec_of(claim).get("podName") == label.name
    assert takeover >= renewals[-1].completed + LEASE - 0.01
    assert takeover - at <= LEASE + TAKEOVER_MARGIN


async def test_a_shard_owner_sigkilled_mid_finalizer_cleanup_is_succeeded_within_the_lease(
        plane: ControlPlane, tmp_path: Path) -> None:
    """Two replicas of a shard ring (by uid, 4 shards); SIGKILL the one that has just
    released a deleted claim's Pod, maybe before it removes the claim's finalizer.

    Must hold: a successor (the other replica, or the killed one restarted, as a
    kubelet restarts it, with a new identity) takes the dead replica's shards (the
    first write of one of their Leases after the kill) within two Lease expiries
    (the dead member's Lease, then the shard's), each with the retry's jitter
    (2.2 x 1 s), plus 10 s for a loaded machine, after the kill (server
    timestamps); it finishes the cleanup begun (the claims scaled away are gone,
    their Pods back in the pool), no object lost, no Pod bound twice, no claim
    left with a finalizer and no Pod.
    """
    ns = "kill-shard"
    for slot in (0, 1):
        plane.write_kubeconfig(tmp_path / f"kubeconfig-{slot}", user=USERS[slot])
    ring = "faults"
    args = operator_args(tmp_path / "kubeconfig-{slot}", ns, "--shard-ring", ring,
                         "--shard-key", "uid", "--shards", "4")
    async with scene(plane, ns, tmp_path, args, slots=2) as world:
        await world.create_workload(pool=2, claims=3)
        await world.converged(claims=3, idle=2)
        await world.scale(1)
        release, killed, at = await _kill_mid_work(world, "", _is_pod_label_write)
        await world.converged(claims=1, idle=2)
        await world.no_claim_left_half_done()
        victim = USERS[killed]
        last_writer = {e.name: e.user for e in world.audit.read() if is_lease(e)
                       and e.succeeded and e.namespace == ns and e.received < at
                       and e.name.startswith(f"{ring}-shard-")}  # in order: the last stays
        held = {name for name, user in last_writer.items() if user == victim}
        assert held, "the victim held no shard"
        # The work may converge before the takeover (the victim can finish the release's
        # finalizer before the kill lands): wait for the takeover itself, not a guess.
        with anyio.fail_after(2 * (LEASE + 2.2 * RETRY) + 10.0 + CONVERGE_WITHIN):
            while not (taken := [e for user in USERS  # noqa: ASYNC110 (polling the audit log)
                                 for e in world.writes(user, since=at) if e.name in held]):
                await anyio.sleep(0.1)
        world.clean_logs()
        leases = (await world.client.list(LEASES, ns))["items"]
    takeover = min(e.received for e in taken)
    report(f"shard owner SIGKILLed after writing {release.key}: its shards {sorted(held)} "
           f"taken over {takeover - at:.2f} s after the kill (Lease {LEASE:g} s); Leases now "
           f"{[(name_of(x), x['spec'].get('holderIdentity')) for x in leases]}")
    assert takeover - at <= 2 * (LEASE + 2.2 * RETRY) + 10.0
