"""Manager: a user's controller end to end, metrics over HTTP, leader election, shutdown."""

from __future__ import annotations

import base64
import logging
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
import pytest_asyncio

from reconcilekit import (
    Cache,
    CacheSyncTimeout,
    Client,
    EndpointsError,
    LeaderElection,
    Manager,
    NotFound,
    Reconciler,
    Request,
    Resource,
    Result,
    Sharding,
)
from reconcilekit.kinds import CONFIG_MAPS, LEASES, SECRETS
from reconcilekit.testing import Cluster, FakeClock, OperatorProcess, eventually

HERE = Path(__file__).resolve().parent


class ConfigMapToSecret(Reconciler):
    """Keeps a Secret with the same name and data as each ConfigMap (a user's controller)."""

    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    async def reconcile(self, request: Request) -> Result:
        try:
            cm = await self.cache.get(CONFIG_MAPS, request.name, request.namespace)
        except NotFound:
            return Result.done()  # the Secret goes with it (owner reference)
        data = {k: base64.b64encode(v.encode()).decode()
                for k, v in (cm.get("data") or {}).items()}
        try:
            secret = await self.cache.get(SECRETS, request.name, request.namespace)
        except NotFound:
            await self.client.create(SECRETS, {
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": request.name, "ownerReferences": [{
                    "apiVersion": "v1", "kind": "ConfigMap", "name": request.name,
                    "uid": cm["metadata"]["uid"], "controller": True}]},
                "data": data}, request.namespace)
            return Result.done()
        if secret.get("data") != data:
            secret["data"] = data
            await self.client.update(SECRETS, secret)
        return Result.done()


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_a_users_controller_runs_end_to_end_with_metrics(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    caplog.set_level(logging.INFO, logger="reconcilekit")
    manager = Manager(client, namespace=ns, http_addr="127.0.0.1:0")
    manager.controller().for_(CONFIG_MAPS).owns(SECRETS).with_options(
        max_concurrent_reconciles=2).complete(ConfigMapToSecret(client, manager.cache))

    async def secret_data(name: str) -> dict[str, str] | None:
        try:
            got = await client.get(SECRETS, name, ns)
        except NotFound:
            return None
        return {k: base64.b64decode(v).decode() for k, v in (got.get("data") or {}).items()}

    async with anyio.create_task_group() as tg:
        await tg.start(manager.run)
        await client.create(CONFIG_MAPS, cm("settings", color="blue"), ns)
        await eventually(lambda: _equals(secret_data("settings"), {"color": "blue"}))
        await client.patch(CONFIG_MAPS, "settings", {"data": {"color": "red"}}, ns)
        await eventually(lambda: _equals(secret_data("settings"), {"color": "red"}))
        await client.delete(SECRETS, "settings", ns)  # owns(): the owner is reconciled
        await eventually(lambda: _equals(secret_data("settings"), {"color": "red"}))
        async with aiohttp.ClientSession() as http:
            base = f"http://127.0.0.1:{manager.http_port}"
            async with http.get(f"{base}/metrics") as resp:
                metrics = await resp.text()
            async with http.get(f"{base}/healthz") as resp:
                assert resp.status == 200
            async with http.get(f"{base}/readyz") as resp:
                assert resp.status == 200
        manager.stop()
    for name in ('controller_runtime_reconcile_total{controller="configmap",result="success"}',
                 'controller_runtime_reconcile_errors_total{controller="configmap"}',
                 'controller_runtime_terminal_reconcile_errors_total{controller="configmap"}',
                 "controller_runtime_reconcile_time_seconds_bucket",
                 'controller_runtime_max_concurrent_reconciles{controller="configmap"} 2.0',
                 'controller_runtime_active_workers{controller="configmap"}',
                 'workqueue_depth{controller="configmap"',
                 "workqueue_adds_total", "workqueue_queue_duration_seconds_bucket",
                 "workqueue_work_duration_seconds_bucket", "workqueue_retries_total",
                 "workqueue_unfinished_work_seconds", "workqueue_longest_running_processor",
                 "reconcilekit_cache_relists_total", "reconcilekit_watch_restarts_total"):
        assert name in metrics, name
    # The log of a healthy run: where the endpoints are, start, stop; nothing louder.
    said = [r.getMessage() for r in caplog.records if r.name.startswith("reconcilekit")]
    assert f"serving /metrics, /healthz and /readyz on http://127.0.0.1:{manager.http_port}" in (
        said)
    assert said[-1] == "shutdown complete"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def _equals(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_readyz_is_unready_until_caches_sync(client: Client) -> None:
    manager = Manager(client, http_addr=None)
    assert manager.ready() == (False, "caches not synced")


async def test_an_endpoint_address_in_use_fails_the_run_with_one_clear_error(
        client: Client) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(EndpointsError) as caught:  # not wrapped in an exception group
            await Manager(client, http_addr=address).run()
        assert await Manager(client, http_addr=address).serve() == 1
    assert str(caught.value) == (f"cannot serve /metrics, /healthz and /readyz on {address}: "
                                 "address already in use")


async def test_sync_timeout_names_the_missing_resource(client: Client) -> None:
    clock = FakeClock()
    manager = Manager(client, http_addr=None, clock=clock, cache_sync_timeout=60)
    missing = Resource("nothing.example.com", "v1", "Thing", "things")

    class Noop(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            return Result.done()

    manager.controller().for_(missing).complete(Noop())
    errors: list[Exception] = []

    async def run() -> None:
        try:
            await manager.run()
        except CacheSyncTimeout as err:
            errors.append(err)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await eventually(lambda: 60.0 in clock.deadlines() and any(
            s.waiting_for for s in manager.cache.statistics()))
        clock.advance(60)
    assert len(errors) == 1
    assert ("things.nothing.example.com/v1 (last error: not served by the API server (404); "
            "waiting for CustomResourceDefinition things.nothing.example.com") in str(errors[0])


class Tracking(Reconciler):
    """Records, under its replica's name, each object it reconciles."""

    def __init__(self, who: str, seen: dict[str, list[str]]) -> None:
        self.who, self.seen = who, seen

    async def reconcile(self, request: Request) -> Result:
        self.seen[self.who].append(request.name)
        return Result.done()


async def test_only_the_leader_reconciles_and_a_standby_takes_over(apiserver: Cluster,
                                                                   client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def make(who: str) -> Manager:
        manager = Manager(client, namespace=ns, http_addr=None, clock=clock,
                          coordination=LeaderElection(name="demo-lock"), identity=who)
        manager.controller().for_(CONFIG_MAPS).complete(Tracking(who, seen))
        return manager

    first, second = make("a"), make("b")
    async with anyio.create_task_group() as tg:
        tg.start_soon(first.run)
        await eventually(lambda: first.elector is not None and first.elector.is_leader)
        tg.start_soon(second.run)
        await client.create(CONFIG_MAPS, cm("one"), ns)
        await eventually(lambda: "one" in seen["a"])
        clock.advance(2)  # a few retry periods: the standby keeps trying
        await anyio.sleep(0.05)
        assert seen["b"] == [] and second.elector is not None
        assert not second.elector.is_leader
        first.stop()  # releases the Lease
        with anyio.fail_after(60):  # a retry period at a time, each attempt answered
            while not second.elector.is_leader:
                clock.advance(2.5)
                await clock.until_parked(client)
        await eventually(lambda: second.elector is not None and second.elector.is_leader)
        await client.create(CONFIG_MAPS, cm("two"), ns)
        await eventually(lambda: "two" in seen["b"])
        second.stop()
    assert "two" not in seen["a"]


async def test_a_cold_standby_lists_nothing_until_it_takes_the_lease(apiserver: Cluster,
                                                                      client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()
    seen: dict[str, list[str]] = {"a": [], "b": []}

    def make(who: str) -> Manager:
        manager = Manager(client, namespace=ns, http_addr=None, clock=clock, identity=who,
                          coordination=LeaderElection(name="cold-lock", standby="cold"))
        manager.controller().for_(CONFIG_MAPS).complete(Tracking(who, seen))
        return manager

    first, second = make("a"), make("b")
    await client.create(CONFIG_MAPS, cm("one"), ns)
    async with anyio.create_task_group() as tg:
        tg.start_soon(first.run)
        await eventually(lambda: "one" in seen["a"])
        tg.start_soon(second.run)
        assert second.elector is not None
        # The standby has read the Lease and found it held: it waits, listing nothing.
        await eventually(lambda: second.elector is not None
                         and second.elector.statistics().holder == "a")
        assert not second.elector.is_leader
        assert second.ready() == (True, "ok (cold standby: caches start with the Lease)")
        assert [s.lists for s in second.cache.statistics()] == [0]
        first.stop()  # releases the Lease
        with anyio.fail_after(60):  # a retry period at a time, each attempt answered
            while not second.elector.is_leader:
                clock.advance(2.5)
                await clock.until_parked(client)
        # Leading, it lists, syncs and reconciles what is there.
        await eventually(lambda: "one" in seen["b"])
        assert [s.lists for s in second.cache.statistics()] == [1]
        assert second.ready() == (True, "ok")
        second.stop()


def test_a_standby_is_warm_or_cold() -> None:
    assert LeaderElection(name="lock").standby == "warm"
    with pytest.raises(ValueError, match="standby is 'warm' or 'cold', not 'tepid'"):
        LeaderElection(name="lock", standby="tepid")  # type: ignore[arg-type]


async def test_sigterm_finishes_in_flight_work_and_exits_zero(apiserver: Cluster,
                                                              client: Client) -> None:
    if apiserver.server is not None:
        kubeconfig = apiserver.server.write_kubeconfig(
            Path(os.environ.get("TMPDIR", "/tmp")) / f"rk-sigterm-{os.getpid()}.kubeconfig")
    else:
        assert apiserver.kubeconfig_path is not None
        kubeconfig = apiserver.kubeconfig_path
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("slow"), ns)
    try:
        async with OperatorProcess(sys.executable, str(HERE / "sigterm_app.py"),
                                   str(kubeconfig), ns, name="sigterm_app.py") as proc:
            await proc.wait_for_line("reconciling slow", within=30)
            code = await proc.stop(grace=30)
    finally:
        if apiserver.server is not None:  # ours to remove (not a real backend's own)
            kubeconfig.unlink(missing_ok=True)
    output = "\n".join(proc.lines)
    assert code == 0, output
    done = await client.get(CONFIG_MAPS, "slow", ns)
    assert done["metadata"].get("annotations", {}).get("finished") == "yes", output


async def test_a_lost_lease_stops_reconciling_and_fails_the_run(apiserver: Cluster,
                                                                client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()

    class Noop(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            return Result.done()

    manager = Manager(client, namespace=ns, http_addr=None, clock=clock,
                      coordination=LeaderElection(name="lost-lock"), identity="me")
    manager.controller().for_(CONFIG_MAPS).complete(Noop())
    outcome: list[BaseException] = []

    async def run() -> None:
        try:
            await manager.run()
        except Exception as err:
            outcome.append(err)

    async with anyio.create_task_group() as tg:
        tg.start_soon(run)
        await eventually(lambda: manager.elector is not None and manager.elector.is_leader)
        lease = await client.get(LEASES, "lost-lock", ns)
        lease["spec"]["holderIdentity"] = "intruder"
        await client.update(LEASES, lease)
        with anyio.fail_after(60):  # a retry period at a time, each renewal answered
            while not outcome:
                clock.advance(2)
                await clock.until_parked(client)
    assert type(outcome[0]).__name__ == "LeadershipLost"
    assert manager.controllers[0]._stopped.is_set()  # the workers were stopped


async def test_readyz_reports_a_failing_watch_and_expectation_timeouts_are_counted(
        apiserver: Cluster, client: Client) -> None:
    from prometheus_client import generate_latest

    ns = apiserver.namespace
    clock = FakeClock()
    manager = Manager(client, namespace=ns, http_addr=None, clock=clock)

    class Noop(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            return Result.done()

    manager.controller().for_(CONFIG_MAPS).complete(Noop())
    expectations = manager.expectations("configmap", timeout=60)
    expectations.expect_creations(Request(ns, "x"), 1)
    async with anyio.create_task_group() as tg:
        await tg.start(manager.run)
        await eventually(lambda: manager.ready() == (True, "ok"))
        faults = apiserver.faults
        faults.fail_next(1, status=403, verb="watch", resource="configmaps")
        faults.close_watches()
        await eventually(lambda: manager.ready()[0] is False)
        assert manager.ready()[1] == "watch failing: configmaps/v1"
        clock.advance(61)
        assert expectations.satisfied(Request(ns, "x"))
        manager.stop()
    text = generate_latest(manager.registry).decode()
    assert 'reconcilekit_expectation_timeouts_total{controller="configmap"} 1.0' in text


async def test_managers_get_distinct_default_identities(client: Client) -> None:
    """Two managers in one process once shared hostname_pid and both led (the chaos
    suite found it: two leaders reconciled the same keys at once)."""
    one = Manager(client, http_addr=None, coordination=LeaderElection(name="x"))
    two = Manager(client, http_addr=None, coordination=LeaderElection(name="x"))
    assert one.identity != two.identity


async def test_stop_during_cache_sync_returns_at_once(client: Client) -> None:
    """A SIGTERM while a cache cannot sync (a CRD not installed) must not wait out the
    sync timeout."""
    clock = FakeClock()
    manager = Manager(client, http_addr=None, clock=clock, cache_sync_timeout=3600)

    class Noop(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            return Result.done()

    manager.controller().for_(Resource("nothing.example.com", "v1", "Thing", "things")
                              ).complete(Noop())
    async with anyio.create_task_group() as tg:
        tg.start_soon(manager.run)
        await eventually(lambda: 3600.0 in clock.deadlines())
        manager.stop()
        await eventually(lambda: not manager._running)


@pytest_asyncio.fixture
async def started(apiserver: Cluster, client: Client) -> AsyncIterator[Manager]:
    """A user's fixture: pytest-asyncio runs its set-up and teardown in different tasks,
    where a task group entered in one and left in the other would fail."""
    manager = Manager(client, namespace=apiserver.namespace, http_addr=None)
    manager.controller().for_(CONFIG_MAPS).owns(SECRETS).complete(
        ConfigMapToSecret(client, manager.cache))
    async with manager:
        yield manager


async def test_a_manager_started_in_a_fixture_runs_and_stops_cleanly(
        started: Manager, apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    assert started.ready() == (True, "ok")  # start() returned once the controllers ran
    await client.create(CONFIG_MAPS, cm("in-fixture", color="green"), ns)

    async def copied() -> bool:
        try:
            return bool((await client.get(SECRETS, "in-fixture", ns)).get("data"))
        except NotFound:
            return False

    await eventually(copied, what="the Secret written by the fixture's manager")


async def test_start_raises_what_ended_the_manager(client: Client) -> None:
    async with anyio.create_task_group() as tg:
        blocker = Manager(client, http_addr="127.0.0.1:0")
        await tg.start(blocker.run)
        taken = f"127.0.0.1:{blocker.http_port}"
        with pytest.raises(EndpointsError, match=f"cannot serve .* on {taken}"):
            await Manager(client, http_addr=taken).start()
        blocker.stop()
    await Manager(client, http_addr=None).shutdown()  # never started: nothing to do


async def test_coordination_is_one_leader_or_shards_never_both(client: Client) -> None:
    """How replicas share the work is one option: a LeaderElection or a Sharding (they
    exclude each other by construction); anything else is refused with its type named."""
    leading = Manager(client, http_addr=None, coordination=LeaderElection(name="x"))
    assert leading.elector is not None and leading.ring is None
    sharded = Manager(client, http_addr=None, coordination=Sharding(name="ring"))
    assert sharded.ring is not None and sharded.elector is None
    with pytest.raises(TypeError, match="LeaderElection, a Sharding or None, not bool"):
        Manager(client, http_addr=None, coordination=True)  # type: ignore[arg-type]


@pytest.mark.parametrize("options", [LeaderElection, Sharding])
def test_lease_timings_are_checked_when_the_options_are_built(
        options: type[LeaderElection] | type[Sharding]) -> None:
    with pytest.raises(ValueError, match=r"lease_duration \(5\) must be greater than "
                                         r"renew_deadline \(10.0\)"):
        options(name="x", lease_duration=5)
    with pytest.raises(ValueError, match="needs the"):
        options(name="")
