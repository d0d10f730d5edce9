"""A DELETE's JSON body decoded as kube-apiserver decodes it into ``metav1.DeleteOptions``.

kube-apiserver v1.28 first reads the body's ``apiVersion`` and ``kind``, then
converts it to DeleteOptions through its scheme, then decodes the fields with
Go's ``encoding/json``; a failure at any of these steps is answered with an
HTTP 500 carrying the decoder's or the scheme's words and no ``reason``
(checked against kube-apiserver v1.28.7). The same here:

* the body is JSON unless its ``Content-Type`` says YAML (no type: JSON;
  any other type: 415); JSON that does not parse is ``couldn't get
  version/kind; json parse error: ...`` in Go's words, YAML that does not
  parse is the YAML parser's ``yaml: line N: ...``;
* ``null`` is no options; a body that is not an object, or whose
  ``apiVersion``/``kind`` is not a string: ``couldn't get version/kind; json
  parse error: ...``;
* a ``kind`` other than ``DeleteOptions`` (any ``apiVersion`` goes with that
  one): the scheme's ``unknown conversion`` for the metav1 kinds it
  registers in ``v1`` and ``meta.k8s.io/v1``, ``no kind "X" is registered
  for version "V"`` for any other;
* a field of the wrong JSON type: the first one in document order, in Go's
  ``cannot unmarshal T into Go struct field ...`` words.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
import yaml

from ...machinery.go_json import syntax_error
from ...machinery.status import StatusError
from ...machinery.unstructured import json_type

__all__ = ["decode_delete_body", "delete_options_body"]

_JSON_TYPES: Final = ("", "application/json")
_YAML_TYPE: Final = "application/yaml"

_SCHEME: Final = 'in scheme "pkg/runtime/scheme.go:100"'
_TYPE_META: Final = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
                     'Kind string "json:\\"kind,omitempty\\"" }')
# Kinds of metav1 the scheme knows at these versions, but cannot convert to DeleteOptions.
_CONVERTIBLE: Final = {("v1", "Status"), ("v1", "CreateOptions"), ("v1", "UpdateOptions"),
                       ("meta.k8s.io/v1", "Status")}
# DeleteOptions' fields: (Go type name, JSON type wanted, type of list items if a list).
_FIELDS: Final = {
    "gracePeriodSeconds": ("int64", "integer", None),
    "orphanDependents": ("bool", "bool", None),
    "propagationPolicy": ("v1.DeletionPropagation", "string", None),
    "dryRun": ("[]string", "list", "string"),
    "preconditions": ("v1.Preconditions", "object", None),
}
_PRECONDITIONS: Final = {"uid": "types.UID", "resourceVersion": "string"}


def _internal(message: str) -> StatusError:
    return StatusError(500, "", message)


def _literal(value: Any) -> str:
    """A JSON number as Go quotes it in ``cannot unmarshal number N``."""
    return orjson.dumps(value).decode() if isinstance(value, float) else str(value)


def _unmarshal(value: Any, field: str, go_type: str) -> StatusError:
    what = json_type(value)
    if what == "number" and go_type == "int64":
        what = f"number {_literal(value)}"
    return _internal(f"json: cannot unmarshal {what} into Go struct field {field} of type "
                     f"{go_type}")


def _fits(value: Any, wanted: str) -> bool:
    if value is None:
        return True  # Go leaves the field at its zero value
    if wanted == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)
                and -(2**63) <= value < 2**63)
    if wanted == "bool":
        return isinstance(value, bool)
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "list":
        return isinstance(value, list)
    return isinstance(value, dict)


def decode_delete_body(raw: bytes, content_type: str) -> Any:
    """A DELETE's body, parsed by its media type (see the module docstring)."""
    media = content_type.split(";")[0].strip().lower()
    if media in _JSON_TYPES:
        problem = syntax_error(raw)
        if problem is not None:
            raise _internal(f"couldn't get version/kind; json parse error: {problem}")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:  # valid for Go, not for orjson (numbers beyond float64)
            return json.loads(raw)
    if media == _YAML_TYPE:
        try:
            return yaml.safe_load(raw)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            line = f"line {mark.line + 1}: " if mark is not None else ""
            raise _internal(f"yaml: {line}{getattr(err, 'problem', None) or err}") from None
    raise StatusError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                      "format - accepted media types include: application/json, "
                      "application/yaml, application/vnd.kubernetes.protobuf")


def delete_options_body(body: Any) -> dict[str, Any]:
    """The DeleteOptions fields of a decoded DELETE body ({} for ``null``); a
    :class:`StatusError` 500 where kube-apiserver answers one (module docstring)."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise _internal(f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                        f"{json_type(body)} into Go value of type {_TYPE_META}")
    for key in ("apiVersion", "kind"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise _internal(f"couldn't get version/kind; json parse error: json: cannot "
                            f"unmarshal {json_type(body[key])} into Go struct field .{key} of "
                            f"type string")
    kind = body.get("kind") or ""
    if kind and kind != "DeleteOptions":
        version = body.get("apiVersion") or "meta.k8s.io/v1"
        if (version, kind) in _CONVERTIBLE:
            raise _internal(f"converting (v1.{kind}) to (v1.DeleteOptions): unknown conversion")
        raise _internal(f'no kind "{kind}" is registered for version "{version}" {_SCHEME}')
    for key, value in body.items():
        if key not in _FIELDS:
            continue
        go_type, wanted, item_type = _FIELDS[key]
        if not _fits(value, wanted):
            raise _unmarshal(value, f"DeleteOptions.{key}", go_type)
        if item_type is not None:
            for item in value or ():
                if item is not None and not isinstance(item, str):  # null: Go's ""
                    raise _unmarshal(item, f"DeleteOptions.{key}", item_type)
        if key == "preconditions" and value:
            for name, inner in value.items():
                if name in _PRECONDITIONS and inner is not None and not isinstance(inner, str):
                    raise _unmarshal(inner, f"Preconditions.preconditions.{name}",
                                     _PRECONDITIONS[name])
    return body
