"""The install an operator pulls and ``import reconcilekit``: before and after, beside kopf.

Run: ``python -m benchmarks.install [--before REV | --before-dir DIR] [--runs 20]``
(needs the package index; a few minutes, mostly pip). Numbers go in
docs/performance.md. Not in ``python -m benchmarks``'s default set (it
downloads packages); ``python -m benchmarks --only install`` runs it.

Each subject is installed into a fresh virtual environment of this Python
(``python -m venv``, pip's defaults, so byte-code compiled as a user gets it):

* ``reconcilekit (before)``: the wheel built from ``--before`` (a git revision,
  exported with ``git archive``; default the last commit with the old
  dependencies) or ``--before-dir`` (a checkout);
* ``reconcilekit``: the wheel built from this checkout, no extras (an operator);
* ``reconcilekit[testing]``: the same with the in-process API server's extra;
* ``kopf``: ``pip install kopf`` from the index.

Measured: the packages the install added (the venv's own pip and setuptools
left out), the megabytes it added to site-packages, and the wall time of
``python -c "import X"`` in a fresh interpreter (median of ``--runs``, the
subjects taken in turn so drift hits all alike), beside ``python -c pass``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "ec38247"  # the last commit whose install carried jsonschema and CEL


@dataclass
class Subject:
    label: str
    requirement: str  # what pip installs
    module: str
    packages: int = 0
    megabytes: float = 0.0
    times: list[float] | None = None


def _site_packages(venv: Path) -> Path:
    out = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _packages(venv: Path) -> set[str]:
    out = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=json",
                          "--disable-pip-version-check"], check=True, capture_output=True,
                         text=True)
    return {p["name"].lower() for p in json.loads(out.stdout)}


def _install(subject: Subject, venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = _site_packages(venv)
    seed_packages, seed_size = _packages(venv), _size(site)
    print(f"installing {subject.label} ...", file=sys.stderr, flush=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                    "--disable-pip-version-check", subject.requirement], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subject.packages = len(_packages(venv) - seed_packages)
    subject.megabytes = (_size(site) - seed_size) / 1e6


def _time(python: Path, code: str) -> float:
    started = time.perf_counter()
    subprocess.run([str(python), "-c", code], check=True, cwd=tempfile.gettempdir(),
                   env={k: v for k, v in os.environ.items() if not k.startswith("PYTHON")})
    return time.perf_counter() - started


def _export(rev: str, into: Path) -> Path:
    """The tree of ``rev`` (``git archive``: nothing written to the repository)."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def run(before: str | None, before_dir: Path | None, runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="rk-install-") as tmp:
        work = Path(tmp)
        subjects = []
        if before_dir is None and before:
            before_dir = _export(before, work / "before")
        if before_dir is not None:
            subjects.append(Subject(f"`reconcilekit`, before ({before or before_dir.name})",
                                    str(before_dir), "reconcilekit"))
        subjects += [Subject("`reconcilekit`", str(ROOT), "reconcilekit"),
                     Subject("`reconcilekit[testing]`", f"{ROOT}[testing]", "reconcilekit"),
                     Subject("`kopf`", "kopf", "kopf")]
        venvs = {}
        for i, subject in enumerate(subjects):
            venvs[subject.label] = work / f"venv{i}"
            _install(subject, venvs[subject.label])
        floor: list[float] = []
        for subject in subjects:
            subject.times = []
            _time(venvs[subject.label] / "bin" / "python", f"import {subject.module}")  # warm
        for _ in range(runs):  # in turn, so that drift in the machine's load hits all alike
            floor.append(_time(venvs[subjects[0].label] / "bin" / "python", "pass"))
            for subject in subjects:
                assert subject.times is not None
                subject.times.append(_time(venvs[subject.label] / "bin" / "python",
                                           f"import {subject.module}"))
        _report(subjects, statistics.median(floor), runs)


def _report(subjects: list[Subject], floor: float, runs: int) -> None:
    base = next(s for s in subjects if s.label == "`reconcilekit`")
    kopf = next(s for s in subjects if s.label == "`kopf`")
    print(f"| `pip install` (fresh venv, Python "
          f"{sys.version_info.major}.{sys.version_info.minor}) "
          f"| packages added | MB added to site-packages | `import` (median of {runs}) "
          f"| import / kopf's |")
    print("|---|---:|---:|---:|---:|")
    for s in subjects:
        assert s.times is not None
        median = statistics.median(s.times)
        print(f"| {s.label} | {s.packages} | {s.megabytes:.1f} | {median * 1000:.0f} ms "
              f"| {median / statistics.median(kopf.times or [1]):.2f} |")
    print(f"| `python -c pass` (the interpreter alone) | | | {floor * 1000:.0f} ms | |")
    before = next((s for s in subjects if ", before (" in s.label), None)
    if before is not None and before.times and base.times:
        print(f"\nafter / before: packages {base.packages / before.packages:.2f}, MB "
              f"{base.megabytes / before.megabytes:.2f}, import "
              f"{statistics.median(base.times) / statistics.median(before.times):.2f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE, metavar="REV",
                        help=f"git revision of the 'before' column (default {BEFORE}; "
                             "'none' leaves it out)")
    parser.add_argument("--before-dir", type=Path, metavar="DIR",
                        help="a checkout for the 'before' column instead of --before")
    parser.add_argument("--runs", type=int, default=20, help="fresh interpreters per import")
    args = parser.parse_args(argv)
    if args.before_dir is not None and not (args.before_dir / "pyproject.toml").is_file():
        parser.error(f"--before-dir {args.before_dir}: no pyproject.toml there")
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    run(None if args.before == "none" else args.before, args.before_dir, args.runs)


if __name__ == "__main__":
    main()
