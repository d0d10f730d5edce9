"""kube-controller-manager's endpoints controller.

For each Service with a selector, an Endpoints object of the same name lists
its backing Pods (:mod:`.service_backends`): ready Pods under ``addresses``,
the others (and all, with ``publishNotReadyAddresses``) under
``notReadyAddresses``, each with its IP, node, hostname (when the Pod's
subdomain is the Service) and a reference to the Pod, grouped into subsets
by the ports they resolve to; a Pod being deleted is left out. It carries
the Service's labels (``service.kubernetes.io/headless`` added for a
headless one) and the ``endpoints.kubernetes.io/last-change-trigger-time``
annotation. It is written only when its subsets or labels change, and
deleted with its Service. A Service without a selector is left alone: its
Endpoints are its owner's to write.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.unstructured import timestamp
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import own_key
from .loopback import LoopbackError
from .pod_readiness import is_ready
from .service_backends import backing_pods, may_run, resolve_port, services_selecting, sets_hostname

__all__ = ["EndpointsController", "HEADLESS", "TRIGGER_TIME"]

Obj = dict[str, Any]
HEADLESS = "service.kubernetes.io/headless"
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"


def service_labels(service: Obj) -> dict[str, str]:
    """The labels the Service's endpoints carry: its own, and the headless mark."""
    labels = dict(service["metadata"].get("labels") or {})
    if (service.get("spec") or {}).get("clusterIP") == "None":
        labels[HEADLESS] = ""
    return labels


def _address(pod: Obj, service: Obj) -> Obj:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    address: Obj = {"ip": pod["status"]["podIP"]}
    if sets_hostname(pod, service):
        address["hostname"] = spec["hostname"]
    if spec.get("nodeName"):
        address["nodeName"] = spec["nodeName"]
    address["targetRef"] = {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
                            "uid": meta["uid"]}
    return address


def subsets(service: Obj, pods: list[Obj]) -> list[Obj]:
    """The Service's subsets: addresses grouped by the ports they resolve to."""
    spec = service.get("spec") or {}
    tolerate = bool(spec.get("publishNotReadyAddresses"))
    groups: dict[str, Obj] = {}
    for pod in pods:
        if not may_run(pod, include_terminating=False) and not (
                tolerate and (pod.get("status") or {}).get("podIP")):
            continue
        ports: list[Obj] = []
        for port in spec.get("ports") or ():
            number = resolve_port(pod, port)
            if number is not None:
                ports.append({k: v for k, v in (("name", port.get("name")), ("port", number),
                                                 ("protocol", port.get("protocol", "TCP")),
                                                 ("appProtocol", port.get("appProtocol")))
                              if v})
        if not ports and (spec.get("ports") or spec.get("clusterIP") != "None"):
            continue
        group = groups.setdefault(repr(ports), {"ports": ports})
        field = "addresses" if tolerate or is_ready(pod) else "notReadyAddresses"
        group.setdefault(field, []).append(_address(pod, service))
    out = []
    for group in groups.values():
        subset: Obj = {}
        for field in ("addresses", "notReadyAddresses"):
            if group.get(field):
                subset[field] = sorted(group[field], key=lambda a: (
                    a["ip"], a["targetRef"]["uid"]))
        if group["ports"]:
            subset["ports"] = sorted(group["ports"], key=_port_hash)
        out.append(subset)
    return out


class EndpointsController(Loop):
    name = "endpoint"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("", "services"): own_key, ("", "pods"): self._services_of,
                ("", "endpoints"): own_key}

    def _services_of(self, pod: Obj) -> Iterable[ObjKey]:
        return services_selecting(self.ctx.objects("", "services"), [pod])

    async def sync(self, key: ObjKey) -> float | None:
        ns, name = key
        service = self.ctx.objects("", "services").get(key)
        current = self.ctx.objects("", "endpoints").get(key)
        path = f"/api/v1/namespaces/{ns}/endpoints"
        if service is None:
            if current is not None and _managed(current):
                await self.ctx.api.delete(f"{path}/{name}")
            return None
        pods = backing_pods(service, self.ctx.objects("", "pods"))
        if pods is None:
            return None
        wanted = subsets(service, pods)
        labels = service_labels(service)
        now = timestamp(self.ctx.clock.time())
        if current is None:
            body: Obj = {"apiVersion": "v1", "kind": "Endpoints", "metadata": {
                "name": name, "namespace": ns, "annotations": {TRIGGER_TIME: now}}}
            if labels:
                body["metadata"]["labels"] = labels
            if wanted:
                body["subsets"] = wanted
            try:
                await self.ctx.api.request("POST", path, body)
            except LoopbackError as err:
                if err.status != 409:  # made meanwhile: its event brings it here again
                    raise
            return None
        if (current.get("subsets") or []) == wanted and (
                current["metadata"].get("labels") or {}) == labels:
            return None
        updated = copy.deepcopy(current)
        meta = updated["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), TRIGGER_TIME: now}
        if labels:
            meta["labels"] = labels
        else:
            meta.pop("labels", None)
        if wanted:
            updated["subsets"] = wanted
        else:
            updated.pop("subsets", None)
        await self.ctx.api.request("PUT", f"{path}/{name}", updated)
        return None


def _port_hash(port: Obj) -> bytes:
    """The order kube-controller-manager gives a subset's ports: by the MD5 of the port
    as Go's spew library prints a ``v1.EndpointPort`` (``portsByHash``)."""
    app = port.get("appProtocol")
    shown = (f"(v1.EndpointPort){{Name:(string){port.get('name', '')} "
             f"Port:(int32){port['port']} Protocol:(v1.Protocol){port.get('protocol', 'TCP')} "
             f"AppProtocol:(*string){'<nil>' if app is None else app}}}")
    return hashlib.md5(shown.encode(), usedforsecurity=False).digest()


def _managed(endpoints: Obj) -> bool:
    return TRIGGER_TIME in (endpoints["metadata"].get("annotations") or {})
