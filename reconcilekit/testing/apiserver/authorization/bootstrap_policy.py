"""The roles and bindings kube-apiserver makes for itself when it starts.

``data/kube-apiserver-1.28-bootstrap-rbac.json.gz`` holds kube-apiserver
v1.28.7's bootstrap policy, captured by ``tools/capture_bootstrap_rbac.py``:
62 ClusterRoles (``cluster-admin``, ``admin``, ``edit``, ``view``, and the
``system:`` roles of discovery, basic users, public information, nodes and
every controller), 43 ClusterRoleBindings, and 7 Roles and 7 RoleBindings in
``kube-system`` and ``kube-public``. Nothing here is written by hand.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
from typing import Any

import orjson

__all__ = ["POLICY_FILE", "bootstrap_objects"]

POLICY_FILE = "kube-apiserver-1.28-bootstrap-rbac.json.gz"


@functools.cache
def _captured() -> bytes:
    package = (__package__ or "").rpartition(".")[0]  # reconcilekit.testing.apiserver
    return gzip.decompress((importlib.resources.files(package) / "data" / POLICY_FILE)
                           .read_bytes())


def bootstrap_objects() -> list[dict[str, Any]]:
    """A fresh copy of every bootstrap object, ClusterRoles first, as created."""
    objects: list[dict[str, Any]] = orjson.loads(_captured())["objects"]
    return objects
