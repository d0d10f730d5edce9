"""``deployment.yaml``: the operator's Deployment and its metrics Service, from the manager.

What the manager says, the Deployment does:

* its ``http_addr`` is the container's ``http`` port: ``/healthz`` the
  liveness probe, ``/readyz`` the readiness probe (ready once the caches
  synced and the webhook server serves), ``/metrics`` behind the Service
  ``NAME-metrics``; no ``http_addr``, no probes and no Service;
* its coordination says how many replicas may run: more than one needs
  :class:`~reconcilekit.LeaderElection` or :class:`~reconcilekit.Sharding`
  (else each replica would reconcile everything);
* its shutdown bound (:attr:`~reconcilekit.Manager.max_shutdown_time`) plus
  :data:`EXIT_MARGIN` is ``terminationGracePeriodSeconds``: the kubelet never
  kills a shutdown in progress;
* its webhook server (:mod:`.webhook_wiring`) adds the ``webhook`` port,
  the certificate's volume, and a writable ``/tmp``.

Every Pod passes Pod Security ``restricted``: not root (uid
:data:`RUN_AS_USER`), no privilege escalation, every capability dropped,
the runtime's default seccomp profile, a read-only root file system. It
runs as the operator's ServiceAccount and knows its namespace from
``POD_NAMESPACE``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

from .._coordination.leader_election import LeaderElection
from .._coordination.sharded_controllers import Sharding
from .._foundations.http_endpoints import split_address
from .._foundations.objects import Obj
from .deploy_options import DeploymentOptions, ManifestError, ManifestNames
from .webhook_wiring import WebhookWiring

if TYPE_CHECKING:
    from .._manager.manager import Manager

__all__ = ["EXIT_MARGIN", "RUN_AS_USER", "deployment_documents"]

EXIT_MARGIN: Final = 5
"""Seconds the Pod's grace period leaves beyond the manager's shutdown bound for its servers
to close and the interpreter to exit."""
RUN_AS_USER: Final = 65532
"""The uid the container runs as: distroless' ``nonroot``, which kubebuilder's images use."""
_ALL_INTERFACES: Final = ("0.0.0.0", "::")


def deployment_documents(manager: Manager, names: ManifestNames, options: DeploymentOptions,
                         wiring: WebhookWiring | None) -> list[Obj]:
    """The Deployment, and its metrics Service when the manager serves ``/metrics``.
    ManifestError when the manager and the options do not fit together."""
    _check_replicas(manager, options, wiring)
    http = _http_port(manager)
    ports: list[Obj] = []
    container: Obj = {"name": "manager", "image": options.image_for(names.name)}
    if options.args:
        container["args"] = list(options.args)
    container["env"] = [{"name": "POD_NAMESPACE",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}]
    if http is not None:
        ports.append({"name": "http", "containerPort": http, "protocol": "TCP"})
    if wiring is not None:
        if wiring.port == http:
            raise ManifestError(f"the manager's endpoints and its webhook server both use "
                                f"port {http}: give them different ports")
        ports.append({"name": "webhook", "containerPort": wiring.port, "protocol": "TCP"})
    if ports:
        container["ports"] = ports
    if http is not None:
        container["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"},
                                      "periodSeconds": 10, "failureThreshold": 3}
        container["readinessProbe"] = {"httpGet": {"path": "/readyz", "port": "http"},
                                       "periodSeconds": 5, "failureThreshold": 3}
    resources = {kind: dict(values) for kind, values in
                 (("requests", options.requests), ("limits", options.limits)) if values}
    if resources:
        container["resources"] = resources
    container["securityContext"] = {"allowPrivilegeEscalation": False,
                                    "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    volumes, mounts = _volumes(manager, wiring)
    if mounts:
        container["volumeMounts"] = mounts
    pod: Obj = {
        "serviceAccountName": names.service_account,
        "terminationGracePeriodSeconds": math.ceil(manager.max_shutdown_time) + EXIT_MARGIN,
        "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS_USER,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container]}
    if volumes:
        pod["volumes"] = volumes
    spec: Obj = {"replicas": options.replicas,
                 "selector": {"matchLabels": dict(names.labels)}}
    if wiring is not None and wiring.one_replica:  # never two servers with two CAs
        spec["strategy"] = {"type": "Recreate"}
    spec["template"] = {"metadata": {"labels": dict(names.labels)}, "spec": pod}
    docs: list[Obj] = [{
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": names.name, "namespace": names.namespace,
                     "labels": dict(names.labels)},
        "spec": spec}]
    if http is not None:
        docs.append({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"{names.name}-metrics", "namespace": names.namespace,
                         "labels": dict(names.labels)},
            "spec": {"selector": dict(names.labels), "ports": [
                {"name": "metrics", "port": http, "targetPort": "http",
                 "protocol": "TCP"}]}})
    return docs


def _check_replicas(manager: Manager, options: DeploymentOptions,
                    wiring: WebhookWiring | None) -> None:
    if options.replicas == 1:
        return
    if wiring is not None and wiring.one_replica:
        raise ManifestError(
            f"--replicas {options.replicas} with --certificates self-signed: each replica "
            "would make a CA of its own and write it over the others'; run one replica, or "
            "use --certificates cert-manager")
    if not isinstance(manager.coordination, LeaderElection | Sharding):
        raise ManifestError(
            f"--replicas {options.replicas}: the manager {manager.name} has no leader "
            "election or sharding, so every replica would reconcile everything at once; "
            "give it coordination=LeaderElection(...) or Sharding(...), or run one replica")


def _http_port(manager: Manager) -> int | None:
    """The port of the manager's endpoints, None when it serves none."""
    if manager.http_addr is None:
        return None
    host, port = split_address(manager.http_addr)
    if host not in _ALL_INTERFACES or not port:
        raise ManifestError(
            f"the manager serves /healthz, /readyz and /metrics on {manager.http_addr}, "
            "which the kubelet's probes and the metrics Service cannot reach: serve them on "
            "every interface on a fixed port (http_addr=':8080')")
    return port


def _volumes(manager: Manager, wiring: WebhookWiring | None) -> tuple[list[Obj], list[Obj]]:
    """The Pod's volumes and their mounts: a writable /tmp for a webhook server (it writes
    its key pair there to load it), and its certificate's Secret."""
    if manager.webhook_server is None:
        return [], []
    volumes: list[Obj] = [{"name": "tmp", "emptyDir": {"medium": "Memory"}}]
    mounts: list[Obj] = [{"name": "tmp", "mountPath": "/tmp"}]
    if wiring is not None:
        volumes += wiring.volumes
        mounts += wiring.mounts
    return volumes, mounts
