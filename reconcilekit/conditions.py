"""Status conditions: ``status.conditions`` as Kubernetes API conventions have them.

A condition is a ``metav1.Condition`` as a dict (typed
``reconcilekit.kinds.Condition``)::

    {"type": "Bound", "status": "True", "observedGeneration": 3,
     "lastTransitionTime": "2026-11-25T10:00:00Z", "reason": "PodBound",
     "message": "bound to Pod cn-7"}

The functions follow apimachinery's ``meta`` package (``SetStatusCondition``,
``FindStatusCondition``, ``RemoveStatusCondition``, ``IsStatusConditionTrue``)
in Python spelling, on the ``list`` of conditions of a status, in place.
They are generic over the conditions' type: a ``list[Condition]`` of a
typed kind (``status["conditions"]``) goes in and comes out typed, as does
a ``list[dict[str, Any]]``.

Guarantees:
  * at most one condition per ``type``; the order of the list is kept;
  * ``lastTransitionTime`` moves only when ``status`` changes (a new reason,
    message or observedGeneration leaves it), so it says since when the
    condition has held, which is what readers of it want to know;
  * a set that changes nothing reports False, so a controller can skip a
    status write that would change nothing;
  * a condition that kube-apiserver would refuse (metav1.Condition's
    validation: a ``type`` and ``reason`` of the right form, ``status`` of
    True, False or Unknown, a message under 32 KiB) raises ValueError
    naming the field before anything is written.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any, Final, TypeVar, cast

__all__ = [
    "CONDITION_MESSAGE_MAX_LENGTH",
    "CONDITION_REASON_MAX_LENGTH",
    "CONDITION_REASON_PATTERN",
    "CONDITION_STATUSES",
    "CONDITION_TYPE_MAX_LENGTH",
    "CONDITION_TYPE_PATTERN",
    "find_status_condition",
    "is_status_condition_false",
    "is_status_condition_true",
    "remove_status_condition",
    "set_status_condition",
]

C = TypeVar("C", bound=Mapping[str, Any])
"""The type of one condition: ``reconcilekit.kinds.Condition``, a ``dict[str, Any]``, any
mapping."""

CONDITION_STATUSES: Final = ("True", "False", "Unknown")
# metav1.Condition's validation, as kube-apiserver and kubebuilder's schema have it.
CONDITION_REASON_PATTERN: Final = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
"""What a condition's ``reason`` must match (CamelCase words); at most 1024 characters."""
CONDITION_TYPE_PATTERN: Final = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
"""What a condition's ``type`` must match (a qualified name, ``Ready`` or ``example.com/Ready``)."""
CONDITION_TYPE_MAX_LENGTH: Final = 316
CONDITION_REASON_MAX_LENGTH: Final = 1024
CONDITION_MESSAGE_MAX_LENGTH: Final = 32768
_REASON: Final = re.compile(CONDITION_REASON_PATTERN)
_TYPE: Final = re.compile(CONDITION_TYPE_PATTERN)


def set_status_condition(conditions: MutableSequence[C], condition: Mapping[str, Any],
                         *, now: datetime.datetime | None = None) -> bool:
    """Add ``condition`` to ``conditions``, or update the one of its type; True if changed.

    ``lastTransitionTime`` is ``condition``'s if given, else ``now`` (the
    current UTC time by default), and is only written when the condition is
    new or its status changes. ``observedGeneration`` (the ``metadata.
    generation`` the controller acted on), ``reason`` and ``message`` are
    replaced.
    """
    _validate(condition)
    stamp = condition.get("lastTransitionTime") or _rfc3339(now)
    found = find_status_condition(conditions, condition["type"])
    if found is None:
        conditions.append(cast(C, {**_fields(condition), "lastTransitionTime": stamp}))
        return True
    existing = cast(MutableMapping[str, Any], found)  # the list's own entry, changed in place
    changed = False
    if existing.get("status") != condition["status"]:
        existing["status"] = condition["status"]
        existing["lastTransitionTime"] = stamp
        changed = True
    wanted = _fields(condition)
    for key in ("reason", "message", "observedGeneration"):  # replaced, as in Go
        if key not in wanted:
            changed |= existing.pop(key, None) is not None
        elif existing.get(key) != wanted[key]:
            existing[key] = wanted[key]
            changed = True
    return changed


def find_status_condition(conditions: Sequence[C] | None, condition_type: str) -> C | None:
    """The condition of ``condition_type``, or None."""
    for condition in conditions or ():
        if condition.get("type") == condition_type:
            return condition
    return None


def remove_status_condition(conditions: MutableSequence[C], condition_type: str) -> bool:
    """Remove the condition of ``condition_type``; True if there was one."""
    for i, condition in enumerate(conditions):
        if condition.get("type") == condition_type:
            del conditions[i]
            return True
    return False


def is_status_condition_true(conditions: Sequence[Mapping[str, Any]] | None,
                             condition_type: str) -> bool:
    """True if the condition of ``condition_type`` is there with status ``"True"``."""
    found = find_status_condition(conditions, condition_type)
    return found is not None and found.get("status") == "True"


def is_status_condition_false(conditions: Sequence[Mapping[str, Any]] | None,
                              condition_type: str) -> bool:
    """True if the condition of ``condition_type`` is there with status ``"False"``."""
    found = find_status_condition(conditions, condition_type)
    return found is not None and found.get("status") == "False"


def _fields(condition: Mapping[str, Any]) -> dict[str, Any]:
    """The condition's fields as metav1.Condition serializes them: ``message`` always
    (an empty one too), ``observedGeneration`` only when set."""
    fields = {k: condition[k] for k in ("type", "status", "observedGeneration", "reason")
              if k in condition}
    fields["message"] = condition.get("message", "")
    return fields


def _validate(condition: Mapping[str, Any]) -> None:
    kind = condition.get("type")
    if not isinstance(kind, str) or not kind or len(kind) > CONDITION_TYPE_MAX_LENGTH or (
            not _TYPE.match(kind)):
        raise ValueError(f"condition type {kind!r} is not a qualified name (e.g. 'Ready' or "
                         "'example.com/Ready')")
    if condition.get("status") not in CONDITION_STATUSES:
        raise ValueError(f"condition {kind}: status must be one of True, False, Unknown, "
                         f"not {condition.get('status')!r}")
    reason = condition.get("reason")
    if not isinstance(reason, str) or len(reason) > CONDITION_REASON_MAX_LENGTH or (
            not _REASON.match(reason)):
        raise ValueError(f"condition {kind}: reason {reason!r} must be CamelCase words "
                         "(letters, digits, '_', ',' or ':', starting with a letter)")
    message = condition.get("message", "")
    if not isinstance(message, str) or len(message) > CONDITION_MESSAGE_MAX_LENGTH:
        raise ValueError(f"condition {kind}: message must be a string of at most "
                         f"{CONDITION_MESSAGE_MAX_LENGTH} characters")
    generation = condition.get("observedGeneration", 0)
    if not isinstance(generation, int) or isinstance(generation, bool) or generation < 0:
        raise ValueError(f"condition {kind}: observedGeneration must be an integer >= 0, "
                         f"not {generation!r}")


def _rfc3339(now: datetime.datetime | None) -> str:
    moment = now or datetime.datetime.now(datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
