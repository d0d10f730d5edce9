"""``python -m examples.cnclaim``: the demo with no cluster, or the operator on a cluster.

Usage::

    python -m examples.cnclaim                    # in-process API server, operator, scenario
    python -m examples.cnclaim --kubeconfig PATH  # the operator on a cluster, until SIGTERM
    python -m examples.cnclaim --kubeconfig PATH --scenario  # ... and the scenario there
    python -m examples.cnclaim --in-cluster --leader-elect   # in a Pod (manifests/)

Exit status: 0 when the scenario converged (or the operator shut down
cleanly), 1 when a step did not converge in time or the operator failed,
2 for bad arguments.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Sequence

import anyio

from reconcilekit import (
    APIConnectionError,
    APIError,
    Client,
    configure_logging,
    event_loop_options,
)

from .operator import CRDInstallError, OperatorOptions, build_operator, install_crds
from .run import OperatorFailed, play_with_operator
from .scenario import Progress, StepFailed

__all__ = ["main", "parse_args"]

logger = logging.getLogger("examples.cnclaim")
_ADDRESS = re.compile(r"^(\[[0-9a-fA-F:]+\]|[^:\s]*):(\d{1,5})$")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _address(text: str) -> str:
    match = _ADDRESS.match(text)
    if match is None or int(match.group(2)) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or :PORT (e.g. :8080), got {text!r}")
    return text


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m examples.cnclaim",
        description="The CNClaim operator. With no arguments: an in-process API server, the "
                    "operator and a scenario that shows what it does, no cluster needed.")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", metavar="PATH",
                       help="run against the cluster of this kubeconfig")
    where.add_argument("--in-cluster", action="store_true",
                       help="run against the cluster this Pod runs in, as its service account")
    parser.add_argument("--scenario", action="store_true",
                        help="with --kubeconfig: play the scenario there too, then exit "
                             "(installs the CRDs when they are missing)")
    parser.add_argument("--install-crds", action="store_true",
                        help="on a cluster: create the CRDs that are missing before starting "
                             "(needs rights the operator's own ServiceAccount does not have; "
                             "otherwise apply manifests/crds.yaml as a cluster admin)")
    parser.add_argument("--namespace", metavar="NS",
                        help="watch only this namespace (default: all; the scenario plays "
                             "in it, default 'default')")
    parser.add_argument("--leader-elect", action="store_true",
                        help="reconcile only while holding the Lease 'cnclaim-operator'")
    parser.add_argument("--leader-elect-namespace", metavar="NS",
                        default=os.environ.get("POD_NAMESPACE"),
                        help="namespace of the Lease (default: $POD_NAMESPACE, else the "
                             "watched namespace, else 'default')")
    parser.add_argument("--metrics-addr", metavar="HOST:PORT", type=_address,
                        help="serve /metrics, /healthz and /readyz here (default :8080 on a "
                             "cluster, none without one)")
    parser.add_argument("--workers", metavar="N", type=_positive_int, default=2,
                        help="concurrent reconciles per controller (default 2)")
    parser.add_argument("--simulated-nodes", metavar="N", type=int, default=0,
                        help="on an API server with no scheduler or kubelet (a bare control "
                             "plane, python -m reconcilekit.testing): bind Pods to N "
                             "simulated nodes, report them Running and finish their "
                             "deletion (default 0: the cluster does it)")
    parser.add_argument("--step-timeout", metavar="SECONDS", type=_positive_seconds,
                        help="how long each scenario step may take to converge (default 20, "
                             "120 on a cluster, where Pods must start)")
    parser.add_argument("--log-level", default=None,
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="default WARNING for the demo, INFO otherwise")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse and check the arguments; exits with status 2 and a message when they are wrong."""
    parser = _parser()
    args = parser.parse_args(argv)
    on_cluster = bool(args.kubeconfig or args.in_cluster)
    if args.scenario and not on_cluster:
        parser.error("--scenario goes with --kubeconfig (without it the scenario always plays)")
    if args.simulated_nodes < 0:
        parser.error(f"--simulated-nodes must be 0 or more, got {args.simulated_nodes}")
    if args.simulated_nodes and not on_cluster:
        parser.error("--simulated-nodes goes with --kubeconfig (the demo always simulates)")
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        parser.error(f"--kubeconfig {args.kubeconfig}: no such file")
    return args


async def _run(args: argparse.Namespace, progress: Progress) -> int:
    on_cluster = bool(args.kubeconfig or args.in_cluster)
    if not on_cluster:
        from .local import run_local  # the only import of reconcilekit.testing

        await run_local(namespace=args.namespace or "default", workers=args.workers,
                        leader_election=args.leader_elect, http_addr=args.metrics_addr,
                        step_timeout=args.step_timeout or 20.0, progress=progress)
        return 0
    try:
        client = (Client.in_cluster() if args.in_cluster
                  else await Client.from_kubeconfig(args.kubeconfig))
    except Exception as err:
        source = "the in-cluster service account" if args.in_cluster else args.kubeconfig
        raise CRDInstallError(f"cannot load the credentials of {source}: {err}") from None
    async with client:
        if args.install_crds or args.scenario:
            created = await install_crds(client)
            if created:
                logger.info("installed CRDs: %s", ", ".join(created))
        options = OperatorOptions(
            namespace=args.namespace, workers=args.workers, leader_election=args.leader_elect,
            leader_election_namespace=args.leader_elect_namespace,
            http_addr=args.metrics_addr or ":8080")
        manager = build_operator(client, options)
        async with _simulated_nodes(client, args.simulated_nodes, args.namespace):
            if args.scenario:
                await play_with_operator(client, manager, args.namespace or "default",
                                         step_timeout=args.step_timeout or 120.0,
                                         progress=progress)
                return 0
            return await manager.serve()


def _simulated_nodes(client: Client, nodes: int,
                     namespace: str | None) -> contextlib.AbstractAsyncContextManager[object]:
    """A NodeSimulator for ``namespace`` (all if None), or nothing when ``nodes`` is 0."""
    if nodes <= 0:
        return contextlib.nullcontext()
    from reconcilekit.testing import NodeSimulator  # only when asked for

    return NodeSimulator(client, nodes=nodes, namespace=namespace)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    demo = not (args.kubeconfig or args.in_cluster)
    configure_logging(args.log_level or ("WARNING" if demo else "INFO"))
    progress = Progress(lambda text: print(text, flush=True))
    try:
        return anyio.run(_run, args, progress, backend="asyncio",
                         backend_options=event_loop_options())
    except StepFailed as err:
        print(f"error: {err}", file=sys.stderr)
    except (OperatorFailed, CRDInstallError) as err:
        print(f"error: {err}", file=sys.stderr)
    except APIConnectionError as err:
        print(f"error: cannot reach the API server: {err}", file=sys.stderr)
    except APIError as err:
        print(f"error: the API server refused a request: {err}", file=sys.stderr)
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 1
