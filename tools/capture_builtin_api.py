"""Capture kube-apiserver's discovery into the in-process server's package data.

Usage::

    python tools/capture_builtin_api.py --assets DIR [--out FILE]

Starts etcd and kube-apiserver from ``DIR`` (a :class:`reconcilekit.testing.ControlPlane`,
without kube-controller-manager: discovery does not depend on it), reads
``/version``, ``/api``, ``/api/v1``, ``/apis`` and every ``/apis/GROUP/VERSION``
it lists, and writes them to ``FILE`` (default: the package's
``data/kube-apiserver-<major.minor>-discovery.json``) as kube-apiserver sent
them: every resource's kind, plural, singular, scope, verbs, short names,
categories, storage version hash and subresources, in kube-apiserver's order.

The file is JSON with one line per group version (so that a new capture's diff
reads resource by resource)::

    {"gitVersion": "v1.28.7",
     "groups": [...],                       # /apis's APIGroupList.groups
     "resources": {"v1": [...], "apps/v1": [...], ...}}   # APIResourceList.resources

It fails with a message (never a traceback) when the binaries are missing or
the control plane does not start.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from capture_common import get_json, run_capture

from reconcilekit.testing import ControlPlane


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The discovery documents of a running kube-apiserver, in the data file's shape."""
    version = get_json(plane, "/version")
    if get_json(plane, "/api")["versions"] != ["v1"]:
        raise SystemExit("capture: /api serves versions other than v1; the loader knows only v1")
    resources: dict[str, list[dict[str, Any]]] = {"v1": get_json(plane, "/api/v1")["resources"]}
    groups = get_json(plane, "/apis")["groups"]
    for group in groups:
        for entry in group["versions"]:
            gv = entry["groupVersion"]
            resources[gv] = get_json(plane, f"/apis/{gv}")["resources"]
    return {"gitVersion": version["gitVersion"], "groups": groups, "resources": resources}


def dump(data: dict[str, Any]) -> str:
    """JSON with one line per group version."""
    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    rows = [f"  {line(gv)}:{line(items)}" for gv, items in data["resources"].items()]
    return ("{" + f'"gitVersion":{line(data["gitVersion"])},\n'
            + f' "groups":{line(data["groups"])},\n'
            + ' "resources":{\n' + ",\n".join(rows) + "}}\n")


def write(data: dict[str, Any], out: Path) -> str:
    out.write_text(dump(data))
    count = sum(len(v) for v in data["resources"].values())
    return f"{len(data['resources'])} group versions, {count} resources and subresources"


def main(argv: list[str] | None = None) -> int:
    return run_capture(__doc__ or "", capture,
                       lambda version: f"kube-apiserver-{version}-discovery.json", write, argv)


if __name__ == "__main__":
    sys.exit(main())
