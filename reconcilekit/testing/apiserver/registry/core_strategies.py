"""The strategies of the core kinds with rules of their own, as kube-apiserver 1.28 has them.

* Namespace: the ``kubernetes.io/metadata.name`` label, ``spec.finalizers``
  (``kubernetes`` when created, changed only through ``namespaces/finalize``),
  ``status.phase``; a DELETE starts its lifecycle (``Terminating``, no grace
  period), which its finalizers hold until the namespace controller is done.
* Pod: defaults and the admission plugins that change a created Pod
  (:mod:`.pod_defaults`, :mod:`.limit_ranger`, :mod:`.priority_classes`), the
  status a create stores, container validation, the few spec fields an update
  may change, graceful deletion of a Pod bound to a node.
* ConfigMap, Secret, Lease: :mod:`.core_validation`'s rules.
* PodTemplate: its template's defaults.
* Event, served by the core group and by events.k8s.io: stored as the core
  Event (:mod:`.event_versions`), validated as one (:mod:`.event_validation`).

Services are :mod:`.service_strategy`'s, the workload kinds
:mod:`.workload_strategies`'.
"""

from __future__ import annotations

import base64
import copy
import functools
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.builtin_kinds import builtin_api
from ..machinery.decoding import bytes_map, string_map
from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import (
    STANDARD_FINALIZERS,
    forbidden,
    invalid,
    qualified_name_errors,
)
from .core_printers import event_cells
from .core_validation import (
    immutable_when_set,
    validate_configmap,
    validate_ephemeral_containers_update,
    validate_lease,
    validate_pod_spec,
    validate_pod_update,
    validate_secret,
)
from .event_validation import validate_event
from .event_versions import EVENTS_GROUP_VERSION, shape, to_core, to_events_v1
from .limit_ranger import apply_limit_ranges
from .pod_defaults import admit_pod, default_pod, qos_class
from .priority_classes import admit_priority
from .strategy import StoredObjects, Strategy
from .table_convertor import TableConvertor, builtin_printer
from .workload_defaults import default_namespace, default_pod_template

NOT_READY_TAINT = "node.kubernetes.io/not-ready"

__all__ = ["NOT_READY_TAINT", "ConfigMapStrategy", "EventStrategy", "LeaseStrategy",
           "LimitRangeStrategy", "NamespaceStrategy", "NodeStrategy", "PodStrategy",
           "PodTemplateStrategy", "ReturnsDeletedStrategy", "SecretStrategy"]


class NamespaceStrategy(Strategy):
    """Namespaces: the one kind whose objects are namespaces.

    Invariant: ``spec.finalizers`` changes only through ``namespaces/finalize``; the
    name label always names the namespace.
    """

    own_namespace = True
    lifecycle_deletion = True
    label_names = True

    def default(self, obj: Obj) -> None:
        default_namespace(obj)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
        _label_namespace(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        _label_namespace(new)
        if subresource != "finalize":
            finalizers = (old.get("spec") or {}).get("finalizers")
            spec = new.get("spec")
            spec = spec if isinstance(spec, dict) else {}
            new["spec"] = dict(spec, finalizers=finalizers) if finalizers else {
                k: v for k, v in spec.items() if k != "finalizers"}

    def validate_finalize(self, obj: Obj) -> list[Cause]:
        """ValidateNamespaceFinalizeUpdate's rules on the finalizers."""
        causes: list[Cause] = []
        for i, finalizer in enumerate((obj.get("spec") or {}).get("finalizers") or ()):
            causes.extend(invalid(f"spec.finalizers[{i}]", finalizer, m)
                          for m in qualified_name_errors(str(finalizer)))
            if "/" not in str(finalizer) and finalizer not in STANDARD_FINALIZERS:
                causes.append(invalid(f"spec.finalizers[{i}]", finalizer, "name is neither a "
                                      "standard finalizer name nor is it fully qualified"))
        return causes

    def blocks_delete(self, obj: Obj) -> bool:
        """``spec.finalizers`` (``kubernetes``, the namespace controller's) hold it."""
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: Obj, grace: int) -> None:
        """Namespace storage's Delete: ``Terminating``, and no grace period."""
        obj["status"] = dict(obj.get("status") or {}, phase="Terminating")


def _label_namespace(obj: Obj) -> None:
    meta = obj["metadata"]
    meta["labels"] = dict(meta.get("labels") or {},
                          **{"kubernetes.io/metadata.name": meta["name"]})


class ReturnsDeletedStrategy(Strategy):
    """A kind without rules of its own here whose DELETE answers with the deleted object
    (its registry's ReturnDeletedObject: ServiceAccounts)."""

    return_deleted_object = True


class PodStrategy(Strategy):
    """Pods: created ``Pending`` with their QoS class; deleted gracefully once bound."""

    return_deleted_object = True

    def default(self, obj: Obj) -> None:
        default_pod(obj)

    def admit(self, obj: Obj, namespace: str, stored: StoredObjects) -> None:
        """LimitRanger (the namespace's LimitRanges), ServiceAccount and
        DefaultTolerationSeconds, then Priority (the PriorityClasses)."""
        ranges = [lr for (ns, _), lr in sorted(stored("", "limitranges").items())
                  if ns == namespace]
        apply_limit_ranges(obj, str((obj.get("metadata") or {}).get("name") or ""), ranges)
        accounts = stored("", "serviceaccounts")
        admit_pod(obj, namespace, lambda ns, name: accounts.get((ns, name)))
        admit_priority(obj, stored("scheduling.k8s.io", "priorityclasses").values())

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return validate_pod_spec(obj.get("spec"))

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        return validate_pod_update(old.get("spec") or {}, new.get("spec") or {})

    def validate_ephemeral_containers(self, obj: Obj, old: Obj) -> list[Cause]:
        return validate_ephemeral_containers_update(old, obj)

    def graceful_period(self, obj: Obj, requested: int | None) -> int | None:
        """A Pod bound to a node waits for its kubelet: the requested period, else
        ``spec.terminationGracePeriodSeconds`` (default 30). An unbound or finished
        Pod goes at once (0). A negative period counts as 1, as kube-apiserver has it.
        """
        spec = obj.get("spec") or {}
        period = requested if requested is not None else spec.get(
            "terminationGracePeriodSeconds", 30)
        if not isinstance(period, int):
            period = 30
        if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in (
                "Failed", "Succeeded"):
            return 0
        return 1 if period < 0 else period


class NodeStrategy(Strategy):
    """Nodes: created NotReady-tainted by the TaintNodesByCondition admission plugin;
    ``spec.podCIDRs`` and ``spec.podCIDR`` kept together as kube-apiserver's v1
    conversion keeps them (``podCIDR`` alone gives ``podCIDRs: [podCIDR]``;
    ``podCIDRs`` gives ``podCIDR`` its first, and a different ``podCIDR`` is put
    before them), which may not change once set."""

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        cidrs, cidr = spec.get("podCIDRs"), spec.get("podCIDR")
        if isinstance(cidrs, list) and cidrs:
            if cidr and cidr != cidrs[0]:  # podCIDR first, then the list
                spec["podCIDRs"] = [cidr, *cidrs]
            spec["podCIDR"] = spec["podCIDRs"][0]
        elif cidr:
            spec["podCIDRs"] = [cidr]

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        """ValidateNodeUpdate: pod CIDRs once set may not change."""
        before = (old.get("spec") or {}).get("podCIDRs") or []
        after = (new.get("spec") or {}).get("podCIDRs") or []
        if not before or before == after:
            return []
        changed = 1 if len(before) != len(after) else sum(
            a != b for a, b in zip(before, after, strict=True))
        return [forbidden("spec.podCIDRs", 'node updates may not change podCIDR except '
                          'from "" to valid')] * changed

    def admit(self, obj: Obj, namespace: str, stored: StoredObjects) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        found = spec.get("taints")
        taints: list[Any] = found if isinstance(found, list) else []
        if not any(isinstance(t, dict) and t.get("key") == NOT_READY_TAINT
                   and t.get("effect") == "NoSchedule" for t in taints):
            spec["taints"] = [*taints, {"key": NOT_READY_TAINT, "effect": "NoSchedule"}]


class LimitRangeStrategy(Strategy):
    """LimitRanges: a Container item's ``default`` from ``max``, ``defaultRequest`` from
    ``default`` and then ``min`` (``SetDefaults_LimitRangeItem``)."""

    def default(self, obj: Obj) -> None:
        for item in (obj.get("spec") or {}).get("limits") or ():
            if not isinstance(item, dict) or item.get("type") != "Container":
                continue
            default = dict(item.get("default") or {})
            for key, value in (item.get("max") or {}).items():
                default.setdefault(key, value)
            request = dict(item.get("defaultRequest") or {})
            for key, value in [*default.items(), *(item.get("min") or {}).items()]:
                request.setdefault(key, value)
            for field, values in (("default", default), ("defaultRequest", request)):
                if values:
                    item[field] = values


class PodTemplateStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        default_pod_template(obj)


class ConfigMapStrategy(Strategy):
    def check_encoding(self, obj: Obj) -> None:
        string_map(obj, "data", "ConfigMap.data")
        bytes_map(obj, "binaryData", "ConfigMap.binaryData")

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return validate_configmap(obj)

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        return immutable_when_set(old, new, ("data", "binaryData"))


class SecretStrategy(Strategy):
    def check_encoding(self, obj: Obj) -> None:
        """``stringData`` is folded into ``data`` and the type defaults to ``Opaque``, as
        the v1 to internal conversion does."""
        string_map(obj, "stringData", "Secret.stringData")
        bytes_map(obj, "data", "Secret.data")
        string_data = obj.pop("stringData", None)
        if string_data:
            obj["data"] = dict(obj.get("data") or {}, **{
                k: base64.b64encode(v.encode()).decode() for k, v in string_data.items()})
        if not obj.get("type"):
            obj["type"] = "Opaque"

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return validate_secret(obj)

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        causes: list[Cause] = []
        if new.get("type") != old.get("type"):
            causes.append(invalid("type", new.get("type"), "field is immutable"))
        return causes + immutable_when_set(old, new, ("data",))


class LeaseStrategy(Strategy):
    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return validate_lease(obj.get("spec") or {})


@functools.cache
def core_events() -> ResourceType:
    """The core/v1 Event type, which stores the Events of both groups (read from the
    captured discovery on first use)."""
    return next(t for t in builtin_api().types
                if (t.resource.group, t.resource.plural) == ("", "events"))


def _strict_event_cells(event: Mapping[str, Any], now: float) -> list[Any]:
    return event_cells(to_core(dict(event)), now)


class EventStrategy(Strategy):
    """Events of either group: stored, shaped and validated as the core Event; ``strict``
    for events.k8s.io/v1, whose rules are stricter and whose update checks the old Event."""

    def __init__(self, *, strict: bool) -> None:
        super().__init__(cells=event_cells)
        self.strict = strict

    def table_convertor(self, rtype: ResourceType) -> TableConvertor:
        """Printed as the core Event is (an events.k8s.io Event converted back to it)."""
        return builtin_printer(rtype, _strict_event_cells if self.strict else event_cells)

    def storage_type(self, rtype: ResourceType) -> ResourceType:
        return core_events()

    def reported_type(self, rtype: ResourceType) -> ResourceType:
        return core_events()

    def convert_version(self, obj: Obj, api_version: str) -> Obj | None:
        return to_events_v1(obj) if api_version == EVENTS_GROUP_VERSION else to_core(obj)

    def converts_stored(self, rtype: ResourceType) -> bool:
        """An events.k8s.io/v1 Event is the stored core one with its fields renamed."""
        return self.strict

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        shape(obj)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        shape(new)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        if not self.strict:
            return validate_event(obj, namespace, strict=False)
        return validate_event(to_core(copy.deepcopy(obj)), namespace, strict=True)

    def validate_update(self, obj: Obj, old: Obj, namespace: str) -> list[Cause]:
        if not self.strict:
            return validate_event(obj, namespace, strict=False)
        return validate_event(to_core(copy.deepcopy(obj)), namespace, strict=True,
                              old=to_core(copy.deepcopy(old)))
