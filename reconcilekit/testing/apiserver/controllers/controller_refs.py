"""Controller references: who controls an object, and claiming the objects a
selector picks (kube-controller-manager's ``ControllerRefManager``).

A controller owns what carries its controller reference. It adopts an
orphan (no controller reference, not being deleted) that its selector
matches, unless it is being deleted itself, and releases what it owns but
its selector no longer matches; both by a strategic merge patch carrying
the object's uid as precondition, as kube-controller-manager patches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ...._foundations.selectors import LabelSelector, SelectorError
from ..storage.versioned_store import ObjKey
from .loopback import Loopback, LoopbackError

__all__ = ["claim", "controlled_by", "controller_of", "controllers_or_adopters", "own_key",
           "owner_reference", "selector_of"]

Obj = dict[str, Any]
_SMP = "application/strategic-merge-patch+json"


def controller_of(obj: Obj) -> Obj | None:
    """The owner reference with ``controller: true``, if any."""
    for ref in obj["metadata"].get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return ref
    return None


def own_key(obj: Obj) -> Iterable[ObjKey]:
    """An object's own key: what a change to a controller's own kind enqueues."""
    meta = obj["metadata"]
    return [(meta.get("namespace", ""), meta["name"])]


def controlled_by(kind: str) -> Callable[[Obj], Iterable[ObjKey]]:
    """The keys of the ``kind`` controlling an object (none if another kind, or none,
    controls it): what a change to a dependent enqueues."""
    def keys(obj: Obj) -> Iterable[ObjKey]:
        ref = controller_of(obj)
        if ref is None or ref.get("kind") != kind:
            return []
        return [(obj["metadata"].get("namespace", ""), ref["name"])]
    return keys


def controllers_or_adopters(kind: str, owners: Mapping[ObjKey, Obj], obj: Obj
                            ) -> list[ObjKey]:
    """The key of the ``kind`` controlling ``obj``; for an orphan, the keys of those of
    ``owners`` in its namespace whose selector matches it (one of which may adopt it)."""
    ns = obj["metadata"].get("namespace", "")
    ref = controller_of(obj)
    if ref is not None:
        return [(ns, ref["name"])] if ref.get("kind") == kind else []
    labels = obj["metadata"].get("labels") or {}
    return [key for key, owner in owners.items()
            if key[0] == ns and selector_of(owner).matches(labels)]


def selector_of(obj: Obj) -> LabelSelector:
    """``spec.selector`` as a selector; one that does not parse selects nothing."""
    try:
        return LabelSelector.from_dict((obj.get("spec") or {}).get("selector"))
    except SelectorError:
        return LabelSelector.nothing()


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
