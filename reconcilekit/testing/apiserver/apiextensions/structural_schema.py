"""Custom resources against their CRD's structural schema, as kube-apiserver 1.28 checks them.

What kube-apiserver does to a custom resource it is asked to store, in order:

1. *decoding*: fields the schema does not know are pruned (each named in a
   ``Warning`` header, or the request refused with 400 under
   ``fieldValidation=Strict``), and ``null`` in a field that is not
   ``nullable`` and has no default is dropped;
2. *defaulting*: absent fields get their schema's ``default``, recursively;
3. *validation*: the OpenAPI v3 keywords (checked with the ``jsonschema``
   library, answered in go-openapi's words), the uniqueness of
   ``x-kubernetes-list-type`` ``set`` and ``map`` lists, then the CEL rules
   of ``x-kubernetes-validations`` (:mod:`.cel_rules`), which are skipped,
   with a cause saying so, when a type, enum, required or size error makes
   the object unfit for them.

Invariant: :meth:`CustomResourceSchema.decode` leaves nothing in the object
that the schema does not describe (outside ``x-kubernetes-preserve-unknown-fields``
subtrees and embedded resources), so validation and the stored object agree.
"""

from __future__ import annotations

import base64
import binascii
import copy
import datetime
import ipaddress
import re
import uuid
from collections.abc import Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any

from ...._foundations.go_compat import go_interface_map, go_value
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from .cel_rules import CELRules
from .schema_tree import child_schema, join_path, properties, schema_nodes

if TYPE_CHECKING:
    from jsonschema import Draft4Validator, ValidationError

__all__ = ["CustomResourceSchema", "has_rules", "openapi_type"]

_ROOT_FIELDS = ("apiVersion", "kind", "metadata")
_BLOCKING = frozenset({"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong",
                       "FieldValueTooMany", "FieldValueTypeInvalid"})
_STRING_CHECKS = ("maxLength", "minLength", "pattern")
_NOT_CHECKED = Cause("FieldValueInvalid", 'Invalid value: "null": some validation rules were '
                     "not checked because the object was invalid; correct the existing errors "
                     "to complete validation", "<nil>")


def openapi_type(value: Any) -> str:
    """The OpenAPI type name of a decoded JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"



def _types(schema: Mapping[str, Any]) -> list[str]:
    if schema.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = schema.get("type")
    return [t] if isinstance(t, str) else []


# -- formats: the ones kube-openapi knows that carry a check --------------------------

def _rfc3339(value: str) -> bool:
    try:
        datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in value.upper() or " " in value


def _date(value: str) -> bool:
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return len(value) == 10


def _base64(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _parses(kind: Any) -> Any:
    def check(value: str) -> bool:
        try:
            kind(value)
        except ValueError:
            return False
        return True
    return check


_HOSTNAME = re.compile(r"^(?=.{1,253}$)[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?"
                       r"(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DURATION = re.compile(r"^-?([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$")
_FORMATS: dict[str, Any] = {
    "date-time": _rfc3339, "datetime": _rfc3339, "date": _date, "byte": _base64,
    "uuid": _parses(uuid.UUID), "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address), "cidr": _parses(ipaddress.ip_network),
    "hostname": _HOSTNAME.match, "email": _EMAIL.match, "duration": _DURATION.match,
}


def _json_schema(node: Mapping[str, Any]) -> Obj:
    """The JSON Schema (draft 4, as OpenAPI v3.0) that checks a structural schema's keywords.

    Kubernetes extensions become plain JSON Schema: ``nullable`` and
    ``x-kubernetes-int-or-string`` widen ``type``; pruning and list types are
    not JSON Schema's business and are left out.
    """
    out: Obj = {}
    types = _types(node)
    if types:
        out["type"] = types + (["null"] if node.get("nullable") else [])
    for key in ("enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                "multipleOf", "minLength", "maxLength", "pattern", "minItems", "maxItems",
                "minProperties", "maxProperties", "required"):
        if key in node:
            out[key] = node[key]
    if node.get("format") in _FORMATS:
        out["format"] = node["format"]
    if isinstance(node.get("properties"), Mapping):
        out["properties"] = {k: _json_schema(v) for k, v in node["properties"].items()}
    if isinstance(node.get("additionalProperties"), Mapping):
        out["additionalProperties"] = _json_schema(node["additionalProperties"])
    if isinstance(node.get("items"), Mapping):
        out["items"] = _json_schema(node["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if isinstance(node.get(key), list):
            out[key] = [_json_schema(s) for s in node[key]]
    if isinstance(node.get("not"), Mapping):
        out["not"] = _json_schema(node["not"])
    return out


def _cause(err: ValidationError, base: str) -> Iterator[Cause]:
    """One jsonschema error in go-openapi's words (as kube-apiserver answers it)."""
    path = base
    for step in err.absolute_path:
        path = join_path(path, step)
    value: Any = err.instance
    rule: Any = err.validator_value
    schema: Any = err.schema
    shown = go_value(value)
    match err.validator:
        case "type":
            wanted = ",".join(t for t in schema["type"] if t != "null")
            t = openapi_type(value)
            yield Cause("FieldValueTypeInvalid",
                        f'Invalid value: "{t}": {path} in body must be of type {wanted}: "{t}"',
                        path)
        case "format":
            yield Cause("FieldValueTypeInvalid", f"Invalid value: {shown}: {path} in body must "
                        f"be of type {rule}: {shown}", path)
        case "required":
            for name in rule:
                if isinstance(value, Mapping) and name not in value:
                    yield Cause("FieldValueRequired", "Required value", join_path(path, name))
        case "enum":
            allowed = ", ".join(go_value(v) for v in rule)
            yield Cause("FieldValueNotSupported",
                        f"Unsupported value: {shown}: supported values: {allowed}", path)
        case "maximum" | "minimum":
            exclusive = schema.get("exclusiveMaximum" if err.validator == "maximum"
                                   else "exclusiveMinimum") is True
            than = "less" if err.validator == "maximum" else "greater"
            bound = go_value(rule)
            detail = f"should be {than} than {bound}" if exclusive else (
                f"should be {than} than or equal to {bound}")
            yield Cause("FieldValueInvalid", f"Invalid value: {shown}: {path} in body {detail}",
                        path)
        case "maxLength":
            yield Cause("FieldValueTooLong", f"Too long: may not be longer than {rule}", path)
        case "minLength":
            yield Cause("FieldValueInvalid", f"Invalid value: {shown}: {path} in body should be "
                        f"at least {rule} chars long", path)
        case "pattern":
            yield Cause("FieldValueInvalid",
                        f"Invalid value: {shown}: {path} in body should match '{rule}'", path)
        case "maxItems" | "maxProperties":
            yield Cause("FieldValueTooMany",
                        f"Too many: {len(value)}: must have at most {rule} items", path)
        case "minItems" | "minProperties":
            what = "items" if err.validator == "minItems" else "properties"
            yield Cause("FieldValueInvalid", f"Invalid value: {len(value)}: {path} in body "
                        f"should have at least {rule} {what}", path)
        case "multipleOf":
            yield Cause("FieldValueInvalid", f"Invalid value: {shown}: {path} in body should "
                        f"be a multiple of {go_value(rule)}", path)
        case _:
            yield Cause("FieldValueInvalid", f"Invalid value: {shown}: {err.message}", path)


class CustomResourceSchema:
    """A CRD version's ``openAPIV3Schema``: decode, default and validate its objects.

    Compiled lazily: the JSON Schema validator on first validation, each CEL
    rule on first use, so serving a CRD costs nothing until it is written to.
    """

    def __init__(self, schema: Mapping[str, Any],
                 replicas: tuple[str, str] | None = None) -> None:
        """``replicas``: the scale subresource's spec and status replicas paths, whose
        values must be non-negative int32s (none: no scale subresource)."""
        self.schema = schema
        self.replicas = replicas

    # -- decoding ----------------------------------------------------------------------

    def decode(self, obj: Obj, *, default: bool = True) -> list[str]:
        """Prune unknown fields and drop non-nullable nulls, then default, in place.

        Returns the paths pruned as unknown, sorted, as kube-apiserver names
        them in its warnings and strict decoding errors. An apply's
        configuration is not defaulted (its applier does not own defaults).
        """
        unknown: list[str] = []
        self._prune(obj, self.schema, "", unknown, root=True)
        if default:
            self.default(obj)
        return sorted(unknown)

    def default(self, obj: Obj) -> None:
        """Give absent fields (and non-nullable nulls) their schema's defaults, in place."""
        self._default(obj, self.schema)

    def _prune(self, value: Any, node: Mapping[str, Any], path: str, unknown: list[str],
               *, root: bool = False) -> None:
        if isinstance(value, dict):
            props = properties(node)
            extra = node.get("additionalProperties")
            keep_unknown = node.get("x-kubernetes-preserve-unknown-fields") is True
            embedded = node.get("x-kubernetes-embedded-resource") is True
            for key in list(value):
                if (root or embedded) and key in _ROOT_FIELDS:  # ObjectMeta: not the schema's
                    continue
                child = props.get(key)
                if child is None and isinstance(extra, Mapping):
                    if value[key] is None and not _keeps_null(extra):
                        del value[key]
                    else:
                        self._prune(value[key], extra, join_path(path, key), unknown)
                elif child is None:
                    if not keep_unknown:
                        unknown.append(join_path(path, key))
                        del value[key]
                elif value[key] is None and not _keeps_null(child):
                    del value[key]
                else:
                    self._prune(value[key], child, join_path(path, key), unknown)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            for i, item in enumerate(value):
                self._prune(item, node["items"], join_path(path, i), unknown)

    def _default(self, value: Any, node: Mapping[str, Any]) -> None:
        if isinstance(value, dict):
            props = node.get("properties")
            if isinstance(props, Mapping):
                for key, child in props.items():
                    absent = key not in value or (value[key] is None
                                                  and not child.get("nullable"))
                    if absent and isinstance(child, Mapping) and "default" in child:
                        value[key] = copy.deepcopy(child["default"])
                    if key in value:
                        self._default(value[key], child)
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key in value:
                    if not isinstance(props, Mapping) or key not in props:
                        self._default(value[key], extra)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            for item in value:
                self._default(item, node["items"])

    # -- validation ----------------------------------------------------------------------

    @cached_property
    def _validator(self) -> Draft4Validator:
        from jsonschema import Draft4Validator, FormatChecker

        formats = FormatChecker(formats=())
        for name, check in _FORMATS.items():
            formats.checks(name)(lambda v, check=check: not isinstance(v, str) or bool(check(v)))
        return Draft4Validator(_json_schema(self.schema), format_checker=formats)

    @cached_property
    def rules(self) -> CELRules:
        """The CEL rules of the schema (``x-kubernetes-validations``), compiled on first use."""
        return CELRules(self.schema)

    def validate(self, obj: Obj, old: Obj | None = None) -> list[Cause]:
        """Every reason the object is invalid; ``old`` (an update) enables transition rules."""
        causes = self.schema_causes(obj, self._validator, "")
        causes.extend(_list_type_causes(obj, self.schema, ""))
        # ValidateScaleSpec, after the schema and its rules whatever they found
        scale = replicas_causes(obj, self.replicas[0]) if self.replicas is not None else []
        if any(c.reason in _BLOCKING for c in causes):
            return [*causes, *([_NOT_CHECKED] if self.rules.has_rules else []), *scale]
        return [*causes, *self.rules.evaluate(obj, old), *scale]

    def validate_status(self, obj: Obj, old: Obj | None) -> list[Cause]:
        """A ``status`` write: the status schema (paths as kube 1.28 names them, from the
        status, without ``status.``), then the CEL rules of the whole object."""
        causes = []
        validator = self._status_validator
        if validator is not None and "status" in obj:
            causes = self.schema_causes(obj["status"], validator, "")
            causes.extend(_list_type_causes(obj["status"], properties(self.schema)["status"],
                                            "status"))
        scale = replicas_causes(obj, self.replicas[1]) if self.replicas is not None else []
        if any(c.reason in _BLOCKING for c in causes):
            return [*causes, *([_NOT_CHECKED] if self.rules.has_rules else []), *scale]
        return [*causes, *self.rules.evaluate(obj, old), *scale]  # then ValidateScaleStatus

    @cached_property
    def _status_validator(self) -> Draft4Validator | None:
        status = properties(self.schema).get("status")
        if not isinstance(status, Mapping):
            return None
        return type(self._validator)(_json_schema(status),
                                     format_checker=self._validator.format_checker)

    def schema_causes(self, value: Any, validator: Draft4Validator, base: str) -> list[Cause]:
        """The OpenAPI keyword errors of ``value`` under ``validator``, in go-openapi's words."""
        errors = list(validator.iter_errors(value))
        # go-openapi checks a string's maxLength, minLength and pattern in that
        # order and stops at the first that fails
        first_string_error: dict[tuple[Any, ...], ValidationError] = {}
        for err in sorted((e for e in errors if e.validator in _STRING_CHECKS),
                          key=lambda e: _STRING_CHECKS.index(str(e.validator))):
            first_string_error.setdefault(tuple(err.absolute_path), err)
        causes: list[Cause] = []
        for err in errors:
            if err.validator not in _STRING_CHECKS or (
                    first_string_error[tuple(err.absolute_path)] is err):
                causes.extend(_cause(err, base))
        return causes



_GO_TYPES = ((bool, "bool"), (str, "string"), (float, "float64"), (list, "[]interface {}"),
             (dict, "map[string]interface {}"))


def replicas_causes(obj: Obj, json_path: str) -> list[Cause]:
    """A scale path's replicas as ``NestedInt64`` reads them: absent is fine, anything but
    an integer is an accessor error, and the integer must fit a non-negative int32."""
    value: Any = obj
    fields = json_path.lstrip(".").split(".")
    for name in fields:
        if not isinstance(value, dict) or name not in value:
            return []
        value = value[name]
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            return [Cause("FieldValueInvalid", f"Invalid value: {value}: should be a "
                          "non-negative integer", json_path)]
        if value > 2 ** 31 - 1:
            return [Cause("FieldValueInvalid", f"Invalid value: {value}: should be less than "
                          f"or equal to {2 ** 31 - 1}", json_path)]
        return []
    go_type = next((t for python, t in _GO_TYPES if isinstance(value, python)), "<nil>")
    return [Cause("FieldValueInvalid", f"Invalid value: 0: .{'.'.join(fields)} accessor "
                  f"error: {value if isinstance(value, str) else go_value(value)} is of the "
                  f"type {go_type}, expected int64",
                  json_path)]


def has_rules(schema: Mapping[str, Any]) -> bool:
    """Whether any node of the schema carries ``x-kubernetes-validations``."""
    return any(node.get("x-kubernetes-validations") for _, node in schema_nodes(schema, ""))




def _keeps_null(node: Mapping[str, Any]) -> bool:
    """A null stays when the field is nullable; one with a default is defaulted instead."""
    return node.get("nullable") is True or "default" in node


def _list_type_causes(value: Any, node: Mapping[str, Any], path: str) -> list[Cause]:
    """Duplicates in ``x-kubernetes-list-type: set`` and ``map`` lists (FieldValueDuplicate)."""
    causes: list[Cause] = []
    if isinstance(value, dict):
        for key, child_value in value.items():
            child = child_schema(node, key)
            if child is not None:
                causes.extend(_list_type_causes(child_value, child, join_path(path, key)))
    elif isinstance(value, list):
        items = node.get("items") if isinstance(node.get("items"), Mapping) else {}
        list_type = node.get("x-kubernetes-list-type")
        keys = node.get("x-kubernetes-list-map-keys") or ()
        seen: list[Any] = []
        for i, item in enumerate(value):
            if list_type == "set":
                if item in seen:
                    shown = go_interface_map(item) if isinstance(item, Mapping) else go_value(item)
                    causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {shown}",
                                        join_path(path, i)))
                seen.append(item)
            elif list_type == "map" and isinstance(item, Mapping):
                key = {k: item[k] for k in keys if k in item}
                if key in seen:
                    causes.append(Cause("FieldValueDuplicate",
                                        f"Duplicate value: {go_interface_map(key)}",
                                        join_path(path, i)))
                seen.append(key)
            if isinstance(items, Mapping):
                causes.extend(_list_type_causes(item, items, join_path(path, i)))
    return causes
