"""Pods as kube-apiserver 1.28 stores them: defaults and the admission plugins that change them.

* :func:`default_pod` is ``SetDefaults_Pod`` and friends (``pkg/apis/core/v1/
  defaults.go``), run on every decoded Pod (create, update, patch): restart
  and DNS policy, grace period, scheduler, security context, service links;
  per container the termination message path and policy, the image pull
  policy (``Always`` for ``:latest`` or no tag), ``resources``, port
  protocols, probe timings; per volume the default file modes.
* :func:`admit_pod` is what the default admission chain adds on create:
  ServiceAccount (``serviceAccountName: default``, refused with 403 while the
  account does not exist, and the ``kube-api-access-*`` projected token
  volume mounted in every container unless automounting is off) and
  DefaultTolerationSeconds (``not-ready`` and ``unreachable`` for 300 s);
  Priority is :mod:`.priority_classes`'.
* :func:`qos_class` is the status' ``qosClass``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from typing import Any

from ..machinery.status import StatusError
from ..machinery.unstructured import Obj

__all__ = ["admit_pod", "default_pod", "default_pod_spec", "qos_class"]

TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
_FILE_MODE = 420  # 0644
_PROBE_DEFAULTS = {"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                   "failureThreshold": 3}
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet


def _containers(spec: Mapping[str, Any]) -> list[Obj]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or () if isinstance(c, dict)]


def _pull_policy(image: Any) -> str:
    if not isinstance(image, str):
        return "IfNotPresent"
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in _PROBE_DEFAULTS.items():
        probe.setdefault(key, value)
    http = probe.get("httpGet")
    if isinstance(http, dict):
        http.setdefault("path", "/")
        http.setdefault("scheme", "HTTP")


def _default_container(container: Obj) -> None:
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("imagePullPolicy", _pull_policy(container.get("image")))
    container.setdefault("resources", {})
    for port in container.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for env in container.get("env") or ():
        ref = (env.get("valueFrom") or {}).get("fieldRef") if isinstance(env, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(container.get(key))


def _default_volume(volume: Obj) -> None:
    for source in ("secret", "configMap", "projected", "downwardAPI"):
        if isinstance(volume.get(source), dict):
            volume[source].setdefault("defaultMode", _FILE_MODE)
    if isinstance(volume.get("hostPath"), dict):
        volume["hostPath"].setdefault("type", "")


def default_pod(pod: Obj) -> None:
    """Fill in what kube-apiserver's defaulting fills in, in place."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    default_pod_spec(spec)
    # SetDefaults_Pod's, not a template's: requests from limits, service links
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or ():
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
                requests = resources.setdefault("requests", {})
                if isinstance(requests, dict):
                    for name, quantity in resources["limits"].items():
                        requests.setdefault(name, quantity)
    spec.setdefault("enableServiceLinks", True)


def default_pod_spec(spec: Obj) -> None:
    """``SetDefaults_PodSpec`` and its containers' and volumes' defaults (a Pod's spec or
    a pod template's), in place."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    for container in _containers(spec):
        _default_container(container)
    for volume in spec.get("volumes") or ():
        if isinstance(volume, dict):
            _default_volume(volume)


def _random_suffix() -> str:
    return "".join(secrets.choice(_NAME_CHARS) for _ in range(5))


def _token_volume(name: str) -> Obj:
    return {"name": name, "projected": {"sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ], "defaultMode": _FILE_MODE}}


def admit_pod(pod: Obj, namespace: str,
              service_account: Callable[[str, str], Mapping[str, Any] | None]) -> None:
    """The create-time admission plugins, in place; 403 for a missing ServiceAccount.

    ``service_account(namespace, name)`` returns the account or None.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    account = service_account(namespace, name)
    if account is None:
        pod_name = pod["metadata"].get("name", "")
        raise StatusError(403, "Forbidden",
                          f'pods "{pod_name}" is forbidden: error looking up service account '
                          f'{namespace}/{name}: serviceaccount "{name}" not found',
                          {"name": pod_name, "kind": "pods"})
    spec["serviceAccountName"] = spec["serviceAccount"] = name
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = account.get("automountServiceAccountToken")
    if automount is not False:
        _mount_token(spec)
    tolerations = spec.setdefault("tolerations", [])
    for taint in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        if not any(isinstance(t, dict) and t.get("key") == taint and t.get("effect") in (
                "NoExecute", None, "") for t in tolerations):
            tolerations.append({"key": taint, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": 300})


def _mount_token(spec: Obj) -> None:
    containers = _containers(spec)
    if all(any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT
               for m in c.get("volumeMounts") or ()) for c in containers):
        return
    volumes = spec.setdefault("volumes", [])
    taken = {v.get("name") for v in volumes if isinstance(v, dict)}
    name = f"kube-api-access-{_random_suffix()}"
    while name in taken:
        name = f"kube-api-access-{_random_suffix()}"
    volumes.append(_token_volume(name))
    for container in containers:
        mounts = container.setdefault("volumeMounts", [])
        if not any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT for m in mounts):
            mounts.append({"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT})


def qos_class(pod: Mapping[str, Any]) -> str:
    """``Guaranteed``, ``Burstable`` or ``BestEffort``, from the containers' resources."""
    spec = pod.get("spec") or {}
    containers = [c for key in ("initContainers", "containers")
                  for c in spec.get(key) or () if isinstance(c, Mapping)]
    any_set = False
    guaranteed = bool(containers)
    for c in containers:
        resources = c.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        if requests or limits:
            any_set = True
        for res in ("cpu", "memory"):
            if res not in limits or requests.get(res, limits[res]) != limits[res]:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"

