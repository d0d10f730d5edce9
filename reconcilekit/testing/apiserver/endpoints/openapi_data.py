"""The OpenAPI documents kube-apiserver v1.28.7 publishes, captured as package data.

Both files are written by ``tools/capture_openapi_v3.py`` from a real
kube-apiserver and read on first use, never when the server starts:

* ``data/kube-apiserver-1.28-openapi-v3-published.json.gz``: every component
  schema of every document, whole (descriptions included), each once;
* ``data/kube-apiserver-1.28-openapi-documents.json.gz``: each built-in document
  of ``/openapi/v3`` with its schemas named rather than repeated, ``/openapi/v2``
  without its definitions, and a custom resource's paths and schemas as
  kube-apiserver generates them for a CRD (one namespaced, one cluster-scoped,
  with both subresources), their names replaced by ``${...}`` placeholders
  (:func:`placeholder_values`).

A v2 definition is the v3 schema of the same name converted as kube-apiserver
converts it (:func:`v2_schema`): the 497 built-in definitions are identical.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

__all__ = ["DOCUMENTS_FILE", "PUBLISHED_FILE", "VERSION", "builtin_v3", "builtin_v3_paths",
           "custom_template", "operation_id_part", "placeholder_values", "published_schemas",
           "v2_schema", "v2_without_definitions", "with_references"]

VERSION = "v1.28.7"
PUBLISHED_FILE = "kube-apiserver-1.28-openapi-v3-published.json.gz"
DOCUMENTS_FILE = "kube-apiserver-1.28-openapi-documents.json.gz"
_V3_REF = "#/components/schemas/"


def _read(name: str) -> Any:
    package = (__package__ or "").rpartition(".")[0]  # reconcilekit.testing.apiserver
    raw = (importlib.resources.files(package) / "data" / name).read_bytes()
    content = orjson.loads(gzip.decompress(raw))
    if content.get("version") != VERSION:
        raise RuntimeError(f"data/{name} was captured from {content.get('version')!r}, "
                           f"not {VERSION}: capture it again (tools/capture_openapi_v3.py)")
    return content


@functools.cache
def published_schemas() -> Mapping[str, Any]:
    """Every component schema kube-apiserver publishes, by name."""
    schemas: Mapping[str, Any] = _read(PUBLISHED_FILE)["schemas"]
    return schemas


@functools.cache
def _documents() -> Mapping[str, Any]:
    documents: Mapping[str, Any] = _read(DOCUMENTS_FILE)["documents"]
    return documents


@functools.cache
def builtin_v3_paths() -> tuple[str, ...]:
    """The built-in documents' paths under ``/openapi/v3/`` (``api/v1``, ``apis``,
    ``version``, ...), sorted."""
    return tuple(sorted(_documents()["v3"]))


def builtin_v3(path: str) -> dict[str, Any] | None:
    """The built-in document at ``/openapi/v3/{path}`` as kube-apiserver publishes it (a
    new object each call), or None."""
    captured = _documents()["v3"].get(path)
    if captured is None:
        return None
    published = published_schemas()
    components = {**captured["components"],
                  "schemas": {name: published[name] for name in captured["components"]["schemas"]}}
    return {**captured, "components": components}


def v2_without_definitions() -> Mapping[str, Any]:
    """``/openapi/v2`` with its built-in paths and shared parameters, no definitions."""
    v2: Mapping[str, Any] = _documents()["v2"]
    return v2


def custom_template() -> Mapping[str, Any]:
    """What kube-apiserver generates for a CRD, with placeholders: ``document`` (the v3
    document's ``openapi`` and ``info``), ``object`` (the properties a kind's schema is
    given, and its ``x-kubernetes-group-version-kind``), ``embedded`` (the properties and
    ``required`` an embedded resource is given), ``list`` (the list's schema),
    ``paths`` (by scope, ``Namespaced`` or ``Cluster``: the ``v3`` and ``v2`` paths of a
    resource with both subresources) and ``schemas`` (the schemas the paths refer to
    that a CRD's document publishes otherwise than the built-in documents)."""
    template: Mapping[str, Any] = _documents()["custom"]
    return template


def operation_id_part(name: str, capitalize_first: bool) -> str:
    """k8s.io/apiserver's ``ToValidOperationID``: letters and ``_`` kept (digits but
    first), anything else dropped and the letter after it capitalized."""
    out, capitalize = [], capitalize_first
    for i, char in enumerate(name):
        if char.isalpha() or char == "_" or (i and char.isdigit()):
            out.append(char.upper() if capitalize else char)
            capitalize = False
        else:
            capitalize = True
    return "".join(out)


def placeholder_values(group: str, version: str, kind: str, plural: str,
                       list_kind: str) -> dict[str, str]:
    """What each placeholder of a custom resource's template stands for: the names, the
    schemas' prefix (the group reversed, then the version) and the operation IDs' and
    tags' group-version, as kube-apiserver writes them."""
    trimmed = group.removesuffix(".k8s.io")
    return {"group": group, "version": version, "kind": kind, "plural": plural,
            "list_kind": list_kind,
            "schema_prefix": ".".join([*reversed(group.split(".")), version, ""]),
            "operation_group_version": operation_id_part(trimmed, True)
            + operation_id_part(version, True),
            "tag": f"{operation_id_part(trimmed, False)}_{operation_id_part(version, False)}"}


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield ref.removeprefix(_V3_REF)
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def with_references(schemas: dict[str, Any], *roots: Any,
                    instead: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``schemas`` and every published schema they or ``roots`` (paths) refer to,
    transitively (those of ``instead`` in place of the published ones of their names),
    sorted by name."""
    published = {**published_schemas(), **(instead or {})}
    todo = [r for s in (*schemas.values(), *roots) for r in _refs(s)]
    while todo:
        name = todo.pop()
        if name not in schemas and name in published:
            schemas[name] = published[name]
            todo.extend(_refs(published[name]))
    return dict(sorted(schemas.items()))


def v2_schema(schema: Any) -> Any:
    """An OpenAPI v3 schema as kube-apiserver's v2 document shows it: references to
    ``#/definitions/``, a lone ``allOf`` reference as the reference itself, no
    ``nullable`` or ``default``, a ``oneOf`` of types (IntOrString, Quantity) as a
    string."""
    if isinstance(schema, list):
        return [v2_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("nullable", "default"):
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace(_V3_REF, "#/definitions/")
        elif key == "properties" and isinstance(value, dict):  # names, not keywords
            out[key] = {name: v2_schema(sub) for name, sub in value.items()}
        elif key == "oneOf":
            out["type"] = "string"
        else:
            out[key] = v2_schema(value)
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        del out["allOf"]
        out["$ref"] = all_of[0]["$ref"]
    return out
