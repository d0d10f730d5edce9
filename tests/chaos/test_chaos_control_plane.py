"""Chaos from outside, on kube-apiserver: the operator's invariants while its world fails.

The CNClaim operator runs as two processes (``python -m examples.cnclaim
--leader-elect``, each with its log) against a control plane of its own
(etcd, kube-apiserver, kube-controller-manager) started from the test
assets, with a node simulator in the test. While the claim set changes size,
faults come from outside, as they do in production:

* kube-apiserver SIGKILLed in the middle of a storm and started again;
* the leading operator SIGKILLed (no Lease release): the other takes over,
  and the killed one is started again, as a kubelet restarts a container;
* etcd paused for longer than kube-apiserver's request timeout: writes time
  out, Lease renewals fail, the leader may step down (it exits with one
  ERROR line and is started again).

Watched all along by informers of this test (so on what kube-apiserver
says, not on the operator's word): no Pod is named by two live claims at
once, and no Pod's claimed-by label moves straight from one claim to
another. After each fault the workload must converge (the claim set's
claims all Bound, the pool's Idle Pods all Running, nothing Draining) and
the time that took is the fault's recovery time. At the end: no invariant
broken, no object lost (the pool, the claim set and every claim it should
have), and no traceback in either operator's log.

Runs only with kube-apiserver binaries (``RECONCILEKIT_TEST_ASSETS``), in
CI's second pass: one round of each fault. ``RECONCILEKIT_CHAOS_LONG=1``
runs more rounds and prints a report (the figures in docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import pytest

from examples.cnclaim.demo.scenario import POD_TEMPLATE
from examples.cnclaim.operator import LEASE_NAME, install_crds
from examples.cnclaim.resources import CNCLAIMS, CNCLAIMSETS, CNPOOLS
from reconcilekit import Client, NotFound
from reconcilekit.kinds import NAMESPACES, PODS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import ControlPlane, NodeSimulator
from reconcilekit.testing._control_plane import assets_from_env

from cnclaim_processes import Referee, Replicas, lease_holder, until_converged

ASSETS = assets_from_env()
LONG = os.environ.get("RECONCILEKIT_CHAOS_LONG") == "1"
ROUNDS = 4 if LONG else 1

NS, POOL, SET = "chaos", "chaos", "storm"
POOL_SIZE = 12
REQUEST_TIMEOUT = 10  # kube-apiserver's --request-timeout here; etcd is paused for longer
CONVERGE_WITHIN = 120.0

pytestmark = [
    pytest.mark.skipif(ASSETS is None, reason="chaos from outside needs kube-apiserver and "
                       "etcd binaries: set RECONCILEKIT_TEST_ASSETS or KUBEBUILDER_ASSETS"),
    # each round waits out a Lease expiry and an etcd pause: a minute a round, give or take
    pytest.mark.timeout(300 * ROUNDS),
]


async def _until_converged(client: Client, replicas: int, since: float) -> float:
    return await until_converged(client, NS, pool=POOL, claimset=SET, claims=replicas,
                                 idle=POOL_SIZE, within=CONVERGE_WITHIN, since=since)


async def _leader(client: Client) -> str:
    return await lease_holder(client, LEASE_NAME, NS)


@contextlib.asynccontextmanager
async def _world(tmp_path: Path) -> AsyncIterator[tuple[ControlPlane, Client, Path]]:
    assert ASSETS is not None
    async with ControlPlane(ASSETS, apiserver_flags=(
            f"--request-timeout={REQUEST_TIMEOUT}s",)) as plane:
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        async with Client(plane.configuration(), timeout=REQUEST_TIMEOUT) as client:
            await install_crds(client)  # and wait until they are Established
            await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": NS}})
            yield plane, client, kubeconfig


async def test_invariants_hold_while_the_control_plane_and_the_operator_fail(
        tmp_path: Path) -> None:
    seed = int(os.environ.get("RECONCILEKIT_CHAOS_SEED") or random.randrange(2**31))
    rng = random.Random(seed)
    referee = Referee()
    report: list[tuple[str, float]] = []
    async with _world(tmp_path) as (plane, client, kubeconfig):
        # No webhooks: two replicas on one host cannot both serve the webhook's port
        # (the second exited 1 at every start, so only one replica really ran).
        replicas = Replicas(tmp_path, lambda slot, start: (
            "--kubeconfig", str(kubeconfig), "--namespace", NS, "--leader-elect",
            "--workers", "2", "--metrics-addr", "127.0.0.1:0", "--no-webhooks",
            "--log-level", "INFO"))
        claims = Informer(client, CNCLAIMS, namespace=NS)
        pods = Informer(client, PODS, namespace=NS)
        on_claims, on_pods = referee.handlers(claims)
        claims.add_handler(on_claims)
        pods.add_handler(on_pods)
        async with anyio.create_task_group() as tg, NodeSimulator(client, nodes=3,
                                                                   namespace=NS):
            tg.start_soon(claims.run)
            tg.start_soon(pods.run)
            for slot in (0, 1):
                await tg.start(replicas.run, slot)
            await client.create(CNPOOLS, {
                "apiVersion": CNPOOLS.api_version, "kind": "CNPool",
                "metadata": {"name": POOL},
                "spec": {"replicas": POOL_SIZE, "podTemplate": POD_TEMPLATE}}, NS)
            await client.create(CNCLAIMSETS, {
                "apiVersion": CNCLAIMSETS.api_version, "kind": "CNClaimSet",
                "metadata": {"name": SET},
                "spec": {"replicas": 4, "template": {"spec": {"poolName": POOL}}}}, NS)
            await _until_converged(client, 4, time.monotonic())

            async def scale(n: int) -> None:
                await client.patch(CNCLAIMSETS, SET, {"spec": {"replicas": n}}, NS)

            size = 4
            for _ in range(ROUNDS):
                # kube-apiserver killed mid-storm, back 3 s later.
                size = rng.randint(POOL_SIZE, 2 * POOL_SIZE)
                await scale(size)
                await anyio.sleep(rng.uniform(0.2, 1.5))
                plane.kill("kube-apiserver")
                await anyio.sleep(3)
                back = time.monotonic()
                await plane.restart("kube-apiserver")
                report.append(("kube-apiserver killed mid-storm, restarted after 3 s",
                               await _until_converged(client, size, back)))
                # The leader killed: the other replica takes over once the Lease expires.
                leader = replicas.slot_of(await _leader(client))
                assert leader is not None, "no replica holds the Lease"
                replicas.kill(leader)
                killed = time.monotonic()
                size = rng.randint(0, POOL_SIZE)
                await scale(size)
                report.append(("leading operator SIGKILLed, another takes over",
                               await _until_converged(client, size, killed)))
                # etcd paused for longer than the request timeout, mid-change.
                size = rng.randint(1, 2 * POOL_SIZE)
                await scale(size)
                plane.pause("etcd")
                await anyio.sleep(REQUEST_TIMEOUT + 5)
                plane.resume("etcd")
                resumed = time.monotonic()
                report.append((f"etcd paused {REQUEST_TIMEOUT + 5} s mid-change",
                               await _until_converged(client, size, resumed)))
            await scale(0)
            await _until_converged(client, 0, time.monotonic())
            lost = []
            for resource, name in ((CNPOOLS, POOL), (CNCLAIMSETS, SET)):
                try:
                    await client.get(resource, name, NS)
                except NotFound:
                    lost.append(f"{resource.kind} {name}")
            tg.cancel_scope.cancel()
    tracebacks = {slot: len(re.findall(r"^Traceback \(most recent call last\)",
                                       replicas.log(slot).read_text(errors="replace"), re.M))
                  for slot in (0, 1)}
    warnings = {slot: len(re.findall(r"^\S+ \S+ WARNING ", replicas.log(slot).read_text(
        errors="replace"), re.M)) for slot in (0, 1)}
    summary = (f"seed {seed}: " + "; ".join(f"{what}: recovered in {s:.1f} s"
                                            for what, s in report)
               + f"; operator exits {replicas.exits}, kills {replicas.kills}; "
               f"{referee.events} events refereed, violations {referee.violations}, "
               f"lost {lost}, tracebacks {tracebacks}, WARNING lines {warnings}")
    print(summary)
    assert not referee.violations, summary
    assert not lost, summary
    assert not any(tracebacks.values()), summary + "\n" + "\n".join(
        replicas.log(s).read_text(errors="replace")[-4000:] for s in (0, 1))
