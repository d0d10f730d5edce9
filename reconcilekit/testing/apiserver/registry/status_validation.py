"""The validation of a workload's status as its ``status`` subresource writes it.

kube-apiserver 1.28's ``ValidateReplicaSetStatus``, ``ValidateDeploymentStatus``,
``ValidateStatefulSetStatus``, ``ValidateDaemonSetStatus``,
``ValidateReplicationControllerStatus`` and ``ValidateJobStatus``
(``pkg/apis/{apps,core,batch}/validation``), with the status updates'
``collisionCount`` that may not go down. Each function returns the causes of
a 422 Invalid, in kube-apiserver's order: every count that must not be
negative, then each count that exceeds the one bounding it.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid

__all__ = ["validate_daemonset_status", "validate_deployment_status", "validate_job_status",
           "validate_replicaset_status", "validate_statefulset_status"]

_NEGATIVE = "must be greater than or equal to 0"
_OVER_REPLICAS = "cannot be greater than status.replicas"


def _status(obj: Obj) -> Obj:
    status = obj.get("status")
    return status if isinstance(status, dict) else {}


def _count(status: Obj, name: str) -> int:
    value = status.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _non_negative(status: Obj, names: Iterable[str]) -> list[Cause]:
    return [invalid(f"status.{name}", status[name], _NEGATIVE) for name in names
            if _count(status, name) < 0]


def _bounded(status: Obj, names: Iterable[str], bound: str, detail: str) -> list[Cause]:
    return [invalid(f"status.{name}", _count(status, name), detail) for name in names
            if _count(status, name) > _count(status, bound)]


def _collisions(new: Obj, old: Obj | None) -> list[Cause]:
    """``IsDecremented``: a collisionCount set before may not go down (nor be removed)."""
    before = _status(old).get("collisionCount") if old is not None else None
    after = _status(new).get("collisionCount")
    if not isinstance(before, int):
        return []
    if after is None or (isinstance(after, int) and after < before):
        return [invalid("status.collisionCount", after or 0, "cannot be decremented")]
    return []


def validate_replicaset_status(obj: Obj, old: Obj | None) -> list[Cause]:
    """ReplicaSets and ReplicationControllers."""
    status = _status(obj)
    return (_non_negative(status, ("replicas", "fullyLabeledReplicas", "readyReplicas",
                                   "availableReplicas", "observedGeneration"))
            + _bounded(status, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
                       "replicas", _OVER_REPLICAS)
            + _bounded(status, ("availableReplicas",), "readyReplicas",
                       "cannot be greater than readyReplicas"))


def validate_deployment_status(obj: Obj, old: Obj | None) -> list[Cause]:
    status = _status(obj)
    return (_non_negative(status, ("observedGeneration", "replicas", "updatedReplicas",
                                   "readyReplicas", "availableReplicas",
                                   "unavailableReplicas", "collisionCount"))
            + _bounded(status, ("updatedReplicas", "readyReplicas", "availableReplicas"),
                       "replicas", _OVER_REPLICAS)
            + _bounded(status, ("availableReplicas",), "readyReplicas",
                       "cannot be greater than readyReplicas")
            + _collisions(obj, old))


def validate_statefulset_status(obj: Obj, old: Obj | None) -> list[Cause]:
    status = _status(obj)
    return (_non_negative(status, ("replicas", "readyReplicas", "currentReplicas",
                                   "updatedReplicas", "availableReplicas",
                                   "observedGeneration", "collisionCount"))
            + _bounded(status, ("readyReplicas", "currentReplicas", "updatedReplicas",
                                "availableReplicas"), "replicas", _OVER_REPLICAS)
            + _bounded(status, ("availableReplicas",), "readyReplicas",
                       "cannot be greater than status.readyReplicas")
            + _collisions(obj, old))


def validate_daemonset_status(obj: Obj, old: Obj | None) -> list[Cause]:
    status = _status(obj)
    return (_non_negative(status, ("currentNumberScheduled", "numberMisscheduled",
                                   "desiredNumberScheduled", "numberReady",
                                   "observedGeneration", "updatedNumberScheduled",
                                   "numberAvailable", "numberUnavailable", "collisionCount"))
            + _collisions(obj, old))


def validate_job_status(obj: Obj, old: Obj | None) -> list[Cause]:
    return _non_negative(_status(obj), ("active", "succeeded", "failed", "ready"))
