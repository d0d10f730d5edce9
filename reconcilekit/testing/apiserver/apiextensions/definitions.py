"""CustomResourceDefinitions: the checks of a CRD spec, and the types a CRD serves.

Messages follow apiextensions-apiserver's CRD validation
(``apis/apiextensions/validation``), with apimachinery's formats.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...._foundations.objects import Resource
from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.validation import dns_label_errors, invalid
from .cel_rules import compile_errors
from .structural_schema import CustomResourceSchema, has_rules
from .version_conversion import conversion_errors

__all__ = ["crd_types", "validate_crd"]


def _required(field: str, what: str = "Required value") -> Cause:
    return Cause("FieldValueRequired", what, field)


def validate_crd(crd: Mapping[str, Any]) -> list[Cause]:
    """The reasons kube-apiserver would refuse this CustomResourceDefinition (422)."""
    causes: list[Cause] = []
    spec = crd.get("spec")
    if not isinstance(spec, Mapping):
        return [_required("spec")]
    group = spec.get("group")
    names = spec.get("names") if isinstance(spec.get("names"), Mapping) else {}
    assert isinstance(names, Mapping)
    plural, kind = names.get("plural"), names.get("kind")
    if not group or not isinstance(group, str):
        causes.append(_required("spec.group"))
    elif "." not in group:
        causes.append(Cause("FieldValueInvalid",
                            f'Invalid value: "{group}": should be a domain with at least one dot',
                            "spec.group"))
    if not plural or not isinstance(plural, str):
        causes.append(_required("spec.names.plural"))
    else:
        causes.extend(invalid("spec.names.plural", plural, m) for m in dns_label_errors(plural))
    if not kind or not isinstance(kind, str):
        causes.append(_required("spec.names.kind"))
    if names.get("listKind") is not None and not isinstance(names.get("listKind"), str):
        causes.append(Cause("FieldValueInvalid", "Invalid value: must be a string",
                            "spec.names.listKind"))
    name = (crd.get("metadata") or {}).get("name", "")
    if isinstance(plural, str) and isinstance(group, str) and name != f"{plural}.{group}":
        causes.append(Cause("FieldValueInvalid",
                            f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group',
                            "metadata.name"))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        causes.append(Cause("FieldValueNotSupported",
                            f'Unsupported value: "{scope or ""}": supported values: '
                            '"Cluster", "Namespaced"', "spec.scope"))
    causes.extend(_validate_versions(spec.get("versions")))
    causes.extend(conversion_errors(spec))
    return causes


def _validate_versions(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [_required("spec.versions", "Invalid value: null: must have exactly one version "
                                           "marked as storage version")]
    causes: list[Cause] = []
    storage = 0
    seen: set[str] = set()
    for i, v in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(v, Mapping):
            causes.append(Cause("FieldValueInvalid", "Invalid value: must be an object", path))
            continue
        vname = v.get("name")
        if not isinstance(vname, str) or dns_label_errors(vname):
            causes.extend(invalid(f"{path}.name", vname, m)
                          for m in dns_label_errors(vname if isinstance(vname, str) else ""))
        elif vname in seen:
            causes.append(Cause("FieldValueDuplicate", f'Duplicate value: "{vname}"',
                                f"{path}.name"))
        else:
            seen.add(vname)
        if not isinstance(v.get("served"), bool):
            causes.append(_required(f"{path}.served"))
        if v.get("storage") is True:
            storage += 1
        schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(
            v.get("schema"), Mapping) else None
        if not isinstance(schema, Mapping):
            causes.append(_required(f"{path}.schema.openAPIV3Schema",
                                    "Required value: schemas are required"))
        elif schema.get("type") != "object":
            causes.append(Cause("FieldValueInvalid",
                                'Unsupported value: must be "object" at the root',
                                f"{path}.schema.openAPIV3Schema.type"))
    causes.extend(_rule_errors(versions))
    if storage != 1:
        causes.append(Cause("FieldValueInvalid",
                            f"Invalid value: {_versions_repr(versions)}: must have exactly one "
                            "version marked as storage version", "spec.versions"))
    return causes


def _rule_errors(versions: list[Any]) -> list[Cause]:
    """CEL rules that do not compile, at the path kube-apiserver names: its internal
    version holds one ``spec.validation`` when every version has the same schema."""
    schemas: list[Mapping[str, Any]] = []
    for v in versions:
        schema = (v.get("schema") or {}).get("openAPIV3Schema") if isinstance(
            v, Mapping) and isinstance(v.get("schema"), Mapping) else None
        if not isinstance(schema, Mapping):
            return []  # refused for that already
        schemas.append(schema)
    if not any(has_rules(s) for s in schemas):
        return []
    if all(s == schemas[0] for s in schemas[1:]):
        return compile_errors(schemas[0], "spec.validation.openAPIV3Schema")
    return [c for i, s in enumerate(schemas)
            for c in compile_errors(s, f"spec.versions[{i}].schema.openAPIV3Schema")]


def _versions_repr(versions: list[Any]) -> str:
    return "[]apiextensions.CustomResourceDefinitionVersion{...}" if versions else "null"


def crd_types(crd: Mapping[str, Any]) -> list[ResourceType]:
    """The resource types a valid CRD serves: one per served version."""
    spec = crd["spec"]
    names = spec["names"]
    out = []
    for v in spec["versions"]:
        if not v.get("served"):
            continue
        selectable = {f["jsonPath"].lstrip(".") for f in v.get("selectableFields") or []
                      if isinstance(f, Mapping) and isinstance(f.get("jsonPath"), str)}
        subresources = v.get("subresources") or {}
        scale = subresources.get("scale")
        out.append(ResourceType(
            Resource(spec["group"], v["name"], names["kind"], names["plural"],
                     spec["scope"] == "Namespaced"),
            names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            status_subresource="status" in subresources,
            scale_subresource=isinstance(scale, Mapping),
            scale_paths=(scale["specReplicasPath"], scale["statusReplicasPath"],
                         scale.get("labelSelectorPath")) if isinstance(scale, Mapping) else None,
            deprecation_warning=_deprecation_warning(spec, v),
            generation=True,
            unconditional_update=False,
            builtin=False,
            field_labels=frozenset({"metadata.name", "metadata.namespace"} | selectable),
            categories=tuple(names.get("categories") or ()),
            crd_name=crd["metadata"]["name"],
            schema=CustomResourceSchema(
                v["schema"]["openAPIV3Schema"],
                replicas=(scale["specReplicasPath"], scale["statusReplicasPath"])
                if isinstance(scale, Mapping) else None),
            printer_columns=tuple(c for c in v.get("additionalPrinterColumns") or ()
                                  if isinstance(c, dict)),
        ))
    return out


_VERSION = re.compile(r"^v([1-9][0-9]*)(?:(alpha|beta)([1-9][0-9]*))?$")


def _version_priority(name: str) -> tuple[int, ...]:
    """apimachinery's kube-aware order (higher is newer): GA over beta over alpha by
    major then minor, then versions of other forms (lowest)."""
    m = _VERSION.match(name)
    if m is None:
        return (0,)
    stage = {None: 3, "beta": 2, "alpha": 1}[m[2]]
    return (1, stage, int(m[1]), int(m[3] or 0))


def _deprecation_warning(spec: Mapping[str, Any], version: Mapping[str, Any]) -> str | None:
    """A deprecated version's warning: its own, or apiextensions-apiserver's default
    (``g/v Kind is deprecated; use g/v2 Kind``, v2 the newest served, not deprecated
    version newer than it)."""
    if not version.get("deprecated"):
        return None
    if isinstance(version.get("deprecationWarning"), str):
        return str(version["deprecationWarning"])
    group, kind, name = spec["group"], spec["names"]["kind"], version["name"]
    message = f"{group}/{name} {kind} is deprecated"
    newer = [v["name"] for v in spec["versions"] if v.get("served") and not v.get("deprecated")
             and _version_priority(v["name"]) > _version_priority(name)]
    if newer:
        message += f"; use {group}/{max(newer, key=_version_priority)} {kind}"
    return message
