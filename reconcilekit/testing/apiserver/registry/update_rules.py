"""What an update keeps and changes: the generic registry's rules (``rest.BeforeUpdate``).

Pure functions on objects, used by :class:`Storage` for every kind: the
metadata a client may not change, status versus main resource writes, the
finalizer rule for objects being deleted, when ``generation`` bumps, and when
a write changes nothing at all.
"""

from __future__ import annotations

import copy

from ..machinery.resources import ResourceType
from ..machinery.status import Cause, StatusError
from ..machinery.unstructured import Obj

__all__ = ["check_finalizers", "merge_update", "same", "spec_changed", "storage_key"]




def merge_update(rtype: ResourceType, old: Obj, new: Obj, subresource: str | None,
                 status_metadata: tuple[str, ...] = ()) -> Obj:
    """``rest.BeforeUpdate``: what an update may not change is taken from ``old``.

    A ``status`` write changes only status, a namespace's ``finalize`` only
    ``spec.finalizers``, a Pod's ``ephemeralcontainers`` only
    ``spec.ephemeralContainers``; a ``status`` write takes the metadata fields
    ``status_metadata`` names (the kind's strategy's) from ``new`` too; with a
    status subresource a write to the main resource leaves status alone (a Pod
    binding writes both).
    """
    if subresource == "finalize":  # namespaces/finalize: spec.finalizers only
        result = copy.deepcopy(old)
        spec = result.setdefault("spec", {})
        finalizers = (new.get("spec") or {}).get("finalizers")
        if finalizers:
            spec["finalizers"] = finalizers
        else:
            spec.pop("finalizers", None)
        return result
    if subresource == "ephemeralcontainers":  # a Pod's: spec.ephemeralContainers only
        result = copy.deepcopy(old)
        added = (new.get("spec") or {}).get("ephemeralContainers")
        spec = result.setdefault("spec", {})
        if added:
            spec["ephemeralContainers"] = added
        else:
            spec.pop("ephemeralContainers", None)
        return result
    if subresource == "status":
        result = copy.deepcopy(old)
        if "status" in new:
            result["status"] = new["status"]
        else:
            result.pop("status", None)
        sent = new.get("metadata")
        if not isinstance(sent, dict):
            sent = {}
        for field in status_metadata:
            if sent.get(field) is not None:
                result["metadata"][field] = copy.deepcopy(sent[field])
            else:
                result["metadata"].pop(field, None)
        return result
    result = dict(new)
    result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
    meta = dict(new["metadata"])
    old_meta = old["metadata"]
    for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
              "generation", "name", "namespace", "managedFields", "resourceVersion"):
        if k in old_meta:
            meta[k] = old_meta[k]
        else:
            meta.pop(k, None)
    result["metadata"] = meta
    if rtype.status_subresource and subresource != "binding":  # a binding writes both
        if "status" in old:
            result["status"] = old["status"]
        else:
            result.pop("status", None)
    return result


def check_finalizers(rtype: ResourceType, old: Obj, new: Obj) -> None:
    """No finalizer may be added to an object being deleted (ValidateObjectMetaUpdate)."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or ())
    added = [f for f in new["metadata"].get("finalizers") or () if f not in before]
    if added:
        quoted = ", ".join(f'"{f}"' for f in added)
        cause = Cause("FieldValueForbidden",
                      "Forbidden: no new finalizers can be added if the object is being "
                      f"deleted, found new finalizers []string{{{quoted}}}",
                      "metadata.finalizers")
        # kube-apiserver checks object metadata twice on an update (rest.BeforeUpdate and the
        # kind's ValidateUpdate): the cause comes twice, the message once
        raise StatusError.invalid(rtype.qualified_kind(), old["metadata"]["name"],
                                  [cause, cause], rtype.resource.group)


def storage_key(rtype: ResourceType, namespace: str, name: str) -> str:
    """The etcd key kube-apiserver stores the object under (named in storage errors)."""
    r = rtype.resource
    prefix = r.plural if rtype.builtin and r.group != "apiextensions.k8s.io" else (
        f"{r.group}/{r.plural}")
    return "/".join(["/registry", prefix, *([namespace] if namespace else []), name])


def _strip(obj: Obj) -> Obj:
    meta = {k: v for k, v in obj["metadata"].items()
            if k not in ("resourceVersion", "managedFields")}
    return dict(obj, metadata=meta)


def same(a: Obj, b: Obj) -> bool:
    """Equal but for resourceVersion and managedFields: an update that writes nothing."""
    return _strip(a) == _strip(b)


def spec_changed(rtype: ResourceType, old: Obj, new: Obj) -> bool:
    """Whether generation bumps: anything but metadata (and status, with a subresource)."""
    ignore = {"metadata", "status", "apiVersion", "kind"} if rtype.status_subresource else {
        "metadata", "apiVersion", "kind"}
    keys = (set(old) | set(new)) - ignore
    return any(old.get(k) != new.get(k) for k in keys)
