"""Capture kube-apiserver's Table column definitions into the in-process server's package data.

Usage::

    python tools/capture_table_columns.py --assets DIR [--out FILE]

Starts etcd and kube-apiserver from ``DIR`` (a :class:`reconcilekit.testing.ControlPlane`
without kube-controller-manager), lists every built-in resource that can be
listed, asking for a ``meta.k8s.io/v1`` Table as ``kubectl get`` does, and
writes each resource's ``columnDefinitions`` (name, type, format,
description, priority: what kube-apiserver's printer for the kind declares,
whether or not there are rows) to ``FILE`` (default: the package's
``data/kube-apiserver-<major.minor>-table-columns.json.gz``), gzipped JSON
with one line per resource, keyed ``plural`` for the core group and ``plural.group`` for the
others::

    {"gitVersion": "v1.28.7",
     "columns": {
      "pods": [{"name": "Name", "type": "string", "format": "name", ...}, ...],
      "deployments.apps": [...], ...}}

A resource served by several versions is listed at the first one discovery
gives (its printer does not depend on the version). The cells of each row are
each kind's printer's own logic and live in the server's strategies; this
file is what they are checked against. It fails with a message (never a
traceback) when the binaries are missing or the control plane does not start.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from capture_common import get_json, run_capture

from reconcilekit.testing import ControlPlane

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def _group_versions(plane: ControlPlane) -> list[tuple[str, str]]:
    """(group version, its URL prefix), core first, in discovery's order."""
    found = [("v1", "/api/v1")]
    for group in get_json(plane, "/apis")["groups"]:
        found += [(v["groupVersion"], f"/apis/{v['groupVersion']}") for v in group["versions"]]
    return found


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The column definitions of every listable built-in resource, in the file's shape."""
    columns: dict[str, list[dict[str, Any]]] = {}
    for gv, prefix in _group_versions(plane):
        group = gv.rpartition("/")[0]
        for resource in get_json(plane, prefix)["resources"]:
            plural = resource["name"]
            key = f"{plural}.{group}" if group else plural
            if "/" in plural or "list" not in resource["verbs"] or key in columns:
                continue
            table = get_json(plane, f"{prefix}/{plural}?limit=1", TABLE)
            columns[key] = table["columnDefinitions"]
    return {"gitVersion": get_json(plane, "/version")["gitVersion"], "columns": columns}


def dump(data: dict[str, Any]) -> str:
    """JSON with one line per resource."""
    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    rows = [f"  {line(key)}:{line(defs)}" for key, defs in data["columns"].items()]
    return ("{" + f'"gitVersion":{line(data["gitVersion"])},\n'
            + ' "columns":{\n' + ",\n".join(rows) + "}}\n")


def write(data: dict[str, Any], out: Path) -> str:
    out.write_bytes(gzip.compress(dump(data).encode(), compresslevel=9, mtime=0))
    return f"the Table columns of {len(data['columns'])} resources"


def main(argv: list[str] | None = None) -> int:
    return run_capture(__doc__ or "", capture,
                       lambda version: f"kube-apiserver-{version}-table-columns.json.gz", write,
                       argv)


if __name__ == "__main__":
    sys.exit(main())
