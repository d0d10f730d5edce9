"""Status writes that happen only when something changed, and the claims' Bound condition."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from reconcilekit import Client, Resource
from reconcilekit.conditions import set_status_condition

from .resources import name_of, namespace_of, status_of

__all__ = ["claim_phase_changes", "set_status"]


async def set_status(client: Client, resource: Resource, obj: Mapping[str, Any],
                     changes: Mapping[str, Any]) -> bool:
    """Merge ``changes`` into ``obj``'s status (None removes a field); True if it wrote.

    Nothing is written when the status already says so: a reconcile that
    changes nothing makes no request, and so causes no event.
    """
    current = status_of(obj)
    if all(current.get(k) == v for k, v in changes.items()):
        return False
    await client.patch_status(resource, name_of(obj), {"status": dict(changes)},
                              namespace_of(obj) or None)
    return True


def claim_phase_changes(claim: Mapping[str, Any], phase: str, *, pod: str = "",
                        **fields: Any) -> dict[str, Any]:
    """The status changes that say ``phase``: the phase, the ``Bound`` condition to match
    (observedGeneration: ``claim``'s generation; its lastTransitionTime moves only
    when it turns True or False), and ``fields``."""
    conditions = copy.deepcopy(status_of(claim).get("conditions") or [])
    bound = phase == "Bound"
    set_status_condition(conditions, {
        "type": "Bound", "status": "True" if bound else "False", "reason": phase,
        "message": (f"bound to Pod {pod}" if bound
                    else "the bound Pod is gone; binding another" if phase == "Lost"
                    else "waiting for an Idle Pod"),
        "observedGeneration": int((claim.get("metadata") or {}).get("generation") or 0)})
    return {"phase": phase, "conditions": conditions, **fields}
