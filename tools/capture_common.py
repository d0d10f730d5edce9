"""What the capture tools share: a kube-apiserver to read from, its JSON, and the
command line that writes one data file of the in-process server's package.

Each ``tools/capture_*.py`` starts etcd and kube-apiserver from ``--assets DIR``
(a :class:`reconcilekit.testing.ControlPlane` without kube-controller-manager),
reads what it captures with :func:`get_json`, and writes it to ``--out FILE``
(default: the package's data file named for the server's major.minor
version). A missing binary or a control plane that does not start is one
line on stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import ssl
import sys
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reconcilekit.testing import ControlPlane
from reconcilekit.testing._control_plane import ControlPlaneError

__all__ = ["DATA", "get_json", "run_capture"]

DATA = Path(__file__).resolve().parent.parent / "reconcilekit/testing/apiserver/data"


def get_json(plane: ControlPlane, path: str, accept: str = "application/json") -> Any:
    """``GET path`` on the control plane's kube-apiserver, as its administrator."""
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    request = urllib.request.Request(plane.url + path, headers={
        "Authorization": f"Bearer {plane.token}", "Accept": accept})
    with urllib.request.urlopen(request, context=context, timeout=30) as answer:
        return json.loads(answer.read())


def run_capture(doc: str, capture: Callable[[ControlPlane], dict[str, Any]],
                file_name: Callable[[str], str], write: Callable[[dict[str, Any], Path], str],
                argv: list[str] | None = None) -> int:
    """The command line of a capture tool: ``capture`` what a running kube-apiserver
    serves (a dict with its ``gitVersion``), ``write`` it to the file ``file_name`` names
    for the server's major.minor version (or ``--out``), print what was written."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
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
    out: Path = args.out or DATA / file_name(major_minor)
    out.parent.mkdir(parents=True, exist_ok=True)
    what = write(data, out)
    print(f"capture: {data['gitVersion']}: {what} -> {out}")
    return 0
