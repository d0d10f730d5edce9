"""kube-controller-manager's namespace controller, service account and root CA publishers.

A deleted namespace turns Terminating, its objects are deleted (those with
finalizers wait for them), and the namespace goes once it is empty; nothing
new may be created in it meanwhile (the write path asks
:meth:`NamespaceController.terminating`). An active namespace always holds
the ``default`` ServiceAccount and the ``kube-root-ca.crt`` ConfigMap, made
again if deleted.
"""

from __future__ import annotations

from typing import Any

from ..machinery.resources import Registry
from ..registry.generic_store import Storage
from .cleanup import delete_if_present

__all__ = ["NamespaceController"]


class NamespaceController:
    """Populates active namespaces and empties terminating ones."""

    def __init__(self, storage: Storage, registry: Registry, root_ca: str = "") -> None:
        self.storage = storage
        self.registry = registry
        self.root_ca = root_ca

    def terminating(self, namespace: str) -> bool:
        """Whether ``namespace`` is being deleted."""
        ns = self.storage.tables.get(("", "namespaces"))
        obj = ns.objects.get(("", namespace)) if ns else None
        return bool(obj and obj["metadata"].get("deletionTimestamp"))

    def delete_contents(self, namespace: str) -> None:
        """A namespace's deletion started: delete everything in it, then it if empty."""
        for table in list(self.storage.tables.values()):
            if table.rtype.resource.namespaced:
                for (ns, name) in [k for k in table.objects if k[0] == namespace]:
                    delete_if_present(self.storage, table, ns, name)
        self.finish_if_empty(namespace)

    def finish_if_empty(self, namespace: str) -> None:
        """Remove a terminating namespace once nothing is left in it."""
        if not self.terminating(namespace):
            return
        for table in self.storage.tables.values():
            if table.rtype.resource.namespaced and any(k[0] == namespace for k in table.objects):
                return
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        self.storage.remove_now(ns_type, "", namespace)

    def populate(self, namespace: str) -> None:
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
