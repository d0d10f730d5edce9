"""``python -m reconcilekit.testing``: run the in-process API server standalone.

Serves HTTPS with a certificate made at start and writes a kubeconfig that
trusts it, so kubectl, kopf or any client can be pointed at it; prints
one line saying where it listens, and serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path

from .apiserver.extra import MissingExtraError
from .apiserver.kube_apiserver import APIServer


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m reconcilekit.testing",
        description="Run reconcilekit's in-process Kubernetes API server.")
    parser.add_argument("--kubeconfig-out", type=Path, required=True, metavar="PATH",
                        help="where to write a kubeconfig for this server")
    parser.add_argument("--port", type=int, default=0,
                        help="port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--token", default=None, help="bearer token (default: random)")
    parser.add_argument("--plain-http", action="store_true",
                        help="serve plain HTTP instead of HTTPS (clients such as kubectl "
                             "then send no bearer token, and are refused as anonymous)")
    parser.add_argument("--enable-admission-plugins", default="", metavar="NAMES",
                        help="comma-separated admission plugins kube-apiserver leaves off, "
                             "to turn on (OwnerReferencesPermissionEnforcement)")
    parser.add_argument("--controllers", default="*", metavar="NAMES",
                        help="comma-separated controllers to run, as kube-controller-manager's "
                             "flag reads them ('*' all, '-name' not this one; default '*')")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, got {args.port}")
    return args


async def _serve(args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        server = APIServer(port=args.port, token=args.token, tls=not args.plain_http,
                           controllers=[c for c in args.controllers.split(",") if c],
                           enable_admission_plugins=[
                               p for p in args.enable_admission_plugins.split(",") if p])
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        await server.start()
    except OSError as err:
        print(f"error: cannot listen on 127.0.0.1:{args.port}: {err.strerror}", file=sys.stderr)
        return 1
    try:
        server.write_kubeconfig(args.kubeconfig_out)
    except OSError as err:
        print(f"error: cannot write kubeconfig to {args.kubeconfig_out}: {err.strerror}",
              file=sys.stderr)
        await server.stop()
        return 1
    print(f"reconcilekit API server listening on {server.url}; "
          f"kubeconfig written to {args.kubeconfig_out}", flush=True)
    await stop.wait()
    await server.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    try:
        return asyncio.run(_serve(args))
    except MissingExtraError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
