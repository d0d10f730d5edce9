"""Generating a project's manifests, through ``python -m reconcilekit manifests``.

The generator runs as a command in a process of its own, in the project's
directory: it imports the project's package (which this process must not
keep: a second kind added in the same process would not be seen), and the
files it writes are its own business (RBAC and CRDs today; a project never
depends on the list). The child imports the same reconcilekit as this
process (its directory comes first on ``PYTHONPATH``).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Final

from .api_names import ScaffoldError

__all__ = ["generate_manifests"]

_TIMEOUT: Final = 300.0  # seconds; importing an operator and writing YAML takes about one
_LIBRARY_ROOT: Final = Path(__file__).resolve().parent.parent.parent


def generate_manifests(project: Path, command: str) -> str:
    """Run ``command`` (``python -m reconcilekit manifests ...``) in ``project``; what it
    printed. ScaffoldError (status 1) with its error output when it fails."""
    _, *words = shlex.split(command)  # "python" is this interpreter
    path = os.pathsep.join([str(_LIBRARY_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    try:
        done = subprocess.run([sys.executable, *words], cwd=project, capture_output=True,
                              text=True, timeout=_TIMEOUT, check=False,
                              env={**os.environ, "PYTHONPATH": path})
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ScaffoldError(f"the manifests were not generated ({err}); in {project} run: "
                            f"{command}", status=1) from None
    if done.returncode != 0:
        raise ScaffoldError(f"the manifests were not generated:\n{done.stderr.strip()}\n"
                            f"Once that is fixed, run in {project}: {command}", status=1)
    return done.stdout
