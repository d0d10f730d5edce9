"""``python -m examples.cnclaim --shard-demo``: three sharded replicas, one stopped.

The operator as three processes (``--shard-ring cnclaim-demo``), each a
member of one shard ring sharded by namespace, against the in-process API
server (or ``--kubeconfig``); a pool of 2 and a claim set of 2 in each of six
namespaces. It shows which replica holds which shards and namespaces, stops
one replica (SIGTERM), shows its shards handed over, scales a claim set in a
namespace the stopped replica owned and waits for the new claim to be bound
by its new owner, then stops the rest. Exit status 0 when every step
converged.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Final

import anyio

from reconcilekit import AlreadyExists, Client, NotFound
from reconcilekit.kinds import LEASES, NAMESPACES
from reconcilekit.sharding import fnv1a64
from reconcilekit.sharding import shard_of as shard_of_key

from ..operator import install_crds
from ..resources import CNCLAIMSETS, CNPOOLS
from .scenario import POD_TEMPLATE, Progress, StepFailed

__all__ = ["run_shard_demo"]

RING: Final = "cnclaim-demo"
SHARDS: Final = 16
REPLICAS: Final = ("replica-0", "replica-1", "replica-2")
# names whose FNV-1a hashes fall in different shards (names that differ only at
# the end would share a few: see docs/sharding.md)
NAMESPACE_NAMES: Final = ("apples", "birch", "cedar", "dunes", "ember", "grove")


ROOT: Final = Path(__file__).resolve().parents[3]  # the repository root


def shard_of(namespace: str) -> int:
    return shard_of_key(fnv1a64(namespace), SHARDS)


async def _owners(client: Client, lease_namespace: str) -> dict[int, str]:
    listed = await client.list(LEASES, lease_namespace)
    prefix = f"{RING}-shard-"
    return {int(lease["metadata"]["name"][len(prefix):]): lease["spec"].get("holderIdentity")
            or "" for lease in listed["items"] if lease["metadata"]["name"].startswith(prefix)}


async def _until(what: str, check: Callable[[], Awaitable[bool]], within: float) -> None:
    with anyio.move_on_after(within):
        while not await check():  # noqa: ASYNC110 (polling the API server)
            await anyio.sleep(0.2)
        return
    raise StepFailed(f"{what}: not reached within {within:g}s")


@contextlib.asynccontextmanager
async def _api_server(kubeconfig: str | None) -> AsyncIterator[str]:
    if kubeconfig is not None:
        yield kubeconfig
        return
    from reconcilekit.testing import APIServer

    async with APIServer() as server:
        with tempfile.TemporaryDirectory() as tmp:
            yield str(server.write_kubeconfig(Path(tmp) / "kubeconfig"))


async def _replica(kubeconfig: str, identity: str, lease_namespace: str
                   ) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "examples.cnclaim", "--kubeconfig", kubeconfig,
        "--shard-ring", RING, "--shards", str(SHARDS), "--identity", identity,
        "--leader-elect-namespace", lease_namespace, "--metrics-addr", "127.0.0.1:0",
        "--no-webhooks", "--log-level", "WARNING", cwd=ROOT, stdin=subprocess.DEVNULL)


async def run_shard_demo(*, kubeconfig: str | None, progress: Progress,
                         step_timeout: float) -> None:
    """Play the demo; raises StepFailed naming a step that did not converge."""
    from reconcilekit.testing import NodeSimulator

    async with _api_server(kubeconfig) as config, \
            await Client.from_kubeconfig(config) as client:
        lease_namespace = "default"
        await install_crds(client)
        for ns in NAMESPACE_NAMES:
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACES, {"metadata": {"name": ns}})
            await client.create(CNPOOLS, {
                "apiVersion": CNPOOLS.api_version, "kind": CNPOOLS.kind,
                "metadata": {"name": "pool"},
                "spec": {"replicas": 2, "podTemplate": POD_TEMPLATE}}, ns)
            await client.create(CNCLAIMSETS, {
                "apiVersion": CNCLAIMSETS.api_version, "kind": CNCLAIMSETS.kind,
                "metadata": {"name": "web"},
                "spec": {"replicas": 2, "template": {"spec": {"poolName": "pool"}}}}, ns)
        progress.line(f"6 namespaces ({', '.join(NAMESPACE_NAMES)}), each with a pool of 2 "
                      f"and a claim set of 2")

        async def bound(ns: str, want: int) -> bool:
            try:
                got = await client.get(CNCLAIMSETS, "web", ns)
            except NotFound:
                return False
            return int((got.get("status") or {}).get("readyReplicas") or 0) == want

        async def every_set_bound() -> bool:
            return all([await bound(ns, 2) for ns in NAMESPACE_NAMES])

        async def show(alive: tuple[str, ...]) -> None:
            owners = await _owners(client, lease_namespace)
            for replica in alive:
                shards = sorted(s for s, who in owners.items() if who == replica)
                names = [ns for ns in NAMESPACE_NAMES if shard_of(ns) in shards]
                progress.line(f"  {replica}: shards {shards} -> namespaces "
                              f"{', '.join(names) or '-'}")

        def ring_settled(alive: tuple[str, ...]) -> Callable[[], Awaitable[bool]]:
            async def check() -> bool:
                owners = await _owners(client, lease_namespace)
                counts = [sum(1 for who in owners.values() if who == r) for r in alive]
                return len(owners) == SHARDS and set(owners.values()) == set(alive) and \
                    max(counts) - min(counts) <= 1
            return check

        processes: dict[str, asyncio.subprocess.Process] = {}
        async with NodeSimulator(client, nodes=3):
            try:
                for identity in REPLICAS:
                    processes[identity] = await _replica(config, identity, lease_namespace)
                progress.line(f"started {len(REPLICAS)} replicas in shard ring {RING} "
                              f"({SHARDS} shards, by namespace)")
                await _until("the ring settled", lambda: ring_settled(REPLICAS)(),
                             step_timeout)
                await _until("every claim set Bound", every_set_bound, step_timeout)
                progress.line("every claim Bound; the shards:")
                await show(REPLICAS)

                leaving = REPLICAS[-1]
                owners = await _owners(client, lease_namespace)
                orphaned = [ns for ns in NAMESPACE_NAMES
                            if owners.get(shard_of(ns)) == leaving]
                progress.line(f"stop {leaving} (SIGTERM)")
                processes[leaving].send_signal(signal.SIGTERM)
                code = await processes.pop(leaving).wait()
                if code != 0:
                    raise StepFailed(f"{leaving} exited with status {code}")
                alive = REPLICAS[:-1]
                await _until("its shards handed over", lambda: ring_settled(alive)(),
                             step_timeout)
                progress.line(f"{leaving} released its shards; the ring now:")
                await show(alive)
                if orphaned:
                    ns = orphaned[0]
                    await client.patch(CNCLAIMSETS, "web", {"spec": {"replicas": 3}}, ns)
                    progress.line(f"scale web in {ns} (was {leaving}'s) to 3")
                    await _until(f"3 claims Bound in {ns}", lambda: bound(ns, 3), step_timeout)
                    owner = (await _owners(client, lease_namespace))[shard_of(ns)]
                    progress.line(f"  -> the third claim in {ns} is Bound, by its new owner "
                                  f"{owner}")
            finally:
                for process in processes.values():
                    if process.returncode is None:
                        process.send_signal(signal.SIGTERM)
                for identity, process in processes.items():
                    code = await process.wait()
                    if code != 0:
                        raise StepFailed(f"{identity} exited with status {code}")
        progress.line("stopped every replica")
