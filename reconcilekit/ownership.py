"""Owner references: who owns an object, so that it goes when its owner goes.

The garbage collector (kube-controller-manager's) deletes an object once
every owner named in its ``metadata.ownerReferences`` is gone, and
``Controller.owns()``/``enqueue_owner`` map an object's events to its
controller owner. The functions follow controller-runtime's
``controllerutil`` in Python spelling and change ``obj`` in place; ``obj``
and ``owner`` may be any mapping the API server's JSON decodes to: a plain
dict or a typed kind (:mod:`reconcilekit.kinds`, a custom kind's shape).

Rules, as controller-runtime and the API server have them:
  * at most one owner reference is the controller (``controller: true``);
    :func:`set_controller_reference` refuses an object that another object
    controls (:class:`AlreadyOwnedError`) rather than steal it;
  * the owner must be cluster-scoped, or in the object's namespace: the
    garbage collector treats an owner it cannot find in the object's own
    namespace as absent and deletes the object;
  * an owner needs ``apiVersion``, ``kind``, ``metadata.name`` and
    ``metadata.uid`` (an object as read from the server, not one being
    created);
  * a reference is identified by the owner's API group, kind and name: a
    second call for the same owner updates it in place (its uid, version
    and flags), never adds a duplicate.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._foundations.objects import Obj

__all__ = [
    "AlreadyOwnedError",
    "controller_reference",
    "has_owner_reference",
    "remove_owner_reference",
    "set_controller_reference",
    "set_owner_reference",
]



class AlreadyOwnedError(ValueError):
    """The object already has a controller owner other than the one asked for."""


def set_controller_reference(owner: Mapping[str, Any], obj: Mapping[str, Any], *,
                             block_owner_deletion: bool = True) -> None:
    """Make ``owner`` the controller of ``obj`` (``controller: true``).

    ``blockOwnerDeletion`` (default True) keeps a foreground deletion of the
    owner waiting until ``obj`` is gone. Raises :class:`AlreadyOwnedError`
    if another object controls ``obj``, ValueError if ``owner`` cannot own
    it (see the module's rules).
    """
    ref = _reference(owner, obj)
    current = controller_reference(obj)
    if current is not None and not _same_owner(current, ref):
        raise AlreadyOwnedError(
            f"{_describe(obj)} is already controlled by {current.get('kind')} "
            f"{current.get('name')!r}; refusing to make {ref['kind']} {ref['name']!r} its "
            "controller too")
    ref["controller"] = True
    ref["blockOwnerDeletion"] = block_owner_deletion
    _upsert(_mutable(obj), ref)


def set_owner_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> None:
    """Add ``owner`` as a plain owner of ``obj`` (not its controller), or update it."""
    ref = _reference(owner, obj)
    target = _mutable(obj)
    for existing in _references(target):
        if _same_owner(existing, ref):  # keep what the reference said about control
            for key in ("controller", "blockOwnerDeletion"):
                if key in existing:
                    ref[key] = existing[key]
    _upsert(target, ref)


def remove_owner_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """Remove ``owner``'s reference from ``obj``; True if there was one."""
    wanted = _identity(owner)
    target = _mutable(obj)
    refs = _references(target)
    kept = [r for r in refs if _key(r) != wanted]
    if len(kept) == len(refs):
        return False
    if kept:
        target["metadata"]["ownerReferences"] = kept
    else:
        target["metadata"].pop("ownerReferences", None)
    return True


def controller_reference(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    """The owner reference of ``obj`` that is its controller, or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def has_owner_reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """True if ``obj`` names ``owner`` (by group, kind and name) among its owners."""
    wanted = _identity(owner)
    return any(_key(r) == wanted for r in (obj.get("metadata") or {}).get(
        "ownerReferences") or ())


def _reference(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> Obj:
    meta = owner.get("metadata") or {}
    missing = [field for field, value in (("apiVersion", owner.get("apiVersion")),
                                          ("kind", owner.get("kind")),
                                          ("metadata.name", meta.get("name")),
                                          ("metadata.uid", meta.get("uid"))) if not value]
    if missing:
        raise ValueError(f"an owner needs {', '.join(missing)}: use the object as read from "
                         "the API server")
    owner_ns = meta.get("namespace") or ""
    obj_ns = (obj.get("metadata") or {}).get("namespace") or ""
    if owner_ns and not obj_ns:
        raise ValueError(f"cluster-scoped {_describe(obj)} cannot have a namespaced owner "
                         f"({owner.get('kind')} {owner_ns}/{meta['name']})")
    if owner_ns and owner_ns != obj_ns:
        raise ValueError(f"cross-namespace owner references are not allowed: the owner "
                         f"{owner.get('kind')} {meta['name']!r} is in namespace "
                         f"{owner_ns!r}, {_describe(obj)} in {obj_ns!r}")
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta["name"],
            "uid": meta["uid"]}


def _mutable(obj: Mapping[str, Any]) -> Obj:
    """``obj`` as the dict it is at run time (a typed kind is a dict), to change in place."""
    if not isinstance(obj, dict):
        raise TypeError(f"the object to change must be a dict, not {type(obj).__name__}")
    return cast(Obj, obj)


def _references(obj: Obj) -> list[Obj]:
    return list((obj.setdefault("metadata", {})).get("ownerReferences") or ())


def _upsert(obj: Obj, ref: Obj) -> None:
    refs = _references(obj)
    for i, existing in enumerate(refs):
        if _same_owner(existing, ref):
            refs[i] = ref
            break
    else:
        refs.append(ref)
    obj["metadata"]["ownerReferences"] = refs


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


def _key(ref: Mapping[str, Any]) -> tuple[str, str, str]:
    return _group(str(ref.get("apiVersion") or "")), str(ref.get("kind")), str(ref.get("name"))


def _identity(owner: Mapping[str, Any]) -> tuple[str, str, str]:
    return (_group(str(owner.get("apiVersion") or "")), str(owner.get("kind")),
            str((owner.get("metadata") or {}).get("name")))


def _same_owner(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _key(a) == _key(b)


def _describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind') or 'object'} {where}{meta.get('name') or '(unnamed)'}"
