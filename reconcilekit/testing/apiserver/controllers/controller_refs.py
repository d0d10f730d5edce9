"""Controller references: who controls an object, and claiming the objects a
selector picks (kube-controller-manager's ``ControllerRefManager``).

A controller owns what carries its controller reference. It adopts an
orphan (no controller reference, not being deleted) that its selector
matches, unless it is being deleted itself, and releases what it owns but
its selector no longer matches; both by a strategic merge patch carrying
the object's uid as precondition, as kube-controller-manager patches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ...._foundations.selectors import LabelSelector
from .loopback import Loopback, LoopbackError

__all__ = ["claim", "controller_of", "owner_reference"]

Obj = dict[str, Any]
_SMP = "application/strategic-merge-patch+json"


def controller_of(obj: Obj) -> Obj | None:
    """The owner reference with ``controller: true``, if any."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def owner_reference(owner: Obj) -> Obj:
    """The controller reference a controller puts on what it makes (``NewControllerRef``)."""
    meta = owner["metadata"]
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}


async def claim(api: Loopback, owner: Obj, selector: LabelSelector, candidates: Iterable[Obj],
                path: str) -> list[Obj]:
    """The candidates ``owner`` controls once adoptions and releases are done;
    ``path``: the collection the candidates are in (``/api/v1/namespaces/ns/pods``)."""
    uid = owner["metadata"]["uid"]
    deleting = bool(owner["metadata"].get("deletionTimestamp"))
    mine = []
    for obj in candidates:
        meta = obj["metadata"]
        ref = controller_of(obj)
        matches = selector.matches(meta.get("labels") or {})
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches or deleting:
                mine.append(obj)
                continue
            await _patch(api, f"{path}/{meta['name']}", {"metadata": {
                "ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": meta["uid"]}})
            continue
        if not matches or deleting or meta.get("deletionTimestamp"):
            continue
        adopted = await _patch(api, f"{path}/{meta['name']}", {"metadata": {
            "ownerReferences": [owner_reference(owner)], "uid": meta["uid"]}})
        if adopted is not None:
            mine.append(adopted)
    return mine


async def _patch(api: Loopback, path: str, patch: Obj) -> Obj | None:
    try:
        return await api.request("PATCH", path, patch, content_type=_SMP)
    except LoopbackError as err:
        if err.status in (404, 409, 422):  # gone, or changed: the next sync sees it anew
            return None
        raise
