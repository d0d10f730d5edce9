"""``create kind``: a kind added to a project, its controller wired into the manager.

The wiring is the registry module, which reconcilekit writes from
``PROJECT.toml`` alone; user code is never edited. Before anything is
written, the kind is checked to be new (no kind of that name, module or
resource in the project; none of its files present) and the registry to be
what reconcilekit last wrote there, so a hand-edited registry is never
overwritten.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from .api_names import (
    ScaffoldError,
    check_group,
    check_kind,
    check_plural,
    check_version,
    default_plural,
)
from .layout import kind_files, record_file, registry_file, write_files
from .project_record import RECORD_FILE, KindRecord, ProjectRecord, read_record

__all__ = ["create_kind", "new_kind"]


def new_kind(record: ProjectRecord, *, group: str, version: str, kind: str,
             plural: str | None) -> KindRecord:
    """The kind the arguments name, checked, and checked to be new to ``record``."""
    kind = check_kind(kind)
    new = KindRecord(group=check_group(group, record.domain), version=check_version(version),
                     kind=kind, plural=check_plural(plural or default_plural(kind), kind))
    for old in record.kinds:
        if old.kind == new.kind:
            more = (" (create kind does not add a second version to a kind)"
                    if old.group == new.group else "")
            raise ScaffoldError(f"the project has a kind {old.kind} already, in "
                                f"{old.api_version}{more}")
        if old.module == new.module:
            raise ScaffoldError(f"{new.kind}'s modules would be named {new.module}, as "
                                f"{old.kind}'s are: choose another name")
        if (old.group, old.plural) == (new.group, new.plural):
            raise ScaffoldError(f"the project has the resource {new.plural}.{new.group} "
                                f"already ({old.kind}): give another --plural")
    return new


def create_kind(directory: Path, *, group: str, version: str, kind: str,
                plural: str | None) -> list[PurePosixPath]:
    """Add the kind the arguments name to the project in ``directory``: write its files,
    then the registry and the record. The paths written, in order. ScaffoldError, before
    anything is written, when the kind or the project will not do."""
    record = read_record(directory)
    new = new_kind(record, group=group, version=version, kind=kind, plural=plural)
    registry, expected = registry_file(record)
    try:
        found: str | None = (directory / registry).read_text(encoding="utf-8")
    except FileNotFoundError:
        found = None
    except (OSError, UnicodeDecodeError) as err:
        raise ScaffoldError(f"cannot read {directory / registry}: {err}") from None
    if found != expected:
        state = "missing" if found is None else "not as reconcilekit wrote it"
        raise ScaffoldError(f"{directory / registry} is {state}: it lists the kinds of "
                            f"{RECORD_FILE} and nothing else, and create kind rewrites it. "
                            "Restore it, or add the kind by hand.")
    files = kind_files(record, new)
    present = [str(path) for path in files if (directory / path).exists()]
    if present:
        raise ScaffoldError(f"{new.kind}'s files exist already in {directory}: "
                            f"{', '.join(present)}")
    grown = record.with_kind(new)
    files.update([registry_file(grown), record_file(grown)])
    write_files(directory, files)
    return list(files)
