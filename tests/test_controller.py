"""Controller on its own (no builder, no manager): workers, retries, requeues, predicates,
priorities and fairness across namespaces."""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable, Hashable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reconcilekit import (
    APIConnectionError,
    Cache,
    CacheScope,
    Client,
    Conflict,
    Controller,
    ControllerBuilder,
    NotFound,
    Reconciler,
    Request,
    Result,
    SelectorError,
    TerminalError,
    enqueue_object,
    fairness_by_object,
    generation_changed,
    label_selector_predicate,
    labels_changed,
)
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES
from reconcilekit.testing import Cluster, FakeClock, eventually
from reconcilekit.workqueue import LOW_PRIORITY, ItemExponentialFailureRateLimiter


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


class Recording(Reconciler):
    """Records calls; ``behaviour(request, call_number)`` decides the outcome."""

    def __init__(self, behaviour: Callable[[Request, int], Any] | None = None) -> None:
        self.calls: Counter[str] = Counter()
        self.order: list[str] = []
        self.active: set[Request] = set()
        self.overlaps = 0
        self.behaviour = behaviour

    async def reconcile(self, request: Request) -> Result:
        if request in self.active:
            self.overlaps += 1
        self.active.add(request)
        try:
            self.calls[request.name] += 1
            self.order.append(request.name)
            await anyio.lowlevel.checkpoint()
            if self.behaviour is not None:
                outcome = self.behaviour(request, self.calls[request.name])
                if isinstance(outcome, BaseException):
                    raise outcome
                if isinstance(outcome, Result):
                    return outcome
            return Result.done()
        finally:
            self.active.discard(request)


@asynccontextmanager
async def running(cache: Cache, *controllers: Controller) -> AsyncIterator[None]:
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(10)
        for controller in controllers:
            await tg.start(controller.run)
        yield
        tg.cancel_scope.cancel()


async def test_no_key_is_reconciled_twice_at_once_under_8_workers(apiserver: Cluster,
                                                                  client: Client) -> None:
    ns = apiserver.namespace
    names = [f"c{i}" for i in range(5)]
    for name in names:
        await client.create(CONFIG_MAPS, cm(name), ns)
    cache = Cache(client, namespace=ns)
    reconciler = Recording()
    controller = Controller("storm", reconciler, cache, max_concurrent_reconciles=8)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        for round_ in range(20):  # a storm of updates to few keys
            for name in names:
                await client.patch(CONFIG_MAPS, name, {"data": {"round": str(round_)}}, ns)
        await eventually(lambda: len(controller.queue) == 0 and controller.in_flight == 0
                         and all(reconciler.calls[n] >= 2 for n in names))
    assert reconciler.overlaps == 0
    controller.queue._check_invariants()


async def test_errors_back_off_per_key_and_success_resets(apiserver: Cluster,
                                                          client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("flaky"), ns)
    clock = FakeClock()
    fail_until = 4

    def behaviour(request: Request, n: int) -> Any:
        if request.name != "flaky":  # a real namespace holds kube-root-ca.crt too
            return Result.done()
        return RuntimeError(f"attempt {n} failed") if n < fail_until else Result.done()

    reconciler = Recording(behaviour)
    limiter: ItemExponentialFailureRateLimiter[Request] = ItemExponentialFailureRateLimiter(
        base_delay=1.0, max_delay=100.0)
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("flaky", reconciler, cache, rate_limiter=limiter, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    key = Request(ns, "flaky")
    async with running(cache, controller):
        await eventually(lambda: reconciler.calls["flaky"] == 1)
        delays = []
        for attempt in (1, 2, 3):
            await eventually(lambda: controller.queue.statistics().waiting == 1)
            assert limiter.num_requeues(key) == attempt
            delays.append(controller.queue._delays.next_deadline() - clock.monotonic())
            clock.advance(delays[-1])
            await eventually(lambda a=attempt: reconciler.calls["flaky"] == a + 1)
        await eventually(lambda: limiter.num_requeues(key) == 0)  # success forgot the key
    assert delays == [1.0, 2.0, 4.0]


async def test_requeue_after_reconciles_again_at_the_deadline(apiserver: Cluster,
                                                              client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("again"), ns)
    clock = FakeClock()
    reconciler = Recording(lambda r, n: Result.requeue_after(30)
                           if r.name == "again" and n == 1 else Result.done())
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("again", reconciler, cache, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: reconciler.calls["again"] == 1)
        await eventually(lambda: controller.queue.statistics().waiting == 1)
        clock.advance(29)
        await anyio.sleep(0.05)
        assert reconciler.calls["again"] == 1
        clock.advance(1)
        await eventually(lambda: reconciler.calls["again"] == 2)


async def test_a_raising_reconcile_does_not_stop_others_and_terminal_is_not_retried(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace

    def behaviour(request: Request, n: int) -> Any:
        if request.name == "bad":
            return RuntimeError("boom")
        if request.name == "hopeless":
            return TerminalError("invalid spec")
        return None

    clock = FakeClock()  # retries of "bad" wait on this clock: never reached
    reconciler = Recording(behaviour)
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("mixed", reconciler, cache, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        for name in ("bad", "hopeless", "good"):
            await client.create(CONFIG_MAPS, cm(name), ns)
        await eventually(lambda: all(reconciler.calls[n] == 1
                                     for n in ("bad", "hopeless", "good")))
        await eventually(lambda: controller.queue.statistics().waiting == 1)  # only "bad"
        await client.create(CONFIG_MAPS, cm("later"), ns)
        await eventually(lambda: reconciler.calls["later"] == 1)
    records = [r for r in caplog.records if r.name == "reconcilekit.controller"]
    assert any("retrying" in r.getMessage() and getattr(r, "key", "") == f"{ns}/bad"
               for r in records)
    assert any("permanently" in r.getMessage() and getattr(r, "controller", "") == "mixed"
               for r in records)


async def test_failures_are_logged_by_kind_one_line_each_and_repeats_counted(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    """A Conflict is INFO; an API error or lost connection is one WARNING line, the same
    one within a minute counted (an outage across keys too); a bug (anything else) gets
    its traceback once per key, then one line. Every line names the attempt and the next
    retry."""
    ns = apiserver.namespace
    conflict = Conflict("the object has been modified", status=409, reason="Conflict")
    outage = APIConnectionError("GET https://k8s/api/v1/pods: cannot connect", sent=False)
    outcomes: dict[str, Any] = {"raced": conflict, "outage": outage, "outage-too": outage,
                                "buggy": KeyError("spec")}

    def behaviour(request: Request, n: int) -> Any:
        return outcomes.get(request.name) if n <= 4 else None

    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[Request] = ItemExponentialFailureRateLimiter(
        base_delay=1.0, max_delay=1.0)
    reconciler = Recording(behaviour)
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("logs", reconciler, cache, rate_limiter=limiter, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    caplog.set_level(logging.INFO, logger="reconcilekit.controller")
    async with running(cache, controller):
        for name in outcomes:
            await client.create(CONFIG_MAPS, cm(name), ns)
        for attempt in range(1, 5):  # four failures each, a second apart, then success
            # every key has failed and waits out its backoff before the clock moves
            await eventually(lambda a=attempt: all(reconciler.calls[n] == a for n in outcomes)
                             and controller.queue.statistics().waiting == len(outcomes))
            clock.advance(1)
        await eventually(lambda: all(reconciler.calls[n] == 5 for n in outcomes)
                         and controller.queue.statistics().waiting == 0)
    lines: dict[str, list[logging.LogRecord]] = {name: [] for name in outcomes}
    for r in caplog.records:
        if r.name == "reconcilekit.controller" and (name := getattr(r, "key", "")[len(ns) + 1:]):
            lines[name].append(r)
    raced, buggy = lines["raced"], lines["buggy"]
    down = lines["outage"] + lines["outage-too"]  # one outage: one line for both keys
    assert [(r.levelno, bool(r.exc_info)) for r in raced] == [(logging.INFO, False)] * 4
    assert raced[0].getMessage() == ("reconcile failed (attempt 1): 409 Conflict: the object "
                                     "has been modified; retrying in 1.00s")
    assert [(r.levelno, bool(r.exc_info)) for r in down] == [(logging.WARNING, False)]
    assert "(attempt 1): GET https://k8s/api/v1/pods: cannot connect; retrying" in (
        down[0].getMessage())
    assert [(r.levelno, bool(r.exc_info)) for r in buggy] == [
        (logging.ERROR, True), (logging.ERROR, False)]
    assert buggy[0].getMessage() == "reconcile failed (attempt 1): KeyError: 'spec'; " \
                                    "retrying in 1.00s"
    assert "again (attempt 2)" in buggy[1].getMessage()
    assert "traceback logged before" in buggy[1].getMessage()
    assert all(getattr(r, "controller", "") == "logs" for rs in lines.values() for r in rs)


async def test_a_failure_while_a_change_came_in_says_the_key_is_queued_again(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("busy"), ns)
    cache = Cache(client, namespace=ns)
    calls = 0

    class ChangesThenFails(Reconciler):
        async def reconcile(self, request: Request) -> Result:
            nonlocal calls
            if request.name != "busy":
                return Result.done()
            calls += 1
            if calls == 1:  # a change arrives while this reconcile runs, then it fails
                await client.patch(CONFIG_MAPS, "busy", {"data": {"v": "2"}}, ns)
                await eventually(lambda: cache.has_seen_own_write(CONFIG_MAPS, "busy", ns))
                raise RuntimeError("failed after the change")
            return Result.done()

    controller = Controller("busy", ChangesThenFails(), cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: calls == 2)  # the queued change, at once, not after backoff
    [line] = [r.getMessage() for r in caplog.records if r.name == "reconcilekit.controller"]
    assert line == ("reconcile failed (attempt 1): RuntimeError: failed after the change; "
                    "queued again already")


async def test_reconcile_timeout_cancels_and_retries(apiserver: Cluster, client: Client
                                                     ) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("slow"), ns)

    class Slow(Reconciler):
        calls = 0

        async def reconcile(self, request: Request) -> Result:
            if request.name != "slow":  # a real namespace holds kube-root-ca.crt too
                return Result.done()
            Slow.calls += 1
            if Slow.calls == 1:
                await anyio.sleep_forever()
            return Result.done()

    limiter: ItemExponentialFailureRateLimiter[Request] = ItemExponentialFailureRateLimiter(
        base_delay=0.001, max_delay=0.001)
    cache = Cache(client, namespace=ns)
    controller = Controller("slow", Slow(), cache, reconcile_timeout=0.05,
                            rate_limiter=limiter)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: Slow.calls == 2)


async def test_predicates_filter_events(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("p"), ns)
    reconciler = Recording()
    cache = Cache(client, namespace=ns)
    controller = Controller("labels", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object, predicates=[labels_changed()])
    async with running(cache, controller):
        await eventually(lambda: reconciler.calls["p"] == 1)  # creation passes
        await client.patch(CONFIG_MAPS, "p", {"data": {"x": "1"}}, ns)  # filtered out
        await client.patch(CONFIG_MAPS, "p", {"metadata": {"labels": {"a": "b"}}}, ns)
        await eventually(lambda: reconciler.calls["p"] == 2)
    assert reconciler.calls["p"] == 2


def test_the_label_selector_predicate_sees_objects_enter_and_leave() -> None:
    web = {"metadata": {"labels": {"app": "web", "tier": "front"}}}
    db = {"metadata": {"labels": {"app": "db"}}}
    bare: dict[str, Any] = {"metadata": {}}
    p = label_selector_predicate("app=web,tier!=back")
    assert p.create(web) and not p.create(db) and not p.create(bare)
    assert p.update(db, web) and p.update(web, db)  # entering and leaving both pass
    assert not p.update(db, bare)
    assert p.delete(web) and not p.delete(db)
    assert label_selector_predicate({"app": "db"}).create(db)
    with pytest.raises(SelectorError):
        label_selector_predicate("app in (web")


def test_deletion_always_passes_the_generation_predicate() -> None:
    p = generation_changed()
    old = {"metadata": {"generation": 3}}
    assert not p.update(old, {"metadata": {"generation": 3}})
    deleting = {"metadata": {"generation": 3, "deletionTimestamp": "2026-01-01T00:00:00Z"}}
    assert p.update(old, deleting)
    assert p.update(old, {"metadata": {"generation": 4}})


def test_result_has_one_way_to_say_each_thing() -> None:
    assert Result.done().requeue_after_seconds is None
    assert Result.requeue_after(5).requeue_after_seconds == 5.0
    for bad in (0, -1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="requeue_after"):
            Result.requeue_after(bad)


def test_controller_options_are_checked(client: Client) -> None:
    cache = Cache(client)
    with pytest.raises(ValueError, match="max_concurrent_reconciles"):
        Controller("x", Recording(), cache, max_concurrent_reconciles=0)
    with pytest.raises(ValueError, match="needs a name"):
        Controller("", Recording(), cache)


async def test_the_initial_list_does_not_starve_new_events(apiserver: Cluster,
                                                           client: Client) -> None:
    """In one namespace, by priority alone: queued at priority 0 the initial list would
    put the new key last, after all 150 of its keys."""
    ns = apiserver.namespace
    for i in range(150):
        await client.create(CONFIG_MAPS, cm(f"old-{i:03d}"), ns)

    class Slow(Recording):
        async def reconcile(self, request: Request) -> Result:
            await anyio.sleep(0.002)
            return await super().reconcile(request)

    reconciler = Slow()
    cache = Cache(client, namespace=ns)
    controller = Controller("fair", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: len(reconciler.order) >= 3)
        await client.create(CONFIG_MAPS, cm("new"), ns)
        await eventually(lambda: "new" in reconciler.calls)
        position = reconciler.order.index("new")
        await eventually(lambda: len(reconciler.calls) >= 151, within=30)  # (+ kube-root-ca.crt)
    assert position < 40, f"the new key waited behind {position} initial keys"


@pytest.fixture
async def other_namespace(apiserver: Cluster, client: Client) -> AsyncIterator[str]:
    """A second namespace of the test's own."""
    name = f"{apiserver.namespace}-b"
    await client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                     "metadata": {"name": name}})
    yield name
    with contextlib.suppress(NotFound):
        await client.delete(NAMESPACES, name)


class Gated(Recording):
    """Records calls; the first reconcile of ``hold`` (None: the first of all) waits until
    ``release`` is set."""

    def __init__(self, hold: str | None = None) -> None:
        super().__init__()
        self.hold = hold
        self.holding = anyio.Event()
        self.release = anyio.Event()

    async def reconcile(self, request: Request) -> Result:
        if self.hold in (None, request.name) and not self.holding.is_set():
            self.holding.set()
            await self.release.wait()
        return await super().reconcile(request)


async def create_many(client: Client, namespace: str, names: list[str]) -> None:
    async def create(batch: list[str]) -> None:
        for name in batch:
            await client.create(CONFIG_MAPS, cm(name), namespace)

    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(create, names[i::8])


def pending(controller: Controller) -> dict[Request, int]:
    """The keys ready in the controller's queue, with their priorities."""
    return dict(controller.queue._ready.entries())


async def test_initial_list_and_resync_keys_are_low_priority_new_events_normal(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, cm("listed"), ns)
    cache = Cache(client, namespace=ns)
    controller = Controller("priorities", Recording(), cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with anyio.create_task_group() as tg:  # the cache runs; no worker takes keys
        await tg.start(cache.run)
        await cache.wait_for_sync(10)
        assert pending(controller)[Request(ns, "listed")] == LOW_PRIORITY
        assert set(pending(controller).values()) == {LOW_PRIORITY}
        await client.create(CONFIG_MAPS, cm("created"), ns)
        await eventually(lambda: Request(ns, "created") in pending(controller))
        assert pending(controller)[Request(ns, "created")] == 0
        while len(controller.queue):
            controller.queue.done(controller.queue.get_nowait())
        cache.informer_for(CONFIG_MAPS).resync()  # updates with equal resourceVersions
        assert pending(controller)[Request(ns, "listed")] == LOW_PRIORITY
        assert pending(controller)[Request(ns, "created")] == LOW_PRIORITY
        await client.patch(CONFIG_MAPS, "listed", {"data": {"v": "2"}}, ns)
        await eventually(lambda: pending(controller)[Request(ns, "listed")] == 0)  # moved up
        while len(controller.queue):
            controller.queue.done(controller.queue.get_nowait())
        controller.watch(CONFIG_MAPS, enqueue_object)  # a handler added late replays the store
        assert pending(controller)[Request(ns, "listed")] == LOW_PRIORITY
        assert set(pending(controller).values()) == {LOW_PRIORITY}
        tg.cancel_scope.cancel()


async def test_a_new_event_in_another_namespace_goes_ahead_of_a_1000_key_initial_list(
        apiserver: Cluster, client: Client, other_namespace: str) -> None:
    """Low priority alone puts it ahead; fairness across namespaces would too."""
    ns = apiserver.namespace
    await create_many(client, ns, [f"old-{i:04d}" for i in range(1000)])
    reconciler = Gated()
    cache = Cache(client, default_namespaces=[ns, other_namespace])
    controller = Controller("backlog", reconciler, cache)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(reconciler.holding.is_set)
        assert len(controller.queue) >= 1000  # listed before the sync, less the one held
        await client.create(CONFIG_MAPS, cm("new"), other_namespace)
        await eventually(lambda: Request(other_namespace, "new") in controller.queue._dirty)
        reconciler.release.set()
        await eventually(lambda: "new" in reconciler.calls)
        position = reconciler.order.index("new")  # the key held is first
    assert position <= 2, f"the new key waited behind {position - 1} keys of the initial list"


# A real cluster publishes kube-root-ca.crt into each new namespace, whenever its
# controller gets to it: queued between the test's keys, it would take a turn.
NOT_THE_CLUSTERS = CacheScope(field_selector="metadata.name!=kube-root-ca.crt")


@pytest.mark.parametrize("fairness", ["namespace", None])
async def test_keys_of_one_priority_are_served_across_namespaces_in_turn(
        apiserver: Cluster, client: Client, other_namespace: str, fairness: str | None) -> None:
    """30 keys of ordinary events queued in one namespace delay a key of another by at
    most one; first come, first served (``fairness=None``) it waits behind all 30."""
    ns = apiserver.namespace
    reconciler = Gated("hold")
    cache = Cache(client, default_namespaces=[ns, other_namespace],
                  scopes={CONFIG_MAPS: NOT_THE_CLUSTERS})
    by: Callable[[Request], Hashable] | None = (lambda r: r.namespace) if fairness else None
    controller = Controller("turns", reconciler, cache, fairness=by)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: len(controller.queue) == 0 and controller.in_flight == 0)
        await client.create(CONFIG_MAPS, cm("hold"), ns)
        await eventually(reconciler.holding.is_set)
        busy = [f"busy-{i:02d}" for i in range(30)]
        await create_many(client, ns, busy)

        def queued() -> set[str]:  # by name: a relist may queue "hold" again meanwhile
            return {request.name for request in pending(controller)}

        await eventually(lambda: set(busy) <= queued(), what="the 30 keys queued")
        await client.create(CONFIG_MAPS, cm("new"), other_namespace)
        await eventually(lambda: "new" in queued(), what="the other namespace's key queued")
        assert {p for r, p in pending(controller).items() if r.name != "hold"} == {0}
        reconciler.release.set()
        await eventually(lambda: all(reconciler.calls[n] == 1 for n in [*busy, "new"]))
    after_hold = reconciler.order[reconciler.order.index("hold") + 1:]
    assert after_hold.index("new") == (1 if fairness else 30), after_hold


def tenant_of(obj: Any) -> Hashable:
    tenant = (obj["metadata"].get("labels") or {}).get("tenant", "")
    if tenant == "broken":
        raise KeyError("no such tenant")
    return str(tenant)


@pytest.mark.parametrize("by_tenant", [True, False])
async def test_keys_are_served_across_a_function_of_the_object_in_turn(
        apiserver: Cluster, client: Client, by_tenant: bool,
        caplog: pytest.LogCaptureFixture) -> None:
    """fairness_by_object(label): 30 keys of tenant a in one namespace delay the key of
    tenant b by at most one; across namespaces (the default) it waits behind all 30. A
    lane that cannot be read is logged once and its key served anyway."""
    ns = apiserver.namespace
    reconciler = Gated("hold")
    cache = Cache(client, namespace=ns)
    controller = Controller("tenants", reconciler, cache, primary=CONFIG_MAPS,
                            **({"fairness": fairness_by_object(tenant_of)} if by_tenant
                               else {}))
    controller.watch(CONFIG_MAPS, enqueue_object)

    def labelled(name: str, tenant: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "labels": {"tenant": tenant}}}

    async with running(cache, controller):
        await eventually(lambda: len(controller.queue) == 0 and controller.in_flight == 0)
        await client.create(CONFIG_MAPS, labelled("hold", "a"), ns)
        await eventually(reconciler.holding.is_set)
        busy = [f"busy-{i:02d}" for i in range(30)]
        for name in busy:
            await client.create(CONFIG_MAPS, labelled(name, "a"), ns)
        for name in ("broken-1", "broken-2"):
            await client.create(CONFIG_MAPS, labelled(name, "broken"), ns)
        await eventually(lambda: len(controller.queue) == 32)
        await client.create(CONFIG_MAPS, labelled("new", "b"), ns)
        await eventually(lambda: len(controller.queue) == 33)
        reconciler.release.set()
        await eventually(lambda: all(reconciler.calls[n] == 1
                                     for n in [*busy, "broken-1", "broken-2", "new"]))
    after_hold = reconciler.order[reconciler.order.index("hold") + 1:]
    assert after_hold.index("new") == (2 if by_tenant else 32), after_hold
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    if by_tenant:  # the two broken keys went in the default lane, one line for both
        assert [r.getMessage() for r in errors] == [
            f"fairness_by_object: the lane of {ns}/broken-1 could not be read, served in "
            "the default lane: 'no such tenant'"]
        assert errors[0].exc_info is not None  # the function's bug, with its traceback
    else:
        assert errors == []


def test_fairness_by_object_needs_a_primary_resource(client: Client) -> None:
    with pytest.raises(ValueError, match="fairness_by_object needs the controller's primary"):
        Controller("no-primary", Recording(), Cache(client),
                   fairness=fairness_by_object(tenant_of))
    with pytest.raises(TypeError, match="fairness_by_object takes a function"):
        fairness_by_object("tenant")  # type: ignore[arg-type]


async def test_result_priority_is_the_requeue_priority_else_the_key_s_own(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    for name in ("urgent", "listed", "failing"):
        await client.create(CONFIG_MAPS, cm(name), ns)
    clock = FakeClock()  # requeues and retries wait on it: never reached

    def behaviour(request: Request, n: int) -> Any:
        if request.name == "urgent":
            return Result.requeue_after(5, priority=7)
        if request.name == "listed":
            return Result.requeue_after(5)
        if request.name == "failing":
            return RuntimeError("boom")
        return None

    reconciler = Recording(behaviour)
    cache = Cache(client, namespace=ns, clock=clock)
    controller = Controller("requeues", reconciler, cache, clock=clock)
    controller.watch(CONFIG_MAPS, enqueue_object)
    async with running(cache, controller):
        await eventually(lambda: controller.queue.statistics().waiting == 3)
        delays = controller.queue._delays
        assert delays.priority(Request(ns, "urgent")) == 7
        assert delays.priority(Request(ns, "listed")) == LOW_PRIORITY  # as it was listed
        assert delays.priority(Request(ns, "failing")) == LOW_PRIORITY  # the retry too


async def test_the_builder_passes_fairness_to_the_controller_s_queue(client: Client) -> None:
    cache = Cache(client)

    class Host:
        @property
        def cache(self) -> Cache:
            return cache

        def new_controller(self, name: str, reconciler: Reconciler, **options: Any
                           ) -> Controller:
            return Controller(name, reconciler, cache, **options)

    default = ControllerBuilder(Host()).for_(CONFIG_MAPS).complete(Recording())
    assert default.queue.fairness is not None
    assert default.queue.fairness(Request("team-a", "x")) == "team-a"
    fifo = ControllerBuilder(Host()).for_(CONFIG_MAPS).with_options(fairness=None)
    assert fifo.complete(Recording()).queue.fairness is None
    with pytest.raises(TypeError, match="fairness must be a function"):
        ControllerBuilder(Host()).with_options(fairness="namespace")  # type: ignore[arg-type]


def test_a_result_priority_needs_a_requeue_and_is_an_int() -> None:
    assert Result.requeue_after(5, priority=3).priority == 3
    assert Result.requeue_after(5).priority is None
    with pytest.raises(ValueError, match="priority of its requeue"):
        Result(priority=3)
    with pytest.raises(TypeError, match="priority is an int"):
        Result.requeue_after(5, priority=1.5)  # type: ignore[arg-type]
