"""One replica of ``benchmarks/failover.py``'s operator: a Manager reconciling Pods under a
leader election, alone in its process.

``python -m benchmarks.failover_subject --kubeconfig PATH --identity ID --lease NAME
--standby warm|cold``. It prints JSON lines, each with ``t`` (Unix seconds) and ``rss``
(bytes):

* ``{"event": "standing_by"}`` once it is ready (warm: its cache synced) and has read
  the Lease held by another replica;
* ``{"event": "leading"}`` when it holds the Lease, ``t`` when the write that took it
  was sent (read from the elector);
* ``{"event": "first_reconcile", "objects": N}`` when its first reconcile begins (N:
  the Pods its cache holds then).

It runs until killed. Every reconcile returns at once: what is timed is the framework's
way to its first reconcile, not a reconciler's work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import anyio

from reconcilekit import (
    Client,
    LeaderElection,
    Manager,
    Reconciler,
    Request,
    Result,
    configure_logging,
)
from reconcilekit.kinds import PODS


def emit(event: str, **values: Any) -> None:
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text()
                  .splitlines() if ":" in line)
    rss = int(fields["VmRSS"].split()[0]) * 1024
    print(json.dumps({"event": event, "t": time.time(), "rss": rss} | values), flush=True)


class FirstReconcile(Reconciler):
    """Tells of the first reconcile; does nothing."""

    def __init__(self, manager: Manager) -> None:
        self.manager = manager
        self.seen = False

    async def reconcile(self, request: Request) -> Result:
        if not self.seen:
            self.seen = True
            objects = sum(s.objects for s in self.manager.cache.statistics())
            emit("first_reconcile", objects=objects)
        return Result.done()


async def run(kubeconfig: str, identity: str, lease: str, standby: str) -> None:
    async with await Client.from_kubeconfig(kubeconfig) as client:
        election = LeaderElection(name=lease, namespace="default",
                                  standby="cold" if standby == "cold" else "warm")
        manager = Manager(client, name="failover", http_addr=None, identity=identity,
                          coordination=election)
        manager.controller().for_(PODS).complete(FirstReconcile(manager))
        elector = manager.elector
        assert elector is not None
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            while not elector.is_leader:
                holder = elector.statistics().holder
                if manager.ready()[0] and holder not in ("", identity):
                    emit("standing_by", holder=holder)
                    break
                await anyio.sleep(0.002)
            # Polled (the elector's on_change is the manager's, for its metrics), so the
            # time is the acquiring write's, taken from the elector: when it was sent, a
            # moment before it was answered (the first reconcile may come before this line).
            while not elector.is_leader:  # noqa: ASYNC110
                await anyio.sleep(0.002)
            age = elector.statistics().last_renew_age or 0.0
            emit("leading", t=time.time() - age)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.failover_subject",
                                     description=__doc__.split("\n")[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--identity", required=True)
    parser.add_argument("--lease", required=True)
    parser.add_argument("--standby", choices=("warm", "cold"), required=True)
    args = parser.parse_args(argv)
    configure_logging()  # its log goes to stderr, which the benchmark keeps
    asyncio.run(run(args.kubeconfig, args.identity, args.lease, args.standby))


if __name__ == "__main__":
    main()
