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

import argparse
import json
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

from reconcilekit.testing import ControlPlane
from reconcilekit.testing._control_plane import ControlPlaneError

DATA = Path(__file__).resolve().parent.parent / "reconcilekit/testing/apiserver/data"


def _get(plane: ControlPlane, path: str) -> Any:
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(plane.url + path, headers={
        "Authorization": f"Bearer {plane.token}", "Accept": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        return json.loads(answer.read())


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The discovery documents of a running kube-apiserver, in the data file's shape."""
    version = _get(plane, "/version")
    if _get(plane, "/api")["versions"] != ["v1"]:
        raise SystemExit("capture: /api serves versions other than v1; the loader knows only v1")
    resources: dict[str, list[dict[str, Any]]] = {"v1": _get(plane, "/api/v1")["resources"]}
    groups = _get(plane, "/apis")["groups"]
    for group in groups:
        for entry in group["versions"]:
            gv = entry["groupVersion"]
            resources[gv] = _get(plane, f"/apis/{gv}")["resources"]
    return {"gitVersion": version["gitVersion"], "groups": groups, "resources": resources}


def dump(data: dict[str, Any]) -> str:
    """JSON with one line per group version."""
    def line(value: Any) -> str:
        return json.dumps(value, separators=(",", ":"))

    rows = [f"  {line(gv)}:{line(items)}" for gv, items in data["resources"].items()]
    return ("{" + f'"gitVersion":{line(data["gitVersion"])},\n'
            + f' "groups":{line(data["groups"])},\n'
            + ' "resources":{\n' + ",\n".join(rows) + "}}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assets", required=True,
                        help="directory holding the etcd and kube-apiserver binaries")
    parser.add_argument("--out", type=Path, default=None,
                        help="file to write (default: the package's data file of that version)")
    args = parser.parse_args(argv)
    try:
        with ControlPlane(args.assets, controller_manager=False) as plane:
            data = capture(plane)
    except ControlPlaneError as err:
        print(f"capture: {err}", file=sys.stderr)
        return 1
    major_minor = ".".join(data["gitVersion"].lstrip("v").split(".")[:2])
    out = args.out or DATA / f"kube-apiserver-{major_minor}-discovery.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump(data))
    count = sum(len(v) for v in data["resources"].values())
    print(f"capture: {data['gitVersion']}: {len(data['resources'])} group versions, "
          f"{count} resources and subresources -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
