"""What a cluster with only an API server still does on its own, run synchronously right
after the write that triggers it.

kube-apiserver's companions run a few loops that controllers rely on even
without a scheduler or kubelet: :mod:`.crd_establishing` (the apiextensions
server's), :mod:`.namespace_lifecycle`, :mod:`.garbage_collector`,
:mod:`.clusterrole_aggregation` and :mod:`.volume_protection`
(kube-controller-manager's). :class:`Lifecycle` hooks them to the storage's
writes and removals, and to the DELETEs that start a deletion; each can be
left out by kube-controller-manager's name for it (:data:`LIFECYCLE_CONTROLLERS`).
"""

from __future__ import annotations

from typing import Any

from ..machinery.resources import Registry, ResourceType
from ..registry.generic_store import Storage
from ..storage.versioned_store import Table
from .clusterrole_aggregation import ClusterRoleAggregator
from .crd_establishing import CRDController
from .garbage_collector import GarbageCollector
from .namespace_lifecycle import NamespaceController
from .owner_index import OwnerIndex
from .volume_protection import VolumeProtection

__all__ = ["LIFECYCLE_CONTROLLERS", "Lifecycle"]

# kube-controller-manager's names for the loops played here, as --controllers names them
LIFECYCLE_CONTROLLERS = frozenset({"garbagecollector", "namespace", "serviceaccount",
                                   "root-ca-cert-publisher", "clusterrole-aggregation",
                                   "pvc-protection", "pv-protection"})


class Lifecycle:
    """The built-in controllers, called on the storage's hooks and after a DELETE."""

    def __init__(self, storage: Storage, registry: Registry, owners: OwnerIndex,
                 root_ca: str = "", enabled: frozenset[str] = LIFECYCLE_CONTROLLERS) -> None:
        self.storage = storage
        self.enabled = enabled
        self.crds = CRDController(storage, registry)
        self.namespaces = NamespaceController(
            storage, registry, root_ca, account="serviceaccount" in enabled,
            root_ca_map="root-ca-cert-publisher" in enabled)
        self.garbage_collector = GarbageCollector(storage, registry, owners)
        self.aggregator = ClusterRoleAggregator(storage, registry)
        self.volumes = VolumeProtection(storage, registry, claims="pvc-protection" in enabled,
                                        volumes="pv-protection" in enabled)
        storage.on_changed.append(self._written)
        storage.on_removed.append(self._removed)

    def namespace_terminating(self, namespace: str) -> bool:
        return self.namespaces.terminating(namespace)

    def deletion_started(self, rtype: ResourceType, obj: dict[str, Any]) -> None:
        """After a DELETE that did not remove ``obj`` at once."""
        if "garbagecollector" in self.enabled:
            self.garbage_collector.deletion_started(self.storage.table(rtype), obj)
        self.volumes.changed(self.storage.table(rtype), obj)
        if _is(rtype, "", "namespaces"):
            if "namespace" in self.enabled:
                self.namespaces.delete_contents(obj["metadata"]["name"])
        elif _is(rtype, "apiextensions.k8s.io", "customresourcedefinitions"):
            self.crds.delete_resources(obj)

    def _written(self, table: Table, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        self.volumes.changed(table, obj)
        if obj["metadata"].get("deletionTimestamp"):
            return
        if "garbagecollector" in self.enabled:
            self.garbage_collector.written(table, obj, old)
        meta = obj["metadata"]
        if table.objects.get((meta.get("namespace", ""), meta["name"])) is not obj:
            return  # collected or changed by the garbage collector meanwhile
        if _is(table.rtype, "apiextensions.k8s.io", "customresourcedefinitions"):
            self.crds.serve(obj)
        elif _is(table.rtype, "", "namespaces"):
            self.namespaces.populate(obj["metadata"]["name"])
        elif _is(table.rtype, "rbac.authorization.k8s.io", "clusterroles") and (
                "clusterrole-aggregation" in self.enabled):
            self.aggregator.changed(obj, old)

    def _removed(self, table: Table, obj: dict[str, Any]) -> None:
        if "garbagecollector" in self.enabled:
            self.garbage_collector.removed(obj)
        self.volumes.changed(table, obj)
        if _is(table.rtype, "rbac.authorization.k8s.io", "clusterroles") and (
                "clusterrole-aggregation" in self.enabled):
            self.aggregator.changed(obj)
        if _is(table.rtype, "apiextensions.k8s.io", "customresourcedefinitions"):
            self.crds.removed(obj)
            return
        namespace = obj["metadata"].get("namespace")
        if namespace:
            if "namespace" in self.enabled:
                self.namespaces.finish_if_empty(namespace)
            if _is(table.rtype, "", "serviceaccounts") or _is(table.rtype, "", "configmaps"):
                self.namespaces.populate(namespace)
        crd_name = table.rtype.crd_name
        if crd_name and not table.objects:
            self.crds.finish_if_empty(crd_name)


def _is(rtype: ResourceType, group: str, plural: str) -> bool:
    r = rtype.resource
    return r.group == group and r.plural == plural
