"""``/openapi/v2`` and ``/openapi/v3``: the OpenAPI documents clients read before they write.

kubectl 1.28 (``create``, ``apply``, ``replace``) fetches ``/openapi/v2`` to
validate what it sends and refuses to write without it. The v2 document
served has no definitions, so kubectl skips its client-side checks and the
server validates (custom resources against their schema). ``/openapi/v3``
(kubectl 1.29 and later, and ``kubectl explain``) is the root index of
group-versions and, per group-version, a document with every resource's
paths, their ``x-kubernetes-group-version-kind``, the write parameters
kube-apiserver accepts (``fieldValidation`` among them), and each custom
resource's schema. Built-in kinds carry no schema: the server does not have
their Go types.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from ..machinery.resources import Registry, ResourceType

__all__ = ["V2_PROTOBUF", "v2_document", "v3_document", "v3_root"]

_VERSION = "v1.28.7"
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # as sent


def v2_document() -> dict[str, Any]:
    """``GET /openapi/v2``: a Swagger 2.0 document without definitions (an empty protobuf
    Document for clients asking for protobuf, as kubectl does)."""
    return {"swagger": "2.0", "info": {"title": "Kubernetes", "version": _VERSION},
            "paths": {}, "definitions": {}}
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
    group = ".".join(reversed(r.group.split("."))) if r.group else "io.k8s.api.core"
    return f"{group}.{r.version}.{r.kind}"


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
        schema: dict[str, Any] = dict(rtype.schema.schema) if rtype.schema else {
            "type": "object"}
        schema["x-kubernetes-group-version-kind"] = [{"group": r.group, "version": r.version,
                                                      "kind": r.kind}]
        schemas[_schema_name(rtype)] = schema
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": _VERSION},
            "paths": paths, "components": {"schemas": schemas}}
