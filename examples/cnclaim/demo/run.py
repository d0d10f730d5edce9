"""Run the operator next to the scenario, on a client to any API server."""

from __future__ import annotations

from typing import Final

import anyio
import anyio.abc

from reconcilekit import CacheSyncTimeout, Client, EndpointsError, LeadershipLost, Manager

from .scenario import Progress, Scenario, render_tables

__all__ = ["OperatorFailed", "play_with_operator"]

_STARTUP_TIMEOUT: Final = 60.0


class OperatorFailed(RuntimeError):
    """The operator stopped on its own (caches did not sync, the Lease was lost, or its
    metrics and health endpoints could not be served)."""


async def play_with_operator(client: Client, manager: Manager, namespace: str, *,
                             step_timeout: float, progress: Progress) -> None:
    """Start ``manager``, play the scenario in ``namespace``, print the tables, stop.

    Raises :class:`~examples.cnclaim.demo.scenario.StepFailed` or :class:`OperatorFailed`
    (never wrapped in an exception group).
    """
    failures: list[BaseException] = []
    scenario = Scenario(client, namespace, progress, step_timeout=step_timeout,
                        admission=manager.webhook_server is not None)
    async with anyio.create_task_group() as tg:

        async def operate(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            try:
                await manager.run(task_status=task_status)
            except (CacheSyncTimeout, LeadershipLost, EndpointsError) as err:
                failures.append(OperatorFailed(str(err)))
                tg.cancel_scope.cancel()

        await tg.start(operate)
        try:
            await _started(manager)
            leader = " (leader election on: holding the Lease)" if manager.elector else ""
            progress.line(f"operator running{leader}: controllers "
                          + ", ".join(c.name for c in manager.controllers) + ", caches synced")
            await scenario.play()
            progress.text("\n" + await render_tables(client, namespace))
        except Exception as err:  # raised below, outside the task group
            failures.append(err)
        finally:
            manager.stop()
    if failures:
        raise failures[0]


async def _started(manager: Manager) -> None:
    try:
        with anyio.fail_after(_STARTUP_TIMEOUT):
            while not manager.ready()[0]:  # noqa: ASYNC110 (no event to wait on)
                await anyio.sleep(0.02)
    except TimeoutError:
        raise OperatorFailed(f"the operator was not ready within {_STARTUP_TIMEOUT:g}s "
                             f"({manager.ready()[1]})") from None
