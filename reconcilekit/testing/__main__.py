"""``python -m reconcilekit.testing``: an API server for any client, until interrupted.

By default the in-process API server; with ``--control-plane [DIR]`` a real
etcd, kube-apiserver and kube-controller-manager started from the binaries
in ``DIR`` (default: ``$RECONCILEKIT_TEST_ASSETS`` or ``$KUBEBUILDER_ASSETS``,
envtest's convention), as :class:`ControlPlane` starts them. Either way it
serves HTTPS with a certificate made at start and writes a kubeconfig for
it (one that trusts the certificate's CA, or with
``--insecure-skip-tls-verify`` one that names no CA and skips verification),
so kubectl, kopf, a test suite (``RECONCILEKIT_TEST_KUBECONFIG``) or any
client can be pointed at it.

Guarantees: the kubeconfig is written once the server is ready (for a
control plane: ``/readyz`` answers and the ``default`` ServiceAccount
exists), then one line says where it listens; on SIGINT or SIGTERM the
server stops (a control plane's processes are stopped and its temporary
directory removed) and the exit status is 0. A bad option, a component that
does not start or a kubeconfig that cannot be written is one line on stderr
and a non-zero exit, with nothing left running.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from ._control_plane import (
    ASSETS_ENV,
    ControlPlane,
    ControlPlaneError,
    assets_from_env,
    insecure_kubeconfig,
)
from .apiserver.extra import MissingExtraError
from .apiserver.kube_apiserver import APIServer
from .apiserver.kubeconfig import write_kubeconfig

_IN_PROCESS_ONLY = ("port", "token", "plain_http", "controllers")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reconcilekit.testing",
        description="Run reconcilekit's in-process Kubernetes API server, or a real control "
                    "plane from a directory of binaries, until SIGINT or SIGTERM.")
    parser.add_argument("--kubeconfig-out", type=Path, required=True, metavar="PATH",
                        help="where to write a kubeconfig for this server")
    parser.add_argument("--control-plane", nargs="?", const="", default=None, metavar="DIR",
                        help="start etcd, kube-apiserver and kube-controller-manager from the "
                             "binaries in DIR (default: $" + " or $".join(ASSETS_ENV)
                             + ") instead of the in-process server")
    parser.add_argument("--insecure-skip-tls-verify", action="store_true",
                        help="write a kubeconfig that names no CA and sets "
                             "insecure-skip-tls-verify: true")
    parser.add_argument("--enable-admission-plugins", default="", metavar="NAMES",
                        help="comma-separated admission plugins kube-apiserver leaves off, "
                             "to turn on (OwnerReferencesPermissionEnforcement); default: "
                             "kube-apiserver's own set")
    parser.add_argument("--port", type=int, default=None,
                        help="port on 127.0.0.1 (default: a free one; in-process only)")
    parser.add_argument("--token", default=None,
                        help="bearer token (default: random; in-process only)")
    parser.add_argument("--plain-http", action="store_true", default=None,
                        help="serve plain HTTP instead of HTTPS (clients such as kubectl "
                             "then send no bearer token, and are refused as anonymous; "
                             "in-process only)")
    parser.add_argument("--controllers", default=None, metavar="NAMES",
                        help="comma-separated controllers to run, as kube-controller-manager's "
                             "flag reads them ('*' all, '-name' not this one; default '*'; "
                             "in-process only)")
    args = parser.parse_args(argv)
    if args.control_plane is not None:
        given = [f"--{name.replace('_', '-')}" for name in _IN_PROCESS_ONLY
                 if getattr(args, name) is not None]
        if given:
            parser.error(f"{', '.join(given)}: only for the in-process server, not with "
                         f"--control-plane")
        if args.control_plane == "" and assets_from_env() is None:
            parser.error("--control-plane without DIR needs $" + " or $".join(ASSETS_ENV)
                         + " set to a directory holding etcd and kube-apiserver")
    else:
        if not 0 <= _port(args) <= 65535:
            parser.error(f"--port must be between 0 and 65535, got {args.port}")
        if args.plain_http and args.insecure_skip_tls_verify:
            parser.error("--insecure-skip-tls-verify: a plain-HTTP server has no TLS to skip")
    return args


def _port(args: argparse.Namespace) -> int:
    return 0 if args.port is None else int(args.port)


def _names(value: str) -> list[str]:
    return [name for name in value.split(",") if name]


def _write(document: dict[str, Any], args: argparse.Namespace) -> str | None:
    """Write the kubeconfig; None, or the error line."""
    if args.insecure_skip_tls_verify:
        document = insecure_kubeconfig(document)
    try:
        write_kubeconfig(document, args.kubeconfig_out)
    except OSError as err:
        return f"error: cannot write kubeconfig to {args.kubeconfig_out}: {err.strerror}"
    return None


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _serve_in_process(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    try:
        server = APIServer(port=_port(args), token=args.token, tls=not args.plain_http,
                           controllers=_names("*" if args.controllers is None
                                              else args.controllers),
                           enable_admission_plugins=_names(args.enable_admission_plugins))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        await server.start()
    except OSError as err:
        print(f"error: cannot listen on 127.0.0.1:{_port(args)}: {err.strerror}",
              file=sys.stderr)
        return 1
    failed = _write(server.kubeconfig(), args)
    if failed:
        print(failed, file=sys.stderr)
        await server.stop()
        return 1
    print(f"reconcilekit API server listening on {server.url}; "
          f"kubeconfig written to {args.kubeconfig_out}", flush=True)
    await stop.wait()
    await server.stop()
    return 0


async def _serve_control_plane(args: argparse.Namespace) -> int:
    stop = _stop_on_signals()
    try:
        plane = ControlPlane(args.control_plane or None,
                             enable_admission_plugins=_names(args.enable_admission_plugins))
    except (ControlPlaneError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        await plane.start_async()  # stops what it started when it fails
    except ControlPlaneError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        if stop.is_set():  # interrupted while starting
            return 0
        failed = _write(plane.kubeconfig(), args)
        if failed:
            print(failed, file=sys.stderr)
            return 1
        plugins = args.enable_admission_plugins or "none"
        print(f"reconcilekit control plane from {plane.assets} listening on {plane.url} "
              f"(admission plugins besides kube-apiserver's defaults: {plugins}); "
              f"kubeconfig written to {args.kubeconfig_out}", flush=True)
        await stop.wait()
        return 0
    finally:
        await asyncio.to_thread(plane.stop)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        if args.control_plane is not None:
            return asyncio.run(_serve_control_plane(args))
        return asyncio.run(_serve_in_process(args))
    except MissingExtraError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
