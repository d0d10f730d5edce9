"""What a cluster with only an API server still does on its own.

kube-apiserver's companions run a few loops that controllers rely on even
without a scheduler or kubelet. The test server does them synchronously,
right after the write that triggers them:

* CRD establishing: a created CRD is served at once and its status gains the
  NamesAccepted and Established conditions (a second write, as on a cluster).
* Namespace lifecycle: a deleted namespace turns Terminating, its objects are
  deleted (those with finalizers wait for them), and the namespace goes once
  it is empty. Nothing new may be created in it meanwhile. An active
  namespace always holds the ``default`` ServiceAccount and the
  ``kube-root-ca.crt`` ConfigMap (kube-controller-manager's service account
  and root CA publishers), made again if deleted.
* CRD cleanup: a deleted CRD deletes its custom resources the same way, and
  stops being served once they are gone.
* Garbage collection: once an object is gone, each dependent whose
  ownerReferences name no living owner is deleted (background propagation),
  and the reference to the gone owner is removed from dependents that have
  others. An object deleted with ``propagationPolicy: Orphan`` carries the
  ``orphan`` finalizer until its dependents' references to it are removed;
  one deleted with ``Foreground`` carries ``foregroundDeletion`` while its
  dependents are deleted, until none with ``blockOwnerDeletion`` is left.
"""

from __future__ import annotations

from typing import Any

from ..apiextensions.crd import crd_types
from ..machinery.resources import Registry, ResourceType
from ..machinery.unstructured import timestamp
from ..registry.generic_store import Storage, Table

__all__ = ["Lifecycle"]


class Lifecycle:
    """Hooks that keep namespaces, CRDs and owner references consistent."""

    def __init__(self, storage: Storage, registry: Registry, root_ca: str = "") -> None:
        self.storage = storage
        self.registry = registry
        self.root_ca = root_ca
        # owners being deleted in the foreground: uid -> (table, key)
        self._foreground: dict[str, tuple[Table, tuple[str, str]]] = {}
        storage.on_written.append(self._written)
        storage.on_removed.append(self._removed)

    def _is(self, table: Table, group: str, plural: str) -> bool:
        r = table.rtype.resource
        return r.group == group and r.plural == plural

    # -- hooks from storage ------------------------------------------------------

    def _written(self, table: Table, obj: dict[str, Any]) -> None:
        if self._is(table, "apiextensions.k8s.io", "customresourcedefinitions") and (
                not obj["metadata"].get("deletionTimestamp")):
            self._serve_crd(obj)
        elif self._is(table, "", "namespaces") and not obj["metadata"].get("deletionTimestamp"):
            self._populate_namespace(obj["metadata"]["name"])

    def _removed(self, table: Table, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._foreground.pop(meta["uid"], None)
        self._collect_dependents(meta["uid"])
        for ref in meta.get("ownerReferences") or ():
            if isinstance(ref, dict) and ref.get("uid") in self._foreground:
                self._finish_foreground(str(ref["uid"]))
        if self._is(table, "apiextensions.k8s.io", "customresourcedefinitions"):
            for rtype in crd_types(obj):
                r = rtype.resource
                self.registry.remove(r.group, r.version, r.plural)
            owned = self.storage.tables.get((obj["spec"]["group"],
                                             obj["spec"]["names"]["plural"]))
            if owned is not None:
                self.storage.drop_table(owned)
            return
        namespace = meta.get("namespace")
        if namespace:
            self._finish_namespace_if_empty(namespace)
            if self._is(table, "", "serviceaccounts") or self._is(table, "", "configmaps"):
                self._populate_namespace(namespace)
        crd_name = table.rtype.crd_name
        if crd_name and not table.objects:
            self._finish_crd_if_empty(crd_name)

    # -- after a DELETE that did not remove at once ---------------------------------

    def deletion_started(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        r = rtype.resource
        name = obj["metadata"]["name"]
        finalizers = obj["metadata"].get("finalizers") or ()
        if "orphan" in finalizers:
            uid = obj["metadata"]["uid"]
            self.storage.orphan_dependents(uid)
            self._drop_finalizer(self.storage.table(rtype), obj, "orphan")
        elif "foregroundDeletion" in finalizers:
            self._delete_in_foreground(self.storage.table(rtype), obj)
        if r.group == "" and r.plural == "namespaces":
            for table in list(self.storage.tables.values()):
                if table.rtype.resource.namespaced:
                    for (ns, oname) in [k for k in table.objects if k[0] == name]:
                        self._delete_quietly(table, ns, oname)
            self._finish_namespace_if_empty(name)
        elif r.group == "apiextensions.k8s.io" and r.plural == "customresourcedefinitions":
            spec = obj["spec"]
            owned = self.storage.tables.get((spec["group"], spec["names"]["plural"]))
            if owned is not None:
                for (ns, oname) in list(owned.objects):
                    self._delete_quietly(owned, ns, oname)
            self._finish_crd_if_empty(name)

    def namespace_terminating(self, namespace: str) -> bool:
        ns = self.storage.tables.get(("", "namespaces"))
        obj = ns.objects.get(("", namespace)) if ns else None
        return bool(obj and obj["metadata"].get("deletionTimestamp"))

    # -- steps ---------------------------------------------------------------------

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        served = crd_types(crd)
        for rtype in served:
            self.registry.add(rtype)
        if served:  # the table's type is the storage version's: objects are written at it
            stored = next((v["name"] for v in spec["versions"] if v.get("storage")), None)
            chosen = next((t for t in served if t.resource.version == stored), served[-1])
            self.storage.table(chosen).rtype = chosen
        names = dict(spec["names"])
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
        old = crd.get("status") or {}
        since = {c.get("type"): c.get("lastTransitionTime")
                 for c in old.get("conditions") or () if c.get("status") == "True"}
        now = timestamp(self.storage.now())
        conditions = [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found",
             "lastTransitionTime": since.get("NamesAccepted") or now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted",
             "lastTransitionTime": since.get("Established") or now},
        ]
        stored = [v["name"] for v in spec["versions"] if v.get("storage")]
        previous = [v for v in old.get("storedVersions") or () if v not in stored]
        status = {"conditions": conditions, "acceptedNames": names,
                  "storedVersions": previous + stored}
        self.storage.replace_status(self._crd_type(), "", crd["metadata"]["name"], status)

    def _crd_type(self) -> ResourceType:
        rtype = self.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert rtype is not None
        return rtype

    def _delete_quietly(self, table: Table, namespace: str, name: str) -> None:
        if (namespace, name) in table.objects:
            self.storage.delete(table.rtype, namespace, name)

    def _finish_namespace_if_empty(self, namespace: str) -> None:
        if not self.namespace_terminating(namespace):
            return
        for table in self.storage.tables.values():
            if table.rtype.resource.namespaced and any(k[0] == namespace for k in table.objects):
                return
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        self.storage.remove_now(ns_type, "", namespace)

    def _finish_crd_if_empty(self, crd_name: str) -> None:
        crds = self.storage.tables.get(("apiextensions.k8s.io", "customresourcedefinitions"))
        crd = crds.objects.get(("", crd_name)) if crds else None
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        spec = crd["spec"]
        table = self.storage.tables.get((spec["group"], spec["names"]["plural"]))
        if table is None or not table.objects:
            self.storage.remove_now(self._crd_type(), "", crd_name)

    def _populate_namespace(self, namespace: str) -> None:
        """The default ServiceAccount and root CA ConfigMap of an active namespace."""
        ns_table = self.storage.tables.get(("", "namespaces"))
        ns = ns_table.objects.get(("", namespace)) if ns_table else None
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        wanted: tuple[tuple[str, dict[str, Any]], ...] = (
                 ("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                      "metadata": {"name": "default"}}),
                  ("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "kube-root-ca.crt"},
                                  "data": {"ca.crt": self.root_ca}}))
        for plural, obj in wanted:
            rtype = self.registry.lookup("", "v1", plural)
            assert rtype is not None
            if (namespace, obj["metadata"]["name"]) not in self.storage.table(rtype).objects:
                self.storage.create(rtype, namespace, obj, manager="kube-controller-manager")

    def _delete_in_foreground(self, table: Table, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self._foreground[meta["uid"]] = (table, (meta.get("namespace", ""), meta["name"]))
        for dep_table, dep in self.storage.dependents(meta["uid"]):
            dep_meta = dep["metadata"]
            if not dep_meta.get("deletionTimestamp"):
                self._delete_quietly(dep_table, dep_meta.get("namespace", ""), dep_meta["name"])
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
                self._delete_quietly(table, meta.get("namespace", ""), meta["name"])

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
