"""The PersistentVolumeClaim, PersistentVolume and StorageClass strategies, as
kube-apiserver 1.28 has them.

Measured on kube-apiserver v1.28.7 (``tests/testing/test_apiserver_claims.py``):

* defaults (``SetDefaults_PersistentVolumeClaim``): ``spec.volumeMode:
  Filesystem``, ``status.phase: Pending`` (also every StatefulSet
  ``volumeClaimTemplates`` entry's, :func:`default_claim_template`);
* ValidateUpdate: the spec is immutable once created, but for a
  ``volumeName`` set once, a ``storageClassName`` set once where there was
  none, and a bound claim's ``resources.requests.storage``, which may grow
  and never shrink.

A PersistentVolume is defaulted (``SetDefaults_PersistentVolume``) with
``spec.persistentVolumeReclaimPolicy: Retain``, ``spec.volumeMode:
Filesystem``, a ``hostPath`` source's ``type: ""`` and ``status.phase:
Pending``.

kube-apiserver's StorageObjectInUseProtection admission plugin gives a
created claim the ``kubernetes.io/pvc-protection`` finalizer and a created
volume ``kubernetes.io/pv-protection``; kube-controller-manager's protection
controllers remove them once nothing uses the object being deleted
(:mod:`..controllers.volume_protection`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from fractions import Fraction
from typing import ClassVar

from ..machinery.quantity import parse_quantity
from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import forbidden, invalid, not_supported, required
from .claim_diff import claim_spec_diff
from .default_storage_class import set_default_storage_class
from .strategy import StoredObjects, Strategy

__all__ = ["PV_PROTECTION", "PVC_PROTECTION", "PersistentVolumeClaimStrategy",
           "PersistentVolumeStrategy", "StorageClassStrategy", "default_claim",
           "default_claim_template"]

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def _protect(obj: Obj, finalizer: str) -> None:
    """StorageObjectInUseProtection: ``finalizer`` added once."""
    meta = obj.setdefault("metadata", {})
    finalizers = meta.get("finalizers")
    if not isinstance(finalizers, list):
        finalizers = meta["finalizers"] = []
    if finalizer not in finalizers:
        finalizers.append(finalizer)

_IMMUTABLE_SPEC = ("spec is immutable after creation except resources.requests for bound "
                   "claims")


def _dict(parent: Obj, key: str) -> Obj | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def default_claim(obj: Obj) -> None:
    """A claim's defaults, in place: ``spec.volumeMode`` and ``status.phase``."""
    spec = _dict(obj, "spec")
    if spec is not None:
        spec.setdefault("volumeMode", "Filesystem")
    status = obj.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"


def default_claim_template(obj: Obj) -> None:
    """A StatefulSet's claim template as apps/v1 stores it: a claim's defaults, its
    type meta, and ``metadata.creationTimestamp: null``."""
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "PersistentVolumeClaim")
    meta = obj.setdefault("metadata", {})
    if isinstance(meta, dict):
        meta.setdefault("creationTimestamp", None)
    default_claim(obj)


def default_volume(obj: Obj) -> None:
    """A PersistentVolume's defaults, in place."""
    spec = _dict(obj, "spec")
    if spec is not None:
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
        if (host_path := _dict(spec, "hostPath")) is not None:
            host_path.setdefault("type", "")
    status = obj.setdefault("status", {})
    if isinstance(status, dict) and not status.get("phase"):
        status["phase"] = "Pending"


class _StorageObjectStrategy(Strategy):
    """A volume's or a claim's: defaulted (again once created: the status a create clears
    is defaulted as kube-apiserver reads the object back), and given its protection
    ``finalizer`` by StorageObjectInUseProtection."""

    finalizer: ClassVar[str]

    def admit(self, obj: Obj, namespace: str, stored: StoredObjects) -> None:
        _protect(obj, self.finalizer)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        self.default(obj)


# PersistentVolumeSource's fields: a volume has one
_VOLUME_SOURCES = frozenset({
    "gcePersistentDisk", "awsElasticBlockStore", "hostPath", "glusterfs", "nfs", "rbd",
    "iscsi", "cinder", "cephfs", "fc", "flocker", "flexVolume", "azureFile", "vsphereVolume",
    "quobyte", "azureDisk", "photonPersistentDisk", "portworxVolume", "scaleIO", "local",
    "storageos", "csi"})


_ACCESS_MODES = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")


class PersistentVolumeStrategy(_StorageObjectStrategy):
    """PersistentVolumes: defaulted, protected while bound; created with access modes, a
    capacity and a volume source (``ValidatePersistentVolumeSpec``'s first checks)."""

    finalizer = PV_PROTECTION

    def default(self, obj: Obj) -> None:
        default_volume(obj)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        spec = _dict(obj, "spec") or {}
        causes = [required(f"spec.{name}") for name in ("accessModes", "capacity")
                  if not spec.get(name)]
        if not spec.get("capacity"):
            causes.append(Cause("FieldValueNotSupported", "Unsupported value: "
                                'core.ResourceList(nil): supported values: "storage"',
                                "spec.capacity"))
        causes += [not_supported("spec.accessModes", mode, _ACCESS_MODES)
                   for mode in spec.get("accessModes") or () if mode not in _ACCESS_MODES]
        if not _VOLUME_SOURCES & {k for k, v in spec.items() if v is not None}:
            causes.append(required("spec", "must specify a volume type"))
        return causes


def _requested(spec: Obj) -> object:
    return ((spec.get("resources") or {}).get("requests") or {}).get("storage")


class PersistentVolumeClaimStrategy(_StorageObjectStrategy):
    """PersistentVolumeClaims: defaulted, protected while mounted, with a spec fixed once
    created."""

    finalizer = PVC_PROTECTION

    def default(self, obj: Obj) -> None:
        default_claim(obj)

    def admit(self, obj: Obj, namespace: str, stored: StoredObjects) -> None:
        """DefaultStorageClass, then StorageObjectInUseProtection."""
        set_default_storage_class(obj, stored("storage.k8s.io", "storageclasses").values())
        super().admit(obj, namespace, stored)

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        before = copy.deepcopy(_dict(old, "spec") or {})
        after = copy.deepcopy(_dict(new, "spec") or {})
        causes: list[Cause] = []
        if not before.get("volumeName") and "volumeName" in after:
            before["volumeName"] = after["volumeName"]
        if before.get("storageClassName") is None and "storageClassName" in after:
            before["storageClassName"] = after["storageClassName"]
        bound = (_dict(new, "status") or {}).get("phase") == "Bound"
        if bound and _requested(after) is not None:
            grown, was = _requested(after), _requested(before)
            if was is not None and _less(grown, was):
                causes.append(invalid("spec.resources.requests.storage", grown,
                                      "field can not be less than previous value"))
            after.setdefault("resources", {}).setdefault("requests", {})["storage"] = was
            if was is None:
                del after["resources"]["requests"]["storage"]
        if before != after:
            diff = claim_spec_diff(before, after)
            causes.insert(0, Cause("FieldValueForbidden",
                                   f"Forbidden: {_IMMUTABLE_SPEC}\n{diff}", "spec"))
        return causes


def _quantity(value: object) -> Fraction | None:
    """A resource quantity's value (None: not a quantity, left to other checks)."""
    return parse_quantity(value)


def _less(a: object, b: object) -> bool:
    first, second = _quantity(a), _quantity(b)
    return first is not None and second is not None and first < second


class StorageClassStrategy(Strategy):
    """StorageClasses (``SetDefaults_StorageClass``, ``ValidateStorageClass[Update]``):
    ``reclaimPolicy`` defaults to Delete and ``volumeBindingMode`` to Immediate; a
    provisioner is required, the reclaim policy Delete or Retain; the provisioner,
    parameters, reclaim policy and binding mode may not change. Its DELETE answers
    with the deleted object."""

    return_deleted_object = True

    def default(self, obj: Obj) -> None:
        if not obj.get("reclaimPolicy"):
            obj["reclaimPolicy"] = "Delete"
        if not obj.get("volumeBindingMode"):
            obj["volumeBindingMode"] = "Immediate"

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes = [] if obj.get("provisioner") else [required("provisioner")]
        policy = obj.get("reclaimPolicy")
        if policy not in ("Delete", "Retain"):
            causes.append(not_supported("reclaimPolicy", policy, ("Delete", "Retain")))
        mode = obj.get("volumeBindingMode")
        if mode not in ("Immediate", "WaitForFirstConsumer"):
            causes.append(not_supported("volumeBindingMode", mode,
                                        ("Immediate", "WaitForFirstConsumer")))
        return causes

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        causes = [forbidden(name, f"updates to {name} are forbidden.")
                  for name in ("parameters", "provisioner", "reclaimPolicy")
                  if (old.get(name) or None) != (new.get(name) or None)]
        if old.get("volumeBindingMode") != new.get("volumeBindingMode"):
            causes.append(invalid("volumeBindingMode", new.get("volumeBindingMode"),
                                  "field is immutable"))
        return causes
