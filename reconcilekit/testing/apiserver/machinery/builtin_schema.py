"""The built-in kinds' fields, from kube-apiserver's own OpenAPI v3 documents.

kube-apiserver decodes a request body into the kind's Go type with a strict
JSON decoder (sigs.k8s.io/json): a field the type does not have is dropped,
and named (``unknown field "spec.foo"``) for a warning or, under
``fieldValidation=Strict``, a 400; a value of the wrong JSON type fails the
whole decoding with encoding/json's message. The Go types are not at hand
here, but kube-apiserver publishes them as OpenAPI v3 schemas; the file
``data/kube-apiserver-1.28-openapi-v3.json.gz`` is what v1.28.7 serves,
captured and compacted by ``tools/capture_openapi_v3.py``.

Guarantees:

* nothing is read before the first decoding that needs it (not at import);
  the file is parsed once per process and each kind's decoder is compiled
  once (:func:`kind_fields`), then shared;
* :meth:`KindFields.decode` checks and prunes an object in one walk, in the
  order Go's decoder reads it (the document's; Go marshals a patched object
  from a map, so its keys sorted), raising :class:`DecodeError` with
  encoding/json's message (``json: cannot unmarshal string into Go struct
  field DeploymentSpec.spec.replicas of type int32``) for the first value
  of a wrong type, and returning the unknown fields' paths as the strict
  decoder prints them (``spec.template.spec.containers[0].foo``);
* an empty map (a Go map field, all ``omitempty`` in the built-in kinds) is
  dropped, as kube-apiserver, which stores and answers the Go value, never
  writes one (``metadata.labels: {}`` is no labels).

What the schema does not say is left as it was: Go's named types (an enum
such as ``v1.PullPolicy`` is reported as ``string``), the text of a JSON
number (``1e3`` is printed as Python prints the float), time formats
(``metav1.Time`` is checked to be a string, MicroTimes by
:func:`..decoding.normalize_microtimes`), and duplicate keys, which the
request's JSON parser has already merged.
"""

from __future__ import annotations

import functools
import gzip
import re
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

import orjson

from .status import DecodeError
from .unstructured import Obj, json_type

__all__ = ["DATA_FILE", "KindFields", "kind_fields", "kind_schema_name", "microtime_fields",
           "object_meta_fields", "openapi_schemas"]

DATA_FILE: Final = "data/kube-apiserver-1.28-openapi-v3.json.gz"

# Go types with their own UnmarshalJSON, by schema name; anything else opaque.
_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME: Final = _META + "Time"
_MICRO_TIME: Final = _META + "MicroTime"
_OPAQUE: Final = frozenset({
    _MICRO_TIME, _META + "FieldsV1", "io.k8s.apimachinery.pkg.runtime.RawExtension",
    *(f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}" for name in (
        "JSON", "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray")),
})
_QUANTITY_SYNTAX: Final = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_QUANTITY_RE: Final = re.compile(_QUANTITY_SYNTAX)
_INT_RANGES: Final = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

# Go's named string types the schemas write as plain strings, where errors name them.
_NAMED_FIELDS: Final = {_META + "ObjectMeta.uid": "types.UID",
                        _META + "OwnerReference.uid": "types.UID",
                        _META + "Preconditions.uid": "types.UID"}

# Node kinds: a compiled schema node is a small list, indexed by these.
_ANY, _STRUCT, _LIST, _MAP, _STRING, _BOOL, _INT, _FLOAT, _INTSTR, _QTY, _TIMESTAMP = range(11)
_KIND, _GO_TYPE, _ARG = 0, 1, 2  # [kind, Go type name, fields | element | int range]
_STRUCT_NAME = 3  # a struct's Go name, as errors name the struct holding a field


class KindFields:
    """The decoder of one built-in kind's fields (see the module docstring)."""

    __slots__ = ("_root",)

    def __init__(self, root: list[Any]) -> None:
        self._root = root

    def decode(self, obj: Obj, *, sort: bool = False, prefix: str = "") -> list[str]:
        """Check ``obj``'s values and drop its unknown fields, in place; their paths
        (after ``prefix``, which names where ``obj`` sits in the request's object).

        ``sort``: read keys in sorted order (a patched object, as Go marshals
        it). Raises :class:`DecodeError` at the first value Go cannot decode.
        """
        unknown: list[str] = []
        _struct(self._root, obj, prefix, "", unknown, sort)
        return unknown


def _struct(node: list[Any], obj: Obj, path: str, field: str, unknown: list[str],
            sort: bool) -> None:
    fields: dict[str, list[Any]] = node[_ARG]
    name: str = node[_STRUCT_NAME]
    drop: list[str] | None = None
    empty: list[str] | None = None
    for key, value in sorted(obj.items()) if sort else obj.items():
        child = fields.get(key)
        if child is None:
            unknown.append(path + key)
            if drop is None:
                drop = [key]
            else:
                drop.append(key)
        elif value is not None and child[_KIND] != _ANY:
            _value(child, value, path + key, f"{field}.{key}" if field else key, name,
                   unknown, sort)
            if child[_KIND] == _MAP and not value:  # omitempty: Go writes no empty map
                empty = [*(empty or ()), key]
    if empty:
        for key in empty:
            del obj[key]
    if drop:
        for key in drop:
            del obj[key]


def _value(node: list[Any], value: Any, path: str, field: str, struct: str,
           unknown: list[str], sort: bool) -> None:
    """Check one non-null value at ``path`` (Go's field ``struct.field``)."""
    kind = node[_KIND]
    if kind in (_STRING, _TIMESTAMP):
        if type(value) is not str:
            raise _type_error(value, struct, field, node[_GO_TYPE])
    elif kind == _STRUCT:
        if type(value) is not dict:
            raise _type_error(value, struct, field, node[_GO_TYPE])
        _struct(node, value, path + ".", field, unknown, sort)
    elif kind == _LIST:
        if type(value) is not list:
            raise _type_error(value, struct, field, node[_GO_TYPE])
        element = node[_ARG]
        if element[_KIND] != _ANY:
            for i, item in enumerate(value):
                if item is not None:
                    _value(element, item, f"{path}[{i}]", field, struct, unknown, sort)
    elif kind == _MAP:
        if type(value) is not dict:
            raise _type_error(value, struct, field, node[_GO_TYPE])
        element = node[_ARG]
        if element[_KIND] != _ANY:
            for key, item in sorted(value.items()) if sort else value.items():
                if item is not None:
                    _value(element, item, f"{path}.{key}", field, struct, unknown, sort)
                elif element[_KIND] == _STRING and element[_GO_TYPE] == "string":
                    value[key] = ""  # null decodes to the zero value: a label "app": ""
    elif kind in (_INT, _INTSTR):
        if kind == _INTSTR and type(value) is str:
            return
        low, high = node[_ARG]
        if type(value) is float:
            raise _type_error(value, struct, field, node[_GO_TYPE], repr(value))
        if type(value) is not int:
            raise _type_error(value, struct, field, node[_GO_TYPE])
        if not low <= value <= high:
            raise _type_error(value, struct, field, node[_GO_TYPE], str(value))
    elif kind == _BOOL:
        if type(value) is not bool:
            raise _type_error(value, struct, field, "bool")
    elif kind == _FLOAT:
        if type(value) not in (int, float):
            raise _type_error(value, struct, field, node[_GO_TYPE])
    elif kind == _QTY:
        text = value if type(value) is str else (
            repr(value) if type(value) in (int, float) else "")
        if not _QUANTITY_RE.match(text):
            raise DecodeError(f"quantities must match the regular expression "
                              f"'{_QUANTITY_SYNTAX}'")


def _type_error(value: Any, struct: str, field: str, go_type: str,
                number: str | None = None) -> DecodeError:
    what = f"number {number}" if number is not None else json_type(value)
    return DecodeError(f"json: cannot unmarshal {what} into Go struct field {struct}.{field} "
                       f"of type {go_type}")


# -- the schemas, compiled ------------------------------------------------------------------


@functools.cache
def _schemas() -> dict[str, Any]:
    """The captured component schemas, by name (read and parsed on first use)."""
    raw = resources.files(__name__.rsplit(".", 2)[0]).joinpath(DATA_FILE).read_bytes()
    schemas: dict[str, Any] = orjson.loads(gzip.decompress(raw))["schemas"]
    return schemas


@functools.cache
def _kinds() -> dict[tuple[str, str, str], str]:
    """Schema names by (group, version, kind), for the schemas of top-level kinds."""
    out: dict[tuple[str, str, str], str] = {}
    for name, schema in _schemas().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            out.setdefault((gvk["group"], gvk["version"], gvk["kind"]), name)
    return out


def openapi_schemas() -> Mapping[str, Any]:
    """The captured component schemas by name (read once, on first use; read-only)."""
    return _schemas()


def kind_schema_name(group: str, version: str, kind: str) -> str | None:
    """The schema name of a built-in kind; None for a kind kube-apiserver 1.28 does not
    serve."""
    return _kinds().get((group, version, kind))


@functools.cache
def kind_fields(group: str, version: str, kind: str) -> KindFields | None:
    """The decoder of a built-in kind's fields, compiled once; None for a kind
    kube-apiserver 1.28 does not serve."""
    name = _kinds().get((group, version, kind))
    if name is None:
        return None
    root = _Compiler(_schemas()).named(name)
    return KindFields(root) if root[_KIND] == _STRUCT else None


@functools.cache
def microtime_fields(group: str, version: str, kind: str) -> tuple[tuple[str, ...], ...]:
    """The paths of a built-in kind's ``metav1.MicroTime`` fields, through nested structs
    (a Lease's ``spec.renewTime``, an Event's ``series.lastObservedTime``), in the
    schema's order; empty for a kind without one or not served.

    Read from the schemas once per kind. No kind of kube-apiserver 1.28 holds a MicroTime
    inside a list or a map, so only struct fields are followed.
    """
    name = _kinds().get((group, version, kind))
    paths: list[tuple[str, ...]] = []
    if name is not None:
        _microtimes(_schemas(), name, (), {name}, paths)
    return tuple(paths)


def _microtimes(schemas: dict[str, Any], name: str, path: tuple[str, ...],
                seen: set[str], out: list[tuple[str, ...]]) -> None:
    for field, sub in (schemas[name].get("properties") or {}).items():
        ref = sub.get("$ref") or (sub.get("allOf") or [{}])[0].get("$ref")
        if ref == _MICRO_TIME:
            out.append((*path, field))
        elif ref in schemas and ref not in seen:
            _microtimes(schemas, ref, (*path, field), seen | {ref}, out)


@functools.cache
def object_meta_fields() -> KindFields:
    """The decoder of an ``ObjectMeta`` on its own, as a custom resource's metadata is
    decoded (its errors name ``ObjectMeta.<field>``), compiled once."""
    return KindFields(_Compiler(_schemas()).named(_META + "ObjectMeta"))


class _Compiler:
    """Schemas to nodes; a named schema is compiled once (types refer to themselves)."""

    def __init__(self, schemas: dict[str, Any]) -> None:
        self.schemas = schemas
        self.named_nodes: dict[str, list[Any]] = _NAMED_NODES

    def named(self, name: str) -> list[Any]:
        node = self.named_nodes.get(name)
        if node is not None:
            return node
        package, _, type_name = name.rpartition(".")
        go_type = f"{package.rpartition('.')[2]}.{type_name}"
        if name == _INT_OR_STRING:
            node = [_INTSTR, "int32", _INT_RANGES["int32"]]
        elif name == _QUANTITY:
            node = [_QTY, go_type, None]
        elif name == _TIME:
            node = [_TIMESTAMP, "string", None]
        elif name in _OPAQUE or name not in self.schemas:
            node = [_ANY, go_type, None]
        else:
            schema = self.schemas[name]
            properties = schema.get("properties")
            if not properties:
                node = self.anonymous(schema, go_type)
            else:
                fields: dict[str, list[Any]] = {}
                node = [_STRUCT, go_type, fields, type_name]
                self.named_nodes[name] = node  # before its fields: they may refer to it
                for field, sub in properties.items():
                    named = _NAMED_FIELDS.get(f"{name}.{field}")
                    fields[field] = ([_STRING, named, None] if named is not None
                                     else self.anonymous(sub, ""))
                return node
        self.named_nodes[name] = node
        return node

    def anonymous(self, schema: dict[str, Any], go_type: str) -> list[Any]:
        """A field's schema: a reference (in ``allOf`` or not), or an inline type."""
        ref = schema.get("$ref")
        if ref is None and schema.get("allOf"):
            ref = schema["allOf"][0].get("$ref")
        if ref is not None:
            return self.named(ref)
        kind, fmt = schema.get("type"), schema.get("format")
        if kind == "string":
            return [_STRING, "[]uint8" if fmt == "byte" else "string", None]
        if kind == "boolean":
            return [_BOOL, "bool", None]
        if kind == "integer":
            size = fmt if fmt in _INT_RANGES else "int64"
            return [_INT, size, _INT_RANGES[size]]
        if kind == "number":
            return [_FLOAT, "float32" if fmt == "float" else "float64", None]
        if kind == "array" and isinstance(schema.get("items"), dict):
            element = self.anonymous(schema["items"], "")
            return [_LIST, "[]" + element[_GO_TYPE], element]
        if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
            element = self.anonymous(schema["additionalProperties"], "")
            return [_MAP, "map[string]" + element[_GO_TYPE], element]
        if fmt == "int-or-string":
            return [_INTSTR, "int32", _INT_RANGES["int32"]]
        return [_ANY, go_type or "interface {}", None]


_NAMED_NODES: dict[str, list[Any]] = {}  # shared by every kind's compiler
