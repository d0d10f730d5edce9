"""Where each file of a generated project goes, and what it holds.

A project's own files (:func:`project_files`) are written once, by ``init``;
a kind's (:func:`kind_files`) once, by the command that adds the kind. Two
files are reconcilekit's and are written again each time a kind is added:
``PROJECT.toml`` (:mod:`.project_record`) and the registry module
(:func:`registry_file`), made from the record alone, so that what ``create
kind`` expects to find there can be compared with what is there.

Guarantee: the generated Python is ruff-clean under the project's settings
(imports sorted and wrapped as ruff's isort wants them, lines of at most 100
characters for names the checks of :mod:`.api_names` accept).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Final

from .._version import __version__
from .api_names import ScaffoldError
from .project_record import RECORD_FILE, KindRecord, ProjectRecord
from .rendering import render

__all__ = [
    "EXECUTABLES",
    "MANIFESTS_DIR",
    "import_statement",
    "kind_files",
    "manifests_command",
    "project_files",
    "record_file",
    "registry_file",
    "write_files",
]

MANIFESTS_DIR: Final = "manifests"
EXECUTABLES: Final = frozenset({PurePosixPath(".ci/run")})
"""The generated files to make executable."""

_LINE: Final = 100  # the generated project's ruff line-length

# project file -> its template
_PROJECT: Final = {
    "pyproject.toml": "pyproject.toml.tmpl",
    "README.md": "README.md.tmpl",
    "Dockerfile": "Dockerfile.tmpl",
    ".dockerignore": "dockerignore.tmpl",
    ".gitignore": "gitignore.tmpl",
    ".ci/run": "ci_run.sh.tmpl",
    ".github/workflows/ci.yml": "ci_workflow.yml.tmpl",
    "{package}/__init__.py": "package_init.py.tmpl",
    "{package}/__main__.py": "package_main.py.tmpl",
    "{package}/manager.py": "manager.py.tmpl",
    "{package}/kinds/__init__.py": "kinds_init.py.tmpl",
    "{package}/controllers/__init__.py": "controllers_init.py.tmpl",
    "tests/test_manifests.py": "test_manifests.py.tmpl",
}
_KIND: Final = {
    "{package}/kinds/{module}.py": "kind.py.tmpl",
    "{package}/controllers/{module}.py": "controller.py.tmpl",
    "tests/test_{module}.py": "test_kind.py.tmpl",
}


def manifests_command(record: ProjectRecord) -> str:
    """The command that writes the project's manifests, run in its directory."""
    return (f"python -m reconcilekit manifests {record.package}.manager:build "
            f"--out {MANIFESTS_DIR}")


def _project_values(record: ProjectRecord) -> dict[str, str]:
    return {"name": record.name, "package": record.package, "domain": record.domain,
            "namespace": record.namespace, "reconcilekit_version": __version__,
            "manifests_command": manifests_command(record)}


def project_files(record: ProjectRecord) -> dict[PurePosixPath, str]:
    """Path in the project -> text, for every file ``init`` writes (the registry and the
    record included, with the record's kinds)."""
    values = _project_values(record)
    files = {PurePosixPath(path.format(package=record.package)): render(template, values)
             for path, template in _PROJECT.items()}
    return dict([*files.items(), registry_file(record), record_file(record)])


def kind_files(record: ProjectRecord, kind: KindRecord) -> dict[PurePosixPath, str]:
    """Path in the project -> text, for the files of ``kind`` (its module in kinds/, its
    controller, its test)."""
    constant, package, module = kind.plural.upper(), record.package, kind.module
    kind_names = [constant, f"{constant}_KIND", kind.kind]
    values = {**_project_values(record), "kind": kind.kind, "plural": kind.plural,
              "constant": constant, "module": module, "group": kind.group,
              "kind_version": kind.version, "api_version": kind.api_version,
              "kind_import_relative": import_statement(f"..kinds.{module}",
                                                       [constant, "GROUP", kind.kind]),
              "kind_import_absolute": import_statement(f"{package}.kinds.{module}",
                                                       kind_names),
              "controller_import": import_statement(f"{package}.controllers.{module}",
                                                    ["FINALIZER", "setup"])}
    return {PurePosixPath(path.format(package=package, module=module)): render(template, values)
            for path, template in _KIND.items()}


def registry_file(record: ProjectRecord) -> tuple[PurePosixPath, str]:
    """The registry module: its path, and its text for the record's kinds."""
    modules = [kind.module for kind in record.kinds]
    imports = f"\n{import_statement('.controllers', modules)}\n" if modules else ""
    setups = "".join(f"\n    {module}.setup," for module in modules)
    text = render("registry.py.tmpl", {"imports": imports,
                                       "setups": f"({setups}\n)" if modules else "()"})
    return PurePosixPath(f"{record.package}/registry.py"), text


def record_file(record: ProjectRecord) -> tuple[PurePosixPath, str]:
    return PurePosixPath(RECORD_FILE), record.text()


def _sort_key(name: str) -> tuple[int, str]:
    """ruff's isort order within a ``from`` import: constants, classes, then the rest."""
    if name.isupper() and len(name) > 1:
        return 0, name
    return (1 if name[:1].isupper() else 2), name


def import_statement(module: str, names: list[str]) -> str:
    """``from module import names`` as ruff's isort writes it: sorted, on one line when it
    fits, else one name a line in parentheses."""
    ordered = sorted(set(names), key=_sort_key)
    line = f"from {module} import {', '.join(ordered)}"
    if len(line) <= _LINE:
        return line
    return "\n".join([f"from {module} import (", *(f"    {n}," for n in ordered), ")"])


def write_files(directory: Path, files: Mapping[PurePosixPath, str]) -> None:
    """Write ``files`` into ``directory``, making their directories; each file is written
    whole or not at all (a temporary file renamed over it). ScaffoldError (status 1) naming
    the file that could not be written."""
    for path, text in files.items():
        target = directory / path
        temporary = target.with_name(f".{target.name}.new")
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(text, encoding="utf-8")
            if path in EXECUTABLES:
                temporary.chmod(0o755)
            temporary.replace(target)
        except OSError as err:
            raise ScaffoldError(f"cannot write {target}: {err}", status=1) from None
