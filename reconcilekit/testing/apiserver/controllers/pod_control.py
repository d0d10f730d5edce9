"""Making and deleting a controller's Pods, with the Events kube-controller-manager's
``PodControl`` records: ``SuccessfulCreate`` ``Created pod: NAME`` or ``FailedCreate``
``Error creating: ...``, ``SuccessfulDelete`` ``Deleted pod: NAME`` or ``FailedDelete``
``Error deleting: ...``, each about the owner."""

from __future__ import annotations

from typing import Any

from .controller_manager import Context
from .loopback import LoopbackError

__all__ = ["create_pod", "delete_pod", "refusal"]

Obj = dict[str, Any]


def refusal(err: LoopbackError) -> str:
    """The message of a refused write."""
    return str(err.body.get("message", "")) if isinstance(err.body, dict) else str(err.body)


async def create_pod(ctx: Context, owner: Obj, pod: Obj, component: str) -> Obj:
    """Create ``pod`` in ``owner``'s namespace; the Pod made (a refusal raised)."""
    try:
        made = await ctx.api.request(
            "POST", f"/api/v1/namespaces/{owner['metadata']['namespace']}/pods", pod)
    except LoopbackError as err:
        ctx.event(owner, "Warning", "FailedCreate", f"Error creating: {refusal(err)}",
                  component)
        raise
    ctx.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {made['metadata']['name']}",
              component)
    return made


async def delete_pod(ctx: Context, owner: Obj, pod: Obj, component: str) -> bool:
    """Delete ``pod``; False if it was gone already (a refusal raised)."""
    meta = pod["metadata"]
    try:
        if not await ctx.api.delete(f"/api/v1/namespaces/{meta['namespace']}/pods/"
                                    f"{meta['name']}"):
            return False
    except LoopbackError as err:
        ctx.event(owner, "Warning", "FailedDelete", f"Error deleting: {refusal(err)}",
                  component)
        raise
    ctx.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {meta['name']}", component)
    return True
