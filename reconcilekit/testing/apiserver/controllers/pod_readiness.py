"""What kube-controller-manager's controllers read off a Pod: readiness and availability."""

from __future__ import annotations

from typing import Any

from ..machinery.unstructured import epoch_seconds

__all__ = ["is_active", "is_available", "is_ready", "ready_since"]

Obj = dict[str, Any]


def _condition(pod: Obj, kind: str) -> Obj | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def is_ready(pod: Obj) -> bool:
    """The Pod's ``Ready`` condition is True."""
    c = _condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def ready_since(pod: Obj) -> float | None:
    """When the Pod last became Ready (seconds since the epoch); None if not ready."""
    c = _condition(pod, "Ready")
    if c is None or c.get("status") != "True" or not c.get("lastTransitionTime"):
        return None
    return epoch_seconds(c["lastTransitionTime"])


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    """Ready, and for longer than ``min_ready_seconds`` (``podutil.IsPodAvailable``)."""
    if not is_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    since = ready_since(pod)
    return since is not None and since + min_ready_seconds < now


def is_active(pod: Obj) -> bool:
    """Neither finished (Succeeded, Failed) nor being deleted (``FilterActivePods``)."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and (
        not pod["metadata"].get("deletionTimestamp"))
