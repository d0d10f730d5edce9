"""The CNClaim domain's vocabulary: resources, labels, phases, and readers of raw objects.

Objects stay the plain JSON dicts reconcilekit hands out; these functions
read the few fields the controllers care about, so no controller spells a
path into a dict twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Final

from reconcilekit import Request

from .kinds import CNCLAIM_KIND, CNCLAIMSET_KIND, CNPOOL_KIND, GROUP, VERSION

__all__ = [
    "CLAIMED_BY_LABEL",
    "CLAIMSET_LABEL",
    "CLAIM_FINALIZER",
    "CNCLAIMS",
    "CNCLAIMSETS",
    "CNPOOLS",
    "CONNECTIONS_ANNOTATION",
    "ClaimPhase",
    "GROUP",
    "LAST_OWNER_ANNOTATION",
    "PHASE_LABEL",
    "POOL_LABEL",
    "PodPhase",
    "VERSION",
    "annotations_of",
    "bindable",
    "claim_phase",
    "claimed_by",
    "connections",
    "controller_owner",
    "creation_order",
    "deleting",
    "finalizers",
    "labels",
    "migrating",
    "name_of",
    "namespace_of",
    "node_of",
    "now_rfc3339",
    "pod_phase",
    "source_pod",
    "spec_of",
    "status_of",
    "uid_of",
]

Obj = Mapping[str, Any]

CNPOOLS: Final = CNPOOL_KIND.resource
CNCLAIMS: Final = CNCLAIM_KIND.resource
CNCLAIMSETS: Final = CNCLAIMSET_KIND.resource

POOL_LABEL: Final = "pool.matrixorigin.io/pool-name"
"""On a CN Pod: the pool it belongs to."""
PHASE_LABEL: Final = "pool.matrixorigin.io/pod-phase"
"""On a CN Pod: Idle, Bound or Draining (:class:`PodPhase`)."""
CLAIMED_BY_LABEL: Final = "pool.matrixorigin.io/claimed-by"
"""On a bound CN Pod: the claim holding it. Writing it with the Pod's
resourceVersion is the lock: of two claims racing for a Pod, one gets 409."""
LAST_OWNER_ANNOTATION: Final = "pool.matrixorigin.io/last-owner"
"""On a released CN Pod: the claim that held it last (it prefers this Pod if it binds again)."""
CONNECTIONS_ANNOTATION: Final = "pool.matrixorigin.io/connections"
"""On a CN Pod: its open sessions, published by the CN (a Pod without it has none).
A migration releases its source Pod, and a pool recycles a Draining Pod, only at 0."""
CLAIMSET_LABEL: Final = "matrixorigin.io/claimset"
"""On a claim made by a CNClaimSet: the set's name."""
CLAIM_FINALIZER: Final = "core.matrixorigin.io/release-pods"
"""Held by every CNClaim until its Pods are released."""


class PodPhase(StrEnum):
    IDLE = "Idle"
    BOUND = "Bound"
    DRAINING = "Draining"


class ClaimPhase(StrEnum):
    PENDING = "Pending"
    BOUND = "Bound"
    LOST = "Lost"


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def name_of(obj: Obj) -> str:
    return str(_meta(obj).get("name") or "")


def namespace_of(obj: Obj) -> str:
    return str(_meta(obj).get("namespace") or "")


def uid_of(obj: Obj) -> str:
    return str(_meta(obj).get("uid") or "")


def finalizers(obj: Obj) -> list[str]:
    return list(_meta(obj).get("finalizers") or ())


def labels(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("labels") or {})


def annotations_of(obj: Obj) -> dict[str, str]:
    return dict(_meta(obj).get("annotations") or {})


def deleting(obj: Obj) -> bool:
    return bool(_meta(obj).get("deletionTimestamp"))


def spec_of(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def status_of(obj: Obj) -> Mapping[str, Any]:
    return obj.get("status") or {}


def creation_order(obj: Obj) -> tuple[str, str]:
    """Sorts oldest first: creationTimestamp (to the second), then name."""
    return str(_meta(obj).get("creationTimestamp") or ""), name_of(obj)


def controller_owner(obj: Obj, kind: str) -> Request | None:
    """The controlling owner of ``kind`` (group core.matrixorigin.io), as a request."""
    for ref in _meta(obj).get("ownerReferences") or ():
        if (ref.get("controller") and ref.get("kind") == kind
                and str(ref.get("apiVersion") or "").startswith(GROUP + "/")):
            return Request(namespace_of(obj), str(ref.get("name") or ""))
    return None


def now_rfc3339() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- Pods ---------------------------------------------------------------------------------


def pod_phase(pod: Obj) -> str:
    return labels(pod).get(PHASE_LABEL, "")


def claimed_by(pod: Obj) -> str:
    return labels(pod).get(CLAIMED_BY_LABEL, "")


def node_of(pod: Obj) -> str:
    return str(spec_of(pod).get("nodeName") or "")


def connections(pod: Obj) -> int:
    """The Pod's open sessions (0 when it publishes none, or publishes garbage)."""
    raw = annotations_of(pod).get(CONNECTIONS_ANNOTATION, "0")
    try:
        return max(0, int(raw))
    except ValueError:
        return 0


def bindable(pod: Obj) -> bool:
    """An Idle, running, unclaimed Pod that is not going away."""
    return (pod_phase(pod) == PodPhase.IDLE and not claimed_by(pod) and not deleting(pod)
            and status_of(pod).get("phase") == "Running")


# -- Claims -------------------------------------------------------------------------------


def claim_phase(claim: Obj) -> str:
    return str(status_of(claim).get("phase") or "")


def source_pod(claim: Obj) -> str:
    """The Pod a migrating claim moves away from ("" when not migrating)."""
    return str((spec_of(claim).get("sourcePod") or {}).get("podName") or "")


def migrating(claim: Obj) -> bool:
    return bool(spec_of(claim).get("sourcePod"))
