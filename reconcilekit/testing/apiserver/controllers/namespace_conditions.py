"""The deletion conditions kube-controller-manager writes on a terminating namespace.

``namespace_condition_utils.go``: five condition types, always all present
once the controller has made a pass, in this order. Each is ``False`` with
its "ok" reason and message unless the pass found the opposite; this
server's passes never fail discovery, parsing or deletion, so only
``NamespaceContentRemaining`` and ``NamespaceFinalizersRemaining`` ever turn
``True``. ``lastTransitionTime`` changes only when a condition's status does.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..machinery.unstructured import timestamp

__all__ = ["Remaining", "updated_conditions"]

# type -> (reason, message) while all is well
_OK: dict[str, tuple[str, str]] = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered",
                                          "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions",
                                                    "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted", "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers",
                                     "All content-preserving finalizers finished"),
}


@dataclass
class Remaining:
    """What a pass found left: objects per ``resource.group``, objects per finalizer."""

    resources: Counter[str] = field(default_factory=Counter)
    finalizers: Counter[str] = field(default_factory=Counter)

    def count(self, group_resource: str, finalizers: Any) -> None:
        self.resources[group_resource] += 1
        for finalizer in finalizers or ():
            self.finalizers[str(finalizer)] += 1

    def failing(self) -> dict[str, tuple[str, str]]:
        """The conditions that are ``True``: type -> (reason, message)."""
        out = {}
        if self.resources:
            listed = sorted(f"{gr} has {n} resource instances"
                            for gr, n in self.resources.items())
            out["NamespaceContentRemaining"] = (
                "SomeResourcesRemain", "Some resources are remaining: " + ", ".join(listed))
        if self.finalizers:
            listed = sorted(f"{f} in {n} resource instances" for f, n in self.finalizers.items())
            out["NamespaceFinalizersRemaining"] = (
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: " + ", ".join(listed))
        return out


def updated_conditions(current: list[Any], remaining: Remaining, now: float
                       ) -> list[dict[str, Any]] | None:
    """The namespace's conditions after a pass, or None if they do not change."""
    failing = remaining.failing()
    out = [dict(c) for c in current if isinstance(c, dict)]
    changed = False
    for ctype, ok in _OK.items():
        status = "True" if ctype in failing else "False"
        reason, message = failing.get(ctype, ok)
        old = next((c for c in out if c.get("type") == ctype), None)
        if old is None:
            out.append({"type": ctype, "status": status, "lastTransitionTime": timestamp(now),
                        "reason": reason, "message": message})
            changed = True
        elif (old.get("status"), old.get("reason"), old.get("message")) != (
                status, reason, message):
            if old.get("status") != status:
                old["lastTransitionTime"] = timestamp(now)
            old.update(status=status, reason=reason, message=message)
            changed = True
    return out if changed else None
