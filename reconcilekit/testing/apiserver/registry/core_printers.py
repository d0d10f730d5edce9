"""The core group's printers: each kind's row in a Table, as kube-apiserver's
``pkg/printers/internalversion`` prints it.

Each function gives the cells of one object's row, one per column that
kube-apiserver declares for the kind (captured in the package data, see
:mod:`.table_convertor`), in order; a kind's strategy hands its printer to
the table convertor.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .printing import container_cells, format_labels, load_balancer_addresses, or_none
from .table_convertor import age

__all__ = ["component_status_cells", "configmap_cells", "endpoints_cells", "event_cells",
           "namespace_cells", "node_cells",
           "persistent_volume_claim_cells", "persistent_volume_cells", "pod_cells",
           "pod_template_cells", "replication_controller_cells", "resource_quota_cells",
           "secret_cells", "service_account_cells", "service_cells"]

Obj = Mapping[str, Any]


def _meta(obj: Obj) -> Obj:
    meta: Obj = obj["metadata"]
    return meta


def namespace_cells(ns: Obj, now: float) -> list[Any]:
    return [_meta(ns)["name"], (ns.get("status") or {}).get("phase", ""),
            age(_meta(ns).get("creationTimestamp"), now)]


def configmap_cells(cm: Obj, now: float) -> list[Any]:
    return [_meta(cm)["name"], len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
            age(_meta(cm).get("creationTimestamp"), now)]


def secret_cells(secret: Obj, now: float) -> list[Any]:
    return [_meta(secret)["name"], secret.get("type", ""), len(secret.get("data") or {}),
            age(_meta(secret).get("creationTimestamp"), now)]


def service_account_cells(account: Obj, now: float) -> list[Any]:
    return [_meta(account)["name"], len(account.get("secrets") or ()),
            age(_meta(account).get("creationTimestamp"), now)]


def _pod_status(pod: Obj) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for c in status.get("containerStatuses") or ():
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    if _meta(pod).get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_restarts(pod: Obj, now: float) -> str:
    """``3 (5m ago)``: the restarts, and when the last container restarted."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    finished = [t for c in statuses
                if (t := ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))]
    if restarts and finished:
        return f"{restarts} ({age(max(finished), now)} ago)"
    return str(restarts)


def pod_cells(pod: Obj, now: float) -> list[Any]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = status.get("containerStatuses") or ()
    ready = f"{sum(1 for c in statuses if c.get('ready'))}/{len(spec.get('containers') or ())}"
    gates = ", ".join(g.get("conditionType", "") for g in spec.get("readinessGates") or ())
    return [_meta(pod)["name"], ready, _pod_status(pod), _pod_restarts(pod, now),
            age(_meta(pod).get("creationTimestamp"), now), or_none(status.get("podIP")),
            or_none(spec.get("nodeName")), or_none(status.get("nominatedNodeName")),
            or_none(gates)]


def _created(obj: Obj, now: float) -> str:
    return age(_meta(obj).get("creationTimestamp"), now)


def pod_template_cells(obj: Obj, now: float) -> list[Any]:
    template = obj.get("template") or {}
    names, images = container_cells(template.get("spec") or {})
    return [_meta(obj)["name"], names, images,
            format_labels((template.get("metadata") or {}).get("labels"))]


def replication_controller_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    names, images = container_cells((spec.get("template") or {}).get("spec") or {})
    return [_meta(obj)["name"], spec.get("replicas", 0), status.get("replicas", 0),
            status.get("readyReplicas", 0), _created(obj, now), names, images,
            format_labels(spec.get("selector"))]


def _external_ip(spec: Obj, status: Obj) -> str:
    """``getServiceExternalIP``."""
    external = list(spec.get("externalIPs") or ())
    match spec.get("type"):
        case "ClusterIP" | "NodePort":
            return ",".join(external) or "<none>"
        case "LoadBalancer":
            balancer = load_balancer_addresses(status.get("loadBalancer") or {})
            if external:
                return ",".join([*(balancer.split(",") if balancer else ()), *external])
            return balancer or "<pending>"
        case "ExternalName":
            return str(spec.get("externalName", ""))
    return "<unknown>"


def service_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    ports = ",".join(
        f"{p.get('port')}:{p['nodePort']}/{p.get('protocol', '')}" if p.get("nodePort")
        else f"{p.get('port')}/{p.get('protocol', '')}" for p in spec.get("ports") or ())
    ips = spec.get("clusterIPs") or ()
    return [_meta(obj)["name"], spec.get("type", ""), ips[0] if ips else "<none>",
            _external_ip(spec, status), ports or "<none>", _created(obj, now),
            format_labels(spec.get("selector"))]


def _join_host_port(ip: str, port: Any) -> str:
    return f"[{ip}]:{port}" if ":" in ip else f"{ip}:{port}"


def endpoints_cells(obj: Obj, now: float) -> list[Any]:
    """``formatEndpoints``: up to three addresses (with each port), then ``+ N more...``."""
    subsets = obj.get("subsets") or ()
    if not subsets:
        return [_meta(obj)["name"], "<none>", _created(obj, now)]
    shown: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip", "")) for a in subset.get("addresses") or ()]
        for port in subset.get("ports") or (None,):
            count += len(addresses)
            for ip in addresses:
                if len(shown) == 3:
                    break
                shown.append(ip if port is None else _join_host_port(ip, port.get("port")))
    text = ",".join(shown) + (f" + {count - 3} more..." if count > 3 else "")
    return [_meta(obj)["name"], text, _created(obj, now)]


_ROLE_PREFIX = "node-role.kubernetes.io/"


def node_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    shown = [c["type"] if c.get("status") == "True" else "Not" + c["type"]
             for c in status.get("conditions") or () if c.get("type") == "Ready"][-1:]
    shown = shown or ["Unknown"]
    if spec.get("unschedulable"):
        shown.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (_meta(obj).get("labels") or {}).items():
        if key.startswith(_ROLE_PREFIX) and key[len(_ROLE_PREFIX):]:
            roles.add(key[len(_ROLE_PREFIX):])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or ()

    def address(kind: str) -> str:
        return next((a.get("address", "") for a in addresses if a.get("type") == kind),
                    "<none>")
    return [_meta(obj)["name"], ",".join(shown), ",".join(sorted(roles)) or "<none>",
            _created(obj, now), info.get("kubeletVersion", ""), address("InternalIP"),
            address("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"]


_ACCESS_MODES = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                 ("ReadWriteOncePod", "RWOP"))


def _access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``."""
    given = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODES if mode in given)


def persistent_volume_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    claim = spec.get("claimRef")
    annotations = _meta(obj).get("annotations") or {}
    return [_meta(obj)["name"], (spec.get("capacity") or {}).get("storage", "0"),
            _access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""), status.get("phase", ""),
            f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim else "",
            annotations.get("volume.beta.kubernetes.io/storage-class",
                            spec.get("storageClassName", "")),
            status.get("reason", ""), _created(obj, now), spec.get("volumeMode", "<unset>")]


def persistent_volume_claim_cells(obj: Obj, now: float) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    bound = bool(spec.get("volumeName"))
    annotations = _meta(obj).get("annotations") or {}
    return [_meta(obj)["name"], status.get("phase", ""), spec.get("volumeName", ""),
            (status.get("capacity") or {}).get("storage", "0") if bound else "",
            _access_modes(status.get("accessModes")) if bound else "",
            annotations.get("volume.beta.kubernetes.io/storage-class",
                            spec.get("storageClassName") or ""),
            _created(obj, now), spec.get("volumeMode", "<unset>")]


def event_cells(event: Obj, now: float) -> list[Any]:
    """A core Event's row (an events.k8s.io Event is printed as the core one)."""
    first = age(event.get("firstTimestamp"), now) if event.get("firstTimestamp") else age(
        event.get("eventTime"), now)
    last = age(event["lastTimestamp"], now) if event.get("lastTimestamp") else first
    count = event.get("count") or 1
    if (series := event.get("series")) is not None:
        last, count = age(series.get("lastObservedTime"), now), series.get("count", 0)
    involved = event.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    source = event.get("source") or {}
    component = source.get("component") or event.get("reportingComponent", "")
    instance = source.get("host") or event.get("reportingInstance", "")
    return [last, event.get("type", ""), event.get("reason", ""),
            f"{kind}/{involved['name']}" if involved.get("name") else kind,
            involved.get("fieldPath", ""),
            f"{component}, {instance}" if instance else component,
            str(event.get("message", "")).strip(), first, count, _meta(event)["name"]]


def resource_quota_cells(obj: Obj, now: float) -> list[Any]:
    status = obj.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        shown = f"{name}: {used.get(name, '0')}/{hard[name]}"
        (limits if name.split(".")[0] == "limits" and "." in name else requests).append(shown)
    return [_meta(obj)["name"], _created(obj, now), ", ".join(requests), ", ".join(limits)]


def component_status_cells(obj: Obj, now: float) -> list[Any]:
    """printComponentStatus: the Healthy condition's status, message and error."""
    status, message, error = "Unknown", "", ""
    for condition in obj.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = condition.get("message", ""), condition.get("error", "")
            break
    return [_meta(obj)["name"], status, message, error]
