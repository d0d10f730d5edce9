"""How kube-controller-manager's garbage collector resolves an owner reference.

``GarbageCollector.isDangling``: the reference's ``apiVersion`` and ``kind``
name a served resource; the owner is looked up by name in the dependent's
namespace when that resource is namespaced (whatever namespace the owner
really lives in), at cluster scope otherwise, and is absent unless found
there with the reference's ``uid``. A cluster-scoped dependent cannot have
a namespaced owner: the collector neither deletes it nor drops the
reference (:data:`INVALID`), and neither does it act on a reference to a
kind it does not serve (:data:`UNKNOWN`).
"""

from __future__ import annotations

from typing import Any, Literal

from ..machinery.resources import Registry, ResourceType
from ..registry.generic_store import Storage

__all__ = ["ABSENT", "INVALID", "PRESENT", "UNKNOWN", "OwnerState", "owner_state",
           "owner_type", "stray_owner"]

OwnerState = Literal["present", "absent", "invalid", "unknown"]
PRESENT: OwnerState = "present"
ABSENT: OwnerState = "absent"
INVALID: OwnerState = "invalid"
UNKNOWN: OwnerState = "unknown"


def owner_type(registry: Registry, ref: dict[str, Any]) -> ResourceType | None:
    """The served resource an owner reference's apiVersion and kind map to."""
    return registry.for_kind(str(ref.get("apiVersion") or ""), str(ref.get("kind") or ""))


def owner_state(storage: Storage, registry: Registry, dependent: dict[str, Any],
                ref: dict[str, Any]) -> OwnerState:
    """Whether the owner ``ref`` names exists, as the garbage collector sees it."""
    rtype = owner_type(registry, ref)
    if rtype is None:
        return UNKNOWN
    namespace = dependent["metadata"].get("namespace", "")
    if rtype.resource.namespaced and not namespace:
        return INVALID
    table = storage.tables.get((rtype.resource.group, rtype.resource.plural))
    owner = table.objects.get((namespace if rtype.resource.namespaced else "",
                               str(ref.get("name")))) if table else None
    if owner is not None and owner["metadata"]["uid"] == ref.get("uid"):
        return PRESENT
    return ABSENT


def stray_owner(storage: Storage, registry: Registry, dependent: dict[str, Any],
                ref: dict[str, Any]) -> bool:
    """Whether the owner lives, but not where the reference is resolved: in another
    namespace than the dependent's, or namespaced for a cluster-scoped dependent (the
    collector's graph then knows it, and reports ``OwnerRefInvalidNamespace``)."""
    rtype = owner_type(registry, ref)
    if rtype is None or not rtype.resource.namespaced:
        return False
    table = storage.tables.get((rtype.resource.group, rtype.resource.plural))
    namespace = dependent["metadata"].get("namespace", "")
    return table is not None and any(
        obj["metadata"]["uid"] == ref.get("uid") and ns != namespace
        for (ns, _), obj in table.objects.items())
