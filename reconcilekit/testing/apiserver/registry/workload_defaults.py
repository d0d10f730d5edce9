"""The defaults of the kinds an operator commonly owns, as kube-apiserver 1.28 stores them.

Measured on kube-apiserver v1.28.7 (a minimal object created, the answer
recorded; ``tests/testing/test_apiserver_workloads.py`` compares both servers):

* Deployment: ``replicas`` 1, ``revisionHistoryLimit`` 10,
  ``progressDeadlineSeconds`` 600, a ``RollingUpdate`` strategy of 25%/25%;
* StatefulSet: ``replicas`` 1, ``revisionHistoryLimit`` 10,
  ``podManagementPolicy: OrderedReady``, a ``RollingUpdate`` of partition 0,
  ``persistentVolumeClaimRetentionPolicy`` Retain/Retain, ``serviceName: ""``,
  each claim template a claim's defaults and type meta
  (:func:`.claim_strategy.default_claim_template`);
* DaemonSet: ``revisionHistoryLimit`` 10, a ``RollingUpdate`` of maxSurge 0,
  maxUnavailable 1;
* ReplicaSet and ReplicationController: ``replicas`` 1 (an RC's selector and
  labels from its template's labels when absent);
* Job: ``backoffLimit`` 6, ``completions`` and ``parallelism`` 1,
  ``completionMode: NonIndexed``, ``suspend: false`` (its selector is made
  from its uid when stored, see :mod:`.workload_strategies`);
* CronJob: ``concurrencyPolicy: Allow``, history limits 3 and 1, ``suspend: false``;
* Service: ``type: ClusterIP``, ``sessionAffinity: None``,
  ``internalTrafficPolicy: Cluster`` (and ``externalTrafficPolicy: Cluster``
  for NodePort and LoadBalancer), ports' ``protocol: TCP`` and ``targetPort``
  the port;
* every pod template: :func:`.pod_defaults.default_pod_spec` (but a Job's
  ``restartPolicy``), and
  ``metadata.creationTimestamp: null`` (as Go serializes a template's metadata).
"""

from __future__ import annotations

from typing import Any

from ..machinery.unstructured import Obj
from .claim_strategy import default_claim_template
from .pod_defaults import default_pod_spec

__all__ = ["default_cronjob", "default_daemonset", "default_deployment", "default_job",
           "default_namespace", "default_pod_template", "default_replicaset",
           "default_replication_controller", "default_service", "default_statefulset",
           "spec_of"]


def _dict(parent: Obj, key: str) -> Obj | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def spec_of(obj: Obj) -> Obj | None:
    """``obj["spec"]`` if it is an object (the defaults below are of a spec)."""
    return _dict(obj, "spec")


def _template(holder: Obj | None, *, restart_policy: bool = True) -> None:
    """A pod template's defaults (``holder["template"]``), in place; a Job's template
    gets no ``restartPolicy`` (measured: its absence is a 422 "Required value")."""
    template = _dict(holder, "template") if holder is not None else None
    if template is None:
        return
    meta = template.setdefault("metadata", {})
    if isinstance(meta, dict):
        meta.setdefault("creationTimestamp", None)
    spec = _dict(template, "spec")
    if spec is not None:
        unset = "restartPolicy" not in spec
        default_pod_spec(spec)
        if unset and not restart_policy:
            del spec["restartPolicy"]


def _rolling(spec: Obj, key: str, rolling: dict[str, Any]) -> None:
    strategy = spec.setdefault(key, {})
    if not isinstance(strategy, dict):
        return
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        update = strategy.setdefault("rollingUpdate", {})
        if isinstance(update, dict):
            for name, value in rolling.items():
                update.setdefault(name, value)


def default_pod_template(obj: Obj) -> None:
    """A PodTemplate's defaults: its template's."""
    _template(obj)


def default_deployment(spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _rolling(spec, "strategy", {"maxSurge": "25%", "maxUnavailable": "25%"})
    _template(spec)


def default_statefulset(spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    spec.setdefault("serviceName", "")
    _rolling(spec, "updateStrategy", {"partition": 0})
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    if isinstance(policy, dict):
        policy.setdefault("whenDeleted", "Retain")
        policy.setdefault("whenScaled", "Retain")
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            default_claim_template(claim)
    _template(spec)


def default_daemonset(spec: Obj) -> None:
    spec.setdefault("revisionHistoryLimit", 10)
    _rolling(spec, "updateStrategy", {"maxSurge": 0, "maxUnavailable": 1})
    _template(spec)


def default_replicaset(spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    _template(spec)


def default_replication_controller(obj: Obj, spec: Obj) -> None:
    spec.setdefault("replicas", 1)
    template = _dict(spec, "template")
    labels = ((template or {}).get("metadata") or {}).get("labels")
    if isinstance(labels, dict) and labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        if not obj["metadata"].get("labels"):
            obj["metadata"]["labels"] = dict(labels)
    _template(spec)


def default_job(spec: Obj) -> None:
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    _template(spec, restart_policy=False)


def default_cronjob(spec: Obj) -> None:
    spec.setdefault("concurrencyPolicy", "Allow")
    spec.setdefault("suspend", False)
    spec.setdefault("successfulJobsHistoryLimit", 3)
    spec.setdefault("failedJobsHistoryLimit", 1)
    job_template = _dict(spec, "jobTemplate")
    if job_template is not None:
        meta = job_template.setdefault("metadata", {})
        if isinstance(meta, dict):
            meta.setdefault("creationTimestamp", None)
        _template(_dict(job_template, "spec"), restart_policy=False)
    _template(spec)


def default_service(spec: Obj) -> None:
    kind = spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["sessionAffinity"] == "ClientIP":  # DefaultClientIPServiceAffinitySeconds
        config = spec.get("sessionAffinityConfig")
        client_ip = config.get("clientIP") if isinstance(config, dict) else None
        if not isinstance(client_ip, dict) or client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {"clientIP": {"timeoutSeconds": 10800}}
    if kind != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer"):
        spec.setdefault("externalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "targetPort" not in port and "port" in port:
                port["targetPort"] = port["port"]


def default_namespace(obj: Obj) -> None:
    """``SetDefaults_Namespace``: the ``kubernetes.io/metadata.name`` label, when the name is
    known (with ``generateName`` the strategy's Canonicalize adds it once it is)."""
    meta = _dict(obj, "metadata")
    if meta is not None and isinstance(meta.get("name"), str) and meta["name"]:
        labels = _dict(meta, "labels") or {}
        meta["labels"] = {**labels, "kubernetes.io/metadata.name": meta["name"]}
