"""Object validation as kube-apiserver does it for every kind, and CRD specs.

Messages follow k8s.io/apimachinery/pkg/util/validation and
apiextensions-apiserver's CRD validation, so an Invalid error names the field
and the rule the way a real cluster would.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from typing import Any

from .._objects import Resource
from ._registry import ResourceType
from ._status import APIError, Cause

__all__ = ["crd_types", "validate_crd", "validate_name"]

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character")


def validate_name(name: str, *, label: bool = False, field: str = "metadata.name") -> list[Cause]:
    """Causes for a name that is not a DNS-1123 subdomain (or label, for Namespaces)."""
    limit, pattern, msg = (63, _DNS1123_LABEL, _LABEL_MSG) if label else (
        253, _DNS1123_SUBDOMAIN, _SUBDOMAIN_MSG)
    causes = []
    if len(name) > limit:
        causes.append(Cause("FieldValueInvalid",
                            f'Invalid value: "{name}": must be no more than {limit} characters',
                            field))
    if not pattern.match(name):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{name}": {msg}', field))
    return causes


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
    elif not _DNS1123_LABEL.match(plural):
        causes.append(Cause("FieldValueInvalid", f'Invalid value: "{plural}": {_LABEL_MSG}',
                            "spec.names.plural"))
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
        if not isinstance(vname, str) or not _DNS1123_LABEL.match(vname):
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{vname}": {_LABEL_MSG}',
                                f"{path}.name"))
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
    if storage != 1:
        causes.append(Cause("FieldValueInvalid",
                            f"Invalid value: {_versions_repr(versions)}: must have exactly one "
                            "version marked as storage version", "spec.versions"))
    return causes


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
        out.append(ResourceType(
            Resource(spec["group"], v["name"], names["kind"], names["plural"],
                     spec["scope"] == "Namespaced"),
            names.get("singular") or names["kind"].lower(),
            short_names=tuple(names.get("shortNames") or ()),
            status_subresource="status" in (v.get("subresources") or {}),
            generation=True,
            unconditional_update=False,
            builtin=False,
            field_labels=frozenset({"metadata.name", "metadata.namespace"} | selectable),
            categories=tuple(names.get("categories") or ()),
            crd_name=crd["metadata"]["name"],
            schema=(v.get("schema") or {}).get("openAPIV3Schema"),
        ))
    return out


_MICROTIME_FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("coordination.k8s.io", "leases"): (("spec", "acquireTime"), ("spec", "renewTime")),
    ("events.k8s.io", "events"): (("eventTime",),),
    ("", "events"): (("eventTime",),),
}
_RFC3339 = re.compile(
    r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})$")


def normalize_microtimes(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Check metav1.MicroTime fields and write them back in UTC.

    kube-apiserver decodes MicroTime with the layout
    ``2006-01-02T15:04:05.000000Z07:00``: exactly six fractional digits, any
    zone (written back as UTC). Anything else is a 400 with the decoder's
    error, as there.
    """
    r = rtype.resource
    for path in _MICROTIME_FIELDS.get((r.group, r.plural), ()):
        parent: Any = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or parent.get(path[-1]) is None:
            continue
        value = parent[path[-1]]
        match = _RFC3339.match(value) if isinstance(value, str) else None
        fraction = match.group(2) if match else None
        if match is None or fraction is None or len(fraction) != 6:
            # Go's time.Parse with the layout's fixed ".000000": exactly six digits
            rest = "" if match is None else value[len(match.group(1)):]
            if match is not None and fraction is not None and len(fraction) > 6:
                why = f'cannot parse "{rest[7:]}" as "Z07:00"'
            elif match is not None:
                why = f'cannot parse "{rest}" as ".000000"'
            else:
                why = "cannot parse"
            raise APIError.bad_request(
                f'{r.kind} in version "{r.version}" cannot be handled as a {r.kind}: '
                f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": {why}')
        base, zone = match.group(1), match.group(3)
        micros = int(fraction)
        when = datetime.datetime.fromisoformat(base + ("+00:00" if zone == "Z" else zone))
        when = when.replace(microsecond=micros).astimezone(datetime.UTC)
        parent[path[-1]] = when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
