"""What the strategies of the workload kinds and Services do, as kube-apiserver 1.28 does it.

Measured on kube-apiserver v1.28.7 (``tests/testing/test_apiserver_workloads.py``):

* :func:`prepare_workload`: the status a create stores (Deployments, Jobs and
  CronJobs ``{}``, ReplicaSets and RCs ``replicas: 0``, StatefulSets
  ``replicas``/``availableReplicas`` 0, DaemonSets their four counts 0, Services
  ``loadBalancer: {}``); a Job's selector and labels made from its uid (unless
  ``manualSelector``); a DaemonSet's ``deprecated.daemonset.template.generation``
  annotation; a Service's cluster IP (from 10.0.0.0/24, ``None`` for headless,
  none for ExternalName), IP families and node ports (30000-32767);
* :func:`validate_workload`: a selector is required and must match the
  template's labels (apps/v1 kinds), replicas and history limits are not
  negative, a Job's template restarts ``OnFailure`` or ``Never``, a Service's
  ports are 1-65535 and named when there are several;
* :func:`validate_workload_update`: an apps/v1 selector, a Job's template and
  selector, and a Service's cluster IPs are immutable.

Everything else of these kinds' validation (the pod spec beyond containers,
update strategies, ...) is not done.
"""

from __future__ import annotations

import copy
import ipaddress
import secrets
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid

__all__ = ["prepare_workload", "prepare_workload_update", "validate_workload",
           "validate_workload_update"]

_CREATE_STATUS: Mapping[tuple[str, str], dict[str, Any]] = {
    ("apps", "deployments"): {}, ("batch", "jobs"): {}, ("batch", "cronjobs"): {},
    ("apps", "replicasets"): {"replicas": 0}, ("", "replicationcontrollers"): {"replicas": 0},
    ("apps", "statefulsets"): {"replicas": 0, "availableReplicas": 0},
    ("apps", "daemonsets"): {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                             "desiredNumberScheduled": 0, "numberReady": 0},
    ("", "services"): {"loadBalancer": {}},
}
_APPS_SELECTED = frozenset({("apps", "deployments"), ("apps", "statefulsets"),
                            ("apps", "daemonsets"), ("apps", "replicasets")})
_SERVICE_CIDR = ipaddress.ip_network("10.0.0.0/24")
_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _key(rtype: ResourceType) -> tuple[str, str]:
    return rtype.resource.group, rtype.resource.plural


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


# -- prepare ----------------------------------------------------------------------------


def prepare_workload(rtype: ResourceType, obj: Obj, existing: Iterable[Obj]) -> None:
    """PrepareForCreate of these kinds, in place (``existing``: the kind's stored objects)."""
    key = _key(rtype)
    if key in _CREATE_STATUS:
        obj["status"] = copy.deepcopy(_CREATE_STATUS[key])
    match key:
        case ("batch", "jobs"):
            _select_job(obj)
        case ("apps", "daemonsets"):
            annotations = obj["metadata"].setdefault("annotations", {})
            annotations[_TEMPLATE_GENERATION] = "1"
        case ("", "services"):
            _allocate(_spec(obj), list(existing))


def prepare_workload_update(rtype: ResourceType, old: Obj, new: Obj) -> None:
    """PrepareForUpdate: a DaemonSet's template generation follows its template's changes;
    a Service keeps its allocated cluster IPs and node ports when an update leaves them out."""
    if _key(rtype) == ("", "services"):
        _keep_allocated(_spec(old), new.get("spec"))
    if _key(rtype) != ("apps", "daemonsets"):
        return
    if _spec(old).get("template") != _spec(new).get("template"):
        generation = int(str(old["metadata"].get("generation", 1))) + 1
        annotations = new["metadata"].setdefault("annotations", {})
        annotations[_TEMPLATE_GENERATION] = str(generation)


def _keep_allocated(old: Obj, new: Any) -> None:
    if not isinstance(new, dict) or new.get("type", "ClusterIP") != old.get("type", "ClusterIP"):
        return
    for name in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
        if not new.get(name) and old.get(name):
            new[name] = copy.deepcopy(old[name])
    by_port = {(p.get("port"), p.get("protocol")): p.get("nodePort")
               for p in old.get("ports") or () if isinstance(p, dict)}
    for port in new.get("ports") or ():
        if isinstance(port, dict) and not port.get("nodePort"):
            node_port = by_port.get((port.get("port"), port.get("protocol")))
            if node_port:
                port["nodePort"] = node_port


def _select_job(obj: Obj) -> None:
    spec = _spec(obj)
    if spec.get("manualSelector") is True:
        return
    uid, name = obj["metadata"]["uid"], obj["metadata"].get("name", "")
    template = spec.setdefault("template", {})
    meta = template.setdefault("metadata", {})
    labels = meta.setdefault("labels", {})
    labels.update({"batch.kubernetes.io/controller-uid": uid,
                   "batch.kubernetes.io/job-name": name, "controller-uid": uid,
                   "job-name": name})
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    if not obj["metadata"].get("labels"):  # SetDefaults_Job, run again when read back
        obj["metadata"]["labels"] = dict(labels)


def _allocate(spec: Obj, existing: list[Obj]) -> None:
    kind = spec.get("type", "ClusterIP")
    if kind == "ExternalName":
        return
    taken = {s.get("spec", {}).get("clusterIP") for s in existing}
    if not spec.get("clusterIP"):
        free = [str(ip) for ip in list(_SERVICE_CIDR.hosts())[1:] if str(ip) not in taken]
        spec["clusterIP"] = secrets.choice(free) if free else "None"
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    spec.setdefault("ipFamilies", ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "SingleStack")
    if kind in ("NodePort", "LoadBalancer"):
        used = {p.get("nodePort") for s in existing for p in s.get("spec", {}).get("ports") or ()}
        for port in spec.get("ports") or ():
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = secrets.choice(
                    [n for n in range(30000, 32768) if n not in used])
                used.add(port["nodePort"])
    if kind == "LoadBalancer":
        spec.setdefault("allocateLoadBalancerNodePorts", True)


# -- validation ---------------------------------------------------------------------------


def _go_map(value: Mapping[str, Any]) -> str:
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(value.items()))
    return f"map[string]string{{{inner}}}"


def _go_selector(selector: Mapping[str, Any]) -> str:
    labels = selector.get("matchLabels")
    shown = _go_map(labels) if isinstance(labels, dict) else "map[string]string(nil)"
    return (f"v1.LabelSelector{{MatchLabels:{shown}, "
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}")


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or ():
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (
                op == "NotIn" and key in labels and labels[key] in values) or (
                op == "Exists" and key not in labels) or (
                op == "DoesNotExist" and key in labels):
            return False
    return True


def validate_workload(rtype: ResourceType, obj: Obj) -> list[Cause]:
    """The kinds' Validate beyond metadata (causes of a 422)."""
    key, spec = _key(rtype), _spec(obj)
    causes: list[Cause] = []
    if key in _APPS_SELECTED:
        selector = spec.get("selector")
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        if not isinstance(selector, dict) or not selector:
            causes.append(Cause("FieldValueRequired", "Required value", "spec.selector"))
        if not isinstance(selector, dict) or not selector or not _selects(selector, labels):
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {_go_map(labels)}: "
                                "`selector` does not match template `labels`",
                                "spec.template.metadata.labels"))
    for name in ("replicas", "revisionHistoryLimit"):
        value = spec.get(name)
        if key in _APPS_SELECTED | {("", "replicationcontrollers")} and isinstance(
                value, int) and value < 0:
            causes.append(invalid(f"spec.{name}", value, "must be greater than or equal to 0"))
    if key == ("batch", "jobs"):
        policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
        if policy not in ("OnFailure", "Never"):
            detail = 'valid values: "OnFailure", "Never"'
            causes.append(Cause("FieldValueRequired", f"Required value: {detail}",
                                "spec.template.spec.restartPolicy") if policy in (None, "")
                          else Cause("FieldValueNotSupported",
                                     f'Unsupported value: "{policy}": supported values: '
                                     '"OnFailure", "Never"',
                                     "spec.template.spec.restartPolicy"))
    if key == ("", "services"):
        causes.extend(_service_ports(spec))
    return causes


def _service_ports(spec: Obj) -> list[Cause]:
    causes = []
    ports = [p for p in spec.get("ports") or () if isinstance(p, dict)]
    for i, port in enumerate(ports):
        path = f"spec.ports[{i}]"
        if len(ports) > 1 and not port.get("name"):
            causes.append(Cause("FieldValueRequired", "Required value", f"{path}.name"))
        for name in ("port", "targetPort"):
            value = port.get(name)
            if isinstance(value, int) and not 1 <= value <= 65535:
                causes.append(invalid(f"{path}.{name}", value,
                                      "must be between 1 and 65535, inclusive"))
    return causes


def validate_workload_update(rtype: ResourceType, old: Obj, new: Obj) -> list[Cause]:
    """The kinds' ValidateUpdate: fields that may not change once set."""
    key, before, after = _key(rtype), _spec(old), _spec(new)
    causes: list[Cause] = []
    if key in _APPS_SELECTED and before.get("selector") != after.get("selector"):
        selector = after.get("selector")
        shown = _go_selector(selector if isinstance(selector, dict) else {})
        causes.append(Cause("FieldValueInvalid", f"Invalid value: {shown}: field is immutable",
                            "spec.selector"))
    if key == ("", "services"):
        old_ips, new_ips = before.get("clusterIPs") or [], after.get("clusterIPs") or []
        if old_ips and new_ips and old_ips[0] != new_ips[0]:
            shown = "[]string{" + ", ".join(f'"{ip}"' for ip in new_ips) + "}"
            causes.append(Cause("FieldValueInvalid",
                                f"Invalid value: {shown}: may not change once set",
                                "spec.clusterIPs[0]"))
    return causes
