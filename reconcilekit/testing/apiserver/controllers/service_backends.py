"""What the endpoints and endpointslice controllers share: the Pods behind a Service
(``k8s.io/kubernetes/pkg/controller/util/endpoint``).

A Service with a selector is backed by the Pods of its namespace whose labels
match it and that have a Pod IP and may still run (a Pod whose restart
policy lets it finish is left out once Succeeded or Failed). Each service
port resolves per Pod: a number is itself, a name is the named container port
of that protocol, and a Pod without it is left out of that port.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ...._foundations.selectors import LabelSelector
from ..storage.versioned_store import ObjKey

__all__ = ["backing_pods", "resolve_port", "services_selecting", "sets_hostname"]

Obj = dict[str, Any]


def _selector(service: Obj) -> LabelSelector | None:
    selector = (service.get("spec") or {}).get("selector")
    if not isinstance(selector, dict):
        return None
    return LabelSelector.from_labels(selector)


def services_selecting(services: Mapping[ObjKey, Obj], pods: Iterable[Obj | None]
                       ) -> list[ObjKey]:
    """The Services (keys) whose selector matches any of ``pods``."""
    out: list[ObjKey] = []
    for pod in pods:
        if pod is None:
            continue
        ns = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        for key, service in services.items():
            selector = _selector(service)
            if key[0] == ns and selector is not None and selector.matches(labels) and (
                    key not in out):
                out.append(key)
    return out


def may_run(pod: Obj, *, include_terminating: bool) -> bool:
    """``ShouldPodBeInEndpoints``: has an IP and has not finished for good."""
    status = pod.get("status") or {}
    if not status.get("podIP"):
        return False
    if not include_terminating and pod["metadata"].get("deletionTimestamp"):
        return False
    policy = (pod.get("spec") or {}).get("restartPolicy", "Always")
    phase = status.get("phase")
    if policy == "Never":
        return phase not in ("Failed", "Succeeded")
    if policy == "OnFailure":
        return phase != "Succeeded"
    return True


def backing_pods(service: Obj, pods: Mapping[ObjKey, Obj]) -> list[Obj] | None:
    """The Pods the Service's selector picks, by name; None for a Service without one."""
    selector = _selector(service)
    if selector is None:
        return None
    ns = service["metadata"]["namespace"]
    return [pod for (pns, _), pod in sorted(pods.items())
            if pns == ns and selector.matches(pod["metadata"].get("labels") or {})]


def resolve_port(pod: Obj, port: Obj) -> int | None:
    """``FindPort``: the container port a service port reaches on this Pod."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if isinstance(target, str) and target.isdigit():
        return int(target)
    protocol = port.get("protocol", "TCP")
    for container in (pod.get("spec") or {}).get("containers") or ():
        for cport in container.get("ports") or ():
            if cport.get("name") == target and cport.get("protocol", "TCP") == protocol:
                return int(cport["containerPort"])
    return None


def sets_hostname(pod: Obj, service: Obj) -> bool:
    """A Pod's hostname is published when its subdomain is the Service's name."""
    spec = pod.get("spec") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == service["metadata"][
        "name"] and pod["metadata"].get("namespace") == service["metadata"]["namespace"]
