"""``python -m examples.cnclaim``: the demo with no cluster, or the operator on a cluster.

Usage::

    python -m examples.cnclaim                    # in-process API server, operator, scenario
    python -m examples.cnclaim --kubeconfig PATH  # the operator on a cluster, until SIGTERM
    python -m examples.cnclaim --kubeconfig PATH --scenario  # ... and the scenario there
    python -m examples.cnclaim --in-cluster --leader-elect   # in a Pod (manifests/)

On a cluster the operator also serves the CNClaim validating webhook
(``--no-webhooks`` to not): with ``--kubeconfig`` it registers the
ValidatingWebhookConfiguration itself, pointed at ``--webhook-url`` with a
generated CA and scoped to ``--namespace``, and removes it at exit; in a Pod
the manifests hold the configuration and cert-manager the certificate.

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

from reconcilekit import APIConnectionError, APIError, Client, LeaderElection, configure_logging
from reconcilekit.lowlevel import event_loop_options
from reconcilekit.webhook import CertificateFiles, WebhookServer

from ..admission import add_claim_webhook, own_username
from ..operator import CRDInstallError, OperatorOptions, build_operator, install_crds
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
    parser.add_argument("--shard-ring", metavar="NAME",
                        help="run as a member of the shard ring NAME instead of with leader "
                             "election: every replica works, each on the namespaces of its "
                             "shards (Leases in --leader-elect-namespace)")
    parser.add_argument("--shards", metavar="N", type=_positive_int, default=16,
                        help="with --shard-ring: shards of the key space (default 16; the same "
                             "for every replica)")
    parser.add_argument("--shard-key", choices=["namespace", "uid"], default="namespace",
                        help="with --shard-ring: what places an object in a shard: its "
                             "namespace (default; each replica caches only its shards) or "
                             "its uid (the work of one namespace spread over the replicas)")
    parser.add_argument("--identity", metavar="NAME",
                        help="this replica's name in Leases (default: hostname and a UUID)")
    parser.add_argument("--shard-demo", action="store_true",
                        help="start 3 sharded replicas as processes against the in-process "
                             "API server (or --kubeconfig) with pools in 6 namespaces, stop "
                             "one, and show the shards moving")
    parser.add_argument("--lease-duration", metavar="SECONDS", type=_positive_seconds,
                        default=15.0,
                        help="with --leader-elect or --shard-ring: how long a standby waits "
                             "after the last renewal it saw before taking a Lease over "
                             "(default 15)")
    parser.add_argument("--renew-deadline", metavar="SECONDS", type=_positive_seconds,
                        default=10.0,
                        help="how long a holder keeps failing to renew before it stops "
                             "working (default 10; less than --lease-duration)")
    parser.add_argument("--retry-period", metavar="SECONDS", type=_positive_seconds,
                        default=2.0,
                        help="the wait between Lease renewals and attempts (default 2; "
                             "--renew-deadline must exceed 1.2 times it)")
    parser.add_argument("--leader-elect-namespace", metavar="NS",
                        default=os.environ.get("POD_NAMESPACE"),
                        help="namespace of the Lease (default: $POD_NAMESPACE, else the "
                             "watched namespace, else 'default')")
    parser.add_argument("--metrics-addr", metavar="HOST:PORT", type=_address,
                        help="serve /metrics, /healthz and /readyz here (default :8080 on a "
                             "cluster, none without one)")
    parser.add_argument("--no-webhooks", action="store_true",
                        help="do not serve the CNClaim validating webhook (malformed claims "
                             "are then refused only by the controller, with a Warning Event)")
    parser.add_argument("--webhook-addr", metavar="HOST:PORT", type=_address,
                        default=":9443",
                        help="serve the webhook here (default :9443)")
    parser.add_argument("--webhook-url", metavar="URL",
                        help="with --kubeconfig: how the API server reaches the webhook, "
                             "https://HOST:PORT (default https://127.0.0.1:PORT, for a "
                             "control plane on this machine); the operator registers its "
                             "ValidatingWebhookConfiguration there with a generated CA, "
                             "scoped to --namespace, and removes it at exit")
    parser.add_argument("--webhook-cert-dir", metavar="DIR",
                        default="/tmp/k8s-webhook-server/serving-certs",
                        help="with --in-cluster: tls.crt and tls.key (cert-manager's Secret, "
                             "reloaded when they change; the manifests' configuration gets "
                             "its caBundle from cert-manager)")
    parser.add_argument("--workers", metavar="N", type=_positive_int, default=8,
                        help="concurrent reconciles per controller (default 8: the "
                             "fastest in the claim storm benchmark, docs/performance.md)")
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
    if args.shard_ring and args.leader_elect:
        parser.error("--shard-ring and --leader-elect exclude each other: in a ring every "
                     "replica works, each on its own shards")
    try:
        LeaderElection(name="timings", lease_duration=args.lease_duration,  # checks them
                       renew_deadline=args.renew_deadline, retry_period=args.retry_period)
    except ValueError as err:
        parser.error(f"--lease-duration, --renew-deadline, --retry-period: {err}")
    if args.shard_demo and (args.in_cluster or args.scenario or args.shard_ring):
        parser.error("--shard-demo starts its own replicas: it goes alone or with "
                     "--kubeconfig")
    if args.kubeconfig and not os.path.isfile(args.kubeconfig):
        parser.error(f"--kubeconfig {args.kubeconfig}: no such file")
    if args.webhook_url and not (args.kubeconfig and not args.no_webhooks):
        parser.error("--webhook-url goes with --kubeconfig (and without --no-webhooks)")
    if args.webhook_url:
        try:
            WebhookServer(url=args.webhook_url)
        except ValueError as err:
            parser.error(f"--webhook-url: {err}")
    return args


async def _run(args: argparse.Namespace, progress: Progress) -> int:
    on_cluster = bool(args.kubeconfig or args.in_cluster)
    if args.shard_demo:
        from .shard_demo import run_shard_demo  # uses reconcilekit.testing

        await run_shard_demo(kubeconfig=args.kubeconfig, progress=progress,
                             step_timeout=args.step_timeout or 60.0)
        return 0
    if not on_cluster:
        from .local import run_local  # the only import of reconcilekit.testing

        await run_local(namespace=args.namespace or "default", workers=args.workers,
                        leader_election=args.leader_elect, http_addr=args.metrics_addr,
                        step_timeout=args.step_timeout or 20.0, progress=progress,
                        webhooks=not args.no_webhooks)
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
            shard_ring=args.shard_ring, shards=args.shards, shard_key=args.shard_key,
            identity=args.identity,
            leader_election_namespace=args.leader_elect_namespace,
            lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
            retry_period=args.retry_period, http_addr=args.metrics_addr or ":8080")
        manager = build_operator(client, options,
                                 webhook_server=await _webhook_server(client, args))
        async with _simulated_nodes(client, args.simulated_nodes, args.namespace):
            if args.scenario:
                await play_with_operator(client, manager, args.namespace or "default",
                                         step_timeout=args.step_timeout or 120.0,
                                         progress=progress)
                return 0
            return await manager.serve()


async def _webhook_server(client: Client, args: argparse.Namespace) -> WebhookServer | None:
    """The CNClaim webhook's server for a cluster run, or None with --no-webhooks."""
    if args.no_webhooks:
        return None
    host, _, port = args.webhook_addr.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    user = await own_username(client)
    if args.in_cluster:  # the manifests hold the configuration; cert-manager the certificate
        server = WebhookServer(name="cnclaim-operator", host=host, port=int(port),
                               certificate=CertificateFiles(args.webhook_cert_dir))
    else:
        server = WebhookServer(name=f"cnclaim-operator-{args.namespace or 'all'}", host=host,
                               port=int(port), url=args.webhook_url,
                               install_configurations=True,
                               remove_configurations_on_exit=True)
    add_claim_webhook(server, operator_users={user} if user else None,
                      namespace=args.namespace)
    return server


def _simulated_nodes(client: Client, nodes: int,
                     namespace: str | None) -> contextlib.AbstractAsyncContextManager[object]:
    """A NodeSimulator for ``namespace`` (all if None), or nothing when ``nodes`` is 0."""
    if nodes <= 0:
        return contextlib.nullcontext()
    from reconcilekit.testing import NodeSimulator  # only when asked for

    return NodeSimulator(client, nodes=nodes, namespace=namespace)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    demo = args.shard_demo or not (args.kubeconfig or args.in_cluster)
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
    except ImportError as err:  # the in-process API server without reconcilekit[testing]
        print(f"error: {err}", file=sys.stderr)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 1
