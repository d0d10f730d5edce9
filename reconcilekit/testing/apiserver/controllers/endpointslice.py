"""kube-controller-manager's endpointslice controller.

For each Service with a selector, EndpointSlices (``<service>-<random>``,
owned by the Service, labelled ``kubernetes.io/service-name`` and
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io``
beside the Service's own labels) list its backing Pods
(:mod:`.service_backends`), one slice per set of resolved ports, each Pod an
endpoint with its IP, the ``ready``/``serving``/``terminating`` conditions
(a Pod being deleted stays, not ready), hostname, node and zone (the Node's
``topology.kubernetes.io/zone`` label). A Pod on a node that has no Node
object is left out, as kube-controller-manager leaves it out, until the Node
appears. A Service with no endpoint gets one placeholder slice
(``endpoints`` and ``ports`` null). Slices are written only when their
endpoints, ports or labels change; the garbage collector deletes them with
their Service.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.unstructured import timestamp
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import own_key, owner_reference
from .pod_readiness import is_ready
from .service_backends import backing_pods, may_run, resolve_port, services_selecting, sets_hostname
from .service_endpoints import TRIGGER_TIME, service_labels

__all__ = ["EndpointSliceController"]

Obj = dict[str, Any]
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER = "endpointslice-controller.k8s.io"
_ZONE = "topology.kubernetes.io/zone"


def _endpoint(pod: Obj, service: Obj, node: Obj | None) -> Obj:
    meta, spec = pod["metadata"], pod.get("spec") or {}
    serving = is_ready(pod)
    terminating = bool(meta.get("deletionTimestamp"))
    publish = bool((service.get("spec") or {}).get("publishNotReadyAddresses"))
    endpoint: Obj = {"addresses": [pod["status"]["podIP"]], "conditions": {
        "ready": publish or (serving and not terminating), "serving": serving,
        "terminating": terminating}}
    if sets_hostname(pod, service):
        endpoint["hostname"] = spec["hostname"]
    endpoint["targetRef"] = {"kind": "Pod", "namespace": meta["namespace"],
                             "name": meta["name"], "uid": meta["uid"]}
    if spec.get("nodeName"):
        endpoint["nodeName"] = spec["nodeName"]
    zone = ((node or {}).get("metadata", {}).get("labels") or {}).get(_ZONE)
    if zone:
        endpoint["zone"] = zone
    return endpoint


class EndpointSliceController(Loop):
    name = "endpointslice"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("", "services"): own_key, ("", "pods"): self._services_of,
                ("discovery.k8s.io", "endpointslices"): _service_of_slice,
                ("", "nodes"): self._every_selecting_service}

    def _services_of(self, pod: Obj) -> Iterable[ObjKey]:
        return services_selecting(self.ctx.objects("", "services"), [pod])

    def _every_selecting_service(self, _node: Obj) -> Iterable[ObjKey]:
        return [key for key, s in self.ctx.objects("", "services").items()
                if isinstance((s.get("spec") or {}).get("selector"), dict)]

    def _desired(self, service: Obj, pods: list[Obj]) -> list[tuple[list[Obj], list[Obj]]]:
        """(ports, endpoints) of each slice the Service should have."""
        nodes = self.ctx.objects("", "nodes")
        groups: dict[str, tuple[list[Obj], list[Obj]]] = {}
        for pod in pods:
            if not may_run(pod, include_terminating=True):
                continue
            node_name = (pod.get("spec") or {}).get("nodeName")
            node = nodes.get(("", node_name)) if node_name else None
            if node_name and node is None:
                continue  # kube-controller-manager skips it until its Node exists
            ports = []
            for port in (service.get("spec") or {}).get("ports") or ():
                number = resolve_port(pod, port)
                if number is not None:
                    entry = {"name": port.get("name", ""), "protocol": port.get("protocol", "TCP"),
                             "port": number}
                    if port.get("appProtocol"):
                        entry["appProtocol"] = port["appProtocol"]
                    ports.append(entry)
            group = groups.setdefault(repr(ports), (ports, []))
            group[1].append(_endpoint(pod, service, node))
        return list(groups.values())

    async def sync(self, key: ObjKey) -> float | None:
        ns, name = key
        service = self.ctx.objects("", "services").get(key)
        if service is None:
            return None  # its slices go with it: the garbage collector follows their owner
        pods = backing_pods(service, self.ctx.objects("", "pods"))
        if pods is None:
            return None
        slices = sorted((s for (sns, _), s in self.ctx.objects(
            "discovery.k8s.io", "endpointslices").items() if sns == ns and (
            s["metadata"].get("labels") or {}).get(SERVICE_NAME) == name and (
            s["metadata"].get("labels") or {}).get(MANAGED_BY) == CONTROLLER),
            key=lambda s: s["metadata"]["name"])
        desired: list[tuple[list[Obj] | None, list[Obj] | None]] = [
            (ports, endpoints) for ports, endpoints in self._desired(service, pods)]
        if not desired:
            desired = [(None, None)]  # the placeholder
        labels = {**service_labels(service), MANAGED_BY: CONTROLLER, SERVICE_NAME: name}
        path = f"/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices"
        now = timestamp(self.ctx.clock.time())
        unused = list(slices)
        for ports, endpoints in desired:
            match = next((s for s in unused if s.get("ports") == ports), None) or (
                unused[0] if unused else None)
            if match is None:
                body = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {"generateName": f"{name}-", "namespace": ns,
                                     "labels": labels, "annotations": {TRIGGER_TIME: now},
                                     "ownerReferences": [owner_reference(service)]},
                        "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
                await self.ctx.api.request("POST", path, body)
                continue
            unused.remove(match)
            if match.get("ports") == ports and match.get("endpoints") == endpoints and (
                    match["metadata"].get("labels") or {}) == labels:
                continue
            updated = copy.deepcopy(match)
            meta = updated["metadata"]
            meta["labels"] = labels
            meta["annotations"] = {**(meta.get("annotations") or {}), TRIGGER_TIME: now}
            updated["endpoints"], updated["ports"] = endpoints, ports
            await self.ctx.api.request("PUT", f"{path}/{meta['name']}", updated)
        for extra in unused:
            await self.ctx.api.delete(f"{path}/{extra['metadata']['name']}")
        return None


def _service_of_slice(obj: Obj) -> Iterable[ObjKey]:
    labels = obj["metadata"].get("labels") or {}
    if labels.get(MANAGED_BY) != CONTROLLER or not labels.get(SERVICE_NAME):
        return []
    return [(obj["metadata"].get("namespace", ""), labels[SERVICE_NAME])]
