"""Capture kube-apiserver's bootstrap RBAC policy into the in-process server's package data.

Usage::

    python tools/capture_bootstrap_rbac.py --assets DIR [--out FILE]

Starts etcd and kube-apiserver from ``DIR`` (a :class:`reconcilekit.testing.ControlPlane`
without kube-controller-manager), lists the ClusterRoles, ClusterRoleBindings,
Roles and RoleBindings kube-apiserver creates for itself when it starts (its
``rbac/bootstrap-roles`` post-start hook: ``cluster-admin``, ``admin``,
``edit``, ``view``, the ``system:*`` roles of discovery, basic users, the
controllers and the nodes, and their bindings) and writes them to ``FILE``
(default: the package's ``data/kube-apiserver-<major.minor>-bootstrap-rbac.json.gz``),
each as it would be created: kind, name, namespace, labels, annotations and
rules, aggregation rule, role reference or subjects, nothing the server
fills in itself. The aggregated roles' rules are empty in the capture (the
clusterrole-aggregation controller fills them; the in-process server plays
it). It fails with a message (never a traceback) when the binaries are
missing or the control plane does not start.
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
from reconcilekit.testing._control_plane import ControlPlaneError

DATA = Path(__file__).resolve().parent.parent / "reconcilekit/testing/apiserver/data"
RBAC = "/apis/rbac.authorization.k8s.io/v1"
KINDS = (("ClusterRole", "clusterroles"), ("ClusterRoleBinding", "clusterrolebindings"),
         ("Role", "roles"), ("RoleBinding", "rolebindings"))
KEPT_META = ("name", "namespace", "labels", "annotations")
KEPT = ("aggregationRule", "rules", "roleRef", "subjects")


def _get(plane: ControlPlane, path: str) -> Any:
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(plane.url + path, headers={
        "Authorization": f"Bearer {plane.token}", "Accept": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        return json.loads(answer.read())


def _bootstrap(item: dict[str, Any]) -> bool:
    """Whether kube-apiserver made the object (its bootstrap objects are marked so)."""
    labels = item["metadata"].get("labels") or {}
    return labels.get("kubernetes.io/bootstrapping") == "rbac-defaults"


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The bootstrap objects of a running kube-apiserver, in the file's shape."""
    objects = []
    for kind, plural in KINDS:
        for item in _get(plane, f"{RBAC}/{plural}")["items"]:
            if not _bootstrap(item):
                continue
            meta = {k: item["metadata"][k] for k in KEPT_META if k in item["metadata"]}
            objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                            "metadata": meta, **{k: item[k] for k in KEPT if k in item}})
    return {"gitVersion": _get(plane, "/version")["gitVersion"], "objects": objects}


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
    out = args.out or DATA / f"kube-apiserver-{major_minor}-bootstrap-rbac.json.gz"
    out.parent.mkdir(parents=True, exist_ok=True)
    text = "{" + f'"gitVersion":{json.dumps(data["gitVersion"])},\n "objects":[\n' + ",\n".join(
        "  " + json.dumps(o, separators=(",", ":"), sort_keys=False) for o in data["objects"]
    ) + "]}\n"
    out.write_bytes(gzip.compress(text.encode(), mtime=0))
    print(f"capture: {data['gitVersion']}: {len(data['objects'])} bootstrap RBAC objects -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
