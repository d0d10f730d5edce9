"""kube-controller-manager's namespace controller, service account and root CA publishers.

What kube-apiserver v1.28 and kube-controller-manager do to a namespace, in
the same writes and order (a watch on the namespace sees the same events):

1. ``DELETE``: the apiserver sets ``deletionTimestamp`` (no grace period) and
   ``status.phase: Terminating``; the namespace stays, whatever its
   ``spec.finalizers`` (:meth:`Storage.delete`).
2. The controller, while ``kubernetes`` is in ``spec.finalizers``, deletes
   every object in the namespace (as a DELETE with no options: finalizers and
   grace periods are respected), then counts what is left and writes the five
   deletion conditions to ``status`` when they changed
   (:mod:`.namespace_conditions`); nothing is written when they did not.
3. Once nothing is left, it removes ``kubernetes`` from ``spec.finalizers``
   (``namespaces/finalize``); with no ``metadata.finalizers`` left either,
   that write removes the namespace (one DELETED event, carrying the state
   before it).

Step 2 runs again each time an object of the terminating namespace is
removed. Nothing new may be created in it meanwhile (the write path asks
:meth:`NamespaceController.terminating`). An active namespace always holds
the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap, made
again if deleted.
"""

from __future__ import annotations

import copy
from typing import Any

from ..machinery.resources import Registry
from ..registry.generic_store import Storage
from .cleanup import delete_if_present
from .namespace_conditions import Remaining, updated_conditions

__all__ = ["NamespaceController"]

MANAGER = "kube-controller-manager"


class NamespaceController:
    """Populates active namespaces and empties terminating ones."""

    def __init__(self, storage: Storage, registry: Registry, root_ca: str = "", *,
                 account: bool = True, root_ca_map: bool = True) -> None:
        """``account``, ``root_ca_map``: whether the serviceaccount and root CA publisher
        controllers run (each namespace's ``default`` ServiceAccount, ``kube-root-ca.crt``)."""
        self.storage = storage
        self.registry = registry
        self.root_ca = root_ca
        self._populated = (("serviceaccounts",) if account else ()) + (
            ("configmaps",) if root_ca_map else ())
        self._syncing: set[str] = set()

    def _namespace(self, namespace: str) -> dict[str, Any] | None:
        ns = self.storage.tables.get(("", "namespaces"))
        return ns.objects.get(("", namespace)) if ns else None

    def terminating(self, namespace: str) -> bool:
        """Whether ``namespace`` is being deleted."""
        obj = self._namespace(namespace)
        return bool(obj and obj["metadata"].get("deletionTimestamp"))

    def delete_contents(self, namespace: str) -> None:
        """A namespace's deletion started: one pass of the controller."""
        self.sync(namespace, delete=True)

    def finish_if_empty(self, namespace: str) -> None:
        """An object of ``namespace`` is gone: a pass of the controller if it terminates."""
        if namespace not in self._syncing and self.terminating(namespace):
            self.sync(namespace, delete=False)

    def sync(self, namespace: str, *, delete: bool) -> None:
        """``namespacedResourcesDeleter.Delete``: delete the content (if ``delete``),
        update the conditions, finalize once nothing is left."""
        obj = self._namespace(namespace)
        if obj is None or not obj["metadata"].get("deletionTimestamp") or (
                "kubernetes" not in ((obj.get("spec") or {}).get("finalizers") or ())):
            return
        self._syncing.add(namespace)
        try:
            if delete:
                for table in list(self.storage.tables.values()):
                    if table.rtype.resource.namespaced:
                        for (ns, name) in [k for k in table.objects if k[0] == namespace]:
                            delete_if_present(self.storage, table, ns, name)
        finally:
            self._syncing.discard(namespace)
        remaining = self._remaining(namespace)
        self._write_conditions(namespace, remaining)
        if not remaining.resources:
            self._finalize(namespace)

    def _remaining(self, namespace: str) -> Remaining:
        """What is left in ``namespace``, counted per served group and resource."""
        remaining = Remaining()
        seen: set[tuple[str, str]] = set()
        for rtype in self.registry:
            r = rtype.resource
            if not r.namespaced or (r.group, r.plural) in seen:
                continue
            seen.add((r.group, r.plural))
            table = self.storage.tables.get(self.storage.table_key(rtype))
            if table is None:
                continue
            for (ns, _), item in table.objects.items():
                if ns == namespace:
                    remaining.count(f"{r.plural}.{r.group}", item["metadata"].get("finalizers"))
        return remaining

    def _write_conditions(self, namespace: str, remaining: Remaining) -> None:
        obj = self._namespace(namespace)
        assert obj is not None
        status = obj.get("status") or {}
        conditions = updated_conditions(status.get("conditions") or [], remaining,
                                        self.storage.now())
        if conditions is None:
            return
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        self.storage.update(ns_type, "", namespace,
                            dict(obj, status=dict(status, conditions=conditions)),
                            subresource="status", manager=MANAGER, check_rv=False)

    def _finalize(self, namespace: str) -> None:
        """``finalizeNamespace``: ``kubernetes`` out of ``spec.finalizers`` (which removes
        the namespace when no other finalizer holds it)."""
        obj = self._namespace(namespace)
        assert obj is not None
        new = copy.deepcopy(obj)
        spec = new.setdefault("spec", {})
        kept = [f for f in spec.get("finalizers") or () if f != "kubernetes"]
        if kept:
            spec["finalizers"] = kept
        else:
            spec.pop("finalizers", None)
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        self.storage.update(ns_type, "", namespace, new, subresource="finalize",
                            manager=MANAGER, check_rv=False)

    def populate(self, namespace: str) -> None:
        """The default ServiceAccount and root CA ConfigMap of an active namespace."""
        ns = self._namespace(namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp"):
            return
        wanted: tuple[tuple[str, dict[str, Any]], ...] = (
            ("serviceaccounts", {"apiVersion": "v1", "kind": "ServiceAccount",
                                 "metadata": {"name": "default"}}),
            ("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "kube-root-ca.crt"},
                            "data": {"ca.crt": self.root_ca}}))
        for plural, obj in wanted:
            if plural not in self._populated:
                continue
            rtype = self.registry.lookup("", "v1", plural)
            assert rtype is not None
            if (namespace, obj["metadata"]["name"]) not in self.storage.table(rtype).objects:
                self.storage.create(rtype, namespace, obj, manager=MANAGER)
