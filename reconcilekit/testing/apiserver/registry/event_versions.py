"""Events: one resource served as core ``v1`` and as ``events.k8s.io/v1``.

kube-apiserver stores both as the core Event: an Event written through one
group is read through the other, its fields renamed (``pkg/apis/events/v1``
conversion): ``message``/``note``, ``involvedObject``/``regarding``,
``reportingComponent``/``reportingController``, ``source``/``deprecatedSource``,
``firstTimestamp``/``deprecatedFirstTimestamp``, ``lastTimestamp``/
``deprecatedLastTimestamp``, ``count``/``deprecatedCount``; the others
(``eventTime``, ``series``, ``action``, ``reason``, ``related``,
``reportingInstance``, ``type``) keep their names.

Invariants: the stored object is the core form, shaped as Go serializes
the type (fields without ``omitempty`` always present: ``null`` times,
empty ``source``, empty reporting strings); Time fields (first and last
timestamps) are whole seconds in UTC. Each version's answer is shaped the
same way from the stored one, so reading back through either group gives
what kube-apiserver gives.
"""

from __future__ import annotations

import datetime
from typing import Any

from ..machinery.unstructured import Obj

__all__ = ["EVENTS_GROUP_VERSION", "shape", "to_core", "to_events_v1"]

EVENTS_GROUP_VERSION = "events.k8s.io/v1"

# core name -> events.k8s.io/v1 name
_RENAMED = {"message": "note", "involvedObject": "regarding",
            "reportingComponent": "reportingController", "source": "deprecatedSource",
            "firstTimestamp": "deprecatedFirstTimestamp",
            "lastTimestamp": "deprecatedLastTimestamp", "count": "deprecatedCount"}
_BACK = {v: k for k, v in _RENAMED.items()}
# fields Go always writes (no omitempty, or a struct): their zero value
_CORE_ALWAYS: dict[str, Any] = {"involvedObject": {}, "source": {}, "firstTimestamp": None,
                "lastTimestamp": None, "eventTime": None, "reportingComponent": "",
                "reportingInstance": ""}
_EVENTS_ALWAYS: dict[str, Any] = {"eventTime": None, "regarding": {}, "deprecatedSource": {},
                  "deprecatedFirstTimestamp": None, "deprecatedLastTimestamp": None}
_TIMES = ("firstTimestamp", "lastTimestamp", "deprecatedFirstTimestamp",
          "deprecatedLastTimestamp")


def _empty(value: Any) -> bool:
    return value is None or value in ("", 0, {}, [])


def shape(obj: Obj) -> Obj:
    """``obj`` (either version, changed in place) as Go serializes its type: zero values
    of ``omitempty`` fields dropped, the others present; Times in whole seconds UTC."""
    core = obj.get("apiVersion") == "v1"
    always = _CORE_ALWAYS if core else _EVENTS_ALWAYS
    for key in [k for k, v in obj.items() if k not in always and k not in (
            "apiVersion", "kind", "metadata") and _empty(v)]:
        del obj[key]
    for key, zero in always.items():
        if obj.get(key) is None:
            obj[key] = zero if not isinstance(zero, dict) else {}
    for key in _TIMES:
        if isinstance(obj.get(key), str):
            obj[key] = _whole_seconds(obj[key])
    return obj


def _whole_seconds(value: str) -> str:
    """metav1.Time as stored: RFC 3339 in UTC, the fraction dropped (unparsable: as is)."""
    try:
        when = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    if when.tzinfo is None:
        return value
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_core(obj: Obj) -> Obj:
    """An events.k8s.io/v1 Event as the core v1 Event kube-apiserver stores."""
    out: Obj = {"apiVersion": "v1", "kind": "Event"}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[_BACK.get(key, key)] = value
    return shape(out)


def to_events_v1(obj: Obj) -> Obj:
    """A stored core v1 Event as events.k8s.io/v1 shows it."""
    out: Obj = {"apiVersion": EVENTS_GROUP_VERSION, "kind": "Event"}
    for key, value in obj.items():
        if key not in ("apiVersion", "kind"):
            out[_RENAMED.get(key, key)] = value
    return shape(out)
