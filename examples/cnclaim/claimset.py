"""The CNClaimSet controller: keep ``spec.replicas`` claims, like a ReplicaSet keeps Pods.

Expected flow of :meth:`ClaimSetReconciler.reconcile`:

1. Wait while the set's own creations and deletions of claims are not yet in
   the cache (:class:`reconcilekit.Expectations`: counted creations,
   deletions by UID, each record timing out so a lost event cannot freeze
   the set).
2. Count the set's claims that are not being deleted. Too few: expect and
   create the missing ones from ``spec.template``. Too many: pick the
   claims to delete with :func:`scale_in_order` and delete each with its
   UID and resourceVersion as preconditions, so a claim that changed since
   it was picked (a migration just started) answers 409 and stays.
3. Write ``status`` (replicas, readyReplicas = claims Bound, labelSelector).

A deleted set needs no cleanup of its own: its claims carry an owner
reference, so the garbage collector deletes them, and each claim's
finalizer releases its Pods.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
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
from reconcilekit.ownership import set_controller_reference
from reconcilekit.rbac import RECORDS_EVENTS, Permission, blocks_owner_deletion

from .index import Indexes
from .observe import expectations_handler
from .resources import (
    CLAIMSET_LABEL,
    CNCLAIMS,
    CNCLAIMSETS,
    ClaimPhase,
    claim_phase,
    controller_owner,
    creation_order,
    deleting,
    migrating,
    name_of,
    spec_of,
    uid_of,
)
from .status import set_status

__all__ = ["ClaimSetReconciler", "claimset_expectations_handler", "scale_in_order"]

logger = logging.getLogger("examples.cnclaim.claimset")

Obj = dict[str, Any]
_MIN_REQUEUE: Final = 0.05
_PREFERENCE: Final = {ClaimPhase.LOST: 0, ClaimPhase.PENDING: 1, "": 1}


def scale_in_order(claims: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The claims scale-in may delete, in the order it deletes them.

    A migrating claim (``spec.sourcePod`` set) is never a candidate: deleting
    it would set its finalizer against its migration (the CNClaim incident,
    docs/reliability.md, bug 2). Of the rest: Lost claims first, then Pending
    ones (including those with no status yet), then Bound ones; the newest
    first within each.
    """
    movable = sorted((c for c in claims if not migrating(c)), key=creation_order, reverse=True)
    movable.sort(key=lambda c: _PREFERENCE.get(claim_phase(c), 2))
    return movable


def claimset_expectations_handler(expectations: Expectations[Request]) -> EventHandler:
    """Claim events crossing off their sets' expected creations and deletions."""

    def owner(claim: Mapping[str, Any]) -> list[Request]:
        found = controller_owner(claim, CNCLAIMSETS.kind)
        return [found] if found is not None else []

    return expectations_handler(expectations, owner)


class ClaimSetReconciler(Reconciler):
    """Reconciles CNClaimSets; see the module docstring for the flow."""

    # What it sends beyond the cache's reads (python -m reconcilekit manifests).
    permissions = (
        Permission(CNCLAIMS, "create", "delete"),  # the set's claims, made and scaled in
        blocks_owner_deletion(CNCLAIMSETS),        # ... with their set as controller
        Permission(CNCLAIMSETS, "patch", subresource="status"),
        RECORDS_EVENTS,                            # ScaleInWaiting
    )

    def __init__(self, client: Client, cache: Cache, index: Indexes, events: EventRecorder,
                 expectations: Expectations[Request]) -> None:
        self.client = client
        self.cache = cache
        self.index = index
        self.events = events
        self.expectations = expectations

    async def reconcile(self, request: Request) -> Result:
        try:
            claimset = await self.cache.get(CNCLAIMSETS, request.name, request.namespace)
        except NotFound:
            self.expectations.delete(request)
            return Result.done()
        if deleting(claimset):
            return Result.done()
        if not self.expectations.satisfied(request):
            wait = self.expectations.time_until_expiry(request) or 0.0
            return Result.requeue_after(max(wait, _MIN_REQUEUE))
        uid = uid_of(claimset)
        selector = f"{CLAIMSET_LABEL}={request.name}"
        active = [c for c in await self.index.set_claims(request.namespace, request.name)
                  if not deleting(c) and controller_owner(c, CNCLAIMSETS.kind) == request
                  and any(r.get("uid") == uid for r in c["metadata"]["ownerReferences"])]
        replicas = int(spec_of(claimset).get("replicas") or 0)
        if len(active) < replicas:
            await self._create(claimset, request, replicas - len(active))
        elif len(active) > replicas:
            await self._scale_in(claimset, request, active, len(active) - replicas)
        await set_status(self.client, CNCLAIMSETS, claimset, {
            "replicas": len(active),
            "readyReplicas": sum(claim_phase(c) == ClaimPhase.BOUND for c in active),
            "labelSelector": selector})
        return Result.done()

    async def _create(self, claimset: Obj, request: Request, count: int) -> None:
        template = spec_of(claimset).get("template") or {}
        meta = template.get("metadata") or {}
        spec = {k: v for k, v in (template.get("spec") or {}).items()
                if k not in ("podName", "nodeName", "sourcePod")}
        self.expectations.expect_creations(request, count)
        for issued in range(count):
            body: Obj = {
                "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
                "metadata": {
                    "generateName": f"{request.name}-", "namespace": request.namespace,
                    "labels": {**(meta.get("labels") or {}), CLAIMSET_LABEL: request.name},
                    "annotations": dict(meta.get("annotations") or {})},
                "spec": copy.deepcopy(spec),
            }
            set_controller_reference(claimset, body)  # the claims go with their set
            try:
                await self.client.create(CNCLAIMS, body, request.namespace)
            except Exception:
                for _ in range(count - issued):
                    self.expectations.creation_observed(request)  # never coming
                raise
        logger.info("claim set %s: created %d claim(s)", request, count)

    async def _scale_in(self, claimset: Obj, request: Request, active: list[Obj],
                        count: int) -> None:
        chosen = scale_in_order(active)[:count]
        if len(chosen) < count:
            self.events.event(claimset, "Normal", "ScaleInWaiting",
                              f"{count - len(chosen)} claim(s) to remove are migrating; "
                              "waiting for their migrations to finish")
        if not chosen:
            return
        self.expectations.expect_deletions_of(request, [uid_of(c) for c in chosen])
        for claim in chosen:
            try:
                await self.client.delete(CNCLAIMS, name_of(claim), request.namespace,
                                         uid=uid_of(claim),
                                         resource_version=claim["metadata"]["resourceVersion"])
            except (NotFound, Conflict):  # gone, or changed since it was chosen
                self.expectations.deletion_observed_uid(request, uid_of(claim))
        logger.info("claim set %s: scaling in, deleted %s", request,
                    ", ".join(name_of(c) for c in chosen))
