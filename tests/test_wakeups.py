"""No wake-up is lost when a waiting task is cancelled, wherever reconcilekit lets tasks wait.

The work queue's getters are the only place where one waiter is woken on
behalf of others (tests/test_workqueue.py and the state machine cover it).
Every other wait in the framework is on a broadcast (an ``anyio.Event`` that
all waiters share: cache sync, event flushes, manager and controller stops)
or has a single waiter (the event writer). The event recorder's flush is
the one such wait whose waiters come and go while work is in flight; this
holds it to that: one flush cancelled, the other still returns.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc

from reconcilekit import Client, EventRecorder
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster, FakeClock, eventually


async def _start_then_cancel_one(tg: anyio.abc.TaskGroup, wait: Any, done: list[int]) -> None:
    """Start two waiters of ``wait()``; cancel the first once both wait."""
    first = anyio.CancelScope()

    async def cancelled_waiter() -> None:
        with first:
            await wait()
            done.append(1)

    async def waiter() -> None:
        await wait()
        done.append(2)

    tg.start_soon(cancelled_waiter)
    tg.start_soon(waiter)
    await anyio.wait_all_tasks_blocked()
    first.cancel()


async def test_event_flush_reaches_a_waiter_when_another_is_cancelled(
        apiserver: Cluster, client: Client) -> None:
    recorder = EventRecorder(client, component="wakeups", clock=FakeClock())
    configmap = await client.create(CONFIG_MAPS, {"metadata": {"name": "flushed"}},
                                    apiserver.namespace)
    recorder.event(configmap, "Normal", "Seen", "one event to write")
    done: list[int] = []
    async with anyio.create_task_group() as tg:
        await _start_then_cancel_one(tg, recorder.flush, done)
        assert done == []  # nothing writes until the recorder runs
        await tg.start(recorder.run)
        await eventually(lambda: done == [2], what="the other flush returns")
        tg.cancel_scope.cancel()
    assert recorder.statistics().created == 1
