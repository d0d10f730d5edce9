"""kube-controller-manager's pvc-protection and pv-protection controllers.

A PersistentVolumeClaim being deleted keeps its ``kubernetes.io/pvc-protection``
finalizer while a Pod of its namespace that is scheduled to a node and has not
finished (phase neither Succeeded nor Failed) mounts it (an unscheduled Pod
never started, and no kubelet will start it with a claim being deleted); a
PersistentVolume being deleted keeps ``kubernetes.io/pv-protection`` while it
is Bound. Once not in use, the
controller removes the finalizer (and the object goes, if it was the last).
Played right after a claim, a volume or a Pod is written or removed.
"""

from __future__ import annotations

from typing import Any

from ..machinery.resources import Registry, ResourceType
from ..registry.claim_strategy import PV_PROTECTION, PVC_PROTECTION
from ..registry.generic_store import Storage
from ..storage.versioned_store import Table

__all__ = ["VolumeProtection"]

_MANAGER = "kube-controller-manager"


class VolumeProtection:
    """Removes the protection finalizers of claims and volumes nothing uses."""

    def __init__(self, storage: Storage, registry: Registry, *, claims: bool = True,
                 volumes: bool = True) -> None:
        """``claims``, ``volumes``: whether pvc-protection and pv-protection run."""
        self.storage = storage
        self.claims, self.volumes = claims, volumes
        types = {p: registry.lookup("", "v1", p) for p in ("persistentvolumeclaims",
                                                           "persistentvolumes", "pods")}
        assert all(types.values())
        self._claims: ResourceType = types["persistentvolumeclaims"]  # type: ignore[assignment]
        self._volumes: ResourceType = types["persistentvolumes"]  # type: ignore[assignment]

    def changed(self, table: Table, obj: dict[str, Any]) -> None:
        """After ``obj`` of ``table`` was written or removed."""
        r = table.rtype.resource
        if r.group != "":
            return
        namespace = obj["metadata"].get("namespace", "")
        if r.plural == "persistentvolumeclaims" and self.claims:
            self._release_claims(namespace, {obj["metadata"]["name"]})
        elif r.plural == "pods" and self.claims:
            claims = {v["persistentVolumeClaim"].get("claimName")
                      for v in (obj.get("spec") or {}).get("volumes") or ()
                      if isinstance(v.get("persistentVolumeClaim"), dict)}
            if claims:
                self._release_claims(namespace, claims)
        elif r.plural == "persistentvolumes" and self.volumes:
            self._release_volume(obj["metadata"]["name"])

    def _in_use(self, namespace: str, claim: str) -> bool:
        pods = self.storage.tables.get(("", "pods"))
        for (ns, _), pod in (pods.objects.items() if pods is not None else ()):
            if ns != namespace or not (pod.get("spec") or {}).get("nodeName") or (
                    pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue  # a Pod no node runs (unscheduled, or finished) uses no claim
            if any((v.get("persistentVolumeClaim") or {}).get("claimName") == claim
                   for v in (pod.get("spec") or {}).get("volumes") or ()):
                return True
        return False

    def _release_claims(self, namespace: str, names: set[str]) -> None:
        table = self.storage.table(self._claims)
        for name in sorted(names):
            claim = table.objects.get((namespace, name))
            if claim is not None and self._releasable(claim, PVC_PROTECTION) and \
                    not self._in_use(namespace, name):
                self._release(self._claims, claim, PVC_PROTECTION)

    def _release_volume(self, name: str) -> None:
        volume = self.storage.table(self._volumes).objects.get(("", name))
        if volume is not None and self._releasable(volume, PV_PROTECTION) and \
                (volume.get("status") or {}).get("phase") != "Bound":
            self._release(self._volumes, volume, PV_PROTECTION)

    @staticmethod
    def _releasable(obj: dict[str, Any], finalizer: str) -> bool:
        meta = obj["metadata"]
        return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers")
                                                                     or ())

    def _release(self, rtype: ResourceType, obj: dict[str, Any], finalizer: str) -> None:
        meta = obj["metadata"]
        kept = [f for f in meta.get("finalizers") or () if f != finalizer]
        self.storage.update(rtype, meta.get("namespace", ""), meta["name"],
                            {**obj, "metadata": {**meta, "finalizers": kept}},
                            subresource=None, manager=_MANAGER, check_rv=False)
