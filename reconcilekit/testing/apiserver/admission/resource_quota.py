"""kube-apiserver's ResourceQuota admission plugin, and the usage it and the
resourcequota controller count.

What an object uses: ``count/<resource>[.<group>]`` one of its kind; a Pod
that has not finished ``pods`` and its compute (``requests.cpu`` alias
``cpu``, ``requests.memory`` alias ``memory``, ``limits.*``, the sum of its
containers' or the largest init container's, whichever is more); a Service
``services``, ``services.loadbalancers`` and ``services.nodeports``; a
claim ``persistentvolumeclaims`` and ``requests.storage``; ConfigMaps,
Secrets, ReplicationControllers and ResourceQuotas their plural.

Admission of a create, for every quota of the namespace whose status lists
hard limits (a quota the controller has not seen yet limits nothing, as on
kube-apiserver): a Pod missing a request or limit a quota tracks for cpu or
memory is refused (``failed quota: NAME: must specify ...``), a create that
would take a tracked usage past its hard limit is refused (``exceeded quota:
NAME, requested: ..., used: ..., limited: ...``), both 403 Forbidden;
otherwise each quota's ``status.used`` grows by what the object uses before
the object is stored (unless a dry run), so two creates never both take the
last unit.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from fractions import Fraction
from typing import Any

from ..machinery.quantity import format_quantity, is_binary, parse_quantity
from ..machinery.resources import ResourceType
from ..machinery.status import StatusError
from ..registry.generic_store import Storage

__all__ = ["QuotaAdmission", "namespace_usage", "object_usage"]

Obj = dict[str, Any]
_PLURALS = {"services", "configmaps", "secrets", "persistentvolumeclaims",
            "replicationcontrollers", "resourcequotas"}
_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_VALIDATED = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}


def _pod_resources(spec: Obj, kind: str) -> dict[str, Fraction]:
    """A Pod's requests or limits: its containers' sum, or its largest init container's."""
    total: dict[str, Fraction] = {}
    for container in spec.get("containers") or ():
        for name, value in ((container.get("resources") or {}).get(kind) or {}).items():
            amount = parse_quantity(value)
            if amount is not None:
                total[name] = total.get(name, Fraction(0)) + amount
    for container in spec.get("initContainers") or ():
        for name, value in ((container.get("resources") or {}).get(kind) or {}).items():
            amount = parse_quantity(value)
            if amount is not None and amount > total.get(name, Fraction(0)):
                total[name] = amount
    return total


def object_usage(rtype: ResourceType, obj: Obj) -> dict[str, Fraction]:
    """What ``obj`` of ``rtype`` counts against a quota."""
    r = rtype.resource
    used = {f"count/{r.plural}" + (f".{r.group}" if r.group else ""): Fraction(1)}
    spec = obj.get("spec") or {}
    if r.group == "" and r.plural == "pods":
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return used
        used["pods"] = Fraction(1)
        for kind in ("requests", "limits"):
            for name, amount in _pod_resources(spec, kind).items():
                used[f"{kind}.{name}"] = amount
                if kind == "requests" and name in _COMPUTE:
                    used[name] = amount
    elif r.group == "" and r.plural in _PLURALS:
        used[r.plural] = Fraction(1)
        if r.plural == "services":
            kind = spec.get("type", "ClusterIP")
            if kind == "LoadBalancer":
                used["services.loadbalancers"] = Fraction(1)
            if kind in ("NodePort", "LoadBalancer"):
                used["services.nodeports"] = Fraction(len(spec.get("ports") or ()))
        if r.plural == "persistentvolumeclaims":
            storage = parse_quantity(((spec.get("resources") or {}).get("requests") or {}).get(
                "storage", "0"))
            used["requests.storage"] = storage or Fraction(0)
    return used


def namespace_usage(storage: Storage, namespace: str, names: Iterable[str]
                    ) -> dict[str, Fraction]:
    """The usage of ``names`` by every object of ``namespace``."""
    wanted = set(names)
    total = dict.fromkeys(wanted, Fraction(0))
    for table in list(storage.tables.values()):
        if not table.rtype.resource.namespaced:
            continue
        for (ns, _), obj in table.objects.items():
            if ns != namespace:
                continue
            for name, amount in object_usage(table.rtype, obj).items():
                if name in wanted:
                    total[name] += amount
    return total


def _shown(usage: Mapping[str, Fraction], like: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={format_quantity(v, is_binary(like.get(k, '')))}"
                    for k, v in sorted(usage.items()))


class QuotaAdmission:
    """The ResourceQuota plugin over ``storage``."""

    def __init__(self, storage: Storage, quotas: ResourceType) -> None:
        self.storage = storage
        self.quotas = quotas

    def admit_create(self, rtype: ResourceType, namespace: str, obj: Obj, *,
                     dry_run: bool) -> None:
        if not rtype.resource.namespaced or not namespace:
            return
        table = self.storage.tables.get(("", "resourcequotas"))
        quotas = sorted((q for (ns, _), q in (table.objects.items() if table else ())
                         if ns == namespace and (q.get("status") or {}).get("hard")),
                        key=lambda q: q["metadata"]["name"])
        if not quotas:
            return
        usage = object_usage(rtype, obj)
        r = rtype.resource
        name = obj["metadata"]["name"]

        def refuse(reason: str) -> StatusError:
            return StatusError.forbidden_because(r.group_resource, name, r.group, reason)
        grown = []
        for quota in quotas:
            hard = quota["status"]["hard"]
            quota_name = quota["metadata"]["name"]
            missing = self._missing(rtype, obj, set(hard))
            if missing:
                raise refuse(f"failed quota: {quota_name}: must specify {missing}")
            used = {k: parse_quantity(v) or Fraction(0)
                    for k, v in (quota["status"].get("used") or {}).items()}
            requested = {k: v for k, v in usage.items() if k in hard}
            if not requested:
                continue
            after = {k: used.get(k, Fraction(0)) + v for k, v in requested.items()}
            limits = {k: parse_quantity(hard[k]) or Fraction(0) for k in requested}
            exceeded = sorted(k for k, v in after.items() if v > limits[k])
            if exceeded:
                shown = [_shown({k: values.get(k, Fraction(0)) for k in exceeded}, hard)
                         for values in (requested, used, limits)]
                raise refuse(f"exceeded quota: {quota_name}, requested: {shown[0]}, "
                             f"used: {shown[1]}, limited: {shown[2]}")
            grown.append((quota, after))
        if dry_run:
            return
        for quota, after in grown:
            updated = copy.deepcopy(quota)
            used = updated["status"].setdefault("used", {})
            for k, v in after.items():
                used[k] = format_quantity(v, is_binary(updated["status"]["hard"].get(k, "")))
            meta = quota["metadata"]
            self.storage.update(self.quotas, meta["namespace"], meta["name"], updated,
                                subresource="status", manager="kube-apiserver", check_rv=False)

    @staticmethod
    def _missing(rtype: ResourceType, obj: Obj, tracked: set[str]) -> str:
        """The pod evaluator's constraints: each container names what a quota tracks of
        cpu and memory."""
        r = rtype.resource
        required = tracked & _VALIDATED
        if r.group != "" or r.plural != "pods" or not required:
            return ""
        spec = obj.get("spec") or {}
        lacking: dict[str, set[str]] = {}
        for container in [*spec.get("containers", ()), *spec.get("initContainers", ())]:
            resources = container.get("resources") or {}
            for name in required:
                kind, _, resource = name.rpartition(".")
                present = (resources.get(kind or "requests") or {})
                if resource not in present:
                    lacking.setdefault(name, set()).add(str(container.get("name", "")))
        return "; ".join(f"{name} for: {','.join(sorted(lacking[name]))}"
                         for name in sorted(lacking))
