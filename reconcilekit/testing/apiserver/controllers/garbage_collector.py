"""kube-controller-manager's garbage collector.

Once an object is gone, each dependent whose ownerReferences name no living
owner is deleted (background propagation), and the reference to the gone
owner is removed from dependents that have others. An object deleted with
``propagationPolicy: Orphan`` carries the ``orphan`` finalizer until its
dependents' references to it are removed; one deleted with ``Foreground``
carries ``foregroundDeletion`` while its dependents are deleted, until none
with ``blockOwnerDeletion`` is left.
"""

from __future__ import annotations

from typing import Any

from ..registry.generic_store import Storage, Table
from .cleanup import delete_if_present

__all__ = ["GarbageCollector"]


class GarbageCollector:
    """Dependents follow their owners: deleted, orphaned, or waited for."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        # owners being deleted in the foreground: uid -> (table, key)
        self._foreground: dict[str, tuple[Table, tuple[str, str]]] = {}

    def deletion_started(self, table: Table, obj: dict[str, Any]) -> None:
        """Orphan the dependents, or delete them in the foreground, as the finalizers ask."""
        finalizers = obj["metadata"].get("finalizers") or ()
        if "orphan" in finalizers:
            self.storage.orphan_dependents(obj["metadata"]["uid"])
            self._drop_finalizer(table, obj, "orphan")
        elif "foregroundDeletion" in finalizers:
            self._delete_in_foreground(table, obj)

    def removed(self, obj: dict[str, Any]) -> None:
        """``obj`` is gone: collect its dependents, and let a foreground owner go."""
        meta = obj["metadata"]
        self._foreground.pop(meta["uid"], None)
        self._collect_dependents(meta["uid"])
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid") in self._foreground:
                self._finish_foreground(str(ref["uid"]))

    def _delete_in_foreground(self, table: Table, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._foreground[meta["uid"]] = (table, (meta.get("namespace", ""), meta["name"]))
        for dep_table, dep in self.storage.dependents(meta["uid"]):
            dep_meta = dep["metadata"]
            if not dep_meta.get("deletionTimestamp"):
                delete_if_present(self.storage, dep_table, dep_meta.get("namespace", ""),
                                  dep_meta["name"])
        self._finish_foreground(meta["uid"])

    def _finish_foreground(self, uid: str) -> None:
        """Drop the owner's ``foregroundDeletion`` once no dependent blocks it."""
        table, key = self._foreground[uid]
        owner = table.objects.get(key)
        if owner is None:
            self._foreground.pop(uid, None)
            return
        blocking = [d for _, d in self.storage.dependents(uid) if any(
            isinstance(r, dict) and r.get("uid") == uid and r.get("blockOwnerDeletion")
            for r in d["metadata"].get("ownerReferences") or ())]
        if not blocking:
            self._foreground.pop(uid, None)
            self._drop_finalizer(table, owner, "foregroundDeletion")

    def _drop_finalizer(self, table: Table, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        current = table.objects.get((meta.get("namespace", ""), meta["name"]))
        if current is None:
            return
        cmeta = current["metadata"]
        kept = [f for f in cmeta.get("finalizers") or () if f != finalizer]
        new = dict(current, metadata=dict(cmeta, finalizers=kept))
        if not kept:
            del new["metadata"]["finalizers"]
        self.storage.update(table.rtype, cmeta.get("namespace", ""), cmeta["name"], new,
                            subresource=None, manager="garbage-collector", check_rv=False)

    def _collect_dependents(self, uid: str) -> None:
        for table, obj in self.storage.dependents(uid):
            meta = obj["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            alive = [r for r in meta.get("ownerReferences") or ()
                     if r.get("uid") != uid and r.get("uid") in self._living_uids(r)]
            if alive:
                self.storage.remove_owner_reference(table, obj, uid)
            else:
                delete_if_present(self.storage, table, meta.get("namespace", ""),
                                  meta["name"])

    def _living_uids(self, ref: dict[str, Any]) -> set[str]:
        """UIDs of living objects an owner reference may point to (by kind and name)."""
        out = set()
        for table in self.storage.tables.values():
            if table.rtype.resource.kind != ref.get("kind"):
                continue
            for (_, name), obj in table.objects.items():
                if name == ref.get("name"):
                    out.add(obj["metadata"]["uid"])
        return out
