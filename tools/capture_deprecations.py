"""Capture the warnings kube-apiserver sends for its deprecated built-in versions into the
in-process server's package data.

Usage::

    python tools/capture_deprecations.py --assets DIR [--out FILE]

Starts etcd and kube-apiserver from ``DIR`` (a :class:`reconcilekit.testing.ControlPlane`
without kube-controller-manager), lists every built-in resource of every
served version that can be listed (``limit=1``), and keeps the ``Warning: 299``
header each answer carries: kube-apiserver adds one to every request of a
deprecated version (``v1 ComponentStatus is deprecated in v1.19+``), from
the Go types' lifecycle, which no discovery or OpenAPI document publishes.
It writes them to ``FILE`` (default: the package's
``data/kube-apiserver-<major.minor>-deprecations.json``), keyed
``version/plural`` for the core group and ``group/version/plural`` for the
others::

    {"gitVersion": "v1.28.7",
     "warnings": {"v1/componentstatuses": "v1 ComponentStatus is deprecated in v1.19+", ...}}

A resource that answers without a warning is left out. It fails with a
message (never a traceback) when the binaries are missing or the control
plane does not start.
"""

from __future__ import annotations

import json
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

from capture_common import get_json, run_capture

from reconcilekit.testing import ControlPlane

__all__ = ["capture", "main", "warning_text"]


def warning_text(header: str) -> str | None:
    """The text of a ``299 - "TEXT"`` warning header (Go's ``%q``), None for another."""
    code, _, rest = header.partition(" - ")
    if code.strip() != "299" or not rest.startswith('"'):
        return None
    text = json.loads(rest.strip())
    return text if isinstance(text, str) else None


def _warnings(plane: ControlPlane, path: str) -> list[str]:
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(plane.url + path, headers={
        "Authorization": f"Bearer {plane.token}", "Accept": "application/json"})
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        headers = answer.headers.get_all("Warning") or []
    return [t for t in map(warning_text, headers) if t is not None]


def capture(plane: ControlPlane) -> dict[str, Any]:
    """The warning of each listable built-in resource that has one, in the file's shape."""
    prefixes = [("v1", "/api/v1")]
    for group in get_json(plane, "/apis")["groups"]:
        prefixes += [(v["groupVersion"], f"/apis/{v['groupVersion']}")
                     for v in group["versions"]]
    warnings: dict[str, str] = {}
    for gv, prefix in prefixes:
        for resource in get_json(plane, prefix)["resources"]:
            plural = resource["name"]
            if "/" in plural or "list" not in resource["verbs"]:
                continue
            found = _warnings(plane, f"{prefix}/{plural}?limit=1")
            if found:
                warnings[f"{gv}/{plural}"] = found[0]
    return {"gitVersion": get_json(plane, "/version")["gitVersion"], "warnings": warnings}


def write(data: dict[str, Any], out: Path) -> str:
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return f"the deprecation warnings of {len(data['warnings'])} resources"


def main(argv: list[str] | None = None) -> int:
    return run_capture(__doc__ or "", capture,
                       lambda version: f"kube-apiserver-{version}-deprecations.json", write,
                       argv)


if __name__ == "__main__":
    sys.exit(main())
