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

import gzip
import json
import sys
from pathlib import Path
from typing import Any

from capture_common import get_json, run_capture

from reconcilekit.testing import ControlPlane

RBAC = "/apis/rbac.authorization.k8s.io/v1"
KINDS = (("ClusterRole", "clusterroles"), ("ClusterRoleBinding", "clusterrolebindings"),
         ("Role", "roles"), ("RoleBinding", "rolebindings"))
KEPT_META = ("name", "namespace", "labels", "annotations")
KEPT = ("aggregationRule", "rules", "roleRef", "subjects")


def _bootstrap(item: dict[str, Any]) -> bool:
    """Whether kube-apiserver made the object (its bootstrap objects are marked so)."""
    labels = item["metadata"].get("labels") or {}
    return labels.get("kubernetes.io/bootstrapping") == "rbac-defaults"


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The bootstrap objects of a running kube-apiserver, in the file's shape."""
    objects = []
    for kind, plural in KINDS:
        for item in get_json(plane, f"{RBAC}/{plural}")["items"]:
            if not _bootstrap(item):
                continue
            meta = {k: item["metadata"][k] for k in KEPT_META if k in item["metadata"]}
            objects.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
                            "metadata": meta, **{k: item[k] for k in KEPT if k in item}})
    return {"gitVersion": get_json(plane, "/version")["gitVersion"], "objects": objects}


def write(data: dict[str, Any], out: Path) -> str:
    """Gzipped JSON, one line per object."""
    text = "{" + f'"gitVersion":{json.dumps(data["gitVersion"])},\n "objects":[\n' + ",\n".join(
        "  " + json.dumps(o, separators=(",", ":")) for o in data["objects"]) + "]}\n"
    out.write_bytes(gzip.compress(text.encode(), mtime=0))
    return f"{len(data['objects'])} bootstrap RBAC objects"


def main(argv: list[str] | None = None) -> int:
    return run_capture(__doc__ or "", capture,
                       lambda version: f"kube-apiserver-{version}-bootstrap-rbac.json.gz", write,
                       argv)


if __name__ == "__main__":
    sys.exit(main())
