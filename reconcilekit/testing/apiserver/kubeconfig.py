"""Kubeconfig documents for the test servers: one token user, one cluster, one context."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig_document", "write_kubeconfig"]


def kubeconfig_document(name: str, server: str, token: str, *, namespace: str = "default",
                        ca_pem: bytes | None = None) -> dict[str, Any]:
    """A kubeconfig (as a dict) for ``server`` with a bearer ``token``; ``ca_pem`` is trusted."""
    cluster: dict[str, Any] = {"server": server}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {
            "cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
    }


def write_kubeconfig(document: dict[str, Any], path: str | Path) -> Path:
    """Write ``document`` to ``path`` (created with mode 0600: it holds a token)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.touch(mode=0o600)
    target.chmod(0o600)
    target.write_text(yaml.safe_dump(document, sort_keys=False))
    return target
