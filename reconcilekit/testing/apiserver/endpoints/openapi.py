"""``/openapi/v2`` and ``/openapi/v3``: the OpenAPI documents clients read before they write.

kubectl 1.28 (``create``, ``apply``, ``replace``) fetches ``/openapi/v2`` as
protobuf to validate what it sends and refuses to write without it. The
protobuf document served is empty, so kubectl skips its client-side checks
and the server validates (custom resources against their schema). As JSON,
``/openapi/v2`` has every kind's definition, derived from the same published
v3 schemas as kube-apiserver derives its own (the same 491 definitions). ``/openapi/v3``
(kubectl 1.29 and later, and ``kubectl explain``) is the root index of
group-versions and, per group-version, a document with every resource's
paths, their ``x-kubernetes-group-version-kind``, the write parameters
kube-apiserver accepts (``fieldValidation`` among them), and each custom
resource's schema. A built-in kind's schema, and every schema it refers to,
is the one kube-apiserver publishes, descriptions included
(``data/kube-apiserver-1.28-openapi-v3-published.json.gz``, captured by
``tools/capture_openapi_v3.py``); a custom resource's gets ``apiVersion``,
``kind`` and ``metadata`` as kube-apiserver adds them (their descriptions
taken from that capture), and its list kind. So ``kubectl explain`` reads
the same documentation from both servers.
"""

from __future__ import annotations

import copy
import functools
import gzip
import hashlib
import importlib.resources
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from ..machinery.resources import Registry, ResourceType

__all__ = ["V2_PROTOBUF", "v2_document", "v3_document", "v3_root"]

_VERSION = "v1.28.7"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # as sent


def v2_document(registry: Registry) -> dict[str, Any]:
    """``GET /openapi/v2`` as JSON: a Swagger 2.0 document with every kind's definition
    (the protobuf document clients such as kubectl ask for is empty: they leave
    validation to the server). Paths are not listed."""
    definitions = dict(_builtin_v2_definitions())
    for rtype in registry:
        if not rtype.builtin:
            definitions.update({name: _v2_schema(schema) for name, schema
                                in _custom_resource_schemas(rtype).items()})
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": _VERSION},
            "paths": {}, "definitions": dict(sorted(definitions.items()))}


def _v2_schema(schema: Any) -> Any:
    """An OpenAPI v3 schema as kube-apiserver's v2 document shows it: references to
    ``#/definitions/``, a lone ``allOf`` reference as the reference itself, no
    ``nullable`` or ``default``, a ``oneOf`` of types (IntOrString, Quantity) as a
    string."""
    if isinstance(schema, list):
        return [_v2_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("nullable", "default"):
            continue
        if key == "$ref" and isinstance(value, str):
            out[key] = value.replace("#/components/schemas/", "#/definitions/")
        elif key == "properties" and isinstance(value, dict):  # names, not keywords
            out[key] = {name: _v2_schema(sub) for name, sub in value.items()}
        elif key == "oneOf":
            out["type"] = "string"
        else:
            out[key] = _v2_schema(value)
    all_of = out.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and set(all_of[0]) == {"$ref"}:
        del out["allOf"]
        out["$ref"] = all_of[0]["$ref"]
    return out


@functools.cache
def _builtin_v2_definitions() -> Mapping[str, Any]:
    return {name: _v2_schema(schema) for name, schema in _published().items()}


_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation", "force", "pretty")


def _gv_path(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def v3_root(registry: Registry) -> dict[str, Any]:
    """``GET /openapi/v3``: where each group-version's document is."""
    paths = {}
    for group, versions in [("", ["v1"]), *sorted(registry.groups().items())]:
        for version in versions:
            gv = _gv_path(group, version)
            doc = v3_document(registry, gv)
            digest = hashlib.sha512(orjson.dumps(doc, option=orjson.OPT_SORT_KEYS)).hexdigest()
            paths[gv] = {"serverRelativeURL": f"/openapi/v3/{gv}?hash={digest.upper()}"}
    return {"paths": paths}


def _operation(rtype: ResourceType, action: str, params: tuple[str, ...]) -> dict[str, Any]:
    r = rtype.resource
    ref = {"$ref": f"#/components/schemas/{_schema_name(rtype)}"}
    return {
        "operationId": f"{action}{r.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version,
                                            "kind": r.kind},
        "parameters": [{"name": p, "in": "query", "schema": {"type": "string"},
                        "uniqueItems": True} for p in params],
        "responses": {"200": {"description": "OK",
                              "content": {"application/json": {"schema": ref}}}},
    }


def _schema_name(rtype: ResourceType) -> str:
    r = rtype.resource
    if rtype.builtin and (name := _published_names().get((r.group, r.version, r.kind))):
        return name
    group = ".".join(reversed(r.group.split("."))) if r.group else "io.k8s.api.core"
    return f"{group}.{r.version}.{r.kind}"


PUBLISHED_FILE = "kube-apiserver-1.28-openapi-v3-published.json.gz"


@functools.cache
def _published() -> Mapping[str, Any]:
    package = (__package__ or "").rpartition(".")[0]  # reconcilekit.testing.apiserver
    raw = (importlib.resources.files(package) / "data" / PUBLISHED_FILE).read_bytes()
    schemas: Mapping[str, Any] = orjson.loads(gzip.decompress(raw))["schemas"]
    return schemas


@functools.cache
def _published_names() -> Mapping[tuple[str, str, str], str]:
    """(group, version, kind) -> the name kube-apiserver publishes the kind's schema by."""
    return {(gvk.get("group", ""), gvk.get("version", ""), gvk.get("kind", "")): name
            for name, schema in _published().items()
            for gvk in schema.get("x-kubernetes-group-version-kind") or ()}


def _refs(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            yield ref.removeprefix("#/components/schemas/")
        for value in schema.values():
            yield from _refs(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _refs(value)


def _with_references(schemas: dict[str, Any]) -> dict[str, Any]:
    """``schemas`` and every published schema they refer to, transitively."""
    published = _published()
    todo = [r for s in schemas.values() for r in _refs(s)]
    while todo:
        name = todo.pop()
        if name not in schemas and name in published:
            schemas[name] = published[name]
            todo.extend(_refs(published[name]))
    return dict(sorted(schemas.items()))


def _custom_resource_schemas(rtype: ResourceType) -> dict[str, Any]:
    """A custom resource's schema and its list's, as kube-apiserver publishes them."""
    r = rtype.resource
    standard = _published()["io.k8s.api.core.v1.ConfigMap"]["properties"]
    listed = _published()["io.k8s.api.core.v1.ConfigMapList"]["properties"]
    schema: dict[str, Any] = copy.deepcopy(dict(rtype.schema.schema)) if rtype.schema else {
        "type": "object"}
    schema["properties"] = {"apiVersion": standard["apiVersion"], "kind": standard["kind"],
                            "metadata": standard["metadata"],
                            **schema.get("properties", {})}
    schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "kind": r.kind,
                                                  "version": r.version}]
    name = _schema_name(rtype)
    items = {"description": f"List of {r.plural}. More info: https://git.k8s.io/community/"
                            "contributors/devel/api-conventions.md",
             "type": "array", "items": {"$ref": f"#/components/schemas/{name}"}}
    return {name: schema, f"{name}List": {
        "description": f"{r.kind}List is a list of {r.kind}", "type": "object",
        "required": ["items"],
        "properties": {"apiVersion": listed["apiVersion"], "items": items,
                       "kind": listed["kind"], "metadata": listed["metadata"]},
        "x-kubernetes-group-version-kind": [{"group": r.group, "kind": f"{r.kind}List",
                                             "version": r.version}]}}


def v3_document(registry: Registry, gv_path: str) -> dict[str, Any] | None:
    """``GET /openapi/v3/{api/v1 | apis/G/V}``, or None for a group-version not served."""
    parts = gv_path.split("/")
    group, version = ("", parts[1]) if parts[0] == "api" and len(parts) == 2 else (
        (parts[1], parts[2]) if parts[0] == "apis" and len(parts) == 3 else (None, None))
    if version is None or group is None or not registry.has_group_version(group, version):
        return None
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in registry:
        r = rtype.resource
        if (r.group, r.version) != (group, version):
            continue
        base = f"/{gv_path}/" + ("namespaces/{namespace}/" if r.namespaced else "")
        paths[f"{base}{r.plural}"] = {
            "get": _operation(rtype, "list", ()),
            "post": _operation(rtype, "post", (*_WRITE_PARAMS[:3], "pretty"))}
        paths[f"{base}{r.plural}/{{name}}"] = {
            "get": _operation(rtype, "get", ()),
            "put": _operation(rtype, "put", (*_WRITE_PARAMS[:3], "pretty")),
            "patch": _operation(rtype, "patch", _WRITE_PARAMS),
            "delete": _operation(rtype, "delete", ("dryRun",))}
        if not rtype.builtin:
            schemas.update(_custom_resource_schemas(rtype))
        elif (published := _published().get(_schema_name(rtype))) is not None:  # by its GVK
            schemas[_schema_name(rtype)] = published
        else:
            schemas[_schema_name(rtype)] = {"type": "object", "x-kubernetes-group-version-kind": [
                {"group": r.group, "kind": r.kind, "version": r.version}]}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": _VERSION},
            "paths": paths, "components": {"schemas": _with_references(schemas)}}
