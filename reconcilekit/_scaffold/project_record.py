"""``PROJECT.toml``: what a generated project is, as ``init`` and ``create kind`` wrote it.

The record (kubebuilder's ``PROJECT`` file) names the project, its package
and domain, and lists its kinds in the order they were added. ``create
kind`` reads it to know the project and its kinds, and writes it again with
one more; the generated registry module is made from it alone.

Guarantees: :meth:`ProjectRecord.text` and :func:`read_record` round-trip;
a record read is checked as the command line checks its arguments, so a
file edited by hand into something the commands would not have written is
refused with a :class:`ScaffoldError` naming the field.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from .api_names import (
    ScaffoldError,
    check_domain,
    check_group,
    check_kind,
    check_package,
    check_plural,
    check_project_name,
    check_version,
    module_name,
)

__all__ = ["LAYOUT", "RECORD_FILE", "KindRecord", "ProjectRecord", "read_record"]

RECORD_FILE: Final = "PROJECT.toml"
LAYOUT: Final = 1
"""The version of the generated layout; a record of another is refused."""


@dataclass(frozen=True, slots=True)
class KindRecord:
    """One kind of the project: its full API ``group``, ``version``, ``kind`` and ``plural``;
    its modules are named ``module``."""

    group: str
    version: str
    kind: str
    plural: str

    @property
    def module(self) -> str:
        return module_name(self.kind)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


@dataclass(frozen=True, slots=True)
class ProjectRecord:
    """A project: its ``name`` (distribution and manager), ``package`` and ``domain``, and
    its ``kinds`` in the order they were added."""

    name: str
    package: str
    domain: str
    kinds: tuple[KindRecord, ...] = ()

    @property
    def namespace(self) -> str:
        """Where the operator runs in its Deployment."""
        return f"{self.name}-system"

    def with_kind(self, kind: KindRecord) -> ProjectRecord:
        return replace(self, kinds=(*self.kinds, kind))

    def text(self) -> str:
        """The record as TOML (every value a checked name, so a JSON string is a TOML one)."""
        lines = ["# What this project is, for `python -m reconcilekit create kind`, which reads",
                 "# it and adds each new kind here. Written by reconcilekit: do not edit.",
                 f"layout = {LAYOUT}",
                 f"name = {json.dumps(self.name)}",
                 f"package = {json.dumps(self.package)}",
                 f"domain = {json.dumps(self.domain)}"]
        for kind in self.kinds:
            lines += ["", "[[kinds]]", f"group = {json.dumps(kind.group)}",
                      f"version = {json.dumps(kind.version)}",
                      f"kind = {json.dumps(kind.kind)}",
                      f"plural = {json.dumps(kind.plural)}"]
        return "\n".join(lines) + "\n"


def read_record(directory: Path) -> ProjectRecord:
    """The record of the project in ``directory``; ScaffoldError when there is none or it
    does not read as one."""
    path = directory / RECORD_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScaffoldError(f"{directory} is not a reconcilekit project (no {RECORD_FILE}); "
                            "make one with: python -m reconcilekit init") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ScaffoldError(f"cannot read {path}: {err}") from None
    if data.get("layout") != LAYOUT:
        raise ScaffoldError(f"{path}: layout {data.get('layout')!r} is not the one this "
                            f"reconcilekit writes ({LAYOUT})")
    try:
        project = ProjectRecord(
            name=check_project_name(_string(data, "name")),
            package=check_package(_string(data, "package")),
            domain=check_domain(_string(data, "domain")))
        kinds = data.get("kinds", [])
        if not isinstance(kinds, list) or not all(isinstance(k, dict) for k in kinds):
            raise ScaffoldError("kinds is not a list of tables ([[kinds]])")
        for entry in kinds:
            kind, group = check_kind(_string(entry, "kind")), _string(entry, "group")
            if not group.endswith(f".{project.domain}"):
                raise ScaffoldError(f"the group {group!r} of {kind} is not in the domain "
                                    f"{project.domain!r}")
            project = project.with_kind(KindRecord(
                group=check_group(group.removesuffix(f".{project.domain}"), project.domain),
                version=check_version(_string(entry, "version")),
                kind=kind, plural=check_plural(_string(entry, "plural"), kind)))
    except ScaffoldError as err:
        raise ScaffoldError(f"{path}: {err}") from None
    return project


def _string(table: dict[str, Any], key: str) -> str:
    value = table.get(key)
    if not isinstance(value, str):
        raise ScaffoldError(f"{key} is {'missing' if value is None else 'not a string'}")
    return value
