"""The CNClaim controller: bind a claim to one Idle CN Pod, keep it bound, migrate, release.

Expected flow of :meth:`ClaimReconciler.reconcile` (through
:func:`reconcilekit.finalizers.finalize` once the claim carries its finalizer):

1. Not bound (no ``spec.podName``): :meth:`~ClaimReconciler.bind`. First a
   Pod already labelled as ours is adopted (a binding whose claim write was
   lost); then each Idle, running Pod of the pool, the one this claim held
   last first, then the oldest, is updated with its resourceVersion to carry
   ``claimed-by=<claim>``. A 409 means another claim took it: try the next.
   Then one JSON patch writes ``spec.podName``/``spec.nodeName`` and, on a
   claim that has none yet, the finalizer (:func:`reconcilekit.finalizers.finalizer_ops`):
   three writes per binding, not four. Then ``status.phase=Bound``. No Pod
   free: the claim stays Pending (or Lost), and an Idle Pod's event wakes it.

   Why the finalizer may come with the spec write, after the Pod is
   labelled: until then the claim holds nothing cleanup would have to
   release but that Pod. If the claim is deleted in between, the spec write
   fails (404, or 422 for a finalizer on an object being deleted) and the
   Pod is released at once; if the process dies in between, the Pod is
   labelled for a claim that either still exists (its next reconcile adopts
   the Pod) or is gone (the pool controller releases Pods held by no claim).
2. Bound: the Pod still exists (the cache says so, or, if not, a live read),
   else the claim is Lost and its ``spec.podName`` and ``spec.nodeName`` are
   cleared in the same step (bug 3: a Lost claim kept pointing at the dead
   Pod forever), so the next pass binds a new Pod.
3. Migrating (``spec.sourcePod`` set): bind a new Pod, never the source;
   once the source Pod has no open sessions, release it to Draining; then
   clear ``spec.sourcePod``.
4. Deleted: clear ``spec.podName``, ``spec.nodeName`` and ``spec.sourcePod``,
   then release every Pod labelled as ours to Draining, except those
   another claim now names (a migration moved them): on those only the
   stale label goes. Then report done, and the finalizer goes (bug 1: those
   Pods were skipped and cleanup reported "not done" forever).

Guarantees:
  * a Pod is never held by two claims: binding writes the claim label with
    the Pod's resourceVersion, so of two claims racing for one Pod exactly
    one write lands;
  * a Pod is never named by two claims: a claim names a Pod only once it
    is labelled for it (binding), and a deleted claim stops naming its Pods
    before it releases them (a deleted claim can outlive its cleanup, and a
    released Pod can be bound again at once);
  * two workers of one operator never race for one Pod: a worker reserves
    the Pod it tries (:class:`reconcilekit.Reservations`) and skips one
    another worker holds, or one this process wrote and the cache has not
    seen since, so a 409 can only come from outside the process;
  * a claim never binds twice on a stale cache: a reconcile waits until the
    cache has seen this controller's last write to the claim;
  * a phase Lost never comes with a ``spec.podName`` naming the lost Pod
    (the spec is cleared before the status says Lost).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Final, cast

from reconcilekit import (
    Cache,
    Client,
    Conflict,
    EventRecorder,
    Invalid,
    NotFound,
    Reconciler,
    Request,
    Reservations,
    Result,
    TerminalError,
)
from reconcilekit.finalizers import CleanupDone, CleanupResult, finalize, finalizer_ops
from reconcilekit.kinds import PODS
from reconcilekit.rbac import RECORDS_EVENTS, Permission

from .index import Indexes
from .pods import POD_WRITES, drop_claim_label, release, take
from .resources import (
    CLAIM_FINALIZER,
    CLAIMED_BY_LABEL,
    CNCLAIMS,
    LAST_OWNER_ANNOTATION,
    ClaimPhase,
    PodPhase,
    annotations_of,
    bindable,
    claim_phase,
    claimed_by,
    connections,
    creation_order,
    deleting,
    finalizers,
    labels,
    name_of,
    namespace_of,
    node_of,
    now_rfc3339,
    pod_phase,
    source_pod,
    spec_of,
    status_of,
    uid_of,
)
from .spec import spec_problem
from .status import claim_phase_changes, set_status

__all__ = ["ClaimReconciler", "record_binding", "selector_matches", "selector_string"]

PENDING_RECHECK_SECONDS = 15.0
_BINDING_ATTEMPTS: Final = 3
logger = logging.getLogger("examples.cnclaim.claim")

Obj = dict[str, Any]
_CACHE_LAG_RETRY: Final = 0.2


def selector_string(selector: Mapping[str, Any]) -> str:
    """A metav1.LabelSelector (matchLabels, matchExpressions) in the label selector syntax."""
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    for expr in selector.get("matchExpressions") or ():
        key, values = expr.get("key"), ",".join(expr.get("values") or ())
        match expr.get("operator"):
            case "In":
                parts.append(f"{key} in ({values})")
            case "NotIn":
                parts.append(f"{key} notin ({values})")
            case "Exists":
                parts.append(str(key))
            case "DoesNotExist":
                parts.append(f"!{key}")
            case other:
                raise TerminalError(f"spec.selector: unknown operator {other!r}")
    return ",".join(parts)


def selector_matches(selector: Mapping[str, Any], pod_labels: Mapping[str, str]) -> bool:
    """Whether labels match a metav1.LabelSelector (matchLabels and matchExpressions)."""
    if any(pod_labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or ():
        key, values = str(expr.get("key")), list(expr.get("values") or ())
        match expr.get("operator"):
            case "In" if pod_labels.get(key) not in values:
                return False
            case "NotIn" if key in pod_labels and pod_labels[key] in values:
                return False
            case "Exists" if key not in pod_labels:
                return False
            case "DoesNotExist" if key in pod_labels:
                return False
            case "In" | "NotIn" | "Exists" | "DoesNotExist":
                pass
            case other:
                raise TerminalError(f"spec.selector: unknown operator {other!r}")
    return True


async def record_binding(client: Client, claim: Obj, pod: Obj) -> bool:
    """Name the Pod in the claim's spec (adding the finalizer in the same write if the
    claim has none yet), then say Bound. False if the claim went, is going, or
    kept changing under the write: the Pod is released again (a claim that is
    still there binds anew; one that is gone would never release it)."""
    ns, name = namespace_of(claim), name_of(claim)
    current: Obj | None = claim
    for _ in range(_BINDING_ATTEMPTS):
        assert current is not None
        if deleting(current):
            break
        ops: list[Obj] = []
        if CLAIM_FINALIZER not in finalizers(current):
            ops = finalizer_ops(current, CLAIM_FINALIZER)
        ops.append({"op": "add", "path": "/spec/podName", "value": name_of(pod)})
        if node_of(pod):
            ops.append({"op": "add", "path": "/spec/nodeName", "value": node_of(pod)})
        elif "nodeName" in spec_of(current):
            ops.append({"op": "remove", "path": "/spec/nodeName"})
        try:
            written = await client.patch(CNCLAIMS, name, ops, ns, type="json")
        except (NotFound, Conflict, Invalid):  # changed, going or gone: look again
            current = await _live_claim(client, ns, name, uid_of(claim))
            if current is None:
                break
            continue
        await set_status(client, CNCLAIMS, written, claim_phase_changes(
            written, ClaimPhase.BOUND, pod=name_of(pod), boundTime=now_rfc3339()))
        return True
    logger.info("claim %s/%s went or changed while binding Pod %s: released it", ns, name,
                name_of(pod))
    await release(client, pod, name)
    return False


async def _live_claim(client: Client, namespace: str, name: str, uid: str) -> Obj | None:
    """The claim from the API server; None if it is gone or is another object now."""
    try:
        claim = await client.get(CNCLAIMS, name, namespace)
    except NotFound:
        return None
    return claim if uid_of(claim) == uid else None


def _unbound_without_finalizer(claim: Obj) -> bool:
    spec = spec_of(claim)
    return (CLAIM_FINALIZER not in finalizers(claim) and not deleting(claim)
            and not spec.get("podName") and not spec.get("sourcePod"))


def _held_by(pod: Obj, claim: str) -> bool:
    return (claimed_by(pod) == claim and pod_phase(pod) == PodPhase.BOUND
            and not deleting(pod))


class ClaimReconciler(Reconciler):
    """Reconciles CNClaims; see the module docstring for the flow."""

    # What it sends beyond the cache's reads (python -m reconcilekit manifests).
    permissions = (
        # the binding and the finalizer (JSON patches), the claim read live after a 409
        Permission(CNCLAIMS, "get", "patch"),
        Permission(CNCLAIMS, "patch", subresource="status"),
        POD_WRITES,                   # taken, released (pods.py); read live to adopt one
        Permission(PODS, "list"),     # the Pods still labelled for a claim being deleted
        RECORDS_EVENTS,               # Bound, PodLost, Migrating, Migrated, InvalidSpec
    )

    def __init__(self, client: Client, cache: Cache, index: Indexes,
                 events: EventRecorder) -> None:
        self.client = client
        self.cache = cache
        self.index = index
        self.events = events
        # (namespace, Pod) a worker is trying to take: the others try the next Pod
        self.taking: Reservations[tuple[str, str]] = Reservations()

    async def reconcile(self, request: Request) -> Result:
        try:
            claim = await self.cache.get(CNCLAIMS, request.name, request.namespace)
        except NotFound:
            return Result.done()
        if not self.cache.has_seen_own_write(CNCLAIMS, request.name, request.namespace):
            return Result.requeue_after(_CACHE_LAG_RETRY)  # acting now could bind twice
        if _unbound_without_finalizer(claim):  # the binding's write adds it: one write less
            return await self.apply(claim)
        outcome = await finalize(self.client, CNCLAIMS, claim, CLAIM_FINALIZER,
                                 apply=self.apply, cleanup=self.cleanup)
        return outcome if isinstance(outcome, Result) else Result.done()

    async def apply(self, claim: Obj) -> Result:
        problem = spec_problem(claim)
        if problem is not None:  # retrying cannot help: say so once, on the claim
            self.events.event(claim, "Warning", "InvalidSpec", problem)
            raise TerminalError(problem)
        spec = spec_of(claim)
        if spec.get("sourcePod"):
            return await self.migrate(claim)
        if spec.get("podName"):
            return await self.sync(claim)
        return await self.bind_or_wait(claim)

    # -- binding -----------------------------------------------------------------------------

    async def _selector_candidates(self, claim: Obj) -> list[Obj]:
        """The Pods a claim without a pool selects, before any is checked for being bindable."""
        selector = spec_of(claim).get("selector") or {}  # (checked by spec_problem)
        return await self.cache.list(PODS, namespace_of(claim),
                                     label_selector=selector_string(selector))

    async def bind(self, claim: Obj, *, avoid: str = "") -> Obj | None:
        """Take a Pod for ``claim`` (never ``avoid``); the Pod as written, or None."""
        ns, name = namespace_of(claim), name_of(claim)
        for cached in await self.index.pods_claimed_by(ns, name):
            if name_of(cached) == avoid or not _held_by(cached, name):
                continue
            # The cache may still show a label this claim has since released (its
            # event late or lost): adopt only what the API server says we hold.
            try:  # a plain dict (not the typed Pod): it is written back as it was read
                pod: Obj = cast(Obj, await self.client.get(PODS, name_of(cached), ns))
            except NotFound:
                continue
            if _held_by(pod, name) and not await self._named_by_another(pod, name):
                logger.info("adopting Pod %s, already labelled as claimed by %s",
                            name_of(pod), name)
                return pod
        spec = spec_of(claim)
        pool, selector = str(spec.get("poolName") or ""), spec.get("selector") or {}
        if pool:  # the tracker's order; only the Pods tried are read from the cache
            names = (p for p in self.index.bindable.candidates(ns, pool, name) if p != avoid)
        else:
            candidates = [p for p in await self._selector_candidates(claim)
                          if bindable(p) and name_of(p) != avoid]
            candidates.sort(key=lambda p: (
                annotations_of(p).get(LAST_OWNER_ANNOTATION) != name, creation_order(p)))
            names = (name_of(p) for p in candidates)
        for pod_name in names:
            with self.taking.holding((ns, pod_name), name) as mine:
                if not mine or not self.cache.has_seen_own_write(PODS, pod_name, ns):
                    continue  # another worker is on it, or took it and the cache lags
                try:
                    pod = cast(Obj, await self.cache.get(PODS, pod_name, ns))
                except NotFound:
                    continue
                if not bindable(pod) or (selector and not selector_matches(selector,
                                                                           labels(pod))):
                    continue
                taken = await take(self.client, pod, name)
                if taken is not None:
                    return taken
                logger.debug("Pod %s was taken by someone else; trying the next", pod_name)
        return None

    async def _named_by_another(self, pod: Obj, claim: str) -> bool:
        others = await self.index.claims_naming(namespace_of(pod), name_of(pod))
        return any(name_of(c) != claim for c in others)

    async def bind_or_wait(self, claim: Obj) -> Result:
        pod = await self.bind(claim)
        if pod is None:
            waiting = ClaimPhase.LOST if claim_phase(claim) == ClaimPhase.LOST else (
                ClaimPhase.PENDING)
            await set_status(self.client, CNCLAIMS, claim, claim_phase_changes(claim, waiting))
            # An Idle Pod of the pool wakes waiting claims when it appears (index.py);
            # looking again now and then makes that a latency matter, never a stall.
            return Result.requeue_after(PENDING_RECHECK_SECONDS)
        if await record_binding(self.client, claim, pod):
            self.events.event(claim, "Normal", "Bound",
                              f"bound to Pod {name_of(pod)} on node {node_of(pod) or '?'}")
        return Result.done()

    # -- keeping it bound ---------------------------------------------------------------------

    async def _current_pod(self, namespace: str, name: str) -> Obj | None:
        """The Pod from the cache, or if the cache has none, from the API server."""
        try:
            return await self.cache.get(PODS, name, namespace)
        except NotFound:
            pass
        try:
            return await self.client.get(PODS, name, namespace)
        except NotFound:
            return None

    async def sync(self, claim: Obj) -> Result:
        ns, pod_name = namespace_of(claim), str(spec_of(claim).get("podName"))
        pod = await self._current_pod(ns, pod_name)
        if pod is None:
            return await self.lost(claim, pod_name)
        node = node_of(pod)
        if node and spec_of(claim).get("nodeName") != node:
            await self.client.patch(CNCLAIMS, name_of(claim), {"spec": {"nodeName": node}}, ns)
        await set_status(self.client, CNCLAIMS, claim, claim_phase_changes(
            claim, ClaimPhase.BOUND, pod=pod_name,
            boundTime=status_of(claim).get("boundTime") or now_rfc3339()))
        return Result.done()

    async def lost(self, claim: Obj, pod_name: str) -> Result:
        """The bound Pod is gone: clear the spec, then say Lost (bug 3). The spec write's
        own event reconciles the claim again, which binds a new Pod."""
        cleared = await self.client.patch(CNCLAIMS, name_of(claim), {"spec": {
            "podName": None, "nodeName": None}}, namespace_of(claim))
        await set_status(self.client, CNCLAIMS, cleared,
                         claim_phase_changes(cleared, ClaimPhase.LOST, boundTime=None))
        self.events.event(claim, "Warning", "PodLost",
                          f"Pod {pod_name} is gone; binding another")
        return Result.done()

    # -- migration ---------------------------------------------------------------------------

    async def migrate(self, claim: Obj) -> Result:
        ns, name, source = namespace_of(claim), name_of(claim), source_pod(claim)
        current = str(spec_of(claim).get("podName") or "")
        if not current or current == source:
            pod = await self.bind(claim, avoid=source)
            if pod is None:
                return Result.done()  # an Idle Pod of the pool maps to this claim
            if await record_binding(self.client, claim, pod):
                self.events.event(claim, "Normal", "Migrating",
                                  f"moving from Pod {source} to Pod {name_of(pod)}")
            return Result.done()
        if await self._current_pod(ns, current) is None:  # the new Pod died mid-way
            await self.client.patch(CNCLAIMS, name, {"spec": {
                "podName": None, "nodeName": None}}, ns)
            return Result.done()
        old = await self._current_pod(ns, source)
        if old is not None:
            sessions = connections(old)
            if sessions > 0:
                await set_status(self.client, CNCLAIMS, claim,
                                 {"migrate": {"source": {"connections": sessions}}})
                return Result.done()  # the source Pod's next change maps here (sourcePod index)
            if claimed_by(old) == name:
                await release(self.client, old, name)
        await self.client.patch(CNCLAIMS, name, {"spec": {"sourcePod": None}}, ns)
        await set_status(self.client, CNCLAIMS, claim, {"migrate": None})
        self.events.event(claim, "Normal", "Migrated",
                          f"moved from Pod {source} to Pod {current}")
        return Result.done()

    # -- deletion ----------------------------------------------------------------------------

    async def cleanup(self, claim: Obj) -> CleanupResult[Result]:
        """Stop naming this claim's Pods, release them, then report done (bug 1: never
        "not done" forever).

        Which Pods are ours is read from the API server, not the cache: a Pod
        bound a moment ago may not be cached yet, and a finalizer removed on
        that stale read would leave it claimed by nobody.

        The claim's spec is cleared before any Pod is released, as a binding
        labels the Pod before the spec names it: a released Pod can be bound
        by another claim at once, and the deleted claim may outlive its
        cleanup (its finalizer's removal failing and retried, or another
        controller's finalizer holding it), so it must not name the Pod by
        then. If the process dies in between, the Pods still carry this
        claim's label, which the next cleanup finds.
        """
        ns, name = namespace_of(claim), name_of(claim)
        listed = await self.client.list(PODS, ns, label_selector=f"{CLAIMED_BY_LABEL}={name}")
        pods: dict[str, Obj] = {name_of(p): cast(Obj, p) for p in listed["items"]}
        named_pods = [n for n in (str(spec_of(claim).get("podName") or ""), source_pod(claim))
                      if n]
        for named in named_pods:
            if named not in pods:  # ours by spec, whatever its label says
                pod = await self._current_pod(ns, named)
                if pod is not None and not claimed_by(pod):
                    pods[named] = pod
        if named_pods:
            with contextlib.suppress(NotFound):  # gone: it names nothing any more
                await self.client.patch(CNCLAIMS, name, {"spec": {
                    "podName": None, "nodeName": None, "sourcePod": None}}, ns)
        released, unlabelled = [], []
        for pod_name, pod in sorted(pods.items()):
            if deleting(pod):
                continue
            if await self._named_by_another(pod, name):
                await drop_claim_label(self.client, pod, name)  # it is another claim's now
                unlabelled.append(pod_name)
            else:
                await release(self.client, pod, name)
                released.append(pod_name)
        if released or unlabelled:
            logger.info("claim %s/%s deleted: released %s; dropped a stale label from %s",
                        ns, name, released or "none", unlabelled or "none")
        return CleanupDone(Result.done())
