"""A custom resource's OpenAPI paths and schemas, as kube-apiserver generates them for its CRD.

No path, operation, parameter or description is written here: they are
kube-apiserver's own for a sample CRD, captured with its names as
placeholders (:func:`.openapi_data.custom_template`) and filled in with the
resource's names. A namespaced resource has the namespaced paths and the
list across namespaces, a cluster-scoped one its cluster paths; ``/status``
and ``/scale`` are kept for the subresources the resource has. No watch path
is listed, as kube-apiserver lists none for a CRD.

The kind's schema is its CRD's ``openAPIV3Schema`` as kube-apiserver's CRD
OpenAPI builder publishes it:

* v3: ``x-kubernetes-int-or-string`` unfolded into ``anyOf`` integer or
  string; the ``apiVersion``, ``kind`` and ``metadata`` properties set (in
  place of the CRD's own) and an ``x-kubernetes-embedded-resource``'s
  properties and ``required`` added, both taken from the capture;
* v2: a kind whose root preserves unknown fields is a bare ``object``;
  otherwise ``allOf``, ``anyOf``, ``oneOf`` and ``not`` are dropped, a
  ``nullable`` field loses its type, properties and items (and is no longer
  required), a field that preserves unknown fields its type, properties and
  items, an array left without items its type; embedded resources that
  preserve unknown fields get no properties; then the v2 form
  (:func:`.openapi_data.v2_schema`).

The list's schema is the captured one, filled in.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import orjson

from ..machinery.resources import ResourceType
from .openapi_data import custom_template, placeholder_values, v2_schema

__all__ = ["custom_paths", "custom_schemas", "custom_v2_definitions"]

_PLACEHOLDER = re.compile(r"\$\{(\w+)\}")
_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")
_PRESERVE = "x-kubernetes-preserve-unknown-fields"


def _values(rtype: ResourceType) -> dict[str, str]:
    r = rtype.resource
    return placeholder_values(r.group, r.version, r.kind, r.plural, rtype.list_kind)


def _filled(rtype: ResourceType, template: Any) -> Any:
    """``template`` with ``rtype``'s names in place of its placeholders."""
    values = {name: orjson.dumps(value).decode()[1:-1]
              for name, value in _values(rtype).items()}
    text = orjson.dumps(template).decode()
    return orjson.loads(_PLACEHOLDER.sub(lambda m: values[m.group(1)], text))


def custom_paths(rtype: ResourceType, spec: str) -> dict[str, Any]:
    """``rtype``'s paths in the ``v3`` or ``v2`` document."""
    scope = "Namespaced" if rtype.resource.namespaced else "Cluster"
    dropped = tuple(f"/{sub}" for sub, kept in (("status", rtype.status_subresource),
                                                ("scale", rtype.scale_subresource)) if not kept)
    paths: dict[str, Any] = _filled(rtype, custom_template()["paths"][scope][spec])
    return {path: item for path, item in paths.items()
            if not dropped or not path.endswith(dropped)}


def _visit(schema: Any, change: Callable[[dict[str, Any]], None], *,
           parent_first: bool = False) -> None:
    """``change`` applied to ``schema`` and every schema under its properties, items and
    additional properties: after them, or before them with ``parent_first``."""
    if not isinstance(schema, dict):
        return
    if parent_first:
        change(schema)
    for sub in list((schema.get("properties") or {}).values()):
        _visit(sub, change, parent_first=parent_first)
    for key in ("items", "additionalProperties"):
        _visit(schema.get(key), change, parent_first=parent_first)
    if not parent_first:
        change(schema)


def _unfold(node: dict[str, Any]) -> None:
    """``x-kubernetes-int-or-string`` spelled out as the ``anyOf`` it stands for."""
    if not node.get("x-kubernetes-int-or-string"):
        return
    either = [{"type": "integer"}, {"type": "string"}]
    if node.get("anyOf") == either or (node.get("allOf") or [{}])[0].get("anyOf") == either:
        return
    if "anyOf" not in node:
        node["anyOf"] = either
    else:
        node["allOf"] = [{"anyOf": either}, *node.get("allOf", ())]


def _embed(embedded: dict[str, Any], v2: bool) -> Callable[[dict[str, Any]], None]:
    def change(node: dict[str, Any]) -> None:
        if not node.get("x-kubernetes-embedded-resource") or (v2 and node.get(_PRESERVE)):
            return
        node["properties"] = {**node.get("properties", {}), **embedded["properties"]}
        required = node.setdefault("required", [])
        required.extend(name for name in embedded["required"] if name not in required)
    return change


def _to_v2(node: dict[str, Any]) -> None:
    """One schema node for v2, before its children are (they may go with it)."""
    for key in _JUNCTORS:
        node.pop(key, None)
    if node.pop("nullable", False) or node.get(_PRESERVE):
        for key in ("type", "items", "properties"):
            node.pop(key, None)
    if "items" not in node and node.get("type") == "array":
        del node["type"]
    nullable = {name for name, sub in (node.get("properties") or {}).items()
                if isinstance(sub, dict) and sub.get("nullable")}
    additional = node.get("additionalProperties")
    if isinstance(additional, dict) and additional.get("nullable"):
        node.pop("required", None)
    elif nullable and "required" in node:
        node["required"] = [name for name in node["required"] if name not in nullable]
        if not node["required"]:
            del node["required"]


def _kind_schema(rtype: ResourceType, v2: bool) -> dict[str, Any]:
    template = custom_template()
    obj = _filled(rtype, template["object"])
    gvk = {"x-kubernetes-group-version-kind": obj["x-kubernetes-group-version-kind"]}
    schema: dict[str, Any] | None = copy.deepcopy(dict(rtype.schema.schema)) if (
        rtype.schema) else None
    if schema is None or (v2 and schema.get(_PRESERVE)):
        return {"type": "object", **gvk}
    _visit(schema, _unfold)
    if v2:
        _visit(schema, _to_v2, parent_first=True)
    schema["properties"] = {**schema.get("properties", {}), **obj["properties"]}
    _visit(schema, _embed(template["embedded"], v2))
    return {**schema, **gvk}


def custom_schemas(rtype: ResourceType) -> dict[str, Any]:
    """``rtype``'s kind's and list's v3 schemas, by name."""
    r = rtype.resource
    prefix = _values(rtype)["schema_prefix"]
    return {prefix + r.kind: _kind_schema(rtype, v2=False),
            prefix + rtype.list_kind: _filled(rtype, custom_template()["list"])}


def custom_v2_definitions(rtype: ResourceType) -> dict[str, Any]:
    """``rtype``'s kind's and list's v2 definitions, by name."""
    r = rtype.resource
    prefix = _values(rtype)["schema_prefix"]
    return {prefix + r.kind: v2_schema(_kind_schema(rtype, v2=True)),
            prefix + rtype.list_kind: v2_schema(_filled(rtype, custom_template()["list"]))}
