"""No cluster needed: reconcilekit's in-process API server, the CRDs, the operator, the scenario.

Only this module and ``--simulated-nodes`` use ``reconcilekit.testing``.
The in-process server has no scheduler and no kubelet, so a
:class:`reconcilekit.testing.NodeSimulator` plays their part next to the
operator: it binds each Pod to one of three simulated nodes and reports it
Running, as the scheduler and the kubelet would (``--simulated-nodes N``
does the same on a cluster with no nodes, such as a bare control plane).
"""

from __future__ import annotations

import contextlib
from typing import Final

from reconcilekit import AlreadyExists, Client
from reconcilekit.kinds import NAMESPACES
from reconcilekit.testing import APIServer, NodeSimulator
from reconcilekit.webhook import WebhookServer

from ..admission import add_claim_webhook, own_username
from ..operator import OperatorOptions, build_operator, install_crds
from .run import play_with_operator
from .scenario import Progress

__all__ = ["SIMULATED_NODES", "run_local"]

SIMULATED_NODES: Final = 3

async def run_local(*, namespace: str, workers: int, leader_election: bool,
                    http_addr: str | None, step_timeout: float,
                    progress: Progress, webhooks: bool = True) -> None:
    """Start the server, install the CRDs, run the operator (with its webhook, which
    the in-process server calls as kube-apiserver would) and play the scenario."""
    async with APIServer() as server, Client(server.configuration()) as client:
        progress.line(f"in-process API server listening on {server.url}")
        if namespace != "default":
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": namespace}})
        created = await install_crds(client)
        progress.line("installed CRDs: " + ", ".join(created))
        webhook_server = None
        if webhooks:
            webhook_server = WebhookServer(name=f"cnclaim-operator-{namespace}",
                                           host="127.0.0.1", port=0,
                                           install_configurations=True,
                                           remove_configurations_on_exit=True)
            user = await own_username(client)
            add_claim_webhook(webhook_server, operator_users={user} if user else None,
                              namespace=namespace)
        manager = build_operator(client, OperatorOptions(
            namespace=namespace, workers=workers, leader_election=leader_election,
            http_addr=http_addr), webhook_server=webhook_server)
        async with NodeSimulator(client, nodes=SIMULATED_NODES, namespace=namespace):
            await play_with_operator(client, manager, namespace, step_timeout=step_timeout,
                                     progress=progress)

