"""Helpers for the CNClaim example's tests: run the operator, make Pods and claims, wait.

Pods stand in for what a pool or another tool provisions. No backend the
tests run on has a scheduler or a kubelet: a :class:`NodeSimulator` plays
their part next to the operator, and ``idle_pod`` writes what they would
(``spec.nodeName`` and ``status.phase: Running``) for Pods made before it.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import yaml

from examples.cnclaim import OperatorOptions, build_operator, install_crds
from examples.cnclaim.resources import (
    CLAIMED_BY_LABEL,
    CNCLAIMS,
    PHASE_LABEL,
    POOL_LABEL,
    claim_phase,
    claimed_by,
    name_of,
    spec_of,
)
from reconcilekit import Client, EventHandler, Manager, NotFound
from reconcilekit.kinds import CUSTOM_RESOURCE_DEFINITIONS, PODS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import Cluster, NodeSimulator
from reconcilekit.webhook import WebhookServer

T = TypeVar("T")
Obj = dict[str, Any]
POD_SPEC: dict[str, Any] = {
    "containers": [{"name": "cn", "image": "registry.k8s.io/pause:3.9"}],
    "terminationGracePeriodSeconds": 0,
}


@asynccontextmanager
async def cnclaim_client(cluster: Cluster) -> AsyncIterator[Client]:
    """A reconcilekit client for the test's API server, with the CNClaim CRDs installed.

    The CRDs are shared by the session's tests: the ones this call created are
    deleted when the session ends. The ``client`` fixture (tests/examples/conftest.py)
    wraps it.
    """
    async with Client(cluster.configuration) as c:
        for name in await install_crds(c):
            cluster.delete_at_end(CUSTOM_RESOURCE_DEFINITIONS.path(name=name))
        yield c


async def eventually(check: Callable[[], Awaitable[T]], within: float = 10.0,
                     what: str = "condition") -> T:
    """Poll ``check`` until it returns something truthy; fail naming the last value."""
    last: Any = None
    with anyio.move_on_after(within):
        while True:
            last = await check()
            if last:
                return last
            await asyncio.sleep(0.02)
    raise AssertionError(f"{what} not reached within {within}s; last: {last!r}")


@asynccontextmanager
async def running_operator(cluster: Cluster, client: Client, *, workers: int = 2,
                           webhook_server: WebhookServer | None = None,
                           **options: Any) -> AsyncIterator[Manager]:
    """The operator running on ``client`` in the cluster's namespace until the block ends."""
    manager = build_operator(client, OperatorOptions(
        namespace=cluster.namespace, workers=workers, http_addr=None, **options),
        webhook_server=webhook_server)
    async with NodeSimulator(client, nodes=3, namespace=cluster.namespace), \
            anyio.create_task_group() as tg:
        await tg.start(manager.run)
        await eventually(lambda: _ready(manager), what="operator ready")
        try:
            yield manager
        finally:
            manager.stop()


async def _ready(manager: Manager) -> bool:
    return manager.ready()[0]


async def idle_pod(cluster: Cluster, client: Client, pool: str, *, node: str = "node-0",
                   extra_labels: dict[str, str] | None = None) -> Obj:
    """An Idle, running CN Pod labelled with ``pool`` (as if another tool provisioned it).

    It is placed on ``node`` and reported Running here, as a scheduler and a
    kubelet would, so it is ready before any node simulator runs.
    """
    pod = await client.create(PODS, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": f"{pool}-", "labels": {
            POOL_LABEL: pool, PHASE_LABEL: "Idle", **(extra_labels or {})}},
        "spec": dict(POD_SPEC, nodeName=node)}, cluster.namespace)
    return await client.patch_status(PODS, name_of(pod), {"status": {"phase": "Running"}},
                                     cluster.namespace)


async def new_claim(cluster: Cluster, client: Client, name: str, pool: str,
                    **spec: Any) -> Obj:
    return await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": name}, "spec": {"poolName": pool, **spec}}, cluster.namespace)


async def get_or_none(client: Client, resource: Any, name: str, namespace: str) -> Obj | None:
    try:
        return await client.get(resource, name, namespace)
    except NotFound:
        return None


async def bound_to(client: Client, namespace: str, claim: str) -> str:
    """The Pod ``claim`` is Bound to, with the Pod labelled as claimed by it ("" if not)."""
    got = await get_or_none(client, CNCLAIMS, claim, namespace)
    if got is None or claim_phase(got) != "Bound":
        return ""
    pod_name = str(spec_of(got).get("podName") or "")
    pod = await get_or_none(client, PODS, pod_name, namespace) if pod_name else None
    return pod_name if pod is not None and claimed_by(pod) == claim else ""


class Watchdog:
    """Watches claims and Pods; records every violation of "one Pod, at most one claim".

    ``claims_by_pod`` is checked on every claim event against the claims as
    the watch shows them; a Pod's ``claimed-by`` label must never go from one
    claim straight to another. ``history`` keeps each claim's observed
    (phase, podName, nodeName) states in order.
    """

    def __init__(self, client: Client, namespace: str) -> None:
        self.violations: list[str] = []
        self.history: defaultdict[str, list[tuple[str, str, str]]] = defaultdict(list)
        self._claims = Informer(client, CNCLAIMS, namespace=namespace)
        self._pods = Informer(client, PODS, namespace=namespace)
        self._claims.add_handler(EventHandler(self._on_claim, lambda _, c: self._on_claim(c)))
        self._pods.add_handler(EventHandler(on_update=self._on_pod))

    def _on_claim(self, claim: Obj) -> None:
        state = (claim_phase(claim), str(spec_of(claim).get("podName") or ""),
                 str(spec_of(claim).get("nodeName") or ""))
        states = self.history[name_of(claim)]
        if not states or states[-1] != state:
            states.append(state)
        holders: dict[str, str] = {}
        for other in self._claims.store.list():
            pod = str(spec_of(other).get("podName") or "")
            if pod and pod in holders:
                self.violations.append(f"{pod} named by {holders[pod]} and {name_of(other)}")
            holders[pod] = name_of(other)

    def _on_pod(self, old: Obj, new: Obj) -> None:
        before, after = claimed_by(old), claimed_by(new)
        if before and after and before != after:
            self.violations.append(f"{name_of(new)}: claimed-by {before} -> {after}")

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Watchdog]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._claims.run)
            tg.start_soon(self._pods.run)
            await self._claims.synced.wait()
            await self._pods.synced.wait()
            try:
                yield self
            finally:
                tg.cancel_scope.cancel()


__all__ = ["CLAIMED_BY_LABEL", "Watchdog", "bound_to", "cnclaim_client", "eventually",
           "get_or_none", "idle_pod", "new_claim", "running_operator"]


async def until_admission_refuses(cluster: Cluster, name: str, pool: str, **spec: Any) -> None:
    """Dry-run creating the claim until the API server refuses it: kube-apiserver loads
    webhook configurations through an informer, so a request right after one is written
    may not be reviewed yet (the in-process server reads them at each request)."""
    body = {"apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
            "metadata": {"name": name}, "spec": {"poolName": pool, **spec}}
    path = f"{CNCLAIMS.path(cluster.namespace)}?dryRun=All"
    with anyio.fail_after(15):
        while True:
            if (await cluster.request("POST", path, json=body)).status >= 400:
                return
            await anyio.sleep(0.1)


async def service_account_kubeconfig(cluster: Cluster, namespace: str, account: str,
                                     path: Path) -> Path:
    """A kubeconfig at ``path`` for the ServiceAccount ``namespace/account`` (a TokenRequest),
    as its Pod would have it: the cluster's server and CA, the account's token."""
    answer = await cluster.request(
        "POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}})
    assert answer.status == 201, answer
    if cluster.server is not None:  # in-process: the server's own kubeconfig
        config = cluster.server.kubeconfig(namespace=namespace)
    else:
        assert cluster.kubeconfig_path is not None
        config = yaml.safe_load(await anyio.Path(cluster.kubeconfig_path).read_text())
    for user in config["users"]:
        user["user"] = {"token": answer.body["status"]["token"]}
    await anyio.Path(path).write_text(yaml.safe_dump(config))
    return path
