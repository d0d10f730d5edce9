"""Wiring: one Manager running the CNPool, CNClaim and CNClaimSet controllers; CRD install.

Each reconcilekit part where a real operator would use it:

* ``Manager``: one client, one shared cache, the three controllers, leader
  election on a Lease, ``/metrics``, ``/healthz`` and ``/readyz``;
* ``ControllerBuilder``: ``for_`` each kind, ``owns`` (a set's claims),
  ``watches`` with mappers (Pods to their pool, Pods to their claims);
* ``Cache``: every read of a reconcile, label selectors, field indexes on
  ``spec.podName`` and ``spec.sourcePod.podName``, ``has_seen_own_write``;
* ``Expectations`` with timeouts: the pools' Pods and the sets' claims;
* ``finalize``: the claim finalizer, whose cleanup releases Pods;
* the controllers' rate-limited queues: every reconcile that fails is
  retried with per-key backoff (a 409 lost race, a Forbidden, a dropped
  connection);
* ``EventRecorder``: ``Bound``, ``PodLost``, ``Migrating``, ... on claims.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from reconcilekit import (
    Client,
    LeaderElection,
    Manager,
    Predicate,
    Sharding,
    crd,
)
from reconcilekit.crd import CRDInstallError as CRDInstallError
from reconcilekit.kinds import PODS
from reconcilekit.webhook import ServiceReference, WebhookServer

from .admission import add_claim_webhook
from .claim import ClaimReconciler
from .claimset import ClaimSetReconciler, claimset_expectations_handler
from .index import Indexes
from .kinds import CNCLAIM_KIND, CNCLAIMSET_KIND, CNPOOL_KIND
from .pool import PoolReconciler, pod_to_pool, pool_expectations_handler
from .resources import CNCLAIMS, CNCLAIMSETS, CNPOOLS

__all__ = [
    "MANIFESTS",
    "CRDInstallError",
    "OPERATOR_NAMESPACE",
    "OperatorOptions",
    "build_operator",
    "deployed_operator",
    "install_crds",
    "load_crds",
]

logger = logging.getLogger("examples.cnclaim")

MANIFESTS: Final = Path(__file__).resolve().parent / "manifests"
LEASE_NAME: Final = "cnclaim-operator"
# Where manifests/ deploy it: its namespace, and the Service in front of its webhook.
OPERATOR_NAMESPACE: Final = "cnclaim-system"
OPERATOR_NAME: Final = "cnclaim-operator"  # its Deployment, ServiceAccount and roles
WEBHOOK_SERVICE: Final = ServiceReference(OPERATOR_NAMESPACE, "cnclaim-operator-webhook")
# deletions only: a claim that goes may leave its Pod to its pool (index.claim_to_pools)
ON_DELETE: Final = Predicate(create=lambda _: False, update=lambda _, __: False)


@dataclass(frozen=True, kw_only=True, slots=True)
class OperatorOptions:
    """How the operator runs.

    ``namespace``: watch one namespace (None: all). ``workers``: concurrent
    reconciles per controller (8: on kube-apiserver a claim storm binds
    fastest at 8, 1.27x the raw-write floor against 1.50x at 2; reserved
    Pods keep workers from racing: no conflicts at 1 to 16 workers there).
    ``leader_election``: hold the Lease ``cnclaim-operator`` in
    ``leader_election_namespace`` (default: the watched namespace, else
    ``default``) before reconciling. ``http_addr``:
    where ``/metrics``, ``/healthz`` and ``/readyz`` are served (None: not
    at all). ``expectations_timeout``: seconds after which a
    creation or deletion never seen in the cache stops holding back its owner.
    ``lease_duration``, ``renew_deadline``, ``retry_period``: leader election
    timings (controller-runtime's defaults). ``graceful_shutdown_timeout``:
    how long in-flight reconciles may finish after SIGTERM. ``relist_period``:
    list every watched resource again at least this often (None: only when
    a watch needs it). ``shard_ring``: run as a member of the shard ring of
    that name (Leases in ``leader_election_namespace``), sharded by
    ``shard_key`` (namespace, or each primary object's uid), with ``shards``
    shards, instead of with leader election; ``identity``:
    this replica's name in the ring (default: hostname and a UUID).
    """

    namespace: str | None = None
    workers: int = 8
    leader_election: bool = False
    leader_election_namespace: str | None = None
    http_addr: str | None = ":8080"
    expectations_timeout: float = 30.0
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    graceful_shutdown_timeout: float = 30.0
    relist_period: float | None = None
    shard_ring: str | None = None
    shards: int = 16
    shard_key: Literal["namespace", "uid"] = "namespace"
    identity: str | None = None


def build_operator(client: Client, options: OperatorOptions = OperatorOptions(), *,
                   webhook_server: WebhookServer | None = None) -> Manager:
    """A Manager with the three controllers, ready to ``run()`` or ``serve()``.

    With ``webhook_server``, the manager serves it (add the CNClaim validator
    to it first: :func:`examples.cnclaim.admission.add_claim_webhook`).
    """
    if options.workers < 1:
        raise ValueError(f"workers must be >= 1, got {options.workers}")
    timings = {"lease_duration": options.lease_duration,
               "renew_deadline": options.renew_deadline, "retry_period": options.retry_period}
    coordination: LeaderElection | Sharding | None = None
    if options.shard_ring is not None:
        coordination = Sharding(name=options.shard_ring, shards=options.shards,
                                key=options.shard_key,
                                namespace=options.leader_election_namespace
                                or options.namespace or "default", **timings)
    elif options.leader_election:
        coordination = LeaderElection(name=LEASE_NAME,
                                      namespace=options.leader_election_namespace,
                                      lease_duration=options.lease_duration,
                                      renew_deadline=options.renew_deadline,
                                      retry_period=options.retry_period)
    manager = Manager(client, name="cnclaim-operator", namespace=options.namespace,
                      http_addr=options.http_addr, coordination=coordination,
                      graceful_shutdown_timeout=options.graceful_shutdown_timeout,
                      relist_period=options.relist_period, webhook_server=webhook_server,
                      identity=options.identity)
    cache, events = manager.cache, manager.events
    index = Indexes(cache)
    pool_expectations = manager.expectations("cnpool", timeout=options.expectations_timeout)
    set_expectations = manager.expectations("cnclaimset", timeout=options.expectations_timeout)
    cache.add_handler(PODS, pool_expectations_handler(pool_expectations))
    cache.add_handler(CNCLAIMS, claimset_expectations_handler(set_expectations))
    workers = options.workers

    (manager.controller().named("cnpool")
        .for_(CNPOOLS)
        .watches(PODS, pod_to_pool)
        .watches(CNCLAIMS, index.claim_to_pools, ON_DELETE)
        .with_options(max_concurrent_reconciles=workers)
        .complete(PoolReconciler(client, cache, index, events, pool_expectations)))
    (manager.controller().named("cnclaim")
        .for_(CNCLAIMS)
        .watches(PODS, index.pod_to_claims)
        .with_options(max_concurrent_reconciles=workers)
        .complete(ClaimReconciler(client, cache, index, events)))
    (manager.controller().named("cnclaimset")
        .for_(CNCLAIMSETS)
        .owns(CNCLAIMS)
        .with_options(max_concurrent_reconciles=workers)
        .complete(ClaimSetReconciler(client, cache, index, events, set_expectations)))
    return manager


def deployed_operator(client: Client) -> Manager:
    """The operator as ``manifests/deployment.yaml`` runs it: every namespace, leader
    election on the Lease in ``cnclaim-system`` (``$POD_NAMESPACE``), the CNClaim
    validator behind ``WEBHOOK_SERVICE``, the operator's own ServiceAccount exempt
    from it on updates. ``manifests/`` is generated from it::

        python -m reconcilekit manifests examples.cnclaim.operator:deployed_operator \
            --out examples/cnclaim/manifests --image cnclaim-operator:dev --replicas 2 \
            -- --in-cluster --leader-elect
    """
    server = WebhookServer(name=OPERATOR_NAME, service=WEBHOOK_SERVICE)
    account = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_NAME}"
    add_claim_webhook(server, operator_users={account})
    return build_operator(client, OperatorOptions(
        leader_election=True, leader_election_namespace=OPERATOR_NAMESPACE),
        webhook_server=server)


def load_crds() -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of the operator's kinds (``manifests/crds.yaml`` is
    generated from the same definitions, :mod:`examples.cnclaim.kinds`)."""
    return [kind.crd() for kind in (CNPOOL_KIND, CNCLAIM_KIND, CNCLAIMSET_KIND)]


async def install_crds(client: Client, *, wait_seconds: float = 60.0) -> list[str]:
    """Create each CRD that is missing and wait until all are served; the names created.

    Raises :class:`~reconcilekit.crd.CRDInstallError` with what to do when
    this account may not read or create CRDs (the Deployment's service
    account may not: apply ``manifests/crds.yaml`` with kubectl instead).
    """
    created = await crd.install_crds(client, load_crds(), wait_seconds=wait_seconds)
    for name in created:
        logger.info("installed CRD %s", name)
    return created
