"""Capture kube-apiserver's OpenAPI documents as package data.

Usage: ``python tools/capture_openapi_v3.py --assets DIR``

Starts the real kube-apiserver (``reconcilekit.testing.ControlPlane`` with the
binaries in ``DIR``, no kube-controller-manager), installs two sample
CustomResourceDefinitions, fetches ``/openapi/v3``, every document it lists
and ``/openapi/v2``, and writes three files (gzipped, compact JSON, sorted
keys, gzip without a timestamp: a re-capture of the same server changes
nothing):

* ``--out`` (``data/kube-apiserver-1.28-openapi-v3.json.gz``): the group-versions'
  component schemas that decoding needs (see
  :mod:`reconcilekit.testing.apiserver.machinery.builtin_schema`): types, formats,
  properties, required, enums, items/additionalProperties, references, the
  ``x-kubernetes-*`` markers, and ``default: {}``, which kube-apiserver publishes
  on exactly the struct fields that are values rather than pointers in Go (a
  kind's ``spec``, a Deployment's ``strategy``, a container's ``resources``):
  server-side apply's field sets depend on it (such a field exists, empty, in
  the zero object a create is compared with). Descriptions, other defaults and
  examples are dropped.
* ``--published-out`` (``data/kube-apiserver-1.28-openapi-v3-published.json.gz``):
  every component schema of every document, whole, descriptions included, each
  once (a name means the same schema in every document: checked).
* ``--documents-out`` (``data/kube-apiserver-1.28-openapi-documents.json.gz``):
  the documents themselves with their schemas named rather than repeated:
  ``v3``, each built-in document of ``/openapi/v3`` by its path (group-versions,
  and the discovery, version, logs and OpenID documents), its
  ``components.schemas`` the sorted names of its schemas; ``v2``, ``/openapi/v2``
  without its definitions (derived from the published schemas, as kube-apiserver
  derives them) and without the sample resources' paths; ``custom``, the sample
  resources' paths and their own schemas as kube-apiserver generates them for a
  CRD, one namespaced and one cluster-scoped, both with the status and scale
  subresources, their names replaced by placeholders (``${group}``,
  ``${version}``, ``${kind}``, ``${plural}``, ...) that the in-process server
  fills in for each custom resource it serves.
"""

from __future__ import annotations

import argparse
import gzip
import json
import ssl
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from reconcilekit.testing import ControlPlane
from reconcilekit.testing.apiserver.endpoints.openapi_data import placeholder_values

OUT = (Path(__file__).resolve().parent.parent / "reconcilekit" / "testing" / "apiserver"
       / "data" / "kube-apiserver-1.28-openapi-v3.json.gz")
PUBLISHED = OUT.with_name("kube-apiserver-1.28-openapi-v3-published.json.gz")
DOCUMENTS = OUT.with_name("kube-apiserver-1.28-openapi-documents.json.gz")
_KEEP = frozenset({"type", "format", "properties", "required", "enum", "items",
                   "additionalProperties", "allOf", "$ref", "nullable"})

# The sample CRDs: names found nowhere else in a document, so that each one is
# replaced by its placeholder and nothing else is.
_GROUP, _VERSION = "zqxsample.zqx-capture.io", "v7zq"
_SAMPLES = {"Namespaced": ("Zqxwidget", "zqxwidgets"), "Cluster": ("Zqxgadget", "zqxgadgets")}
_SAMPLE_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer"},
        "embedded": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True}}},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                "selector": {"type": "string"}}}}}


def _compact(schema: Any) -> Any:
    """The parts of a schema decoding needs, recursively."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key.startswith("x-kubernetes-"):
            out[key] = value
        elif key == "properties":
            out[key] = {name: _compact(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = _compact(value) if isinstance(value, dict) else value
        elif key == "allOf":
            out[key] = [_compact(sub) for sub in value]
        elif key == "$ref":
            out[key] = value.removeprefix("#/components/schemas/")
        elif key in _KEEP:
            out[key] = value
        elif key == "default" and value == {}:
            out[key] = value  # marks a Go struct field that is not a pointer (see docstring)
    return out


def _sample_crd(scope: str) -> dict[str, Any]:
    kind, plural = _SAMPLES[scope]
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{_GROUP}"},
        "spec": {"group": _GROUP, "scope": scope,
                 "names": {"kind": kind, "plural": plural, "singular": kind.lower(),
                           "listKind": f"{kind}Roster"},
                 "versions": [{"name": _VERSION, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": _SAMPLE_SCHEMA},
                               "subresources": {"status": {}, "scale": {
                                   "specReplicasPath": ".spec.replicas",
                                   "statusReplicasPath": ".status.replicas",
                                   "labelSelectorPath": ".status.selector"}}}]}}


def _placeholders(scope: str) -> list[tuple[str, str]]:
    """Each sample name and the placeholder it is replaced by, longest name first."""
    kind, plural = _SAMPLES[scope]
    values = placeholder_values(_GROUP, _VERSION, kind, plural, f"{kind}Roster")
    return sorted(((value, f"${{{name}}}") for name, value in values.items()),
                  key=lambda pair: -len(pair[0]))


def _template(value: Any, scope: str) -> Any:
    text = json.dumps(value, sort_keys=True)
    for name, placeholder in _placeholders(scope):
        text = text.replace(name, placeholder)
    if "zqx" in text.lower():
        raise SystemExit(f"a sample name is left in the {scope} template: {text[:200]}")
    return json.loads(text)


class _Server:
    def __init__(self, plane: ControlPlane) -> None:
        self.plane = plane
        self.context = ssl.create_default_context(cafile=str(plane.ca_file))

    def request(self, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {self.plane.token}", "Accept": "application/json"}
        data = None if body is None else json.dumps(body).encode()
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.plane.url + path, data=data, headers=headers)
        with urllib.request.urlopen(request, timeout=60, context=self.context) as response:
            return json.load(response)

    def published(self, check: Any, what: str) -> Any:
        """The first answer ``check`` finds in, within a minute (CRDs' documents are
        published a few seconds after they are established)."""
        deadline = time.monotonic() + 60
        while (found := check()) is None:
            if time.monotonic() > deadline:
                raise SystemExit(f"kube-apiserver did not publish {what} within a minute")
            time.sleep(0.5)
        return found


def _custom_v3(server: _Server) -> tuple[dict[str, Any], dict[str, Any]]:
    """The sample CRDs' group-version document, and the index it is listed in."""
    gv = f"apis/{_GROUP}/{_VERSION}"

    def check() -> tuple[dict[str, Any], dict[str, Any]] | None:
        root = server.request("/openapi/v3")
        if gv not in root["paths"]:
            return None
        document = server.request(root["paths"][gv]["serverRelativeURL"])
        paths = " ".join(document["paths"])
        return (document, root) if all(p in paths for _, p in _SAMPLES.values()) else None
    found: tuple[dict[str, Any], dict[str, Any]] = server.published(check, "the sample CRDs")
    return found


def _v2(server: _Server) -> dict[str, Any]:
    """``/openapi/v2`` once it has the sample CRDs' paths."""
    def check() -> dict[str, Any] | None:
        document: dict[str, Any] = server.request("/openapi/v2")
        return document if any(_GROUP in path for path in document["paths"]) else None
    found: dict[str, Any] = server.published(check, "the sample CRDs in /openapi/v2")
    return found


def _custom_templates(v3: dict[str, Any], v2: dict[str, Any],
                      builtin: dict[str, Any]) -> dict[str, Any]:
    """What kube-apiserver generates for a CRD, with placeholders: the document's header,
    the kind's schema (the properties it sets and its group-version-kind), an embedded
    resource's properties, the list's schema, each scope's v3 and v2 paths, and the
    schemas its paths refer to that differ from the built-in documents' (by name)."""
    sample = {kind for kind, _ in _SAMPLES.values()} | {
        f"{kind}Roster" for kind, _ in _SAMPLES.values()}
    scopes: dict[str, Any] = {}
    for scope, (kind, plural) in _SAMPLES.items():
        def own(path: str, plural: str = plural) -> bool:
            return path.split("/")[-1] == plural or f"/{plural}/" in path
        schemas = v3["components"]["schemas"]
        prefix = ".".join([*reversed(_GROUP.split(".")), _VERSION, ""])
        scopes[scope] = _template({
            "object": schemas[prefix + kind], "list": schemas[f"{prefix}{kind}Roster"],
            "v3": {p: item for p, item in v3["paths"].items() if own(p)},
            "v2": {p: item for p, item in v2["paths"].items() if own(p)}}, scope)
    namespaced, cluster = scopes["Namespaced"], scopes["Cluster"]
    if (namespaced["object"], namespaced["list"]) != (cluster["object"], cluster["list"]):
        raise SystemExit("the sample kinds' schemas differ by scope")
    obj = namespaced["object"]
    embedded = obj["properties"]["spec"]["properties"]["embedded"]
    return {
        "document": {key: v3[key] for key in ("openapi", "info")},
        "object": {"properties": {key: obj["properties"][key]
                                  for key in ("apiVersion", "kind", "metadata")},
                   "x-kubernetes-group-version-kind": obj["x-kubernetes-group-version-kind"]},
        "embedded": {"properties": embedded["properties"], "required": embedded["required"]},
        "list": namespaced["list"],
        "schemas": {name: schema for name, schema in v3["components"]["schemas"].items()
                    if name.rpartition(".")[2] not in sample and builtin.get(name) != schema},
        "paths": {scope: {"v3": t["v3"], "v2": t["v2"]} for scope, t in scopes.items()}}


def capture(assets: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
    """The compacted schemas of every group-version, every document's schemas whole, the
    documents, and the server's version."""
    plane = ControlPlane(assets, controller_manager=False)
    plane.start()
    try:
        server = _Server(plane)
        version = server.request("/version")["gitVersion"]
        for scope in _SAMPLES:
            server.request("/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                           _sample_crd(scope))
        custom, root = _custom_v3(server)
        v2 = _v2(server)
        schemas: dict[str, Any] = {}
        published: dict[str, Any] = {}
        documents: dict[str, Any] = {}
        for path, entry in sorted(root["paths"].items()):
            if _GROUP in path:
                continue
            document = server.request(entry["serverRelativeURL"])
            group_version = path.startswith(("api/", "apis/")) and path.count("/") == (
                1 + path.startswith("apis/"))
            components = document.get("components", {})
            for name, schema in components.get("schemas", {}).items():
                if published.setdefault(name, schema) != schema:
                    raise SystemExit(f"{name} differs between two documents")
                if group_version:
                    schemas[name] = _compact(schema)
            components["schemas"] = sorted(components.get("schemas", {}))
            documents[path] = document
        templates = _custom_templates(custom, v2, published)
        v2.pop("definitions")
        v2["paths"] = {p: item for p, item in v2["paths"].items() if _GROUP not in p}
        return schemas, published, {"v3": documents, "v2": v2, "custom": templates}, version
    finally:
        plane.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=Path, required=True,
                        help="the directory holding etcd and kube-apiserver")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--published-out", type=Path, default=PUBLISHED)
    parser.add_argument("--documents-out", type=Path, default=DOCUMENTS)
    args = parser.parse_args(argv)
    schemas, published, documents, version = capture(args.assets)
    for out, key, content in ((args.out, "schemas", schemas),
                              (args.published_out, "schemas", published),
                              (args.documents_out, "documents", documents)):
        data = json.dumps({"version": version, key: content}, sort_keys=True,
                          separators=(",", ":")).encode()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        print(f"{version}: {len(content)} {key}, {len(data)} bytes of JSON, "
              f"{out.stat().st_size} bytes gzipped -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
