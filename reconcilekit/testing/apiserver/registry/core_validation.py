"""The validation of the core kinds with rules of their own (``pkg/apis/core/validation``).

ConfigMap and Secret keys, sizes and ``immutable``; Secret types; Lease
spec; Pod containers and the few Pod spec fields an update may change. Each
function returns the causes of a 422 Invalid (metadata is checked apart);
the kinds' strategies (:mod:`.core_strategies`) call them. Everything else of
these kinds' validation (most of a Pod's) is not done.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from typing import Any

import orjson

from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import config_key_errors, dns_label_errors, invalid

__all__ = ["immutable_when_set", "validate_configmap", "validate_lease", "validate_pod_spec",
           "validate_pod_update", "validate_secret"]

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


def immutable_when_set(old: Obj, new: Obj, fields: tuple[str, ...]) -> list[Cause]:
    """``fields`` (and ``immutable`` itself) may not change once ``old`` is immutable."""
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


def validate_configmap(obj: Obj) -> list[Cause]:
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


def validate_secret(obj: Obj) -> list[Cause]:
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


def validate_lease(spec: Mapping[str, Any]) -> list[Cause]:
    causes = []
    duration, transitions = spec.get("leaseDurationSeconds"), spec.get("leaseTransitions")
    if isinstance(duration, int) and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    if isinstance(transitions, int) and transitions < 0:
        causes.append(invalid("spec.leaseTransitions", transitions,
                              "must be greater than or equal to 0"))
    return causes


def validate_pod_spec(spec: Any) -> list[Cause]:
    """The container rules of ValidatePodSpec: present, named uniquely, with an image."""
    spec = spec if isinstance(spec, Mapping) else {}
    causes = []
    containers = spec.get("containers") or []
    if not containers:
        causes.append(Cause("FieldValueRequired", "Required value", "spec.containers"))
    seen: set[str] = set()
    for bag in ("initContainers", "containers", "ephemeralContainers"):
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


def validate_ephemeral_containers_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidatePodEphemeralContainersUpdate: ephemeral containers are only added (the
    rest of the spec has been kept by the subresource); each new one is a container."""
    before = {c.get("name"): c for c in (old.get("spec") or {}).get("ephemeralContainers")
              or () if isinstance(c, Mapping)}
    after = {c.get("name"): c for c in (new.get("spec") or {}).get("ephemeralContainers")
             or () if isinstance(c, Mapping)}
    for name, container in before.items():
        if name not in after:
            return [Cause("FieldValueForbidden", f'Forbidden: existing ephemeral containers '
                          f'"{name}" may not be removed\n', "spec.ephemeralContainers")]
        if after[name] != container:
            return [Cause("FieldValueForbidden", f'Forbidden: existing ephemeral containers '
                          f'"{name}" may not be changed\n', "spec.ephemeralContainers")]
    return validate_pod_spec(new.get("spec"))


def validate_pod_update(old: Obj, new: Obj) -> list[Cause]:
    """ValidatePodUpdate: only images, activeDeadlineSeconds (down), tolerations (added),
    schedulingGates (removed) and terminationGracePeriodSeconds (-n to 1) may change.

    :func:`validate_pod_spec` has checked the new spec already."""
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
