"""EventRecorder: core/v1 Events written like client-go's recorder, never failing a reconcile."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from reconcilekit import Client, EventRecorder
from reconcilekit.kinds import CONFIG_MAPS, EVENTS
from reconcilekit.metrics import EventRecorderStatistics
from reconcilekit.testing import Cluster, FakeClock, eventually

WALL_START = 1_700_000_000.0


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(wall_start=WALL_START)


@pytest.fixture
async def configmap(apiserver: Cluster, client: Client) -> dict[str, Any]:
    return await client.create(CONFIG_MAPS, {"metadata": {"name": "web"}}, apiserver.namespace)


@asynccontextmanager
async def running(recorder: EventRecorder) -> AsyncIterator[EventRecorder]:
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        yield recorder
        with anyio.fail_after(10):
            await recorder.flush()
        tg.cancel_scope.cancel()


async def events_about(client: Client, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, namespace,
                               field_selector=f"involvedObject.name={name}")
    return sorted(listed["items"], key=lambda e: e["metadata"]["name"])


async def test_event_is_created_with_object_reference_source_and_timestamps(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", host="pod-1", clock=clock)
    async with running(recorder):
        recorder.event(configmap, "Normal", "Synced", "configmap synced")
    [event] = await events_about(client, apiserver.namespace, "web")
    meta = configmap["metadata"]
    assert event["metadata"]["name"] == f"web.{int(WALL_START * 1e9):016x}"
    assert event["metadata"]["namespace"] == apiserver.namespace
    assert event["involvedObject"] == {
        "apiVersion": "v1", "kind": "ConfigMap", "name": "web",
        "namespace": apiserver.namespace, "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"]}
    assert (event["type"], event["reason"], event["message"]) == (
        "Normal", "Synced", "configmap synced")
    assert event["source"] == {"component": "web-controller", "host": "pod-1"}
    assert (event["reportingComponent"], event["reportingInstance"]) == (
        "web-controller", "pod-1")
    assert event["firstTimestamp"] == event["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["count"] == 1
    assert recorder.statistics() == EventRecorderStatistics(
        pending=0, created=1, patched=0, dropped=0, failed=0)


async def test_repeat_within_the_window_bumps_count_on_the_same_event(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock)
    async with running(recorder):
        recorder.event(configmap, "Warning", "FailedSync", "backend unreachable")
        await recorder.flush()
        clock.advance(90)
        recorder.event(configmap, "Warning", "FailedSync", "backend unreachable")
    [event] = await events_about(client, apiserver.namespace, "web")
    assert event["type"] == "Warning"
    assert event["count"] == 2
    assert event["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert event["lastTimestamp"] == "2023-11-14T22:14:50Z"
    assert "host" not in event["source"] and not event.get("reportingInstance")
    assert recorder.statistics().patched == 1


async def test_repeats_recorded_back_to_back_fold_into_one_event(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock)
    async with running(recorder):
        for _ in range(3):
            recorder.event(configmap, "Normal", "Synced", "ok")
    [event] = await events_about(client, apiserver.namespace, "web")
    assert event["count"] == 3


async def test_a_different_message_or_a_repeat_after_the_window_is_a_new_event(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock, window=600)
    async with running(recorder):
        recorder.event(configmap, "Normal", "Synced", "ok")
        recorder.event(configmap, "Normal", "Synced", "ok again")
        await recorder.flush()
        clock.advance(601)
        recorder.event(configmap, "Normal", "Synced", "ok")
    events = await events_about(client, apiserver.namespace, "web")
    assert [(e["message"], e["count"]) for e in events] == [
        ("ok", 1), ("ok again", 1), ("ok", 1)]
    assert len({e["metadata"]["name"] for e in events}) == 3


async def test_invalid_type_or_object_raises_value_error_at_the_call(
        client: Client, configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller")
    with pytest.raises(ValueError, match="'Normal' or 'Warning'"):
        recorder.event(configmap, "Error", "Failed", "nope")
    with pytest.raises(ValueError, match=r"kind and metadata\.name"):
        recorder.event({"metadata": {"name": "x"}}, "Normal", "Synced", "no kind")
    assert recorder.statistics().pending == 0


@pytest.mark.in_process_only
async def test_failed_write_is_logged_and_never_raised(
        apiserver: Cluster, client: Client, clock: FakeClock, configmap: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    apiserver.faults.fail_next(status=500, verb="create", resource="events")
    recorder = EventRecorder(client, component="web-controller", clock=clock)
    with caplog.at_level(logging.WARNING, logger="reconcilekit.events"):
        async with running(recorder):
            recorder.event(configmap, "Warning", "FailedSync", "lost")
            await recorder.flush()
            recorder.event(configmap, "Normal", "Synced", "written")
    [warning] = [r for r in caplog.records if r.name == "reconcilekit.events"]
    assert warning.levelno == logging.WARNING and not warning.exc_info  # one line
    assert "could not write event Warning FailedSync on ConfigMap web" in warning.getMessage()
    assert [e["message"] for e in await events_about(client, apiserver.namespace, "web")] == [
        "written"]
    assert recorder.statistics().failed == 1


async def test_cluster_scoped_object_event_goes_to_the_default_namespace(
        client: Client, clock: FakeClock) -> None:
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "rk-events-node-1", "uid": "4f6b0c1e"}}
    recorder = EventRecorder(client, component="node-controller", clock=clock)
    async with running(recorder):
        recorder.event(node, "Normal", "Registered", "node registered")
    [event] = await events_about(client, "default", "rk-events-node-1")
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["involvedObject"]["kind"] == "Node"
    await client.delete(EVENTS, event["metadata"]["name"], "default")


async def test_full_buffer_drops_the_oldest_with_a_counted_warning(
        apiserver: Cluster, client: Client, clock: FakeClock, configmap: dict[str, Any],
        caplog: pytest.LogCaptureFixture) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock, max_pending=2)
    with caplog.at_level(logging.WARNING, logger="reconcilekit.events"):
        for i in range(4):  # run() not started yet: nothing is written
            recorder.event(configmap, "Normal", "Step", f"step {i}")
    assert recorder.statistics() == EventRecorderStatistics(
        pending=2, created=0, patched=0, dropped=2, failed=0)
    [warning] = caplog.records  # one warning per minute, not one per drop
    assert "dropped the oldest (Normal Step on ConfigMap web), 1 dropped so far" in (
        warning.getMessage())
    async with running(recorder):
        pass
    events = await events_about(client, apiserver.namespace, "web")
    assert sorted(e["message"] for e in events) == ["step 2", "step 3"]


async def test_repeat_of_an_expired_event_creates_it_again_with_its_count(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock)
    async with running(recorder):
        recorder.event(configmap, "Normal", "Synced", "ok")
        await recorder.flush()
        [first] = await events_about(client, apiserver.namespace, "web")
        await client.delete(EVENTS, first["metadata"]["name"], apiserver.namespace)
        clock.advance(5)
        recorder.event(configmap, "Normal", "Synced", "ok")
    [event] = await events_about(client, apiserver.namespace, "web")
    assert event["metadata"]["name"] == first["metadata"]["name"]
    assert (event["count"], event["firstTimestamp"]) == (2, first["firstTimestamp"])
    assert recorder.statistics().created == 2


async def test_run_twice_raises(client: Client) -> None:
    recorder = EventRecorder(client, component="web-controller")
    async with running(recorder):
        with pytest.raises(RuntimeError, match="already running"):
            await recorder.run()


async def test_writes_are_rate_limited_on_the_clock_and_flush_lifts_the_limit(
        apiserver: Cluster, client: Client, clock: FakeClock,
        configmap: dict[str, Any]) -> None:
    recorder = EventRecorder(client, component="web-controller", clock=clock, qps=10, burst=3)
    for i in range(6):
        recorder.event(configmap, "Normal", "Step", f"step {i}")
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        # the burst goes at once, then the writer waits a tenth of a (fake) second
        await eventually(lambda: recorder.statistics().created == 3 and clock.sleepers == 1)
        clock.advance(0.05)
        assert clock.sleepers == 1  # not due yet: still parked
        clock.advance(0.05)
        await eventually(lambda: recorder.statistics().created == 4 and clock.sleepers == 1)
        with anyio.fail_after(10):  # the rest without the clock moving
            await recorder.flush()
        assert recorder.statistics() == EventRecorderStatistics(
            pending=0, created=6, patched=0, dropped=0, failed=0)
        recorder.event(configmap, "Normal", "Step", "step 6")  # the limit is back after
        await eventually(lambda: clock.sleepers == 1)
        assert recorder.statistics().created == 6
        tg.cancel_scope.cancel()
    events = await events_about(client, apiserver.namespace, "web")
    assert sorted(e["message"] for e in events) == [f"step {i}" for i in range(6)]


def test_rate_limit_arguments_are_checked(client: Client) -> None:
    with pytest.raises(ValueError, match="qps must be > 0"):
        EventRecorder(client, component="c", qps=0)
    with pytest.raises(ValueError, match="burst must be >= 1"):
        EventRecorder(client, component="c", burst=0)
    assert EventRecorder(client, component="c", qps=None).qps is None
