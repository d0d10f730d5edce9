"""kube-apiserver's DefaultStorageClass admission plugin.

A PersistentVolumeClaim created without ``spec.storageClassName`` gets the
name of the default StorageClass (annotated
``storageclass.kubernetes.io/is-default-class: "true"``; of several, the
newest, then by name), when there is one. A claim that names a class, even
``""``, keeps it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["DEFAULT_CLASS", "set_default_storage_class"]

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def set_default_storage_class(claim: dict[str, Any], classes: Iterable[dict[str, Any]]) -> None:
    """Give ``claim`` the default class's name, in place, if it names none."""
    spec = claim.get("spec")
    if not isinstance(spec, dict) or "storageClassName" in spec:
        return
    defaults = [c for c in classes
                if (c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true"]
    if not defaults:
        return
    newest = max(defaults, key=lambda c: (c["metadata"].get("creationTimestamp") or "",
                                          c["metadata"]["name"]))
    spec["storageClassName"] = newest["metadata"]["name"]
