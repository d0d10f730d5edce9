"""The scenario a person can follow: pools, claims, a migration, a lost Pod, a deletion.

It talks to the API server only through a :class:`reconcilekit.Client`, so
it plays the same against the in-process server and a real cluster, with
the operator running next to it (same process or not). Each step makes one
change, waits until the cluster shows the expected outcome, and prints a
line with the elapsed time; a step that does not converge within the step
timeout raises :class:`StepFailed` naming what it last saw.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

import anyio

from reconcilekit import AlreadyExists, APIError, Client, EventHandler, NotFound
from reconcilekit.kinds import PODS
from reconcilekit.lowlevel import Informer

from ..resources import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    CNCLAIMS,
    CNCLAIMSETS,
    CNPOOLS,
    CONNECTIONS_ANNOTATION,
    POOL_LABEL,
    ClaimPhase,
    PodPhase,
    claim_phase,
    claimed_by,
    creation_order,
    name_of,
    node_of,
    pod_phase,
    source_pod,
    spec_of,
    status_of,
)

__all__ = ["POD_TEMPLATE", "Progress", "Scenario", "StepFailed", "converged", "render_tables"]

Obj = dict[str, Any]
POOL: Final = "demo"
CLAIMSET: Final = "web"
POD_TEMPLATE: Final[Mapping[str, Any]] = {
    "metadata": {"labels": {"app": "cn"}},
    "spec": {"containers": [{"name": "cn", "image": "registry.k8s.io/pause:3.9"}],
             "terminationGracePeriodSeconds": 0},
}
_POLL: Final = 0.05


class Progress:
    """Prints progress lines stamped with the seconds since the run started."""

    def __init__(self, out: Callable[[str], None] = print) -> None:
        self.out = out
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        self.out(f"[{time.monotonic() - self.started:6.2f}s] {text}")

    def text(self, text: str) -> None:
        self.out(text)


class StepFailed(Exception):
    """A step did not converge in time (or an invariant broke); the message says what was seen."""


@dataclass(frozen=True, slots=True)
class _Seen:
    phase: str
    pod: str
    node: str


class Scenario:
    """Plays the scenario in ``namespace``, reporting to ``progress``."""

    def __init__(self, client: Client, namespace: str, progress: Progress, *,
                 step_timeout: float = 20.0, admission: bool = False) -> None:
        self.client = client
        self.admission = admission  # the operator's webhook validates claims
        self.namespace = namespace
        self.step_timeout = step_timeout
        self.progress = progress
        self.history: defaultdict[str, list[_Seen]] = defaultdict(list)
        self._step = 0

    # -- helpers --------------------------------------------------------------------------------

    def _line(self, text: str) -> None:
        self.progress.line(text)

    async def _pods(self) -> list[Obj]:
        listed = await self.client.list(PODS, self.namespace, label_selector=f"{POOL_LABEL}={POOL}")
        return sorted(cast(list[Obj], listed["items"]), key=creation_order)

    async def _claims(self) -> list[Obj]:
        listed = await self.client.list(CNCLAIMS, self.namespace,
                                        label_selector=f"{CLAIMSET_LABEL}={CLAIMSET}")
        return sorted(listed.get("items") or [], key=creation_order)

    async def _until(self, what: str, check: Callable[[], Awaitable[str | None]]) -> None:
        """Poll ``check`` (None: converged; else what it saw) until it converges."""
        deadline = time.monotonic() + self.step_timeout
        while True:
            seen = await check()
            if seen is None:
                return
            if time.monotonic() > deadline:
                raise StepFailed(f"step {self._step} ({what}) did not converge within "
                                 f"{self.step_timeout:g}s; last seen: {seen}")
            await anyio.sleep(_POLL)

    def _exclusive(self, claims: list[Obj]) -> None:
        """No Pod named by two claims, ever."""
        holders: dict[str, str] = {}
        for claim in claims:
            pod = str(spec_of(claim).get("podName") or "")
            if pod and pod in holders:
                raise StepFailed(f"Pod {pod} is claimed by both {holders[pod]} and "
                                 f"{name_of(claim)}")
            holders[pod] = name_of(claim)

    async def _bound(self, count: int) -> str | None:
        claims = [c for c in await self._claims() if not c["metadata"].get("deletionTimestamp")]
        self._exclusive(claims)
        bound = [c for c in claims if claim_phase(c) == ClaimPhase.BOUND
                 and spec_of(c).get("podName") and spec_of(c).get("nodeName")]
        if len(claims) != count or len(bound) != count:
            return f"{len(claims)} claims, {len(bound)} Bound"
        pods = {name_of(p): p for p in await self._pods()}
        for claim in bound:
            pod = pods.get(str(spec_of(claim)["podName"]))
            if pod is None or claimed_by(pod) != name_of(claim):
                return f"Pod of {name_of(claim)} not labelled as claimed by it yet"
        return await self._idle(6)

    async def _idle(self, count: int) -> str | None:
        pods = await self._pods()
        idle = [p for p in pods if pod_phase(p) == PodPhase.IDLE and not claimed_by(p)
                and status_of(p).get("phase") == "Running" and node_of(p)]
        draining = [p for p in pods if pod_phase(p) == PodPhase.DRAINING]
        if len(idle) != count or draining:
            return f"{len(idle)} Idle Pods running, {len(draining)} Draining"
        return None

    async def _claim(self, name: str) -> Obj | None:
        try:
            return await self.client.get(CNCLAIMS, name, self.namespace)
        except NotFound:
            return None

    def _begin(self, text: str) -> None:
        self._step += 1
        self._line(f"step {self._step}: {text}")

    # -- the story --------------------------------------------------------------------------------

    async def play(self) -> None:
        """Run every step; raises :class:`StepFailed` on the first that does not converge."""
        informer = Informer(self.client, CNCLAIMS, namespace=self.namespace)
        informer.add_handler(EventHandler(on_add=self._observe,
                                          on_update=lambda _, new: self._observe(new)))
        failure: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            await informer.synced.wait()
            try:
                await self._play()
            except Exception as err:  # raised below: a task group would wrap it in a group
                failure = err
            finally:
                tg.cancel_scope.cancel()
        if failure is not None:
            raise failure

    def _observe(self, claim: Obj) -> None:
        seen = _Seen(claim_phase(claim), str(spec_of(claim).get("podName") or ""),
                     str(spec_of(claim).get("nodeName") or ""))
        states = self.history[name_of(claim)]
        if not states or states[-1] != seen:
            states.append(seen)

    async def _create(self, resource: Any, body: Obj) -> None:
        try:
            await self.client.create(resource, body, self.namespace)
        except AlreadyExists:
            raise StepFailed(f"{resource.kind} {name_of(body)} already exists in namespace "
                             f"{self.namespace}: delete it, or use another --namespace") from None

    async def _play(self) -> None:
        ns = self.namespace
        self._begin(f"create CNPool {POOL} with 6 replicas")
        await self._create(CNPOOLS, {
            "apiVersion": CNPOOLS.api_version, "kind": CNPOOLS.kind,
            "metadata": {"name": POOL}, "spec": {"replicas": 6, "podTemplate": POD_TEMPLATE}})
        await self._until("6 Idle Pods running", lambda: self._idle(6))
        nodes = sorted({node_of(p) for p in await self._pods()})
        self._line(f"  -> 6 Idle Pods running on {', '.join(nodes)}")

        self._begin(f"create CNClaimSet {CLAIMSET} with 3 replicas from pool {POOL}")
        await self._create(CNCLAIMSETS, {
            "apiVersion": CNCLAIMSETS.api_version, "kind": CNCLAIMSETS.kind,
            "metadata": {"name": CLAIMSET},
            "spec": {"replicas": 3, "template": {"spec": {"poolName": POOL}}}})
        await self._until("3 claims Bound, 6 Idle Pods", lambda: self._bound(3))
        self._line("  -> 3 claims Bound: " + self._bindings(await self._claims()))

        self._begin(f"scale {CLAIMSET} to 5")
        await self.client.patch(CNCLAIMSETS, CLAIMSET, {"spec": {"replicas": 5}}, ns)
        await self._until("5 claims Bound, 6 Idle Pods", lambda: self._bound(5))
        self._line("  -> 5 claims Bound, the pool refilled to 6 Idle Pods")

        claims = await self._claims()
        mover = max(claims, key=creation_order)  # the newest: first in line for scale-in
        mover_name, source = name_of(mover), str(spec_of(mover)["podName"])
        self._begin(f"migrate {mover_name} off {source}, which has 3 open sessions")
        await self.client.patch(PODS, source, {"metadata": {"annotations": {
            CONNECTIONS_ANNOTATION: "3"}}}, ns)
        await self.client.patch(CNCLAIMS, mover_name, {"spec": {"sourcePod": {
            "podName": source, "nodeName": spec_of(mover).get("nodeName")}}}, ns)

        async def migrating() -> str | None:
            claim = await self._claim(mover_name)
            if claim is None:
                return "the claim is gone"
            pod, sessions = str(spec_of(claim).get("podName") or ""), (
                (status_of(claim).get("migrate") or {}).get("source") or {}).get("connections")
            if source_pod(claim) != source or not pod or pod == source or sessions != 3:
                return f"podName={pod or '-'}, sourcePod={source_pod(claim) or '-'}, " \
                       f"sessions={sessions}"
            return None

        await self._until("a new Pod bound, the source held by its sessions", migrating)
        target = str(spec_of(await self._claim(mover_name) or {}).get("podName"))
        self._line(f"  -> {mover_name} bound {target}; {source} stays held until its sessions move")

        self._begin(f"scale {CLAIMSET} in to 1 while {mover_name} migrates")
        await self.client.patch(CNCLAIMSETS, CLAIMSET, {"spec": {"replicas": 1}}, ns)

        async def scaled_in() -> str | None:
            left = [name_of(c) for c in await self._claims()]
            if left != [mover_name]:
                return f"claims left: {', '.join(left)}"
            return await migrating()

        await self._until(f"only {mover_name} left, still migrating", scaled_in)
        gone = [name_of(c) for c in claims if name_of(c) != mover_name]
        self._line(f"  -> deleted {', '.join(gone)}; the migrating {mover_name} kept")

        self._begin(f"the sessions on {source} move: its connections drop to 0")
        await self.client.patch(PODS, source, {"metadata": {"annotations": {
            CONNECTIONS_ANNOTATION: "0"}}}, ns)

        async def migrated() -> str | None:
            claim = await self._claim(mover_name)
            if claim is None or source_pod(claim) or status_of(claim).get("migrate"):
                return "still migrating"
            if spec_of(claim).get("podName") != target:
                return f"bound to {spec_of(claim).get('podName')}, not {target}"
            return await self._idle(6)

        await self._until("migration finished, the source back in the pool", migrated)
        self._line(f"  -> {mover_name} runs on {target}; {source} was released and recycled")

        self._begin(f"delete {target}, the Pod {mover_name} is bound to")
        await self.client.delete(PODS, target, ns, grace_period_seconds=0)

        async def rebound() -> str | None:
            claim = await self._claim(mover_name)
            pod = str(spec_of(claim or {}).get("podName") or "")
            if claim is None or claim_phase(claim) != ClaimPhase.BOUND or pod in ("", target):
                return f"phase={claim_phase(claim or {}) or '-'}, podName={pod or '-'}"
            lost = [s for s in self.history[mover_name] if s.phase == ClaimPhase.LOST]
            if not lost:
                return "the Lost phase was not observed"
            if any(s.pod == target for s in lost):
                raise StepFailed(f"{mover_name} was Lost with spec.podName still {target}")
            return None

        await self._until("Lost with the spec cleared, then Bound again", rebound)
        now = await self._claim(mover_name) or {}
        self._line(f"  -> {mover_name} went Lost (spec.podName and spec.nodeName cleared), "
                   f"then bound {spec_of(now).get('podName')} on {spec_of(now).get('nodeName')}")

        self._begin(f"delete CNClaimSet {CLAIMSET}")
        await self.client.delete(CNCLAIMSETS, CLAIMSET, ns)

        async def all_back() -> str | None:
            try:
                await self.client.get(CNCLAIMSETS, CLAIMSET, ns)
                return "the set still exists"
            except NotFound:
                pass
            left = await self._claims()
            if left:
                return "claims left: " + ", ".join(
                    f"{name_of(c)} (finalizers {c['metadata'].get('finalizers')})" for c in left)
            claimed = [name_of(p) for p in await self._pods() if claimed_by(p)]
            if claimed:
                return f"still claimed: {', '.join(claimed)}"
            return await self._idle(6)

        await self._until("no claim left, every Pod Idle in the pool", all_back)
        self._line("  -> the claims' finalizers released every Pod; none is left; "
                   "the pool holds 6 Idle Pods")
        if self.admission:
            await self._refused_at_admission()

    async def _refused_at_admission(self) -> None:
        self._begin("create a CNClaim whose selector says 'zone In ()'")
        try:
            await self.client.create(CNCLAIMS, {
                "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
                "metadata": {"name": "malformed"},
                "spec": {"selector": {"matchExpressions": [{"key": "zone",
                                                            "operator": "In"}]}}},
                self.namespace)
        except APIError as err:
            self._line(f"  -> refused at admission: {err.message}")
            return
        raise StepFailed("the malformed claim was stored: the operator's webhook did not "
                         "refuse it")

    def _bindings(self, claims: list[Obj]) -> str:
        return ", ".join(f"{name_of(c)} on {spec_of(c).get('podName')}" for c in claims)


async def converged(client: Client, namespace: str, *, pool: str, claimset: str,
                    claims: int, idle: int) -> str | None:
    """None once claim set ``claimset`` has ``claims`` live claims, each Bound to a live Pod
    labelled as claimed by it, and pool ``pool`` has ``idle`` Idle Running Pods and none
    Draining; otherwise what was seen. A Pod named by two live claims is a
    :class:`StepFailed`, whatever else is seen."""
    listed = (await client.list(CNCLAIMS, namespace, label_selector=(
        f"{CLAIMSET_LABEL}={claimset}"))).get("items") or []
    live_claims = [c for c in listed if not c["metadata"].get("deletionTimestamp")]
    pods = {name_of(p): p for p in (await client.list(
        PODS, namespace, label_selector=f"{POOL_LABEL}={pool}")).get("items") or []
        if not p["metadata"].get("deletionTimestamp")}
    holders: dict[str, str] = {}
    bound = 0
    for claim in live_claims:
        pod_name = str(spec_of(claim).get("podName") or "")
        if pod_name and holders.setdefault(pod_name, name_of(claim)) != name_of(claim):
            raise StepFailed(f"Pod {pod_name} is claimed by both {holders[pod_name]} and "
                             f"{name_of(claim)}")
        pod = pods.get(pod_name)
        if claim_phase(claim) == ClaimPhase.BOUND and pod is not None and claimed_by(
                pod) == name_of(claim):
            bound += 1
    ready = [p for p in pods.values() if pod_phase(p) == PodPhase.IDLE and not claimed_by(p)
             and status_of(p).get("phase") == "Running" and node_of(p)]
    draining = [p for p in pods.values() if pod_phase(p) == PodPhase.DRAINING]
    if len(live_claims) != claims or bound != claims or len(ready) != idle or draining:
        return (f"{len(live_claims)}/{claims} claims, {bound} Bound, {len(ready)}/{idle} Idle "
                f"Running, {len(draining)} Draining")
    return None


async def render_tables(client: Client, namespace: str) -> str:
    """The pools, claims and Pods of ``namespace`` as text tables."""
    pools = (await client.list(CNPOOLS, namespace)).get("items") or []
    claims = (await client.list(CNCLAIMS, namespace)).get("items") or []
    pods = [p for p in (await client.list(PODS, namespace)).get("items") or []
            if POOL_LABEL in (p["metadata"].get("labels") or {})]
    out = [_table(["POOL", "REPLICAS", "IDLE", "BOUND", "DRAINING"],
                  [[name_of(p), str(spec_of(p).get("replicas", "")),
                    *(str(status_of(p).get(k, 0)) for k in ("idle", "bound", "draining"))]
                   for p in pools])]
    out.append(_table(["CLAIM", "PHASE", "POD", "NODE", "MIGRATING FROM"],
                      [[name_of(c), claim_phase(c) or "-",
                        str(spec_of(c).get("podName") or "-"),
                        str(spec_of(c).get("nodeName") or "-"), source_pod(c) or "-"]
                       for c in sorted(claims, key=creation_order)]))
    out.append(_table(["POD", "POOL", "POD-PHASE", "CLAIMED-BY", "NODE", "STATUS"],
                      [[name_of(p), p["metadata"]["labels"].get(POOL_LABEL, ""),
                        pod_phase(p) or "-",
                        p["metadata"]["labels"].get(CLAIMED_BY_LABEL, "-"),
                        node_of(p) or "-", str(status_of(p).get("phase") or "-")]
                       for p in sorted(pods, key=creation_order)]))
    return "\n\n".join(out)


def _table(header: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return "  ".join(header) + "\n(none)"
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
                     for row in [header, *rows])
