"""The Service strategy, as kube-apiserver 1.28 has it.

Measured on kube-apiserver v1.28.7 (``tests/testing/test_apiserver_workloads.py``):
a create stores ``status.loadBalancer: {}`` and allocates a cluster IP (from
10.0.0.0/24, ``None`` for headless, none for ExternalName), IP families and
node ports (30000-32767) among the stored Services; an update that leaves
them out keeps them; ports are 1-65535 and named when there are several; the
cluster IP may not change once set. Defaults: :func:`.workload_defaults.default_service`.
"""

from __future__ import annotations

import copy
import ipaddress
import secrets
from collections.abc import Iterable
from typing import Any

from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid
from .strategy import Strategy
from .workload_defaults import default_service, spec_of

__all__ = ["ServiceStrategy"]

_SERVICE_CIDR = ipaddress.ip_network("10.0.0.0/24")


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


class ServiceStrategy(Strategy):
    """Services: allocated cluster IPs and node ports, kept across updates."""

    return_deleted_object = True

    def default(self, obj: Obj) -> None:
        if (spec := spec_of(obj)) is not None:
            default_service(spec)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        obj["status"] = {"loadBalancer": {}}
        _allocate(_spec(obj), list(existing))

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        _keep_allocated(_spec(old), new.get("spec"))

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return _service_ports(_spec(obj))

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        old_ips, new_ips = _spec(old).get("clusterIPs") or [], _spec(new).get("clusterIPs") or []
        if old_ips and new_ips and old_ips[0] != new_ips[0]:
            shown = "[]string{" + ", ".join(f'"{ip}"' for ip in new_ips) + "}"
            return [Cause("FieldValueInvalid", f"Invalid value: {shown}: may not change once set",
                          "spec.clusterIPs[0]")]
        return []


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

