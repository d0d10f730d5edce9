"""kube-controller-manager's garbage collector.

A dependent is an object with ``ownerReferences``; each reference is
resolved as :mod:`.owner_references` says (present, absent, invalid or of
an unknown kind). Whenever a dependent is written, and whenever one of its
owners is gone, the collector (``attemptToDeleteItem``):

* deletes it (background propagation) when every owner is absent: an owner
  deleted before the dependent was made, one with another uid, a namespaced
  owner referenced from another namespace (it is looked up in the
  dependent's own);
* drops the absent owners' references when at least one owner is present;
* leaves it alone while a reference is invalid (a cluster-scoped dependent
  with a namespaced owner) or names a kind not served.

A reference whose owner lives elsewhere than where it is resolved is
reported once, when the dependent is written, by an ``OwnerRefInvalidNamespace``
Warning Event on the dependent. An object deleted with
``propagationPolicy: Orphan`` carries the ``orphan`` finalizer until its
dependents' references to it are removed; one deleted with ``Foreground``
carries ``foregroundDeletion`` while its dependents are deleted, until none
with ``blockOwnerDeletion`` is left.
"""

from __future__ import annotations

from typing import Any

from ..machinery.resources import Registry
from ..registry.generic_store import Storage
from ..storage.versioned_store import Table
from .cleanup import delete_if_present
from .controller_events import record_event
from .owner_index import OwnerIndex
from .owner_references import ABSENT, PRESENT, owner_state, stray_owner

__all__ = ["GarbageCollector"]

COMPONENT = "garbage-collector-controller"


class GarbageCollector:
    """Dependents follow their owners: deleted, orphaned, or waited for."""

    def __init__(self, storage: Storage, registry: Registry, owners: OwnerIndex) -> None:
        self.storage = storage
        self.registry = registry
        self.owners = owners
        # owners being deleted in the foreground: uid -> (table, key)
        self._foreground: dict[str, tuple[Table, tuple[str, str]]] = {}

    def deletion_started(self, table: Table, obj: dict[str, Any]) -> None:
        """Orphan the dependents, or delete them in the foreground, as the finalizers ask."""
        finalizers = obj["metadata"].get("finalizers") or ()
        if "orphan" in finalizers:
            self._orphan_dependents(obj["metadata"]["uid"])
            self._drop_finalizer(table, obj, "orphan")
        elif "foregroundDeletion" in finalizers:
            self._delete_in_foreground(table, obj)

    def _dependents(self, uid: str) -> list[tuple[Table, dict[str, Any]]]:
        return self.owners.dependents(uid, self.storage.tables)

    def _orphan_dependents(self, uid: str) -> None:
        for table, obj in self._dependents(uid):
            self._remove_owner_reference(table, obj, uid)

    def _remove_owner_reference(self, table: Table, obj: dict[str, Any], uid: str) -> None:
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or () if r.get("uid") != uid]
        new = dict(obj, metadata=dict(meta, ownerReferences=refs))
        if not refs:
            del new["metadata"]["ownerReferences"]
        self.storage.update(table.rtype, meta.get("namespace", ""), meta["name"], new,
                            subresource=None, manager="garbage-collector", check_rv=False)

    def written(self, table: Table, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        """A dependent was created or changed: report stray owners, collect it if orphaned."""
        refs = [r for r in obj["metadata"].get("ownerReferences") or () if isinstance(r, dict)]
        if not refs:
            return
        before = list((old or {}).get("metadata", {}).get("ownerReferences") or ())
        for ref in refs:
            if ref not in before and stray_owner(self.storage, self.registry, obj, ref):
                self._report_stray(obj, ref)
        self._attempt_to_delete(table, obj)

    def removed(self, obj: dict[str, Any]) -> None:
        """``obj`` is gone: collect its dependents, and let a foreground owner go."""
        meta = obj["metadata"]
        self._foreground.pop(meta["uid"], None)
        for table, dependent in self._dependents(meta["uid"]):
            self._attempt_to_delete(table, dependent)
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid") in self._foreground:
                self._finish_foreground(str(ref["uid"]))

    def _attempt_to_delete(self, table: Table, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return
        refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, dict)]
        states = [owner_state(self.storage, self.registry, obj, r) for r in refs]
        if any(s not in (PRESENT, ABSENT) for s in states):
            return
        if PRESENT not in states:
            delete_if_present(self.storage, table, meta.get("namespace", ""), meta["name"])
            return
        for ref, state in zip(refs, states, strict=True):
            current = table.objects.get((meta.get("namespace", ""), meta["name"]))
            if state == ABSENT and current is not None:
                self._remove_owner_reference(table, current, str(ref.get("uid")))

    def _report_stray(self, obj: dict[str, Any], ref: dict[str, Any]) -> None:
        namespace = obj["metadata"].get("namespace", "")
        record_event(self.storage, self.registry, obj, "Warning", "OwnerRefInvalidNamespace",
                     f"ownerRef [{ref.get('apiVersion')}/{ref.get('kind')}, namespace: "
                     f"{namespace}, name: {ref.get('name')}, uid: {ref.get('uid')}] does not "
                     f'exist in namespace "{namespace}"', COMPONENT)

    def _delete_in_foreground(self, table: Table, obj: dict[str, Any]) -> None:
        """Delete the dependents; one with dependents of its own in the foreground too
        (kube-controller-manager's ``attemptToDeleteItem`` for a dependent whose owner
        waits for its dependents)."""
        meta = obj["metadata"]
        uid = meta["uid"]
        self._foreground[uid] = (table, (meta.get("namespace", ""), meta["name"]))
        for dep_table, dep in self._dependents(uid):
            dep_meta = dep["metadata"]
            namespace = dep_meta.get("namespace", "")
            current = dep_table.objects.get((namespace, dep_meta["name"]))
            if current is None or current["metadata"]["uid"] != dep_meta["uid"] or (
                    current["metadata"].get("deletionTimestamp")):
                continue  # gone, remade or already going while an earlier one went
            if self._dependents(dep_meta["uid"]):
                marked, gone = self.storage.delete(
                    dep_table.rtype, namespace, dep_meta["name"],
                    propagation_finalizer="foregroundDeletion")
                if not gone:
                    self.deletion_started(dep_table, marked)
            else:
                delete_if_present(self.storage, dep_table, namespace, dep_meta["name"])
        self._finish_foreground(uid)

    def _finish_foreground(self, uid: str) -> None:
        """Drop the owner's ``foregroundDeletion`` once no dependent blocks it.

        Deleting one dependent may finish the owner (and remove it) while the others
        are still being deleted: an owner no longer waited for is left alone.
        """
        entry = self._foreground.get(uid)
        if entry is None:
            return
        table, key = entry
        owner = table.objects.get(key)
        if owner is None:
            self._foreground.pop(uid, None)
            return
        blocking = [d for _, d in self._dependents(uid) if any(
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
