"""No cluster needed: reconcilekit's in-process API server, the CRDs, the operator, the scenario.

This is the only module of the example that uses ``reconcilekit.testing``.
The in-process server has no scheduler and no kubelet, so the pool
controller runs with simulated nodes: it places each Pod on ``node-0`` ...
``node-2`` through ``spec.nodeName`` and writes ``status.phase: Running``
through the status subresource, as the scheduler and the kubelet would.
"""

from __future__ import annotations

import contextlib
from typing import Final

from reconcilekit import AlreadyExists, Client, Resource
from reconcilekit.testing import APIServer

from .operator import OperatorOptions, build_operator, install_crds
from .run import play_with_operator
from .scenario import Progress

__all__ = ["SIMULATED_NODES", "run_local"]

SIMULATED_NODES: Final = 3
NAMESPACES: Final = Resource("", "v1", "Namespace", "namespaces", namespaced=False)


async def run_local(*, namespace: str, workers: int, leader_election: bool,
                    http_addr: str | None, step_timeout: float,
                    progress: Progress) -> None:
    """Start the server, install the CRDs, run the operator and play the scenario."""
    async with APIServer() as server, Client(server.configuration()) as client:
        progress.line(f"in-process API server listening on {server.url}")
        if namespace != "default":
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        created = await install_crds(client)
        progress.line("installed CRDs: " + ", ".join(created))
        manager = build_operator(client, OperatorOptions(
            namespace=namespace, workers=workers, leader_election=leader_election,
            http_addr=http_addr, simulated_nodes=SIMULATED_NODES))
        await play_with_operator(client, manager, namespace, step_timeout=step_timeout,
                                 progress=progress)
