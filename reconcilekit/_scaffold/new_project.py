"""``init``: a new operator project in a directory, with its first kind if one is named.

The directory must be absent or empty (a ``.git`` alone is allowed, for a
repository made first); every name is checked before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .api_names import ScaffoldError, check_domain, check_package, check_project_name
from .layout import kind_files, project_files, write_files
from .new_kind import new_kind
from .project_record import ProjectRecord

__all__ = ["FirstKind", "init_project"]


@dataclass(frozen=True, slots=True)
class FirstKind:
    """The kind ``init`` adds with the project: as ``create kind``'s arguments."""

    group: str
    version: str
    kind: str
    plural: str | None = None


def _check_empty(directory: Path) -> None:
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ScaffoldError(f"{directory} is not a directory")
    try:
        found = sorted(p.name for p in directory.iterdir() if p.name != ".git")
    except OSError as err:
        raise ScaffoldError(f"cannot read {directory}: {err}") from None
    if found:
        shown = ", ".join(found[:5]) + (", ..." if len(found) > 5 else "")
        raise ScaffoldError(f"{directory} is not empty ({shown}): init writes a project "
                            "into an empty or new directory")


def init_project(directory: Path, *, domain: str, name: str | None = None,
                 package: str | None = None,
                 first: FirstKind | None = None) -> tuple[ProjectRecord, list[PurePosixPath]]:
    """Write a new project into ``directory``; its record and the paths written.

    ``name`` defaults to the directory's name, ``package`` to the name with ``_`` for
    ``-``. ScaffoldError, before anything is written, when a name or the directory will
    not do.
    """
    _check_empty(directory)
    name = check_project_name(name or directory.resolve().name)
    record = ProjectRecord(name=name, package=check_package(package or name.replace("-", "_")),
                           domain=check_domain(domain))
    if first is None:
        files = project_files(record)
    else:
        kind = new_kind(record, group=first.group, version=first.version, kind=first.kind,
                        plural=first.plural)
        kinds = kind_files(record, kind)
        files = project_files(record.with_kind(kind))
        if clash := sorted(str(path) for path in files.keys() & kinds.keys()):
            raise ScaffoldError(f"--kind {kind.kind}: its files would be the project's own "
                                f"{', '.join(clash)}; choose another name")
        record = record.with_kind(kind)
        files.update(kinds)
    write_files(directory, files)
    return record, list(files)
