"""Capture kube-apiserver's OpenAPI v3 schemas of the built-in kinds as package data.

Usage: ``python tools/capture_openapi_v3.py --assets DIR [--out FILE]``

Starts the real kube-apiserver (``reconcilekit.testing.ControlPlane`` with the
binaries in ``DIR``, no kube-controller-manager), fetches ``/openapi/v3`` and
every group-version document it lists, and writes the component schemas that
decoding needs (see :mod:`reconcilekit.testing.apiserver.machinery.builtin_schema`)
as gzipped, compact JSON: types, formats, properties, required, enums,
items/additionalProperties, references, the ``x-kubernetes-*`` markers, and
``default: {}``, which kube-apiserver publishes on exactly the struct fields
that are values rather than pointers in Go (a kind's ``spec``, a
Deployment's ``strategy``, a container's ``resources``): server-side apply's
field sets depend on it (such a field exists, empty, in the zero object a
create is compared with). Descriptions, other defaults and examples are
dropped. The output is deterministic
(sorted keys, gzip without a timestamp), so a re-capture of the same server
changes nothing.

The same run writes the published component schemas whole, descriptions
included, each once (``--published-out``, default
``data/kube-apiserver-1.28-openapi-v3-published.json.gz``): what the
in-process server serves at ``/openapi/v3`` for ``kubectl explain`` and
clients that read a kind's documentation.
"""

from __future__ import annotations

import argparse
import gzip
import json
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

from reconcilekit.testing import ControlPlane

OUT = (Path(__file__).resolve().parent.parent / "reconcilekit" / "testing" / "apiserver"
       / "data" / "kube-apiserver-1.28-openapi-v3.json.gz")
PUBLISHED = OUT.with_name("kube-apiserver-1.28-openapi-v3-published.json.gz")
_KEEP = frozenset({"type", "format", "properties", "required", "enum", "items",
                   "additionalProperties", "allOf", "$ref", "nullable"})


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


def _get(plane: ControlPlane, path: str, context: ssl.SSLContext) -> Any:
    request = urllib.request.Request(plane.url + path,
                                     headers={"Authorization": f"Bearer {plane.token}"})
    with urllib.request.urlopen(request, timeout=30, context=context) as response:
        return json.load(response)


def capture(assets: Path) -> tuple[dict[str, Any], dict[str, Any], str]:
    """The compacted schemas of every group-version, the same schemas whole, and the
    server's version."""
    plane = ControlPlane(assets, controller_manager=False)
    plane.start()
    try:
        context = ssl.create_default_context(cafile=str(plane.ca_file))
        version = _get(plane, "/version", context)["gitVersion"]
        schemas: dict[str, Any] = {}
        published: dict[str, Any] = {}
        for gv, entry in sorted(_get(plane, "/openapi/v3", context)["paths"].items()):
            if not gv.startswith(("api/", "apis/")) or gv.count("/") != 1 + gv.startswith("apis/"):
                continue  # the discovery lists, not group-versions
            document = _get(plane, entry["serverRelativeURL"], context)
            for name, schema in document.get("components", {}).get("schemas", {}).items():
                schemas[name] = _compact(schema)
                published[name] = schema
        return schemas, published, version
    finally:
        plane.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--assets", type=Path, required=True,
                        help="the directory holding etcd and kube-apiserver")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--published-out", type=Path, default=PUBLISHED)
    args = parser.parse_args(argv)
    schemas, published, version = capture(args.assets)
    for out, content in ((args.out, schemas), (args.published_out, published)):
        data = json.dumps({"version": version, "schemas": content}, sort_keys=True,
                          separators=(",", ":")).encode()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
        print(f"{version}: {len(content)} schemas, {len(data)} bytes of JSON, "
              f"{out.stat().st_size} bytes gzipped -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
