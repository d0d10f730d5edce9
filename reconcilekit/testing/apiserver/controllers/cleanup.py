"""Deleting an object a controller no longer wants, if it is still there: what the
namespace controller, CRD cleanup and the garbage collector each do to what they remove."""

from __future__ import annotations

from ..registry.generic_store import Storage
from ..storage.versioned_store import Table

__all__ = ["delete_if_present"]


def delete_if_present(storage: Storage, table: Table, namespace: str, name: str) -> None:
    """Start deleting ``namespace/name`` of ``table`` (as a DELETE with no options would)."""
    if (namespace, name) in table.objects:
        storage.delete(table.rtype, namespace, name)
