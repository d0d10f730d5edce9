"""Server-side printing: ``meta.k8s.io/v1`` Tables, the columns ``kubectl get`` shows.

kubectl asks for ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``
and prints the columns the server chose: a custom resource's
``additionalPrinterColumns`` (``Age`` when it declares none), and for the
built-in kinds kube-apiserver's own printers (pkg/printers/internalversion):
Namespaces NAME STATUS AGE, Pods NAME READY STATUS RESTARTS AGE (IP and NODE
with ``-o wide``), ConfigMaps NAME DATA AGE, and so on. Each row carries the
object's metadata as a PartialObjectMetadata, as kube-apiserver's default
``includeObject=Metadata`` does. Ages are Go's ``duration.HumanDuration``; a printer
column's ``jsonPath`` is client-go's JSONPath (:mod:`.jsonpath`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..machinery.resources import ResourceType
from .jsonpath import PathError, find, go_text

__all__ = ["table"]

Obj = Mapping[str, Any]
_NAME_HELP = ("Name must be unique within a namespace. Is required when creating resources, "
              "although some resources may allow a client to request the generation of an "
              "appropriate name automatically. Name is primarily intended for creation "
              "idempotence and configuration definition. Cannot be updated. More info: "
              "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
_AGE_HELP = ("CreationTimestamp is a timestamp representing the server time when this object "
             "was created. It is not guaranteed to be set in happens-before order across "
             "separate operations. Clients may not set this value. It is represented in "
             "RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for "
             "lists. More info: https://git.k8s.io/community/contributors/devel/"
             "sig-architecture/api-conventions.md#metadata")


def human_duration(seconds: float) -> str:
    """``k8s.io/apimachinery/pkg/util/duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m" if s % 60 == 0 else f"{minutes}m{s % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _age(timestamp: Any, now: float) -> str:
    if not isinstance(timestamp, str):
        return "<unknown>"
    when = datetime.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()
    return human_duration(now - when)


@dataclass(frozen=True, slots=True)
class _Column:
    name: str
    type: str
    cell: Callable[[Obj, float], Any]
    description: str = ""
    priority: int = 0
    format: str = ""

    def definition(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "format": self.format,
                "description": self.description, "priority": self.priority}


_NAME = _Column("Name", "string", lambda o, _: o["metadata"]["name"], _NAME_HELP,
                format="name")
_AGE = _Column("Age", "string", lambda o, now: _age(o["metadata"].get("creationTimestamp"),
                                                    now), _AGE_HELP)


def _ready(pod: Obj, _: float) -> str:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    total = len((pod.get("spec") or {}).get("containers") or ())
    return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"


def _pod_status(pod: Obj, _: float) -> str:
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or ""
    for c in status.get("containerStatuses") or ():
        state = c.get("state") or {}
        if (state.get("waiting") or {}).get("reason"):
            reason = state["waiting"]["reason"]
        elif (state.get("terminated") or {}).get("reason"):
            reason = state["terminated"]["reason"]
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_restarts(pod: Obj, now: float) -> str:
    """``3 (5m ago)``: the restarts, and when the last container restarted."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    finished = [t for c in statuses
                if (t := ((c.get("lastState") or {}).get("terminated") or {}).get("finishedAt"))]
    if restarts and finished:
        return f"{restarts} ({_age(max(finished), now)} ago)"
    return str(restarts)


def _or_none(value: Any) -> Any:
    return value if value else "<none>"


_BUILTIN: dict[tuple[str, str], list[_Column]] = {
    ("", "namespaces"): [_NAME, _Column("Status", "string", lambda o, _: (
        o.get("status") or {}).get("phase", ""), "The status of the namespace"), _AGE],
    ("", "configmaps"): [_NAME, _Column("Data", "string", lambda o, _: len(
        o.get("data") or {}) + len(o.get("binaryData") or {}), "Data contains the "
        "configuration data."), _AGE],
    ("", "secrets"): [_NAME, _Column("Type", "string", lambda o, _: o.get("type", ""),
                                     "Used to facilitate programmatic handling of secret "
                                     "data."),
                      _Column("Data", "string", lambda o, _: len(o.get("data") or {}),
                              "Data contains the secret data."), _AGE],
    ("", "serviceaccounts"): [_NAME, _Column("Secrets", "string", lambda o, _: len(
        o.get("secrets") or ()), "Secrets is a list of the secrets in the same namespace "
        "that pods running using this ServiceAccount are allowed to use."), _AGE],
    ("", "pods"): [
        _NAME,
        _Column("Ready", "string", _ready, "The aggregate readiness state of this pod for "
                "accepting traffic."),
        _Column("Status", "string", _pod_status, "The aggregate status of the containers "
                "in this pod."),
        _Column("Restarts", "string", _pod_restarts, "The number of times the containers "
                "in this pod have been restarted and when the last container in this pod "
                "has restarted."),
        _AGE,
        _Column("IP", "string", lambda o, _: _or_none((o.get("status") or {}).get("podIP")),
                "IP address allocated to the pod. Routable at least within the cluster. "
                "Empty if not yet allocated.", priority=1),
        _Column("Node", "string", lambda o, _: _or_none((o.get("spec") or {}).get(
            "nodeName")), "NodeName is a request to schedule this pod onto a specific node.",
                priority=1),
        _Column("Nominated Node", "string", lambda o, _: _or_none((o.get("status") or {}).get(
            "nominatedNodeName")), "nominatedNodeName is set only when this pod preempts "
                "other pods on the node.", priority=1),
        _Column("Readiness Gates", "string", lambda o, _: _or_none(", ".join(
            g.get("conditionType", "") for g in (o.get("spec") or {}).get(
                "readinessGates") or ())), "If specified, all readiness gates will be "
                "evaluated for pod readiness.", priority=1),
    ],
    ("coordination.k8s.io", "leases"): [_NAME, _Column("Holder", "string", lambda o, _: (
        o.get("spec") or {}).get("holderIdentity", ""), "The holder of the lease."), _AGE],
}
_DEFAULT = [_NAME, _Column("Created At", "date", lambda o, _: o["metadata"].get(
    "creationTimestamp"), _AGE_HELP)]


def _cell(kind: str, value: Any, now: float) -> Any:
    """apiextensions' ``cellForJSONValue``: the value if it is of the column's type."""
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            when = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()
        except ValueError:
            return "<invalid>"
        return human_duration(now - when)
    return None


def _printer_column(spec: Mapping[str, Any]) -> _Column:
    """A column the CRD declares: the first value its ``jsonPath`` finds (no cell when
    there is none or client-go's JSONPath fails), printed as a ``string`` column's
    ``PrintResults`` does, or kept if it is of the column's type."""
    kind, path = str(spec.get("type", "string")), str(spec.get("jsonPath", ""))

    def cell(obj: Obj, now: float) -> Any:
        try:
            found = find(obj, path)
        except PathError:
            return None
        if not found:
            return None
        return go_text(found[0]) if kind == "string" else _cell(kind, found[0], now)
    return _Column(str(spec.get("name", "")), kind, cell, str(spec.get("description", "")),
                   int(spec.get("priority", 0) or 0), str(spec.get("format", "")))


def _columns(rtype: ResourceType) -> list[_Column]:
    if rtype.printer_columns is not None:
        declared = rtype.printer_columns or (
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
             "description": _AGE_HELP},)
        return [_NAME, *(_printer_column(c) for c in declared)]
    return _BUILTIN.get((rtype.resource.group, rtype.resource.plural), _DEFAULT)


def _metadata(obj: Obj) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj["metadata"]}


def table(rtype: ResourceType, objects: Iterable[Obj], list_meta: Mapping[str, Any],
          now: float) -> dict[str, Any]:
    """The Table kube-apiserver answers a list (or a get, with one row) with."""
    columns = _columns(rtype)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": dict(list_meta),
            "columnDefinitions": [c.definition() for c in columns],
            "rows": [{"cells": [c.cell(o, now) for c in columns], "object": _metadata(o)}
                     for o in objects]}
