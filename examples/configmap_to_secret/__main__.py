"""``python -m examples.configmap_to_secret``: run the operator until SIGTERM or Ctrl-C."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import anyio

from reconcilekit import Client, configure_logging

from .operator import build


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line; a bad argument ends the program with one line and status 2."""
    parser = argparse.ArgumentParser(
        prog="python -m examples.configmap_to_secret",
        description="Keep a Secret next to every ConfigMap, with the same name and data, "
                    "until SIGTERM or Ctrl-C; exit status 0 after a clean stop.",
        epilog="Without a cluster: run 'python -m reconcilekit.testing --kubeconfig-out "
               "kubeconfig.yaml' in another shell and give kubeconfig.yaml.")
    parser.add_argument("kubeconfig", nargs="?",
                        help="the kubeconfig to use (default: in a Pod, its service "
                             "account; else $KUBECONFIG or ~/.kube/config)")
    parser.add_argument("--namespace", help="watch this namespace only (default: all)")
    parser.add_argument("--metrics-addr", default=":8080", metavar="[HOST]:PORT",
                        help="serve /metrics, /healthz and /readyz here (default: :8080)")
    args = parser.parse_args(argv)
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        parser.error(f"{args.kubeconfig}: no such file")
    _, colon, port = args.metrics_addr.rpartition(":")
    if not colon or not port.isdigit():
        parser.error(f"--metrics-addr: expected HOST:PORT or :PORT, got {args.metrics_addr!r}")
    return args


async def main(args: argparse.Namespace) -> int:
    """Run the operator until SIGTERM or SIGINT; the exit status (see Manager.serve)."""
    configure_logging()
    client = await (Client.from_kubeconfig(args.kubeconfig) if args.kubeconfig
                    else Client.from_environment())
    async with client:
        manager = build(client, namespace=args.namespace, http_addr=args.metrics_addr)
        return await manager.serve()


if __name__ == "__main__":
    sys.exit(anyio.run(main, parse_args()))
