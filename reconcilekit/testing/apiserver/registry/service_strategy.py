"""The Service strategy, as kube-apiserver 1.28 has it (and the Ingress one, which
shares its create-time ``status.loadBalancer: {}``, and whose rule paths must be
absolute; and those of the other kinds that say where traffic goes: Endpoints,
EndpointSlices, NetworkPolicies).

Measured on kube-apiserver v1.28.7 (``tests/testing/test_apiserver_workloads.py``):
a create stores ``status.loadBalancer: {}`` and allocates a cluster IP (from
10.0.0.0/24, ``None`` for headless, none for ExternalName), IP families and
node ports (30000-32767) among the stored Services, and refuses a cluster IP
or node port another Service holds; an update that leaves them out keeps
them, and one that changes ``clusterIP`` alone changes ``clusterIPs`` with
it; ports are 1-65535 and named when there are several; ``clusterIPs[0]``
must be ``clusterIP``, and the cluster IPs may not change once set.
Defaults: :func:`.workload_defaults.default_service`.
"""

from __future__ import annotations

import copy
import ipaddress
import secrets
from collections.abc import Iterable
from typing import Any

from ...._foundations.go_compat import go_quote
from ..machinery.resources import ResourceType
from ..machinery.status import Cause, StatusError
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid, not_supported
from .strategy import Strategy
from .workload_defaults import default_service, spec_of

__all__ = ["EndpointSliceStrategy", "EndpointsStrategy", "IngressStrategy",
           "NetworkPolicyStrategy", "ServiceStrategy"]

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
        stored = list(existing)
        spec = _spec(obj)
        if spec.get("clusterIP") and not spec.get("clusterIPs"):
            spec["clusterIPs"] = [spec["clusterIP"]]
        causes = _taken(spec, stored)
        if causes:
            raise StatusError.invalid("Service", obj["metadata"].get("name", ""), causes)
        _allocate(spec, stored)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        _keep_allocated(_spec(old), new.get("spec"))
        _follow_cluster_ip(_spec(old), _spec(new))

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return _first_cluster_ip(_spec(obj)) + _service_ports(_spec(obj))

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        """ValidateServiceUpdate's cluster IPs: none of those set may change (not
        checked when ``clusterIPs[0]`` is not ``clusterIP``, already refused)."""
        before, after = _spec(old), _spec(new)
        old_ips, new_ips = before.get("clusterIPs") or [], after.get("clusterIPs") or []
        if _first_cluster_ip(after) or "ExternalName" in (before.get("type"),
                                                          after.get("type")):
            return []
        changed = [i for i, (a, b) in enumerate(zip(old_ips, new_ips, strict=False)) if a != b]
        if len(old_ips) != len(new_ips):
            changed = [0] if old_ips and new_ips and old_ips[0] != new_ips[0] else []
        return [Cause("FieldValueInvalid",
                      f"Invalid value: {_go_strings(new_ips)}: may not change once set",
                      f"spec.clusterIPs[{i}]") for i in changed]


def _go_strings(values: list[Any]) -> str:
    return "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"


def _first_cluster_ip(spec: Obj) -> list[Cause]:
    ips = spec.get("clusterIPs") or []
    if ips and spec.get("clusterIP") != ips[0]:
        return [Cause("FieldValueInvalid", f"Invalid value: {_go_strings(ips)}: first value "
                      "must match `clusterIP`", "spec.clusterIPs")]
    return []


def _follow_cluster_ip(old: Obj, new: Obj) -> None:
    """normalizeClusterIPs: ``clusterIP`` changed with ``clusterIPs`` as they were
    makes ``clusterIPs`` follow it (cleared with it when it is cleared)."""
    if not new or old.get("clusterIP") == new.get("clusterIP"):
        return
    if (old.get("clusterIPs") or []) != (new.get("clusterIPs") or []):
        return
    if new.get("clusterIP"):
        new["clusterIPs"] = [new["clusterIP"]]
    elif old.get("clusterIP"):
        new.pop("clusterIPs", None)


def _taken(spec: Obj, existing: list[Obj]) -> list[Cause]:
    """A requested cluster IP or node port that a stored Service holds."""
    causes: list[Cause] = []
    held_ips = {ip for s in existing for ip in _spec(s).get("clusterIPs") or ()
                if ip != "None"}
    for ip in spec.get("clusterIPs") or ():
        if ip in held_ips:
            causes.append(Cause(
                "FieldValueInvalid", f"Invalid value: {_go_strings(spec['clusterIPs'])}: "
                f"failed to allocate IP {ip}: provided IP is already allocated",
                "spec.clusterIPs"))
    held_ports = {p.get("nodePort") for s in existing for p in _spec(s).get("ports") or ()
                  if isinstance(p, dict) and p.get("nodePort")}
    for i, port in enumerate(spec.get("ports") or ()):
        if isinstance(port, dict) and port.get("nodePort") in held_ports:
            causes.append(invalid(f"spec.ports[{i}].nodePort", port["nodePort"],
                                  "provided port is already allocated"))
    return causes


class IngressStrategy(Strategy):
    """Ingresses: created with the empty load balancer status Services have."""

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        obj["status"] = {"loadBalancer": {}}

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        """validateHTTPIngressRuleValue's paths: absolute (an ImplementationSpecific one
        may be empty)."""
        causes: list[Cause] = []
        for i, rule in enumerate(_spec(obj).get("rules") or ()):
            http = rule.get("http") if isinstance(rule, dict) else None
            paths = http.get("paths") if isinstance(http, dict) else None
            for j, path in enumerate(paths if isinstance(paths, list) else ()):
                if not isinstance(path, dict):
                    continue
                value = path.get("path") or ""
                if (value or path.get("pathType") in ("Exact", "Prefix")) and (
                        not str(value).startswith("/")):
                    causes.append(invalid(f"spec.rules[{i}].http.paths[{j}].path", value,
                                          "must be an absolute path"))
        return causes


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
    if not ports and spec.get("clusterIP") != "None" and spec.get("type") != "ExternalName":
        causes.append(Cause("FieldValueRequired", "Required value", "spec.ports"))
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



def _default_protocols(ports: Any) -> None:
    """``SetDefaults_EndpointPort`` and ``SetDefaults_NetworkPolicyPort``: TCP."""
    for port in ports if isinstance(ports, list) else ():
        if isinstance(port, dict) and port.get("protocol") is None:
            port["protocol"] = "TCP"


def special_ip_problems(address: str) -> list[str]:
    """``ValidateNonSpecialIP``: why ``address`` may not be an endpoint's."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return ["must be a valid IP address"]
    problems = []
    if ip.is_unspecified:
        problems.append(f"may not be unspecified ({address})")
    if ip.is_loopback:
        problems.append("may not be in the loopback range (127.0.0.0/8, ::1/128)")
    if ip.is_link_local and not ip.is_multicast:
        problems.append("may not be in the link-local range (169.254.0.0/16, fe80::/10)")
    if (ip in _LINK_LOCAL_MULTICAST) if ip.version == 4 else (
            ip.packed[0] == 0xFF and ip.packed[1] & 0x0F == 0x02):
        problems.append("may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")
    return problems


_LINK_LOCAL_MULTICAST = ipaddress.ip_network("224.0.0.0/24")


class EndpointsStrategy(Strategy):
    """Endpoints: each subset's ports' ``protocol`` defaults to TCP; each address is an
    IP address no endpoint may be refused for (``IsValidIP``, then
    ``ValidateNonSpecialIP``), each port number 1-65535."""

    def default(self, obj: Obj) -> None:
        for subset in obj.get("subsets") or ():
            if isinstance(subset, dict):
                _default_protocols(subset.get("ports"))

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes: list[Cause] = []
        for i, subset in enumerate(obj.get("subsets") or ()):
            if not isinstance(subset, dict):
                continue
            for kind in ("addresses", "notReadyAddresses"):
                for j, address in enumerate(subset.get(kind) or ()):
                    ip = str(address.get("ip", "")) if isinstance(address, dict) else ""
                    path = f"subsets[{i}].{kind}[{j}].ip"
                    if not _is_ip(ip):
                        causes.append(invalid(path, ip, "must be a valid IP address, "
                                              "(e.g. 10.9.8.7 or 2001:db8::ffff)"))
                    causes += [invalid(path, ip, problem)
                               for problem in special_ip_problems(ip)]
            for j, port in enumerate(subset.get("ports") or ()):
                number = port.get("port") if isinstance(port, dict) else None
                if isinstance(number, int) and not 1 <= number <= 65535:
                    causes.append(invalid(f"subsets[{i}].ports[{j}].port", number,
                                          "must be between 1 and 65535, inclusive"))
        return causes


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class NetworkPolicyStrategy(Strategy):
    """NetworkPolicies (``SetDefaults_NetworkPolicy``): each rule's ports' ``protocol``
    defaults to TCP, and ``policyTypes``, when empty, to ``[Ingress]``, with ``Egress``
    after it when there are egress rules."""

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for direction in ("ingress", "egress"):
            for rule in spec.get(direction) or ():
                if isinstance(rule, dict):
                    _default_protocols(rule.get("ports"))
        if not spec.get("policyTypes"):
            spec["policyTypes"] = ["Ingress", *(["Egress"] if spec.get("egress") else [])]

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        """validateNetworkPolicyPort's protocols, ValidateIPBlock's CIDRs."""
        spec = _spec(obj)
        causes: list[Cause] = []
        for direction in ("ingress", "egress"):
            for i, rule in enumerate(spec.get(direction) or ()):
                ports = rule.get("ports") if isinstance(rule, dict) else None
                for j, port in enumerate(ports if isinstance(ports, list) else ()):
                    protocol = port.get("protocol") if isinstance(port, dict) else None
                    if protocol is not None and protocol not in _POLICY_PROTOCOLS:
                        causes.append(not_supported(
                            f"spec.{direction}[{i}].ports[{j}].protocol", protocol,
                            _POLICY_PROTOCOLS))
                side = "from" if direction == "ingress" else "to"
                peers = rule.get(side) if isinstance(rule, dict) else None
                for j, peer in enumerate(peers if isinstance(peers, list) else ()):
                    block = peer.get("ipBlock") if isinstance(peer, dict) else None
                    if isinstance(block, dict):
                        causes += _ip_block(block, f"spec.{direction}[{i}].{side}[{j}].ipBlock")
        return causes

    def validate_update(self, obj: Obj, old: Obj, namespace: str) -> list[Cause]:
        """ValidateUpdate: the spec's rules twice, as kube-apiserver checks them both in
        ValidateNetworkPolicy and ValidateNetworkPolicyUpdate."""
        causes = self.validate(obj, namespace)
        return causes + causes


def _ip_block(block: Obj, path: str) -> list[Cause]:
    """ValidateIPBlock: ``cidr`` and each ``except`` entry a CIDR."""
    cidr = block.get("cidr")
    if not cidr:
        return [Cause("FieldValueRequired", "Required value", f"{path}.cidr")]
    if not _is_cidr(str(cidr)):
        return [invalid(f"{path}.cidr", cidr, "not a valid CIDR")]
    return [invalid(f"{path}.except[{i}]", value, "not a valid CIDR")
            for i, value in enumerate(block.get("except") or ()) if not _is_cidr(str(value))]


def _is_cidr(text: str) -> bool:
    """Go's ``net.ParseCIDR``: an address, a slash and a prefix length."""
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return "/" in text


_POLICY_PROTOCOLS = ("TCP", "UDP", "SCTP")


class EndpointSliceStrategy(Strategy):
    """EndpointSlices: each port's ``name`` defaults to "" and ``protocol`` to TCP
    (``SetDefaults_EndpointPort``), and no two ports share a name; each address is one
    of the ``addressType`` (IPv4, IPv6; FQDN is not checked here), which may not
    change."""

    def default(self, obj: Obj) -> None:
        for port in obj.get("ports") or ():
            if isinstance(port, dict):
                port.setdefault("name", "")
                port.setdefault("protocol", "TCP")

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes: list[Cause] = []
        seen: set[object] = set()
        for i, port in enumerate(obj.get("ports") or ()):
            name = port.get("name") if isinstance(port, dict) else None
            if name in seen:
                causes.append(Cause("FieldValueDuplicate", f"Duplicate value: {go_quote(name)}"
                                    if isinstance(name, str) else f"Duplicate value: {name}",
                                    f"ports[{i}].name"))
            seen.add(name)
        return _slice_addresses(obj) + causes

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        if old.get("addressType") != new.get("addressType"):
            return [invalid("addressType", new.get("addressType"), "field is immutable")]
        return []


_ADDRESS_VERSIONS = {"IPv4": 4, "IPv6": 6}


def _slice_addresses(obj: Obj) -> list[Cause]:
    """validateEndpoints' addresses: each an IP address of the slice's family."""
    version = _ADDRESS_VERSIONS.get(str(obj.get("addressType")))
    causes: list[Cause] = []
    for i, endpoint in enumerate(obj.get("endpoints") or () if version else ()):
        addresses = endpoint.get("addresses") if isinstance(endpoint, dict) else None
        for j, address in enumerate(addresses if isinstance(addresses, list) else ()):
            try:
                ok = ipaddress.ip_address(str(address)).version == version
            except ValueError:
                ok = False
            if not ok:
                causes.append(invalid(f"endpoints[{i}].addresses[{j}]", address,
                                      f"must be a valid IPv{version} address"))
            causes += [invalid(f"endpoints[{i}].addresses[{j}]", address, problem)
                       for problem in special_ip_problems(str(address))]
    return causes
