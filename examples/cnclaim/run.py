"""Run the operator next to the scenario, on a client to any API server."""

from __future__ import annotations

import anyio
import anyio.abc

from reconcilekit import CacheSyncTimeout, Client, LeadershipLost, Manager

from .scenario import Progress, Scenario, render_tables

__all__ = ["OperatorFailed", "play_with_operator"]


class OperatorFailed(RuntimeError):
    """The operator stopped on its own (caches did not sync, or the Lease was lost)."""


async def play_with_operator(client: Client, manager: Manager, namespace: str, *,
                             step_timeout: float, progress: Progress) -> None:
    """Start ``manager``, play the scenario in ``namespace``, print the tables, stop.

    Raises :class:`~examples.cnclaim.scenario.StepFailed` or :class:`OperatorFailed`.
    """
    failures: list[BaseException] = []
    scenario = Scenario(client, namespace, progress, step_timeout=step_timeout)
    async with anyio.create_task_group() as tg:

        async def operate(*, task_status: anyio.abc.TaskStatus[None]) -> None:
            try:
                await manager.run(task_status=task_status)
            except (CacheSyncTimeout, LeadershipLost) as err:
                failures.append(err)
                tg.cancel_scope.cancel()

        await tg.start(operate)
        try:
            with anyio.fail_after(step_timeout):
                while not manager.ready()[0]:  # noqa: ASYNC110 (no event to wait on)
                    await anyio.sleep(0.02)
            leader = " (leader election on: holding the Lease)" if manager.elector else ""
            progress.line(f"operator running{leader}: controllers "
                          + ", ".join(c.name for c in manager.controllers) + ", caches synced")
            await scenario.play()
            progress.text("\n" + await render_tables(client, namespace))
        except TimeoutError:
            if not failures:
                raise OperatorFailed(
                    f"the operator's caches did not sync within {step_timeout:g}s") from None
        finally:
            manager.stop()
    if failures:
        raise OperatorFailed(str(failures[0]))
