"""``python -m reconcilekit``: commands for an operator's project.

``manifests MODULE:CALLABLE --out DIR``: import ``MODULE``, call
``CALLABLE(client)`` with a :class:`~reconcilekit.Client` that is never
connected, and write the RBAC, webhook and CRD manifests of the
:class:`~reconcilekit.Manager` it returns into ``DIR`` (docs/manifests.md).
``--check`` writes nothing and fails when the files in ``DIR`` differ.

Exit status: 0 done (or up to date), 1 the files differ (``--check``) or the
target failed, 2 bad arguments or a target that cannot be used.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._client.client import Client
from ._manager.manager import Manager
from ._manifests import ManifestError, manifest_names, manifests, with_header
from .rbac import InvalidPermission

__all__ = ["generate_manifests", "main"]

_UNCONNECTED_HOST = "https://unconnected.invalid"


class TargetError(Exception):
    """The MODULE:CALLABLE cannot give a manager; the message says why."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reconcilekit",
                                     description="Commands for a reconcilekit operator.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    gen = commands.add_parser(
        "manifests", help="write the operator's RBAC, webhook and CRD manifests",
        description="Write rbac.yaml (and webhook.yaml, crds.yaml when there is something "
                    "to put in them) for the Manager that MODULE:CALLABLE builds. CALLABLE "
                    "is called with one argument, a Client that is never connected, and "
                    "returns the Manager, wired as the operator runs in its Deployment.")
    gen.add_argument("target", metavar="MODULE:CALLABLE",
                     help="e.g. examples.website.operator:build")
    gen.add_argument("--out", metavar="DIR", required=True, help="the directory to write into")
    gen.add_argument("--namespace", metavar="NS",
                     help="the namespace the operator runs in, with its ServiceAccount "
                          "(default: its Leases' or webhook Service's namespace)")
    gen.add_argument("--service-account", metavar="NAME",
                     help="the operator's ServiceAccount (default: --name)")
    gen.add_argument("--name", metavar="NAME",
                     help="the name of its roles, bindings and Service labels (default: the "
                          "Manager's name)")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 naming the files that differ from what "
                          "would be written")
    return parser


def load_target(target: str) -> Callable[[Client], Any]:
    """The callable ``MODULE:CALLABLE`` names; TargetError saying what is wrong."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(f"{target!r} is not MODULE:CALLABLE (e.g. "
                          "examples.website.operator:build)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise TargetError(f"cannot import {module_name}: {err}") from None
    except Exception as err:  # the module itself is broken: say how, without a traceback
        raise TargetError(f"importing {module_name} raised {type(err).__name__}: {err}") from None
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise TargetError(f"{module_name} has no {attribute}") from None
    if not callable(found):
        raise TargetError(f"{target} is a {type(found).__name__}, not a callable")
    return found  # type: ignore[no-any-return]


async def build_manager(build: Callable[[Client], Any], target: str) -> tuple[Manager, Client]:
    """Call the target with an unconnected client; the manager it returns."""
    from kubernetes_asyncio.client import Configuration

    client = Client(Configuration(host=_UNCONNECTED_HOST))
    try:
        manager = build(client)
    except Exception as err:
        await client.close()
        raise TargetError(f"{target}(client) raised {type(err).__name__}: {err}") from None
    if asyncio.iscoroutine(manager):
        manager.close()
        await client.close()
        raise TargetError(f"{target} is a coroutine function: the generator calls a plain "
                          "function that returns the Manager")
    if not isinstance(manager, Manager):
        await client.close()
        raise TargetError(f"{target}(client) returned {type(manager).__name__}, not a "
                          "reconcilekit.Manager")
    return manager, client


def generate_manifests(target: str, *, command: str, namespace: str | None = None,
                       service_account: str | None = None,
                       name: str | None = None) -> dict[str, str]:
    """File name -> YAML text for the manager ``target`` builds (what ``manifests`` writes).

    Raises TargetError or ManifestError (both with a message for the user).
    """
    build = load_target(target)

    async def generate() -> dict[str, str]:
        manager, client = await build_manager(build, target)
        try:
            names = manifest_names(manager, name=name, namespace=namespace,
                                   service_account=service_account)
            return with_header(manifests(manager, names), command)
        finally:
            await client.close()

    return asyncio.run(generate())


def _command_line(args: argparse.Namespace) -> str:
    words = ["python", "-m", "reconcilekit", "manifests", args.target, "--out", args.out]
    for option in ("namespace", "service_account", "name"):
        value = getattr(args, option)
        if value:
            words += [f"--{option.replace('_', '-')}", value]
    return shlex.join(words)


def _manifests(args: argparse.Namespace) -> int:
    command = _command_line(args)
    try:
        files = generate_manifests(args.target, command=command, namespace=args.namespace,
                                   service_account=args.service_account, name=args.name)
    except TargetError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ManifestError, InvalidPermission) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out = Path(args.out)
    if args.check:
        stale = [name for name, text in sorted(files.items())
                 if not (out / name).is_file() or (out / name).read_text() != text]
        if stale:
            print(f"out of date: {', '.join(str(out / n) for n in stale)}; generate them "
                  f"again with:\n  {command}", file=sys.stderr)
            return 1
        return 0
    try:
        out.mkdir(parents=True, exist_ok=True)
        for name, text in sorted(files.items()):
            (out / name).write_text(text)
    except OSError as err:
        print(f"error: cannot write into {out}: {err}", file=sys.stderr)
        return 1
    print(f"wrote {', '.join(str(out / n) for n in sorted(files))}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "manifests":
        return _manifests(args)
    raise AssertionError(f"unknown command {args.command}")  # argparse refused it already


if __name__ == "__main__":
    sys.exit(main())
