"""The named groups' printers (apps, batch, autoscaling, networking, policy, rbac,
storage, scheduling, admissionregistration, coordination, discovery, node): each
kind's row in a Table, as kube-apiserver's ``pkg/printers/internalversion``
prints it, one cell per captured column (see :mod:`.table_convertor`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.unstructured import epoch_seconds
from .printing import (
    container_cells,
    format_label_selector,
    format_labels,
    list_with_more,
    load_balancer_addresses,
    or_none,
)
from .table_convertor import age

__all__ = ["controller_revision_cells", "cron_job_cells", "daemon_set_cells",
           "deployment_cells", "endpoint_slice_cells", "hpa_cells", "ingress_cells",
           "ingress_class_cells", "job_cells", "lease_cells", "network_policy_cells",
           "pdb_cells", "priority_class_cells", "replica_set_cells", "role_binding_cells",
           "runtime_class_cells", "stateful_set_cells", "storage_class_cells",
           "webhook_configuration_cells"]

Obj = Mapping[str, Any]


def _parts(obj: Obj) -> tuple[Obj, Obj, Obj]:
    return obj["metadata"], obj.get("spec") or {}, obj.get("status") or {}


def _created(obj: Obj, now: float) -> str:
    return age(obj["metadata"].get("creationTimestamp"), now)


def _pod_spec(template: Obj) -> Obj:
    return (template.get("spec") or {}) if template else {}


def deployment_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    names, images = container_cells(_pod_spec(spec.get("template") or {}))
    return [meta["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            _created(obj, now), names, images, format_label_selector(spec.get("selector"))]


def replica_set_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    names, images = container_cells(_pod_spec(spec.get("template") or {}))
    return [meta["name"], spec.get("replicas", 0), status.get("replicas", 0),
            status.get("readyReplicas", 0), _created(obj, now), names, images,
            format_label_selector(spec.get("selector"))]


def stateful_set_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    names, images = container_cells(_pod_spec(spec.get("template") or {}))
    return [meta["name"], f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 0)}",
            _created(obj, now), names, images]


def daemon_set_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    pod = _pod_spec(spec.get("template") or {})
    names, images = container_cells(pod)
    return [meta["name"], status.get("desiredNumberScheduled", 0),
            status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
            format_labels(pod.get("nodeSelector")), _created(obj, now), names, images,
            format_label_selector(spec.get("selector"))]


def controller_revision_cells(obj: Obj, now: float) -> list[Any]:
    controller = "<none>"
    for ref in obj["metadata"].get("ownerReferences") or ():
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = f"{ref.get('kind', '')}.{group}" if group else str(ref.get("kind", ""))
            controller = f"{kind.lower()}/{ref.get('name', '')}"
            break
    return [obj["metadata"]["name"], controller, obj.get("revision", 0), _created(obj, now)]


def job_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    succeeded = status.get("succeeded", 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif (spec.get("parallelism") or 0) > 1:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    else:
        completions = f"{succeeded}/1"
    duration = ""
    if status.get("startTime"):
        # a running Job's duration is its age since it started; a finished one's, the
        # time it ran: the age of its start seen from its completion
        end = now if not status.get("completionTime") else epoch_seconds(
            status["completionTime"])
        duration = age(status["startTime"], end)
    names, images = container_cells(_pod_spec(spec.get("template") or {}))
    return [meta["name"], completions, duration, _created(obj, now), names, images,
            format_label_selector(spec.get("selector"))]


def cron_job_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    job = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = container_cells(_pod_spec(job.get("template") or {}))
    suspend = spec.get("suspend")
    last = status.get("lastScheduleTime")
    return [meta["name"], spec.get("schedule", ""),
            "<unset>" if suspend is None else ("True" if suspend else "False"),
            len(status.get("active") or ()), age(last, now) if last else "<none>",
            _created(obj, now), names, images, format_label_selector(job.get("selector"))]


def _metric_target(spec: Obj, status: Obj | None) -> str:
    """One metric of ``formatHPAMetrics``: current/target."""
    kind = spec.get("type")
    source = spec.get({"Resource": "resource", "ContainerResource": "containerResource",
                       "Pods": "pods", "Object": "object", "External": "external"}.get(
                           str(kind), "")) or {}
    current_of = (status or {}).get({"Resource": "resource",
                                     "ContainerResource": "containerResource",
                                     "Pods": "pods", "Object": "object",
                                     "External": "external"}.get(str(kind), "")) or {}
    target, current = source.get("target") or {}, current_of.get("current") or {}
    if kind in ("Resource", "ContainerResource") and target.get("averageValue") is None:
        shown = ("<unknown>" if current.get("averageUtilization") is None
                 else f"{current['averageUtilization']}%")
        wanted = ("<auto>" if target.get("averageUtilization") is None
                  else f"{target['averageUtilization']}%")
        return f"{shown}/{wanted}"
    if kind in ("Resource", "ContainerResource", "Pods"):
        return f"{current.get('averageValue', '<unknown>')}/{target.get('averageValue')}"
    if kind in ("Object", "External"):
        if target.get("averageValue") is not None:
            return (f"{current.get('averageValue', '<unknown>')}/"
                    f"{target['averageValue']} (avg)")
        return f"{current.get('value', '<unknown>')}/{target.get('value')}"
    return "<unknown type>"


def hpa_cells(obj: Obj, now: float) -> list[Any]:
    """An autoscaling/v2 HorizontalPodAutoscaler's row."""
    meta, spec, status = _parts(obj)
    ref = spec.get("scaleTargetRef") or {}
    metrics, current = spec.get("metrics") or (), status.get("currentMetrics") or ()
    shown = [_metric_target(m, current[i] if i < len(current) else None)
             for i, m in enumerate(metrics)]
    targets = ("<none>" if not shown else ", ".join(shown[:2]) + (
        f" + {len(shown) - 2} more..." if len(shown) > 2 else ""))
    minimum = spec.get("minReplicas")
    return [meta["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}", targets,
            "<unset>" if minimum is None else str(minimum), spec.get("maxReplicas", 0),
            status.get("currentReplicas", 0), _created(obj, now)]


def ingress_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    rules = spec.get("rules") or ()
    hosts: list[str] = []
    more = False
    for rule in rules:  # formatHosts: three hosts, then "+ N more..." if any rule follows
        if len(hosts) == 3:
            more = True
        if not more and rule.get("host"):
            hosts.append(rule["host"])
    shown = ",".join(hosts) + (f" + {len(rules) - 3} more..." if more else "")
    return [meta["name"], or_none(spec.get("ingressClassName")), shown or "*",
            load_balancer_addresses(status.get("loadBalancer") or {}),
            "80, 443" if spec.get("tls") else "80", _created(obj, now)]


def ingress_class_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, _ = _parts(obj)
    parameters = spec.get("parameters")
    shown = "<none>"
    if parameters:
        group = parameters.get("apiGroup")
        kind = f"{parameters.get('kind', '')}.{group}" if group else parameters.get("kind", "")
        shown = f"{kind}/{parameters.get('name', '')}"
    return [meta["name"], spec.get("controller", ""), shown, _created(obj, now)]


def network_policy_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, _ = _parts(obj)
    return [meta["name"], format_label_selector(spec.get("podSelector") or {}),
            _created(obj, now)]


def pdb_cells(obj: Obj, now: float) -> list[Any]:
    meta, spec, status = _parts(obj)
    least, most = spec.get("minAvailable"), spec.get("maxUnavailable")
    return [meta["name"], "N/A" if least is None else str(least),
            "N/A" if most is None else str(most), status.get("disruptionsAllowed", 0),
            _created(obj, now)]


def role_binding_cells(obj: Obj, now: float) -> list[Any]:
    ref = obj.get("roleRef") or {}
    subjects: Iterable[Obj] = obj.get("subjects") or ()
    users, groups, accounts = [], [], []
    for s in subjects:
        match s.get("kind"):
            case "User":
                users.append(s.get("name", ""))
            case "Group":
                groups.append(s.get("name", ""))
            case "ServiceAccount":
                accounts.append(f"{s.get('namespace', '')}/{s.get('name', '')}")
    return [obj["metadata"]["name"], f"{ref.get('kind', '')}/{ref.get('name', '')}",
            _created(obj, now), ", ".join(users), ", ".join(groups), ", ".join(accounts)]


_DEFAULT_CLASS = ("storageclass.kubernetes.io/is-default-class",
                  "storageclass.beta.kubernetes.io/is-default-class")


def storage_class_cells(obj: Obj, now: float) -> list[Any]:
    annotations = obj["metadata"].get("annotations") or {}
    name = obj["metadata"]["name"]
    if any(annotations.get(a) == "true" for a in _DEFAULT_CLASS):
        name += " (default)"
    expansion = obj.get("allowVolumeExpansion")
    return [name, obj.get("provisioner", ""), obj.get("reclaimPolicy", "Delete"),
            obj.get("volumeBindingMode", "Immediate"), bool(expansion),
            _created(obj, now)]


def priority_class_cells(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("value", 0), bool(obj.get("globalDefault")),
            _created(obj, now)]


def webhook_configuration_cells(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], len(obj.get("webhooks") or ()), _created(obj, now)]


def lease_cells(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], (obj.get("spec") or {}).get("holderIdentity", ""),
            _created(obj, now)]


def runtime_class_cells(obj: Obj, now: float) -> list[Any]:
    return [obj["metadata"]["name"], obj.get("handler", ""), _created(obj, now)]


def endpoint_slice_cells(obj: Obj, now: float) -> list[Any]:
    ports = [str(p["port"]) if p.get("port") is not None else
             "*" if p.get("name") is None else str(p["name"]) for p in obj.get("ports") or ()]
    addresses = [a for e in obj.get("endpoints") or () for a in e.get("addresses") or ()]
    return [obj["metadata"]["name"], obj.get("addressType", ""), list_with_more(ports),
            list_with_more(addresses), _created(obj, now)]
