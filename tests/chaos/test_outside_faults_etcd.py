"""Faults from outside, on kube-apiserver: etcd gone behind a live kube-apiserver, then back.

A control plane of the test's own (etcd and kube-apiserver, no
kube-controller-manager) serves informers of a few resources with a short
watch timeout. etcd then stops answering, for longer than that timeout, in
two ways:

* paused (SIGSTOP): its connections stay open and silent. kube-apiserver's
  watch cache keeps serving watches (they time out and are opened again from
  the cache), while lists and writes, which need etcd, fail or time out;
* killed and started again on the same data directory: connections refused,
  kube-apiserver's watch cache loses its etcd watch and builds itself again.

Objects are written before, and right after etcd is back. What must hold is
in each test's docstring. Needs kube-apiserver and etcd binaries.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from reconcilekit import AlreadyExists, APIConnectionError, APIError, Client, NotFound
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES, SECRETS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import ControlPlane, eventually
from reconcilekit.testing._control_plane import assets_from_env

ASSETS = assets_from_env()
pytestmark = [
    pytest.mark.skipif(ASSETS is None, reason="etcd stopped behind kube-apiserver needs "
                       "kube-apiserver and etcd binaries: set RECONCILEKIT_TEST_ASSETS or "
                       "KUBEBUILDER_ASSETS"),
    pytest.mark.timeout(150),
]


NS = "storage"
LIVENESS = 4.0  # the informers' watch timeout: watches last 2 to 3 s, dead after 4 s
REQUEST_TIMEOUT = 5  # kube-apiserver's --request-timeout: writes to a stopped etcd end by then
OUTAGE = 1.5 * LIVENESS  # how long etcd stays stopped, at least
MAX_LOG_LINES = 30
Obj = dict[str, Any]


@asynccontextmanager
async def world() -> AsyncIterator[tuple[ControlPlane, Client, tuple[Informer, ...]]]:
    """A control plane, an admin client, and informers of Namespaces, ConfigMaps and
    Secrets (the last two of namespace ``NS``) running and synced."""
    assert ASSETS is not None
    plane = ControlPlane(ASSETS, controller_manager=False,
                         apiserver_flags=(f"--request-timeout={REQUEST_TIMEOUT}s",))
    async with plane, Client(plane.configuration(), timeout=REQUEST_TIMEOUT * 2) as client:
        await client.create(NAMESPACES, {"metadata": {"name": NS}})
        informers = (Informer(client, NAMESPACES, liveness_timeout=LIVENESS),
                     Informer(client, CONFIG_MAPS, namespace=NS, liveness_timeout=LIVENESS),
                     Informer(client, SECRETS, namespace=NS, liveness_timeout=LIVENESS))
        async with anyio.create_task_group() as tg:
            for informer in informers:
                tg.start_soon(informer.run)
            for informer in informers:
                with anyio.fail_after(30):
                    await informer.synced.wait()
            yield plane, client, informers
            tg.cancel_scope.cancel()


async def persist(write: Callable[[], Awaitable[object]], what: str,
                  within: float = 60.0) -> None:
    """Do ``write`` until it is known to have happened: a write whose answer was lost
    (a timeout, a 5xx) may have happened, and AlreadyExists / NotFound then say it did."""
    with anyio.fail_after(within):
        while True:
            try:
                await write()
                return
            except (AlreadyExists, NotFound):
                return
            except (APIError, APIConnectionError) as err:
                logging.getLogger("test").info("%s: %s; again", what, err)
                await anyio.sleep(0.2)


async def write_batch(client: Client, tag: str, n: int) -> None:
    """``n`` ConfigMaps and one Secret named after ``tag``; the first ConfigMap of the
    batch before it updated, another deleted."""
    for i in range(n):
        await persist(lambda i=i: client.create(  # type: ignore[misc]
            CONFIG_MAPS, {"metadata": {"name": f"{tag}-{i}"}, "data": {"i": str(i)}}, NS),
            f"create {tag}-{i}")
    await persist(lambda: client.create(SECRETS, {"metadata": {"name": tag},
                                                  "stringData": {"k": tag}}, NS),
                  f"create secret {tag}")
    await persist(lambda: client.patch(CONFIG_MAPS, f"{tag}-0", {"data": {"patched": tag}}, NS),
                  f"patch {tag}-0")
    await persist(lambda: client.delete(CONFIG_MAPS, f"{tag}-1", NS), f"delete {tag}-1")


async def converged(client: Client, informers: tuple[Informer, ...]) -> None:
    """Each informer's store ends holding exactly what a fresh list holds, at the same
    resourceVersions."""
    for informer in informers:
        namespace = NS if informer.resource.namespaced else None
        truth = await client.list_all(informer.resource, namespace)
        want = {(o["metadata"].get("namespace", ""), o["metadata"]["name"],
                 o["metadata"]["resourceVersion"]) for o in truth["items"]}

        def held(i: Informer = informer) -> set[tuple[str, str, str]]:
            return {(o["metadata"].get("namespace", ""), o["metadata"]["name"],
                     o["metadata"]["resourceVersion"]) for o in i.store.list()}

        await eventually(lambda h=held, w=want: h() == w, within=60,  # type: ignore[misc]
                         what=f"{informer.resource}: the store equal to a fresh list")


def watches(informers: tuple[Informer, ...]) -> list[int]:
    return [i.watchers[0].statistics().watches for i in informers]


async def watching_again(informers: tuple[Informer, ...], since: list[int]) -> None:
    """Every informer opened at least two watches since ``since`` and is watching now:
    none stopped, none stuck in a list or a backoff."""
    await eventually(lambda: all(
        now >= before + 2 and i.statistics().watching and i.statistics().last_error is None
        for i, before, now in zip(informers, since, watches(informers), strict=True)),
        within=60, what="every informer watching again")


def assert_log_is_bounded_and_one_line(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the framework logged at WARNING and above: bounded, one line each, no
    traceback. Returns the lines."""
    records = [r for r in caplog.records if r.name.startswith("reconcilekit")
               and r.levelno >= logging.WARNING]
    lines = [r.getMessage() for r in records]
    assert len(lines) <= MAX_LOG_LINES, lines
    for record, line in zip(records, lines, strict=True):
        assert "\n" not in line and record.exc_info is None, line
    return lines


async def test_etcd_paused_longer_than_the_watch_timeout_loses_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    """etcd SIGSTOPped behind a live kube-apiserver for longer than the informers' watch
    timeout, then resumed; objects written before, and right after it resumes.

    Must hold: the informers' watches keep cycling through kube-apiserver's watch cache
    while etcd is stopped (each opens watches again, none is left dead); after etcd
    resumes every store ends equal to a fresh list (no object lost, none stale, none
    extra, a write whose answer was lost included); every informer is watching again
    with no error; the framework's log is a few lines, each one line (no traceback).
    """
    caplog.set_level(logging.INFO)
    async with world() as (plane, client, informers), anyio.create_task_group() as tg:
        await write_batch(client, "before", 8)
        await converged(client, informers)
        plane.pause("etcd")
        try:
            stopped = anyio.current_time()
            paused = watches(informers)
            # a write while etcd is stopped: its answer is lost (a timeout), and it may
            # still happen when etcd resumes
            with pytest.raises((APIError, APIConnectionError)) as lost:
                await client.create(CONFIG_MAPS, {"metadata": {"name": "during"}}, NS)
            # an informer started now cannot list (a list reads etcd): it retries
            late = Informer(client, SECRETS, liveness_timeout=LIVENESS)
            tg.start_soon(late.run)
            # the watch timeout passes, twice over: every informer opens new watches
            # (served by the watch cache) while etcd answers nothing
            await watching_again(informers, paused)
            assert not late.has_synced  # its list waits on etcd (504 after the timeout)
            await anyio.sleep(stopped + OUTAGE - anyio.current_time())  # the fault lasts
        finally:
            plane.resume("etcd")
        outage = anyio.current_time() - stopped
        resumed = watches(informers)
        await write_batch(client, "after", 8)
        everything = (*informers, late)
        await converged(client, everything)
        await watching_again(everything, [*resumed, 0])
        await converged(client, everything)
        tg.cancel_scope.cancel()
    lines = assert_log_is_bounded_and_one_line(caplog)
    print(f"\netcd paused {outage:.1f}s; the write during the pause: {lost.value}; list "
          f"errors: {client.statistics().errors}; {len(lines)} WARNING lines", *lines,
          sep="\n  ")


async def test_etcd_killed_and_started_again_on_its_data_loses_nothing(
        caplog: pytest.LogCaptureFixture) -> None:
    """etcd SIGKILLed behind a live kube-apiserver, started again on the same data
    directory after longer than the informers' watch timeout; objects written before, and
    right after it is back.

    Must hold: while etcd is down the informers keep opening watches (or retry, with
    backoff); after etcd is back every store ends equal to a fresh list (no object lost,
    none stale, none extra); every informer is watching again with no error, having
    resumed or relisted as kube-apiserver answered; the framework's log is a few lines,
    each one line (no traceback).
    """
    caplog.set_level(logging.INFO)
    async with world() as (plane, client, informers):
        await write_batch(client, "before", 8)
        await converged(client, informers)
        begun = anyio.current_time()
        plane.kill("etcd")
        try:
            down = watches(informers)
            await eventually(lambda: all(now >= before + 2 for before, now in zip(
                down, watches(informers), strict=True)), within=60,
                what="watches opened while etcd is down")
            await anyio.sleep(begun + OUTAGE - anyio.current_time())  # the fault lasts
        finally:
            await plane.restart("etcd", within=30)  # same ports, same data
        outage = anyio.current_time() - begun
        back = watches(informers)
        await write_batch(client, "after", 8)
        await converged(client, informers)
        await watching_again(informers, back)
        await converged(client, informers)
        stats = [i.statistics() for i in informers]
    lines = assert_log_is_bounded_and_one_line(caplog)
    print(f"\netcd down {outage:.1f}s; relists {[s.relists for s in stats]}, watch "
          f"restarts {[s.watch_restarts for s in stats]}; {len(lines)} WARNING lines",
          *lines, sep="\n  ")
