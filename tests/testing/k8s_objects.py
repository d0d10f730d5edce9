"""Object builders for the conformance tests."""

from __future__ import annotations

from typing import Any


def pod(name: str, labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {}, **meta},
            "spec": {"containers": [{"name": "main", "image": "busybox"}]}}


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta},
            "data": data or {}}


def widget(name: str, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget",
            "metadata": {"name": name, **meta}, "spec": spec or {"size": 1}}
