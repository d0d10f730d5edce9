"""The CNPool controller: keep ``spec.replicas`` Idle CN Pods, recycle Draining ones.

Expected flow of :meth:`PoolReconciler.reconcile`:

1. Wait while the pool's own Pod creations and deletions are not yet in the
   cache (:class:`reconcilekit.Expectations`, with a timeout: a lost event
   never freezes a pool).
2. Release Bound Pods held by nobody: their claim is gone and no claim names
   them (a claim deleted while its binding was in flight).
3. Recycle Draining Pods whose sessions are gone: back to Idle while the
   pool has fewer than ``spec.replicas`` Idle Pods, deleted otherwise.
4. Create the Idle Pods that are missing, or delete the excess (Pods not
   running first, then the newest). Every deletion carries the Pod's UID
   and resourceVersion as preconditions: an Idle Pod a claim has just taken
   answers 409 and stays.
5. Write ``status`` (idle, bound, draining) when it changed.

Pods are found by their ``pool-name`` label, so Pods another tool made for
the pool count too; the Pods the pool makes carry an owner reference to it
and go with it.
"""

from __future__ import annotations

import contextlib
import copy
import logging
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from reconcilekit import (
    Cache,
    Client,
    Conflict,
    EventHandler,
    EventRecorder,
    Expectations,
    NotFound,
    Reconciler,
    Request,
    Result,
)
from reconcilekit.kinds import PODS
from reconcilekit.ownership import set_controller_reference
from reconcilekit.rbac import RECORDS_EVENTS, Permission, blocks_owner_deletion

from .index import Indexes
from .observe import expectations_handler
from .pods import POD_WRITES, relabelled, release
from .resources import (
    CNCLAIMS,
    CNPOOLS,
    PHASE_LABEL,
    POOL_LABEL,
    PodPhase,
    claimed_by,
    connections,
    creation_order,
    deleting,
    labels,
    name_of,
    namespace_of,
    pod_phase,
    spec_of,
    status_of,
    uid_of,
)
from .status import set_status

__all__ = ["PoolReconciler", "pod_to_pool", "pool_expectations_handler"]

logger = logging.getLogger("examples.cnclaim.pool")

Obj = dict[str, Any]
_MIN_REQUEUE: Final = 0.05


def pod_to_pool(pod: Mapping[str, Any]) -> list[Request]:
    """The pool a Pod's ``pool-name`` label names."""
    pool = labels(pod).get(POOL_LABEL)
    return [Request(namespace_of(pod), pool)] if pool else []


def pool_expectations_handler(expectations: Expectations[Request]) -> EventHandler:
    """Pod events crossing off the pools' expected creations and deletions."""
    return expectations_handler(expectations, pod_to_pool)


class PoolReconciler(Reconciler):
    """Reconciles CNPools; see the module docstring for the flow.

    Pods are scheduled and run by the cluster (on a cluster with no nodes,
    a :class:`reconcilekit.testing.NodeSimulator` plays that part).
    """

    # What it sends beyond the cache's reads (python -m reconcilekit manifests).
    permissions = (
        Permission(PODS, "create", "delete"),  # the pool's Pods, made and recycled
        blocks_owner_deletion(CNPOOLS),        # ... with their pool as controller
        POD_WRITES,                            # relabelled, released (pods.py)
        Permission(CNCLAIMS, "get"),           # an orphan's claim, checked live
        Permission(CNPOOLS, "patch", subresource="status"),
        RECORDS_EVENTS,                        # ReleasedOrphan
    )

    def __init__(self, client: Client, cache: Cache, index: Indexes,
                 events: EventRecorder, expectations: Expectations[Request]) -> None:
        self.client = client
        self.cache = cache
        self.index = index
        self.events = events
        self.expectations = expectations

    async def reconcile(self, request: Request) -> Result:
        try:
            pool = await self.cache.get(CNPOOLS, request.name, request.namespace)
        except NotFound:
            self.expectations.delete(request)
            return Result.done()
        if deleting(pool):
            return Result.done()  # its Pods go with it (owner references)
        if not self.expectations.satisfied(request):
            wait = self.expectations.time_until_expiry(request) or 0.0
            return Result.requeue_after(max(wait, _MIN_REQUEUE))
        replicas = int(spec_of(pool).get("replicas") or 0)
        pods = [p for p in await self.index.pool_pods(request.namespace, request.name)
                if not deleting(p)]
        by_phase = Counter(pod_phase(p) for p in pods)
        for pod in pods:
            if pod_phase(pod) == PodPhase.BOUND:
                await self._release_if_orphaned(pool, pod)
        idle = [p for p in pods if pod_phase(p) == PodPhase.IDLE]
        drained = sorted((p for p in pods
                          if pod_phase(p) == PodPhase.DRAINING and connections(p) == 0),
                         key=creation_order)
        for pod in drained:
            if len(idle) < replicas:
                back = await self._relabel(pod, PodPhase.IDLE)
                if back is not None:
                    idle.append(back)
            else:
                await self._delete(request, pod)
        if len(idle) < replicas:
            await self._create(pool, request, replicas - len(idle))
        elif len(idle) > replicas:
            excess = sorted(idle, key=creation_order, reverse=True)  # newest first, and
            excess.sort(key=lambda p: status_of(p).get("phase") == "Running")  # not running first
            for pod in excess[:len(idle) - replicas]:
                await self._delete(request, pod)
        await set_status(self.client, CNPOOLS, pool, {
            "idle": by_phase[PodPhase.IDLE], "bound": by_phase[PodPhase.BOUND],
            "draining": by_phase[PodPhase.DRAINING]})
        return Result.done()

    # -- Pods ----------------------------------------------------------------------------------

    async def _create(self, pool: Obj, request: Request, count: int) -> None:
        template = spec_of(pool).get("podTemplate") or {}
        meta = template.get("metadata") or {}
        self.expectations.expect_creations(request, count)
        for issued in range(count):
            body: Obj = {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {
                    "generateName": f"{request.name}-", "namespace": request.namespace,
                    "labels": {**(meta.get("labels") or {}), POOL_LABEL: request.name,
                               PHASE_LABEL: PodPhase.IDLE},
                    "annotations": dict(meta.get("annotations") or {})},
                "spec": copy.deepcopy(template.get("spec") or {}),
            }
            set_controller_reference(pool, body)  # the Pods go with their pool
            try:
                await self.client.create(PODS, body, request.namespace)
            except Exception:
                for _ in range(count - issued):
                    self.expectations.creation_observed(request)  # never coming
                raise
        logger.info("pool %s: created %d Idle Pod(s)", request, count)

    async def _delete(self, request: Request, pod: Obj) -> None:
        uid = uid_of(pod)
        self.expectations.expect_deletions_of(request, [uid])
        meta = pod["metadata"]
        try:
            await self.client.delete(PODS, name_of(pod), namespace_of(pod), uid=uid,
                                     resource_version=meta.get("resourceVersion"))
        except (NotFound, Conflict):  # gone already, or changed (taken) since read
            self.expectations.deletion_observed_uid(request, uid)

    async def _relabel(self, pod: Obj, phase: PodPhase) -> Obj | None:
        try:
            return await self.client.update(PODS, relabelled(pod, {PHASE_LABEL: phase}))
        except (NotFound, Conflict):
            return None  # changed since read; its event brings the pool back here

    async def _release_if_orphaned(self, pool: Obj, pod: Obj) -> None:
        """Release a Bound Pod that no claim holds or names (checked live before writing)."""
        ns, owner = namespace_of(pod), claimed_by(pod)
        if owner:  # the common case, one cached read: its claim exists
            with contextlib.suppress(NotFound):
                await self.cache.get(CNCLAIMS, owner, ns)
                return
        if await self.index.claims_naming(ns, name_of(pod)):
            return
        if owner:  # gone from the cache: make sure before writing
            with contextlib.suppress(NotFound):
                await self.client.get(CNCLAIMS, owner, ns)
                return
        if await release(self.client, pod, owner) is not None:
            self.events.event(pool, "Normal", "ReleasedOrphan",
                              f"Pod {name_of(pod)} was held by {owner or 'nobody'}, which is "
                              "gone: released to Draining")
