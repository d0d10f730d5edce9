"""What kube-apiserver does per kind, for the built-in kinds the test server serves.

After decoding a body into the kind's Go type (:mod:`..machinery.decoding`),
kube-apiserver runs the kind's strategy
(``pkg/registry/<group>/<kind>/strategy.go``): PrepareForCreate and
PrepareForUpdate, Validate and ValidateUpdate (``pkg/apis/core/validation``),
and for Pods CheckGracefulDelete. This module is those steps:

* :func:`prepare_for_create` / :func:`prepare_for_update`: server-set status,
  the Namespace's ``kubernetes.io/metadata.name`` label and ``spec.finalizers``
  (changed only through ``namespaces/finalize``), Events shaped as stored
  (:mod:`.event_versions`);
* :func:`validate` / :func:`validate_update`: ConfigMap and Secret keys, sizes
  and ``immutable``; Secret types; Lease spec; Pod containers and the few Pod
  spec fields an update may change; Events of either group
  (:mod:`.event_validation`);
* :func:`graceful_period`: a Pod bound to a node is deleted gracefully.

ValidatingWebhookConfigurations and MutatingWebhookConfigurations are validated
by :mod:`..admission.webhook_configurations`, CRDs by :mod:`..apiextensions.definitions`, both
called by the write path beside this module's :func:`validate`.

The workload kinds' and Services' steps are :mod:`.workload_strategies`'.
Everything else about these kinds (most of Pod validation, an events.k8s.io
Event's immutable fields) is not done.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import config_key_errors, dns_label_errors, invalid
from .event_validation import validate_event
from .event_versions import is_event, shape, to_core
from .pod_defaults import qos_class
from .workload_strategies import (
    prepare_workload,
    prepare_workload_update,
    validate_workload,
    validate_workload_update,
)

__all__ = ["graceful_period", "prepare_for_create", "prepare_for_update", "validate",
           "validate_update"]

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize, also the ConfigMap limit
_IMMUTABLE = "Forbidden: field is immutable when `immutable` is set"
_POD_UPDATABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)")
_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/dockercfg": (".dockercfg",),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/ssh-auth": ("ssh-privatekey",),
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
}


def _kind(rtype: ResourceType) -> tuple[str, str]:
    return rtype.resource.group, rtype.resource.plural


# -- prepare ----------------------------------------------------------------------------


def prepare_for_create(rtype: ResourceType, obj: Obj, existing: Iterable[Obj] = ()) -> None:
    """What the kinds' PrepareForCreate set: status a create may not set, server labels
    (``existing``: the kind's stored objects, for what is allocated among them)."""
    match _kind(rtype):
        case ("", "namespaces"):
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
            _label_namespace(obj)
        case ("", "pods"):
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
        case _ if rtype.status_subresource:
            obj.pop("status", None)
        case _ if is_event(rtype):
            shape(obj)
    if rtype.builtin:
        prepare_workload(rtype, obj, existing)


def prepare_for_update(rtype: ResourceType, old: Obj, new: Obj, subresource: str | None = None
                       ) -> None:
    """What the kinds' PrepareForUpdate keep: a Namespace's ``spec.finalizers`` change
    only through ``namespaces/finalize``."""
    if is_event(rtype):
        shape(new)
    if _kind(rtype) == ("", "namespaces"):
        _label_namespace(new)
        if subresource != "finalize":
            finalizers = (old.get("spec") or {}).get("finalizers")
            spec = new.get("spec")
            spec = spec if isinstance(spec, dict) else {}
            new["spec"] = dict(spec, finalizers=finalizers) if finalizers else {
                k: v for k, v in spec.items() if k != "finalizers"}
    if rtype.builtin:
        prepare_workload_update(rtype, old, new)


def _label_namespace(obj: Obj) -> None:
    meta = obj["metadata"]
    meta["labels"] = dict(meta.get("labels") or {},
                          **{"kubernetes.io/metadata.name": meta["name"]})


# -- validation ---------------------------------------------------------------------------


def validate(rtype: ResourceType, obj: Obj, namespace: str, old: Obj | None = None
             ) -> list[Cause]:
    """The kind's Validate (ValidateUpdate's own rules, for an update of ``old``): causes
    of a 422 Invalid (metadata is checked elsewhere)."""
    match _kind(rtype):
        case ("", "configmaps"):
            return _validate_configmap(obj)
        case ("", "secrets"):
            return _validate_secret(obj)
        case ("", "pods"):
            return _validate_pod_spec(obj.get("spec"))
        case ("", "events"):
            return validate_event(obj, namespace, strict=False)
        case ("events.k8s.io", "events"):
            return validate_event(to_core(copy.deepcopy(obj)), namespace, strict=True,
                                  old=None if old is None else to_core(copy.deepcopy(old)))
        case ("coordination.k8s.io", "leases"):
            return _validate_lease(obj.get("spec") or {})
    return validate_workload(rtype, obj) if rtype.builtin else []


def validate_update(rtype: ResourceType, old: Obj, new: Obj) -> list[Cause]:
    """The kind's ValidateUpdate beyond :func:`validate` (immutable fields)."""
    causes: list[Cause] = []
    match _kind(rtype):
        case ("", "secrets"):
            if new.get("type") != old.get("type"):
                causes.append(invalid("type", new.get("type"), "field is immutable"))
            causes.extend(_immutable(old, new, ("data",)))
        case ("", "configmaps"):
            causes.extend(_immutable(old, new, ("data", "binaryData")))
        case ("", "pods"):
            causes.extend(_validate_pod_update(old.get("spec") or {}, new.get("spec") or {}))
        case _ if rtype.builtin:
            causes.extend(validate_workload_update(rtype, old, new))
    return causes


def _immutable(old: Obj, new: Obj, fields: tuple[str, ...]) -> list[Cause]:
    if old.get("immutable") is not True:
        return []
    causes = []
    if new.get("immutable") is not True:
        causes.append(Cause("FieldValueForbidden", _IMMUTABLE, "immutable"))
    causes.extend(Cause("FieldValueForbidden", _IMMUTABLE, f) for f in fields
                  if (new.get(f) or None) != (old.get(f) or None))
    return causes


def _key_causes(bag: str, keys: Mapping[str, Any]) -> list[Cause]:
    return [invalid(f"{bag}[{key}]", key, msg)
            for key in sorted(keys) for msg in config_key_errors(key)]


def _validate_configmap(obj: Obj) -> list[Cause]:
    data, binary = obj.get("data") or {}, obj.get("binaryData") or {}
    causes = _key_causes("data", data)
    causes.extend(invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
                  for key in sorted(data) if key in binary)
    causes.extend(_key_causes("binaryData", binary))
    size = sum(len(v.encode()) for v in data.values()) + sum(
        len(base64.b64decode(v)) for v in binary.values())
    if size > MAX_SECRET_SIZE:
        causes.append(Cause("FieldValueTooLong",
                            f"Too long: must have at most {MAX_SECRET_SIZE} bytes", ""))
    return causes


def _validate_secret(obj: Obj) -> list[Cause]:
    data = obj.get("data") or {}
    causes = _key_causes("data", data)
    if sum(len(base64.b64decode(v)) for v in data.values()) > MAX_SECRET_SIZE:
        causes.append(Cause("FieldValueTooLong",
                            f"Too long: must have at most {MAX_SECRET_SIZE} bytes", "data"))
    secret_type = obj.get("type")
    required = _SECRET_REQUIRED_KEYS.get(str(secret_type), ())
    causes.extend(Cause("FieldValueRequired", "Required value", f"data[{key}]")
                  for key in required if key not in data)
    if secret_type == "kubernetes.io/basic-auth" and not {"username", "password"} & set(data):
        causes.extend(Cause("FieldValueRequired", "Required value", f"data[{key}]")
                      for key in ("username", "password"))
    name_key = "kubernetes.io/service-account.name"
    if secret_type == "kubernetes.io/service-account-token" and not (
            obj["metadata"].get("annotations") or {}).get(name_key):
        causes.append(Cause("FieldValueRequired", "Required value",
                            f"metadata.annotations[{name_key}]"))
    return causes


def _validate_lease(spec: Mapping[str, Any]) -> list[Cause]:
    causes = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if isinstance(transitions, int) and transitions < 0:
        causes.append(invalid("spec.leaseTransitions", transitions,
                              "must be greater than or equal to 0"))
    return causes


def _validate_pod_spec(spec: Any) -> list[Cause]:
    """The container rules of ValidatePodSpec: present, named uniquely, with an image."""
    spec = spec if isinstance(spec, Mapping) else {}
    causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.containers"))
    seen: set[str] = set()
    for bag in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(bag) or []):
            path = f"spec.{bag}[{i}]"
            container = container if isinstance(container, Mapping) else {}
            name = container.get("name")
            if not name:
                causes.append(Cause("FieldValueRequired", "Required value", f"{path}.name"))
            elif name in seen:
                causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{name}"',
                                    f"{path}.name"))
            else:
                causes.extend(invalid(f"{path}.name", name, m) for m in dns_label_errors(name))
                seen.add(name)
            if not container.get("image"):
                causes.append(Cause("FieldValueRequired", "Required value", f"{path}.image"))
    return causes


def _validate_pod_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidatePodUpdate: only images, activeDeadlineSeconds (down), tolerations (added),
    schedulingGates (removed) and terminationGracePeriodSeconds (-n to 1) may change.

    :func:`validate` has checked the new spec already."""
    causes: list[Cause] = []
    for bag in ("containers", "initContainers"):
        if len(new.get(bag) or []) != len(old.get(bag) or []):
            causes.append(Cause("FieldValueForbidden",
                                "Forbidden: pod updates may not add or remove containers",
                                f"spec.{bag}"))
            return causes
    old_deadline, new_deadline = old.get("activeDeadlineSeconds"), new.get(
        "activeDeadlineSeconds")
    if new_deadline is None and old_deadline is not None:
        causes.append(invalid("spec.activeDeadlineSeconds", "null",
                              "must not update from a positive integer to nil value"))
    elif isinstance(new_deadline, int) and isinstance(old_deadline, int) and (
            new_deadline > old_deadline):
        causes.append(invalid("spec.activeDeadlineSeconds", new_deadline,
                              "must be less than or equal to previous value"))
    new_tolerations = new.get("tolerations") or []
    if any(t not in new_tolerations for t in old.get("tolerations") or []):
        causes.append(Cause("FieldValueForbidden", "Forbidden: existing toleration can not be "
                            "modified except its tolerationSeconds", "spec.tolerations"))
    old_gates = old.get("schedulingGates") or []
    for gate in new.get("schedulingGates") or []:
        if gate not in old_gates:
            causes.append(Cause("FieldValueForbidden", "Forbidden: only deletion is allowed, "
                                f"but found new scheduling gate '{gate.get('name')}'",
                                "spec.schedulingGates"))
    if causes or new == old:
        return causes
    munged = copy.deepcopy(new)
    for bag in ("containers", "initContainers"):
        for mine, theirs in zip(munged.get(bag) or [], old.get(bag) or [], strict=True):
            _put(mine, "image", theirs.get("image"))
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        _put(munged, key, old.get(key))
    old_grace = old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and munged.get(
            "terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if munged == old:
        return causes
    return [Cause("FieldValueForbidden",
                  f"Forbidden: {_POD_UPDATABLE}\n{_spec_diff(old, munged)}", "spec")]


def _put(obj: Obj, key: str, value: Any) -> None:
    if value is None:
        obj.pop(key, None)
    else:
        obj[key] = value


def _spec_diff(old: Obj, new: Obj) -> str:
    """The changed fields, in the shape of the cmp.Diff kube-apiserver appends."""
    lines = ["  core.PodSpec{"]
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            field = key[:1].upper() + key[1:]
            if key in old:
                lines.append(f"- \t{field}: {orjson.dumps(old[key]).decode()},")
            if key in new:
                lines.append(f"+ \t{field}: {orjson.dumps(new[key]).decode()},")
    return "\n".join([*lines, "  }", ""])


# -- deletion ----------------------------------------------------------------------------


def graceful_period(rtype: ResourceType, obj: Obj, requested: int | None) -> int | None:
    """Seconds a DELETE leaves the object Terminating (Pods), or None (no graceful deletion).

    A Pod bound to a node waits for its kubelet: the requested period, else
    ``spec.terminationGracePeriodSeconds`` (default 30). An unbound or finished
    Pod goes at once (0). A negative period counts as 1, as kube-apiserver has it.
    """
    if _kind(rtype) != ("", "pods"):
        return None
    spec = obj.get("spec") or {}
    period = requested if requested is not None else spec.get(
        "terminationGracePeriodSeconds", 30)
    if not isinstance(period, int):
        period = 30
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in (
            "Failed", "Succeeded"):
        return 0
    return 1 if period < 0 else period
