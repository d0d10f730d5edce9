"""``/openapi/v2`` and ``/openapi/v3``: the OpenAPI documents clients read before they write.

What is served is what kube-apiserver v1.28.7 publishes, captured by
``tools/capture_openapi_v3.py`` (:mod:`.openapi_data`), never written here:

* ``/openapi/v3`` (kubectl 1.29 and later, ``kubectl explain``, client-go's
  OpenAPI v3 client) is the index of documents: each built-in one (every
  group-version, and the discovery, version, logs and OpenID documents), then
  each group-version of custom resources, at ``serverRelativeURL``
  ``/openapi/v3/{path}?hash={HASH}``, where ``HASH`` is the document's
  upper-case SHA-512, also its ``ETag``. A built-in document is kube-apiserver's
  whole: every path (collections, items, ``/status``, ``/scale``, ``watch/``,
  the lists across namespaces), operation and parameter, and every schema they
  refer to (the ``*List`` kinds, ``meta.v1.Status``, ``DeleteOptions``,
  ``WatchEvent``, ``Patch``, ``autoscaling.v1.Scale``), descriptions included,
  so ``kubectl explain`` reads the same documentation from both servers. A
  custom resource's is generated as kube-apiserver generates it
  (:mod:`.custom_resource_openapi`), with the schemas its paths refer to.
* ``/openapi/v2`` as JSON is kube-apiserver's Swagger 2.0 document: its
  paths, shared parameters and security, the custom resources' paths, and
  every definition, derived from the v3 schemas as kube-apiserver derives
  them. As protobuf (what kubectl 1.28's ``create``, ``apply`` and ``replace``
  ask for) it is empty: kubectl then skips its client-side checks and leaves
  validation to the server (custom resources against their schema).

A built-in document is built and hashed once, on first request; the data is
read then, never when the server starts.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from ..machinery.resources import Registry, ResourceType
from .custom_resource_openapi import custom_paths, custom_schemas, custom_v2_definitions
from .openapi_data import (
    builtin_v3,
    builtin_v3_paths,
    custom_template,
    published_schemas,
    v2_schema,
    v2_without_definitions,
    with_references,
)

__all__ = ["V2_PROTOBUF", "Published", "v2_document", "v3_document", "v3_root"]

V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"  # as sent


@dataclass(frozen=True, slots=True)
class Published:
    """A document as served: its JSON, and its ``hash`` (the upper-case hex SHA-512 of
    the JSON: the ``?hash=`` of its ``serverRelativeURL`` and, quoted, its ``ETag``)."""

    body: bytes
    hash: str


def _published(document: Any) -> Published:
    body = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    return Published(body, hashlib.sha512(body).hexdigest().upper())


@functools.cache
def _builtin(path: str) -> Published | None:
    document = builtin_v3(path)
    return None if document is None else _published(document)


def _group_version(path: str) -> tuple[str, str] | None:
    parts = path.split("/")
    if parts[0] == "api" and len(parts) == 2:
        return "", parts[1]
    if parts[0] == "apis" and len(parts) == 3:
        return parts[1], parts[2]
    return None


def _custom_group_versions(registry: Registry) -> dict[str, list[ResourceType]]:
    """The custom resources served, by their group-version's document path, where no
    built-in document is."""
    builtin = set(builtin_v3_paths())
    found: dict[str, list[ResourceType]] = defaultdict(list)
    for rtype in registry:
        r = rtype.resource
        path = f"apis/{r.group}/{r.version}" if r.group else f"api/{r.version}"
        if not rtype.builtin and path not in builtin:
            found[path].append(rtype)
    return dict(sorted(found.items()))


def _custom_document(rtypes: Iterable[ResourceType]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for rtype in rtypes:
        paths.update(custom_paths(rtype, "v3"))
        schemas.update(custom_schemas(rtype))
    template = custom_template()
    return {**template["document"], "paths": dict(sorted(paths.items())), "components": {
        "schemas": with_references(schemas, paths, instead=template["schemas"])}}


def _served_builtin(registry: Registry, path: str) -> bool:
    gv = _group_version(path)
    return gv is None or registry.has_group_version(*gv)


def v3_document(registry: Registry, path: str) -> Published | None:
    """``GET /openapi/v3/{path}`` (``api/v1``, ``apis/G/V``, ``version``, ...), or None
    for a document not served."""
    if path in builtin_v3_paths():
        return _builtin(path) if _served_builtin(registry, path) else None
    rtypes = _custom_group_versions(registry).get(path)
    return None if rtypes is None else _published(_custom_document(rtypes))


def v3_root(registry: Registry) -> bytes:
    """``GET /openapi/v3``: where each document is, with the hash of what it holds now."""
    documents = [(path, _builtin(path)) for path in builtin_v3_paths()
                 if _served_builtin(registry, path)]
    documents += [(path, _published(_custom_document(rtypes)))
                  for path, rtypes in _custom_group_versions(registry).items()]
    return orjson.dumps({"paths": {
        path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={document.hash}"}
        for path, document in sorted(documents, key=lambda entry: entry[0])
        if document is not None}})


@functools.cache
def _builtin_v2_definitions() -> dict[str, Any]:
    return {name: v2_schema(schema) for name, schema in published_schemas().items()}


def v2_document(registry: Registry) -> Published:
    """``GET /openapi/v2`` as JSON: kube-apiserver's paths and definitions, with the custom
    resources'."""
    paths = dict(v2_without_definitions()["paths"])
    definitions = dict(_builtin_v2_definitions())
    for rtypes in _custom_group_versions(registry).values():
        for rtype in rtypes:
            paths.update(custom_paths(rtype, "v2"))
            definitions.update(custom_v2_definitions(rtype))
    return _published({**v2_without_definitions(), "paths": paths,
                       "definitions": definitions})
