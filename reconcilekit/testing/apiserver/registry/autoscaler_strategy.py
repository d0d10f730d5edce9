"""The HorizontalPodAutoscaler strategy: one kind served as autoscaling/v1 and v2.

kube-apiserver 1.28 stores HPAs as autoscaling/v2 and converts them for a
v1 client (``pkg/apis/autoscaling/v1`` conversion, measured in
``tests/testing/test_apiserver_autoscalers.py``):

* v1 ``spec.targetCPUUtilizationPercentage`` is the v2 Resource metric of
  ``cpu`` at that average utilization, and v1
  ``status.currentCPUUtilizationPercentage`` the v2 current metric of
  ``cpu``; what v1 cannot hold of a v2 object (its ``spec.behavior``, its
  ``status.conditions``) is kept in the
  ``autoscaling.alpha.kubernetes.io/behavior`` (Go's internal type encoded
  without JSON names: ``{"ScaleUp":{"StabilizationWindowSeconds":0,...}}``)
  and ``.../conditions`` annotations of the v1 form, and read back from them;
* defaults: ``spec.minReplicas`` 1 in both versions, and in v2 a metric of
  80% average ``cpu`` utilization when there is none, and a given
  ``behavior``'s rules (scale up: no stabilization window, ``Max`` of 4 Pods
  or 100% per 15 s; scale down: ``Max`` of 100% per 15 s);
* Validate: ``minReplicas`` at least 1, ``maxReplicas`` above 0 and not below
  ``minReplicas``, a ``scaleTargetRef`` with a kind and a name;
* the status as Go serializes each version: v2 ``currentMetrics`` (``null``
  when none) and ``desiredReplicas``, v1 ``currentReplicas`` and
  ``desiredReplicas``.

Metrics other than a Resource ``cpu`` utilization are not carried into v1
(kube-apiserver keeps them in ``autoscaling.alpha.kubernetes.io/metrics``).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..machinery.builtin_kinds import builtin_api
from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid
from .group_printers import hpa_cells
from .strategy import Strategy
from .table_convertor import TableConvertor, builtin_printer

__all__ = ["HorizontalPodAutoscalerStrategy"]

V1 = "autoscaling/v1"
V2 = "autoscaling/v2"
_BEHAVIOR = "autoscaling.alpha.kubernetes.io/behavior"
_CONDITIONS = "autoscaling.alpha.kubernetes.io/conditions"
_DEFAULT_CPU = 80


@functools.cache
def _stored_type() -> ResourceType:
    return next(t for t in builtin_api().types
                if t.group_version == V2 and t.resource.plural == "horizontalpodautoscalers")


def _dict(parent: Obj, key: str) -> Obj:
    value = parent.get(key)
    return value if isinstance(value, dict) else {}


def _cpu_metric(utilization: Any) -> Obj:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "Utilization", "averageUtilization": utilization}}}


_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
    {"type": "Pods", "value": 4, "periodSeconds": 15},
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [
    {"type": "Percent", "value": 100, "periodSeconds": 15}]}
_RULE_FIELDS = ("stabilizationWindowSeconds", "selectPolicy", "policies")
_POLICY_FIELDS = ("type", "value", "periodSeconds")


def _default_v2(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("minReplicas", 1)
        if not spec.get("metrics"):
            spec["metrics"] = [_cpu_metric(_DEFAULT_CPU)]
        behavior = spec.get("behavior")
        if isinstance(behavior, dict):
            for name, rules in (("scaleUp", _SCALE_UP), ("scaleDown", _SCALE_DOWN)):
                given = behavior.get(name)
                given = given if isinstance(given, dict) else {}
                behavior[name] = {**copy.deepcopy(rules), **given}


def _go_behavior(behavior: Obj) -> dict[str, Any]:
    """The behavior as the annotation holds it: Go's internal type, encoded without
    JSON names (every field, capitalized)."""
    def rules(value: Any) -> Any:
        if not isinstance(value, dict):
            return None
        out = {_capital(f): value.get(f) for f in _RULE_FIELDS}
        out["Policies"] = [{_capital(f): p.get(f) for f in _POLICY_FIELDS}
                           for p in value.get("policies") or () if isinstance(p, dict)]
        return out
    return {"ScaleUp": rules(behavior.get("scaleUp")),
            "ScaleDown": rules(behavior.get("scaleDown"))}


def _json_behavior(annotation: Any) -> Obj | None:
    """The annotation's behavior with its JSON names (fields that are null left out)."""
    if not isinstance(annotation, dict):
        return None

    def lowered(value: Any) -> Any:
        if isinstance(value, dict):
            return {k[:1].lower() + k[1:]: lowered(v) for k, v in value.items()
                    if v is not None}
        if isinstance(value, list):
            return [lowered(v) for v in value]
        return value
    out = lowered(annotation)
    return out if isinstance(out, dict) else None


def _capital(name: str) -> str:
    return name[:1].upper() + name[1:]


def _shape_status(obj: Obj, api_version: str) -> None:
    status = obj.get("status")
    status = status if isinstance(status, dict) else {}
    if api_version == V2:
        status.setdefault("currentMetrics", None)
    else:
        status.setdefault("currentReplicas", 0)
    status.setdefault("desiredReplicas", 0)
    obj["status"] = status


def _to_v2(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["apiVersion"] = V2
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    spec = _dict(out, "spec")
    target = spec.pop("targetCPUUtilizationPercentage", None)
    if target is not None:
        spec["metrics"] = [_cpu_metric(target)]
    if _BEHAVIOR in annotations:
        behavior = _json_behavior(_parsed(annotations.pop(_BEHAVIOR)))
        if behavior is not None:
            spec["behavior"] = behavior
    status = _dict(out, "status")
    current = status.pop("currentCPUUtilizationPercentage", None)
    status["currentMetrics"] = None if current is None else [{"type": "Resource", "resource": {
        "name": "cpu", "current": {"averageUtilization": current}}}]
    if _CONDITIONS in annotations:
        conditions = _parsed(annotations.pop(_CONDITIONS))
        if isinstance(conditions, list):
            status["conditions"] = conditions
    _set_annotations(meta, annotations)
    if "spec" in out:
        out["spec"] = spec
    out["status"] = status
    _default_v2(out)
    _shape_status(out, V2)
    return out


def _to_v1(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    spec = _dict(out, "spec")
    for metric in spec.pop("metrics", None) or ():
        resource = _dict(metric, "resource") if isinstance(metric, dict) else {}
        target = _dict(resource, "target")
        if (metric.get("type") == "Resource" and resource.get("name") == "cpu"
                and target.get("type") == "Utilization"):
            spec["targetCPUUtilizationPercentage"] = target.get("averageUtilization")
    behavior = spec.pop("behavior", None)
    if isinstance(behavior, dict):
        annotations[_BEHAVIOR] = orjson.dumps(_go_behavior(behavior)).decode()
    status = _dict(out, "status")
    for metric in status.pop("currentMetrics", None) or ():
        resource = _dict(metric, "resource") if isinstance(metric, dict) else {}
        utilization = _dict(resource, "current").get("averageUtilization")
        if metric.get("type") == "Resource" and resource.get("name") == "cpu" and (
                utilization is not None):
            status["currentCPUUtilizationPercentage"] = utilization
    conditions = status.pop("conditions", None)
    if conditions:
        annotations[_CONDITIONS] = orjson.dumps(conditions).decode()
    _set_annotations(meta, annotations)
    if "spec" in out:
        out["spec"] = spec
    out["status"] = status
    _shape_status(out, V1)
    return out


def _parsed(text: Any) -> Any:
    try:
        return orjson.loads(str(text))
    except orjson.JSONDecodeError:
        return None


def _set_annotations(meta: Obj, annotations: dict[str, Any]) -> None:
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)


def _v2_cells(obj: Mapping[str, Any], now: float) -> list[Any]:
    return hpa_cells(_to_v2(dict(obj)) if obj.get("apiVersion") == V1 else obj, now)


class HorizontalPodAutoscalerStrategy(Strategy):
    """HPAs of either version, stored as autoscaling/v2."""

    def storage_type(self, rtype: ResourceType) -> ResourceType:
        return _stored_type()

    def converts_stored(self, rtype: ResourceType) -> bool:
        return rtype.group_version == V1

    def convert_version(self, obj: Obj, api_version: str) -> Obj | None:
        return _to_v2(obj) if api_version == V2 else _to_v1(obj)

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if obj.get("apiVersion") == V1:
            if isinstance(spec, dict):
                spec.setdefault("minReplicas", 1)
        else:
            _default_v2(obj)

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        super().prepare_for_create(rtype, obj, existing)
        _shape_status(obj, str(obj.get("apiVersion", V2)))

    def table_convertor(self, rtype: ResourceType) -> TableConvertor:
        """Printed as the autoscaling/v2 HPA it is stored as."""
        return builtin_printer(rtype, _v2_cells)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return _validate_spec(_dict(obj, "spec"))


def _validate_spec(spec: Obj) -> list[Cause]:
    """validateHorizontalPodAutoscalerSpec's replica bounds and target reference."""
    causes: list[Cause] = []
    least, most = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if isinstance(least, int) and least < 1:
        causes.append(invalid("spec.minReplicas", least, "must be greater than or equal to 1"))
    if isinstance(most, int) and most < 1:
        causes.append(invalid("spec.maxReplicas", most, "must be greater than 0"))
    if isinstance(least, int) and isinstance(most, int) and most < least:
        causes.append(invalid("spec.maxReplicas", most,
                              "must be greater than or equal to `minReplicas`"))
    ref = _dict(spec, "scaleTargetRef")
    for name in ("kind", "name"):
        if not ref.get(name):
            causes.append(Cause("FieldValueRequired", "Required value",
                                f"spec.scaleTargetRef.{name}"))
    return causes
