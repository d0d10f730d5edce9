"""Mappers: from an object that changed to the requests to reconcile."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from .._foundations.objects import ObjViewT_contra
from .reconciler import Request

__all__ = ["Mapper", "enqueue_object", "enqueue_owner"]

Mapper: TypeAlias = Callable[[ObjViewT_contra], Iterable[Request]]
"""From an object to the requests to reconcile; ``Mapper[Website]`` reads a typed kind,
the bare ``Mapper`` any object."""


def enqueue_object(obj: Mapping[str, Any]) -> list[Request]:
    """The object itself (what ``for_`` watches with)."""
    return [Request.for_object(obj)]


def enqueue_owner(kind: str, group: str, *, controller_only: bool = True) -> Mapper:
    """The owner of the given kind/group named in ``metadata.ownerReferences``.

    With ``controller_only`` (the default, as ``owns`` uses it) only the
    reference marked ``controller: true`` counts. The owner is assumed to be
    in the object's namespace (owner references cannot cross namespaces; a
    cluster-scoped owner is requested with namespace ``""`` by the caller's
    resource scope: pass ``group``/``kind`` of a cluster-scoped owner and the
    controller strips the namespace).
    """

    def mapper(obj: Mapping[str, Any]) -> list[Request]:
        meta = obj.get("metadata") or {}
        out = []
        for ref in meta.get("ownerReferences") or ():
            if controller_only and not ref.get("controller"):
                continue
            api_version = str(ref.get("apiVersion") or "")
            ref_group = api_version.rpartition("/")[0] if "/" in api_version else ""
            if ref.get("kind") == kind and ref_group == group and ref.get("name"):
                out.append(Request(meta.get("namespace") or "", ref["name"]))
        return out

    return mapper
