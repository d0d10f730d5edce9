"""Object metadata validation as kube-apiserver does it for every kind.

Messages follow k8s.io/apimachinery/pkg/util/validation (``RegexError``,
``MaxLenError``, ``IsQualifiedName``, ``IsDNS1123Subdomain``) and its
``ValidateObjectMeta`` (names, labels, annotations, owner references,
finalizers), so an Invalid error names the field and the rule the way a real
cluster would. Per-kind rules are in :mod:`..registry.strategies`, CRD specs in
:mod:`..apiextensions.definitions`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...._foundations.go_compat import go_quote, go_slice, go_value
from .status import Cause

__all__ = ["STANDARD_FINALIZERS", "config_key_errors", "dns_label_errors",
           "dns_subdomain_errors", "forbidden", "invalid", "invalid_slice",
           "label_value_errors", "not_supported",
           "path_segment_problems", "qualified_name_errors", "regex_error", "required",
           "validate_name", "validate_object_meta"]

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(f"^{_QUALIFIED_FMT}$")
_LABEL_VALUE = re.compile(f"^({_QUALIFIED_FMT})?$")
_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY = re.compile(f"^{_CONFIG_KEY_FMT}$")
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
              "or '-', and must start and end with an alphanumeric character")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                  "characters, '-' or '.', and must start and end with an alphanumeric "
                  "character")
_QUALIFIED_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start "
                  "and end with an alphanumeric character")
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric "
                    "characters, '-', '_' or '.', and must start and end with an alphanumeric "
                    "character")
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
TOTAL_ANNOTATION_SIZE = 256 * 1024  # apimachinery's TotalAnnotationSizeLimitB
STANDARD_FINALIZERS = ("kubernetes", "orphan", "foregroundDeletion")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``: the rule, examples and the regular expression."""
    shown = "".join(f"{' or ' if i else ''}'{e}', " for i, e in enumerate(examples))
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label``."""
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL.match(value):
        errors.append(regex_error(_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errors


def dns_subdomain_errors(value: str) -> list[str]:
    """``IsDNS1123Subdomain``."""
    errors = [_max_len(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append(regex_error(_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``: label keys, annotation keys (lower-cased) and finalizers."""
    parts = value.split("/")
    if len(parts) > 2:
        return ["a qualified name " + regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName",
                                                   "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors.extend("prefix part " + m for m in dns_subdomain_errors(parts[0]))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part " + _max_len(63))
    if not _QUALIFIED.match(name):
        errors.append("name part " + regex_error(_QUALIFIED_MSG, _QUALIFIED_FMT, "MyName",
                                                  "my.name", "123-abc"))
    return errors


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue``."""
    errors = [_max_len(63)] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        errors.append(regex_error(_LABEL_VALUE_MSG, f"({_QUALIFIED_FMT})?", "MyValue",
                                   "my_value", "12345"))
    return errors


def config_key_errors(value: str) -> list[str]:
    """``IsConfigMapKey``: ConfigMap and Secret keys."""
    errors = [_max_len(253)] if len(value) > 253 else []
    if not _CONFIG_KEY.match(value):
        errors.append(regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME",
                                   "key-name"))
    if value == ".":
        errors.append("must not be '.'")
    elif value == "..":
        errors.append("must not be '..'")
    elif value.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def invalid(field: str, value: Any, detail: str) -> Cause:
    """``field.Invalid``: the value shown as Go's ``%q`` (strings) or ``%v`` shows it."""
    shown = go_quote(value) if isinstance(value, str) else (
        "null" if value is None else str(value).lower() if isinstance(value, bool) else value)
    return Cause("FieldValueInvalid", f"Invalid value: {shown}: {detail}", field)


def path_segment_problems(name: str) -> list[str]:
    """``IsValidPathSegmentName``: why ``name`` cannot be one segment of a URL path."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def validate_name(name: str, *, label: bool = False, field: str = "metadata.name") -> list[Cause]:
    """Causes for a name that is not a DNS-1123 subdomain (or label, for Namespaces)."""
    errors = dns_label_errors(name) if label else dns_subdomain_errors(name)
    return [invalid(field, name, msg) for msg in errors]


def validate_object_meta(meta: Mapping[str, Any], *, label_name: bool,
                         core: bool) -> list[Cause]:
    """``ValidateObjectMeta``: names, labels, annotations, owners and finalizers.

    ``core``: the kinds of kube-apiserver itself (not CRDs and custom
    resources), whose validation also wants a finalizer name to be standard
    (``kubernetes``, ``orphan``, ``foregroundDeletion``) or to have a prefix.
    Map keys are visited in sorted order (Go visits them in random order).
    """
    causes: list[Cause] = []
    generate = meta.get("generateName")
    if generate and isinstance(generate, str):
        masked = generate[:-1] + "a" if generate.endswith("-") else generate
        errors = dns_label_errors(masked) if label_name else dns_subdomain_errors(masked)
        causes.extend(invalid("metadata.generateName", generate, m) for m in errors)
    causes.extend(validate_name(str(meta.get("name") or ""), label=label_name))
    for key, value in sorted((meta.get("labels") or {}).items()):
        causes.extend(invalid("metadata.labels", key, m) for m in qualified_name_errors(key))
        causes.extend(invalid("metadata.labels", value, m) for m in label_value_errors(value))
    annotations = meta.get("annotations") or {}
    for key in sorted(annotations):
        causes.extend(invalid("metadata.annotations", key, m)
                      for m in qualified_name_errors(key.lower()))
    if sum(len(k) + len(v) for k, v in annotations.items()) > TOTAL_ANNOTATION_SIZE:
        causes.append(Cause("FieldValueTooLong",
                            f"Too long: must have at most {TOTAL_ANNOTATION_SIZE} bytes",
                            "metadata.annotations"))
    causes.extend(_validate_owner_references(meta.get("ownerReferences") or []))
    finalizers = meta.get("finalizers") or []
    for finalizer in finalizers:
        causes.extend(invalid("metadata.finalizers", finalizer, m)
                      for m in qualified_name_errors(finalizer))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {go_slice(finalizers)}: "
                            "finalizer orphan and foregroundDeletion cannot be both set",
                            "metadata.finalizers"))
    for i, finalizer in enumerate(finalizers if core else ()):
        if "/" not in finalizer and finalizer not in STANDARD_FINALIZERS:
            causes.append(invalid(f"metadata.finalizers[{i}]", finalizer, "name is neither a "
                                  "standard finalizer name nor is it fully qualified"))
    return causes


def _validate_owner_references(refs: list[Any]) -> list[Cause]:
    """``ValidateOwnerReferences`` (repeated entries were already dropped, as the registry
    does)."""
    causes: list[Cause] = []
    first_controller = ""
    for ref in refs:
        if not isinstance(ref, Mapping):
            continue
        api_version, kind = str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")
        for key, value, what in (("apiVersion", api_version.rpartition("/")[2], "version"),
                                 ("kind", kind, "kind"), ("name", ref.get("name"), "name"),
                                 ("uid", ref.get("uid"), "uid")):
            if not value:
                causes.append(invalid(f"metadata.ownerReferences.{key}", ref.get(key) or "",
                                      f"{what} must not be empty"))
        if api_version == "v1" and kind == "Event":
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {_go_owner(ref, 0)}: "
                                "/v1, Kind=Event is disallowed from being an owner",
                                "metadata.ownerReferences"))
        if ref.get("controller") is True:
            name = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                shown = "[]v1.OwnerReference{" + ", ".join(
                    _go_owner(r, at) for at, r in enumerate(refs)
                    if isinstance(r, Mapping)) + "}"
                causes.append(Cause(
                    "FieldValueInvalid", f"Invalid value: {shown}: Only one reference can have "
                    f'Controller set to true. Found "true" in references for {first_controller} '
                    f"and {name}", "metadata.ownerReferences"))
            else:
                first_controller = name
    return causes


_HEAP = 0xC0022BB6EC  # where Go's heap put the decoded references' bools (any address)


def _go_owner(ref: Mapping[str, Any], at: int) -> str:
    """A v1.OwnerReference as Go's ``%#v`` prints it: a pointer as its address (the
    ``at``-th reference's bools next to each other, as Go's decoder allocates them)."""
    def pointer(value: Any, offset: int) -> str:
        return "(*bool)(nil)" if value is None else f"(*bool)({_HEAP + 0x1C * at + offset:#x})"

    return (f"v1.OwnerReference{{APIVersion:{go_quote(str(ref.get('apiVersion') or ''))}, "
            f"Kind:{go_quote(str(ref.get('kind') or ''))}, "
            f"Name:{go_quote(str(ref.get('name') or ''))}, "
            f"UID:{go_quote(str(ref.get('uid') or ''))}, "
            f"Controller:{pointer(ref.get('controller'), 0)}, "
            f"BlockOwnerDeletion:{pointer(ref.get('blockOwnerDeletion'), 1)}}}")


def required(field: str, detail: str = "") -> Cause:
    return Cause("FieldValueRequired", f"Required value: {detail}" if detail else
                 "Required value", field)


def not_supported(field: str, value: Any, supported: Iterable[str]) -> Cause:
    """``field.NotSupported``: the value and the supported ones, as Go's ``%q``."""
    shown = go_quote(value) if isinstance(value, str) else go_value(value)
    return Cause("FieldValueNotSupported", f"Unsupported value: {shown}: supported values: "
                 + ", ".join(go_quote(v) for v in supported), field)


def forbidden(field: str, detail: str) -> Cause:
    return Cause("FieldValueForbidden", f"Forbidden: {detail}", field)


def invalid_slice(field: str, values: list[Any], detail: str,
                  element: str = "string") -> Cause:
    return Cause("FieldValueInvalid", f"Invalid value: {go_slice(values, element)}: {detail}",
                 field)
