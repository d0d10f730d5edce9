"""The garbage collector's index of dependents by owner uid (its graph's edges).

:class:`OwnerIndex` is told of every object the store writes or removes
(:meth:`OwnerIndex.update`, the store's index observer, called before the
write's event and hooks). Invariant: after each call, an object is indexed
under exactly the uids of the ``ownerReferences`` it is stored with, and an
owner uid with no dependents left has no entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..storage.versioned_store import ObjKey, Table, TableKey

__all__ = ["OwnerIndex"]


class OwnerIndex:
    """Owner uid -> the (table, object) keys of its dependents."""

    def __init__(self) -> None:
        self._owners: dict[str, set[tuple[TableKey, ObjKey]]] = {}

    def update(self, table: Table, key: ObjKey, old: dict[str, Any] | None,
               new: dict[str, Any] | None) -> None:
        """``key`` of ``table`` is now ``new`` (None: removed), and was ``old``."""
        tkey = (table.rtype.resource.group, table.rtype.resource.plural)
        for uid in _owner_uids(old):
            deps = self._owners.get(uid)
            if deps is not None:
                deps.discard((tkey, key))
                if not deps:
                    del self._owners[uid]
        for uid in _owner_uids(new):
            self._owners.setdefault(uid, set()).add((tkey, key))

    def dependents(self, uid: str, tables: Mapping[TableKey, Table]
                   ) -> list[tuple[Table, dict[str, Any]]]:
        """The stored dependents of owner ``uid``, in key order."""
        out = []
        for tkey, key in sorted(self._owners.get(uid, ())):
            table = tables.get(tkey)
            obj = table.objects.get(key) if table else None
            if table is not None and obj is not None:
                out.append((table, obj))
        return out


def _owner_uids(obj: dict[str, Any] | None) -> Iterable[str]:
    if obj is None:
        return ()
    return [r["uid"] for r in obj["metadata"].get("ownerReferences") or ()
            if isinstance(r, dict) and isinstance(r.get("uid"), str)]
