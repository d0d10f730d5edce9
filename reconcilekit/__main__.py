"""``python -m reconcilekit``: commands for an operator's project.

``manifests MODULE:CALLABLE --out DIR [OPTIONS] [-- ARG...]``: import
``MODULE``, call ``CALLABLE(client)`` with a :class:`~reconcilekit.Client`
that is never connected, and write the manifests that deploy the
:class:`~reconcilekit.Manager` it returns into ``DIR`` (docs/manifests.md):
its RBAC, Deployment, webhook Service and certificate, CRDs and a
kustomization.yaml; the ``ARG``s after ``--`` are the container's arguments.
``--check`` writes nothing and fails when the files in ``DIR`` differ.

``init DIR --domain D [--group G --version V --kind K]`` writes a new operator
project, and ``create kind --group G --version V --kind K`` adds a kind to one
(docs/scaffolding.md).

Each command is one function that adds its subparser to the parser
(:data:`COMMANDS`) and sets the function that runs it.

Exit status: 0 done (or up to date), 1 the files differ (``--check``), the
target failed or its manager cannot be deployed as asked (the message says
why), 2 bad arguments or a target that cannot be used.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from . import _scaffold
from ._client.client import Client
from ._manager.manager import Manager
from ._manifests.deploy_options import (
    CERTIFICATES,
    DeploymentOptions,
    ManifestError,
    check_image,
    parse_resources,
)
from ._manifests.manifests import manifest_names, manifests, with_header
from .rbac import InvalidPermission

__all__ = ["COMMANDS", "generate_manifests", "main"]

_UNCONNECTED_HOST = "https://unconnected.invalid"


class TargetError(Exception):
    """The MODULE:CALLABLE cannot give a manager; the message says why."""


def _add_manifests(commands: Any) -> None:
    """``manifests``: its subparser, run by :func:`_manifests`."""
    gen: argparse.ArgumentParser = commands.add_parser(
        "manifests", help="write the manifests that deploy the operator",
        usage="python -m reconcilekit manifests MODULE:CALLABLE --out DIR [options] "
              "[-- ARG ...]",
        description="Write rbac.yaml, deployment.yaml and kustomization.yaml (and "
                    "webhook.yaml, crds.yaml when there is something to put in them) for the "
                    "Manager that MODULE:CALLABLE builds; deploy them with kubectl apply -k "
                    "DIR. CALLABLE is called with one argument, a Client that is never "
                    "connected, and returns the Manager, wired as the operator runs in its "
                    "Deployment. The ARGs after -- are the container's arguments (none: the "
                    "image's CMD).")
    gen.set_defaults(run=_manifests, parser=gen, takes_args=True)
    gen.add_argument("target", metavar="MODULE:CALLABLE",
                     help="e.g. examples.website.operator:build")
    gen.add_argument("--out", metavar="DIR", required=True, help="the directory to write into")
    gen.add_argument("--namespace", metavar="NS",
                     help="the namespace the operator runs in, with its ServiceAccount "
                          "(default: its Leases' or webhook Service's namespace)")
    gen.add_argument("--service-account", metavar="NAME",
                     help="the operator's ServiceAccount (default: --name)")
    gen.add_argument("--name", metavar="NAME",
                     help="the name of its Deployment, roles, bindings and Services "
                          "(default: the Manager's name)")
    gen.add_argument("--image", metavar="IMAGE",
                     help="the operator's image (default: NAME:latest, to retag with "
                          "kustomize edit set image NAME=REGISTRY/NAME:TAG)")
    gen.add_argument("--replicas", metavar="N",
                     help="the Deployment's replicas (default 1; more need leader election "
                          "or sharding)")
    gen.add_argument("--requests", metavar="cpu=Q,memory=Q",
                     help=f"the container's requests (default "
                          f"{_resources_text(DeploymentOptions().requests)}; '' for none)")
    gen.add_argument("--limits", metavar="cpu=Q,memory=Q",
                     help=f"the container's limits (default "
                          f"{_resources_text(DeploymentOptions().limits)}; '' for none)")
    gen.add_argument("--certificates", choices=CERTIFICATES,
                     help="how the webhook server gets its certificate: from cert-manager "
                          "(default), or self-signed by the server, whose manager writes its CA "
                          "into the configurations")
    gen.add_argument("--check", action="store_true",
                     help="write nothing; exit 1 naming the files that differ from what "
                          "would be written")


def _add_scaffolding(commands: Any) -> None:
    """``init`` and ``create kind``: :mod:`._scaffold`'s subparsers, run by it."""
    _scaffold.add_commands(commands)
    for name in _scaffold.COMMANDS:
        parser = commands.choices[name]
        parser.set_defaults(run=_scaffold.run, parser=parser, takes_args=False)


COMMANDS: Final[tuple[Callable[[Any], None], ...]] = (_add_manifests, _add_scaffolding)
"""Each adds one command's subparser, with ``run`` (args -> exit status), ``parser`` (its
own, for its errors) and ``takes_args`` (whether it takes arguments after ``--``)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m reconcilekit",
                                     description="Commands for a reconcilekit operator.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


def _resources_text(values: Any) -> str:
    return ",".join(f"{k}={v}" for k, v in values.items())


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
                       service_account: str | None = None, name: str | None = None,
                       options: DeploymentOptions | None = None) -> dict[str, str]:
    """File name -> YAML text for the manager ``target`` builds (what ``manifests`` writes),
    its Deployment as ``options`` say (default: :class:`DeploymentOptions`'s defaults).

    Raises TargetError or ManifestError (both with a message for the user).
    """
    build = load_target(target)

    async def generate() -> dict[str, str]:
        manager, client = await build_manager(build, target)
        try:
            names = manifest_names(manager, name=name, namespace=namespace,
                                   service_account=service_account)
            return with_header(manifests(manager, names, options), command)
        finally:
            await client.close()

    return asyncio.run(generate())


_WORDS: Final = ("namespace", "service_account", "name", "image", "replicas", "requests",
                 "limits", "certificates")


def _command_line(args: argparse.Namespace) -> str:
    words = ["python", "-m", "reconcilekit", "manifests", args.target, "--out", args.out]
    for option in _WORDS:
        value = getattr(args, option)
        if value is not None:
            words += [f"--{option.replace('_', '-')}", value]
    if args.args:
        words += ["--", *args.args]
    return shlex.join(words)


def _deployment_options(args: argparse.Namespace) -> DeploymentOptions:
    """The Deployment's options from the command line; ManifestError naming a bad one."""
    given: dict[str, Any] = {"args": tuple(args.args)}
    if args.image is not None:
        given["image"] = check_image(args.image)
    if args.replicas is not None:
        try:
            given["replicas"] = int(args.replicas)
        except ValueError:
            raise ManifestError(f"--replicas: {args.replicas!r} is not a whole number") from None
    for option in ("requests", "limits"):
        text = getattr(args, option)
        if text is not None:
            try:
                given[option] = parse_resources(text)
            except ManifestError as err:
                raise ManifestError(f"--{option}: {err}") from None
    if args.certificates is not None:
        given["certificates"] = args.certificates
    return DeploymentOptions(**given)


def _manifests(args: argparse.Namespace) -> int:
    command = _command_line(args)
    try:
        options = _deployment_options(args)
    except ManifestError as err:
        args.parser.error(str(err))
    try:
        files = generate_manifests(args.target, command=command, namespace=args.namespace,
                                   service_account=args.service_account, name=args.name,
                                   options=options)
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
    """Run the command ``argv`` names (default: the process's arguments); its exit status.

    What follows the first ``--`` is the command's arguments (``args``), for a command
    that takes them (``manifests``: the container's)."""
    words = list(sys.argv[1:] if argv is None else argv)
    rest: list[str] = []
    if "--" in words:
        at = words.index("--")
        words, rest = words[:at], words[at + 1:]
    args = _parser().parse_args(words, namespace=argparse.Namespace(args=rest))
    if rest and not args.takes_args:
        args.parser.error(f"{args.command} takes no arguments after --")
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
