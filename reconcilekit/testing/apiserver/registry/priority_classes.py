"""PriorityClasses and the Priority admission plugin, as kube-apiserver 1.28 has them.

* :data:`SYSTEM_PRIORITY_CLASSES`: ``system-cluster-critical`` and
  ``system-node-critical``, which kube-apiserver creates when it starts
  (no labels, no ``globalDefault``); a DELETE of either is refused (403).
* :class:`PriorityClassStrategy`: ``preemptionPolicy`` defaults to
  ``PreemptLowerPriority``; a name starting ``system-`` must be a system
  class with its value, any other class's value is at most 1,000,000,000
  (``HighestUserDefinablePriority``); ``value`` and ``preemptionPolicy``
  never change in an update (422 Invalid).
* :func:`admit_priority` is the plugin's Admit of a created Pod: the class
  it names (403 when there is none of that name), else the global default
  class (its name written into the Pod), else priority 0 and
  ``PreemptLowerPriority``; a Pod that sets a ``priority`` or
  ``preemptionPolicy`` other than the computed one is refused (403).
* :func:`check_global_default` is the plugin's Validate of a PriorityClass:
  one global default at most (403 on a create, or an update of another
  class, that would make a second).

Of several global defaults (a race kube-apiserver allows), the one of lowest
value is the default, as the plugin picks it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..machinery.status import Cause, StatusError
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid
from .strategy import Strategy

__all__ = ["SYSTEM_PRIORITY_CLASSES", "PriorityClassStrategy", "admit_priority",
           "check_global_default"]

_GROUP = "scheduling.k8s.io"
_RESOURCE = f"priorityclasses.{_GROUP}"
_SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000
_POLICIES = ("PreemptLowerPriority", "Never")
_DEFAULT_POLICY = "PreemptLowerPriority"

SYSTEM_PRIORITY_CLASSES: tuple[Obj, ...] = tuple(
    {"apiVersion": f"{_GROUP}/v1", "kind": "PriorityClass", "metadata": {"name": name},
     "value": value, "description": description, "preemptionPolicy": _DEFAULT_POLICY}
    for name, value, description in (
        ("system-node-critical", 2000001000,
         "Used for system critical pods that must not be moved from their current node."),
        ("system-cluster-critical", 2000000000,
         "Used for system critical pods that must run in the cluster, but can be moved to "
         "another node if necessary.")))
_SYSTEM_VALUES = {c["metadata"]["name"]: c["value"] for c in SYSTEM_PRIORITY_CLASSES}


def _system_class_error(name: str, value: Any, global_default: bool) -> str | None:
    """``IsKnownSystemPriorityClass``'s error (None: it is one)."""
    if name not in _SYSTEM_VALUES:
        return f"{name} is not a known system priority class"
    if value != _SYSTEM_VALUES[name]:
        return f"value of {name} PriorityClass must be {_SYSTEM_VALUES[name]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


class PriorityClassStrategy(Strategy):
    """PriorityClasses: ``ValidatePriorityClass`` and ``ValidatePriorityClassUpdate``.

    Invariant: a stored class's ``value`` and ``preemptionPolicy`` are the ones it was
    created with; the system classes are always stored.
    """

    def default(self, obj: Obj) -> None:
        obj.setdefault("preemptionPolicy", _DEFAULT_POLICY)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        causes: list[Cause] = []
        name = str(obj["metadata"].get("name") or "")
        value = obj.get("value", 0)
        if name.startswith(_SYSTEM_PREFIX):
            error = _system_class_error(name, value, bool(obj.get("globalDefault")))
            if error is not None:
                causes.append(Cause(
                    "FieldValueForbidden", "Forbidden: priority class names with "
                    f"'{_SYSTEM_PREFIX}' prefix are reserved for system use only. error: "
                    f"{error}", "metadata.name"))
        elif isinstance(value, int) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
            causes.append(Cause("FieldValueForbidden", "Forbidden: maximum allowed value of "
                                "a user defined priority is "
                                f"{HIGHEST_USER_DEFINABLE_PRIORITY}", "value"))
        policy = obj.get("preemptionPolicy")
        if policy is not None and policy not in _POLICIES:
            causes.append(Cause("FieldValueNotSupported", f'Unsupported value: "{policy}": '
                                "supported values: "
                                + ", ".join(f'"{p}"' for p in _POLICIES), "preemptionPolicy"))
        return causes

    def validate_update(self, obj: Obj, old: Obj, namespace: str) -> list[Cause]:
        """Only what may not change is checked, as kube-apiserver's update validation."""
        return self.immutable(old, obj)

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        causes: list[Cause] = []
        if new.get("value", 0) != old.get("value", 0):
            causes.append(Cause("FieldValueForbidden",
                                "Forbidden: may not be changed in an update.", "value"))
        if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
            causes.append(invalid("preemptionPolicy", new.get("preemptionPolicy"),
                                  "field is immutable"))
        return causes

    def check_delete(self, name: str) -> None:
        if name in _SYSTEM_VALUES:
            raise StatusError.forbidden_because(
                _RESOURCE, name, _GROUP, "this is a system priority class and cannot be "
                "deleted")


def _global_default(classes: Iterable[Obj]) -> Obj | None:
    """The global default class: of several, the lowest value's (the plugin's pick)."""
    found: Obj | None = None
    for pc in classes:
        if pc.get("globalDefault") and (found is None or found.get("value", 0) > pc.get(
                "value", 0)):
            found = pc
    return found


def admit_priority(pod: Obj, classes: Iterable[Obj]) -> None:
    """The Priority plugin's Admit of a created Pod, in place (``classes``: the stored
    PriorityClasses); raises a 403 :class:`StatusError` as kube-apiserver refuses it."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    pod_name = str((pod.get("metadata") or {}).get("name") or "")
    by_name = {str(pc["metadata"]["name"]): pc for pc in classes}
    name = spec.get("priorityClassName")
    if name:
        pc = by_name.get(str(name))
        if pc is None:
            raise StatusError.forbidden_because(
                "pods", pod_name, "", f"no PriorityClass with name {name} was found")
    else:
        pc = _global_default(by_name.values())
        if pc is not None:
            spec["priorityClassName"] = pc["metadata"]["name"]
    priority = pc.get("value", 0) if pc is not None else 0
    policy = pc.get("preemptionPolicy") if pc is not None else _DEFAULT_POLICY
    given = spec.get("priority")
    if given is not None and given != priority:
        raise StatusError.forbidden_because(
            "pods", pod_name, "", f"the integer value of priority ({given}) must not be "
            f"provided in pod spec; priority admission controller computed {priority} from "
            "the given PriorityClass name")
    spec["priority"] = priority
    if policy is not None:
        given = spec.get("preemptionPolicy")
        if given is not None and given != policy:
            raise StatusError.forbidden_because(
                "pods", pod_name, "", f"the string value of PreemptionPolicy ({given}) must "
                f"not be provided in pod spec; priority admission controller computed "
                f"{policy} from the given PriorityClass name")
        spec["preemptionPolicy"] = policy


def check_global_default(operation: str, obj: Obj, classes: Iterable[Obj]) -> None:
    """The Priority plugin's Validate of a PriorityClass create or update (``classes``:
    the stored ones); raises a 403 :class:`StatusError` for a second global default."""
    if operation not in ("CREATE", "UPDATE") or not obj.get("globalDefault"):
        return
    name = str(obj["metadata"].get("name") or "")
    current = _global_default(classes)
    if current is None:
        return
    if operation == "CREATE" or current["metadata"]["name"] != name:
        raise StatusError.forbidden_because(
            _RESOURCE, name, _GROUP, f"PriorityClass {current['metadata']['name']} is already "
            "marked as default. Only one default can exist")
