"""``python -m reconcilekit init`` and ``create kind``: a new operator project, a new kind.

``init [DIR] --domain example.com [--group web --version v1 --kind Website]``
writes a project into DIR (absent or empty): its package with a manager,
the kind's shape, CRD, controller and tests when one is named, a Dockerfile,
a CI script and a README; then it generates the manifests. ``create kind
--group G --version V --kind K [--dir DIR]`` adds a kind to the project in
DIR and generates the manifests again (docs/scaffolding.md).

:func:`add_commands` registers both on a command line's sub-commands;
:func:`run` runs the one parsed. Exit status: 0 done; 1 a step failed (a
file not written, the manifests not generated: what was written stays, and
the message says what to run); 2 bad arguments or a directory that cannot be
used, and nothing was written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path, PurePosixPath
from typing import Final

from .api_names import ScaffoldError
from .layout import manifests_command
from .manifest_command import generate_manifests
from .new_kind import create_kind
from .new_project import FirstKind, init_project
from .project_record import read_record

__all__ = ["COMMANDS", "add_commands", "run"]

COMMANDS: Final = ("init", "create")
"""The sub-commands :func:`add_commands` registers (``args.command`` after parsing)."""

_KIND_OPTIONS: Final = ("group", "version", "kind")


def _kind_options(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument("--group", required=required, metavar="GROUP",
                        help="the kind's API group before the domain: web makes "
                             "web.<domain>")
    parser.add_argument("--version", required=required, metavar="VERSION",
                        help="its API version: v1, v1alpha1, v2beta3, ...")
    parser.add_argument("--kind", required=required, metavar="KIND",
                        help="its name, in PascalCase (Website)")
    parser.add_argument("--plural", metavar="PLURAL",
                        help="its resource name (default: the kind in lower case, made "
                             "plural: websites)")


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``init`` and ``create`` (with ``create kind``) to ``commands``, the sub-commands
    of a parser whose ``dest`` is ``command``."""
    init = commands.add_parser(
        "init", help="write a new operator project into a directory",
        description="Write a new operator project into DIR (absent or empty): a package "
                    "whose build(client) returns its Manager, a __main__ that runs it, "
                    "tests on reconcilekit's pytest plugin, a Dockerfile, a CI script "
                    "(.ci/run) and a README. With --group, --version and --kind, its first "
                    "kind too (as create kind adds one). Then generate its manifests.")
    init.add_argument("directory", nargs="?", default=".", metavar="DIR",
                      help="where to write the project (default: the current directory)")
    init.add_argument("--domain", required=True,
                      help="the domain of the project's API groups (example.com)")
    init.add_argument("--name", help="the project's name: its distribution, its manager, "
                                     "its namespace NAME-system (default: DIR's name)")
    init.add_argument("--package", help="its Python package (default: the name, with _ "
                                        "for -)")
    _kind_options(init, required=False)

    create = commands.add_parser("create", help="add a kind to an operator project",
                                 description="Add to a project that init wrote.")
    what = create.add_subparsers(dest="create_what", required=True, metavar="WHAT")
    kind = what.add_parser(
        "kind", help="add a custom kind and its controller",
        description="Add a custom kind to the project in DIR: its shape and CRD "
                    "(PACKAGE/kinds/), its controller (PACKAGE/controllers/) and its tests "
                    "(tests/), wired into the manager through PACKAGE/registry.py. Then "
                    "generate the manifests again.")
    kind.add_argument("--dir", default=".", metavar="DIR",
                      help="the project's directory (default: the current directory)")
    _kind_options(kind, required=True)


def run(args: argparse.Namespace) -> int:
    """Run the command ``args`` holds (``args.command`` is one of :data:`COMMANDS`); the
    exit status. Errors are one message on standard error, never a traceback."""
    try:
        if args.command == "init":
            return _init(args)
        if args.command == "create" and args.create_what == "kind":
            return _create_kind(args)
    except ScaffoldError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.status
    raise ValueError(f"not a scaffolding command: {args.command}")


def _init(args: argparse.Namespace) -> int:
    given = [name for name in _KIND_OPTIONS if getattr(args, name) is not None]
    if (given and len(given) < len(_KIND_OPTIONS)) or (args.plural and not given):
        raise ScaffoldError("give --group, --version and --kind together (and --plural only "
                            "with them) to add a first kind, or none of them")
    first = FirstKind(args.group, args.version, args.kind, args.plural) if given else None
    directory = Path(args.directory)
    record, written = init_project(directory, domain=args.domain, name=args.name,
                                   package=args.package, first=first)
    print(f"wrote the project {record.name} into {directory}:")
    _list(written)
    _manifests(directory, manifests_command(record))
    kind_hint = ("" if record.kinds else
                 "\n  python -m reconcilekit create kind --group web --version v1 "
                 "--kind Website")
    print(f"next, in {directory}:\n  .ci/run --install   # pip install -e '.[test]', then "
          f"ruff, mypy, pytest{kind_hint}")
    return 0


def _create_kind(args: argparse.Namespace) -> int:
    directory = Path(args.dir)
    written = create_kind(directory, group=args.group, version=args.version, kind=args.kind,
                          plural=args.plural)
    print(f"added the kind {args.kind} to {directory}:")
    _list(written)
    _manifests(directory, manifests_command(read_record(directory)))
    return 0


def _list(paths: list[PurePosixPath]) -> None:
    for path in sorted(paths):
        print(f"  {path}")


def _manifests(directory: Path, command: str) -> None:
    print(f"generating the manifests: {command}")
    sys.stdout.flush()
    print(generate_manifests(directory, command).rstrip())
