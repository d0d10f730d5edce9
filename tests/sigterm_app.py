"""A small operator process for the SIGTERM test: its reconcile takes a while.

Usage: python sigterm_app.py KUBECONFIG NAMESPACE
"""

from __future__ import annotations

import sys

import anyio

from reconcilekit import Client, Manager, Reconciler, Request, Result
from reconcilekit.kinds import CONFIG_MAPS


class SlowAnnotator(Reconciler):
    def __init__(self, client: Client) -> None:
        self.client = client

    async def reconcile(self, request: Request) -> Result:
        if request.name != "slow":  # a real namespace holds kube-root-ca.crt too
            return Result.done()
        print(f"reconciling {request.name}", flush=True)
        await anyio.sleep(1.0)  # in flight when SIGTERM arrives
        await self.client.patch(CONFIG_MAPS, request.name,
                                {"metadata": {"annotations": {"finished": "yes"}}},
                                request.namespace)
        print(f"finished {request.name}", flush=True)
        return Result.done()


def main() -> int:
    kubeconfig, namespace = sys.argv[1], sys.argv[2]

    async def run() -> int:
        async with await Client.from_kubeconfig(kubeconfig) as client:
            manager = Manager(client, namespace=namespace, http_addr=None,
                              graceful_shutdown_timeout=20)
            manager.controller().for_(CONFIG_MAPS).complete(SlowAnnotator(client))
            return await manager.serve()

    return anyio.run(run)


if __name__ == "__main__":
    sys.exit(main())
