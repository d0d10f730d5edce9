"""kube-apiserver's validation of an Event (``ValidateEventCreate``, ``ValidateEventUpdate``).

It runs on the core form whichever group the request used, so its causes
name core fields (``message``, ``involvedObject.namespace``, ``count``,
``source``), except the reporting controller, named after the request's group. Every Event passes
the legacy rules; those written through events.k8s.io/v1 pass the strict
ones too on a create (``eventTime`` required, ``type`` Normal or Warning,
the deprecated fields unset, a series of at least 2); on an update, the
series rules when it changes the series, and the immutable fields (all but
the series and metadata), each refused with Go's rendering of the new value
as ``field.Invalid`` prints it (``core.ObjectReference{Kind:"Pod", ...}``,
a time as ``2024-01-02 03:04:05.123456 +0000 UTC``).
"""

from __future__ import annotations

import datetime
from typing import Any

from ...._foundations.go_compat import go_quote
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import dns_subdomain_errors, invalid, qualified_name_errors, required

__all__ = ["validate_event"]

_LIMITS = (("reportingInstance", 128), ("action", 128), ("reason", 128))
NOTE_LIMIT = 1024


def _text(obj: Obj, key: str) -> str:
    value = obj.get(key)
    return value if isinstance(value, str) else ""


def validate_event(core: Obj, namespace: str, strict: bool, old: Obj | None = None
                   ) -> list[Cause]:
    """The causes of a 422 for the core form ``core`` of an Event in ``namespace``;
    ``strict`` when written through events.k8s.io/v1, where an update (of ``old``, core
    form too) checks only a changed series beyond the legacy rules."""
    causes = _legacy(core, namespace, "reportingController" if strict else "reportingComponent")
    if not strict:
        return causes
    series = core.get("series")
    if old is not None:
        causes.extend(_series(series) if series != old.get("series") else [])
        return causes + _immutable(core, old)
    causes.extend(_series(series))
    if not core.get("eventTime"):
        causes.append(required("eventTime"))
    if core.get("type") not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {_text(core, 'type')}"))
    for key in ("firstTimestamp", "lastTimestamp", "count"):
        if core.get(key):
            causes.append(invalid(key, "", "needs to be unset"))
    source: Any = core.get("source") or {}
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(invalid("source", "", "needs to be unset"))
    return causes


def _series(series: Any) -> list[Cause]:
    """``validateV1EventSeries``."""
    causes: list[Cause] = []
    if isinstance(series, dict):
        count = series.get("count")
        if not isinstance(count, int) or count < 2:
            causes.append(invalid("series.count", "", "should be at least 2"))
        if not series.get("lastObservedTime"):
            causes.append(required("series.lastObservedTime"))
    return causes


def _legacy(core: Obj, namespace: str, controller_field: str) -> list[Cause]:
    """``legacyValidateEvent``."""
    causes: list[Cause] = []
    involved: Any = core.get("involvedObject") or {}
    inv_ns = involved.get("namespace") or "" if isinstance(involved, dict) else ""
    if not core.get("eventTime"):
        if (not inv_ns and namespace not in ("", "default")) or (inv_ns and inv_ns != namespace):
            causes.append(invalid("involvedObject.namespace", inv_ns,
                                  "does not match event.namespace"))
    else:
        if not inv_ns and namespace not in ("default", "kube-system"):
            causes.append(invalid("involvedObject.namespace", inv_ns,
                                  "does not match event.namespace"))
        controller = _text(core, "reportingComponent")
        if not controller:
            causes.append(required(controller_field))
        causes.extend(invalid(controller_field, controller, m)
                      for m in qualified_name_errors(controller))
        for key, limit in _LIMITS:
            if not _text(core, key):
                causes.append(required(key))
            if len(_text(core, key)) > limit:
                causes.append(invalid(key, "", f"can have at most {limit} characters"))
        if len(_text(core, "message")) > NOTE_LIMIT:
            causes.append(invalid("message", "", f"can have at most {NOTE_LIMIT} characters"))
    causes.extend(invalid("namespace", namespace, m) for m in dns_subdomain_errors(namespace))
    return causes


# ValidateEventUpdate's immutable fields, in its order (``reason`` is checked twice), with
# how Go renders each: a string quoted, a struct as %#v, a time by its String method
_IMMUTABLE = ("involvedObject", "reason", "message", "source", "firstTimestamp",
              "lastTimestamp", "count", "reason", "type", "eventTime", "action", "related",
              "reportingComponent", "reportingInstance")
_REFERENCE = ("core.ObjectReference", (("kind", "Kind"), ("namespace", "Namespace"),
                                        ("name", "Name"), ("uid", "UID"),
                                        ("apiVersion", "APIVersion"),
                                        ("resourceVersion", "ResourceVersion"),
                                        ("fieldPath", "FieldPath")))
_STRUCTS = {"involvedObject": _REFERENCE, "related": _REFERENCE,
            "source": ("core.EventSource", (("component", "Component"), ("host", "Host")))}
_TIMES = frozenset({"firstTimestamp", "lastTimestamp", "eventTime"})
_STRINGS = frozenset({"reason", "message", "type", "action", "reportingComponent",
                      "reportingInstance"})


def _immutable(core: Obj, old: Obj) -> list[Cause]:
    """``ValidateImmutableField`` for each field an events.k8s.io/v1 update may not change."""
    causes = []
    for key in _IMMUTABLE:
        new_value, old_value = _zero(key, core.get(key)), _zero(key, old.get(key))
        if new_value != old_value:
            name = "reportingController" if key == "reportingComponent" else key
            causes.append(Cause("FieldValueInvalid", f"Invalid value: {_go(key, new_value)}: "
                                "field is immutable", name))
    return causes


def _zero(key: str, value: Any) -> Any:
    """A field as Go holds it: absent strings empty, absent counts 0, structs filled out."""
    if key in _STRINGS:
        return value if isinstance(value, str) else ""
    if key == "count":
        return value if isinstance(value, int) else 0
    if key in _STRUCTS and (key != "related" or isinstance(value, dict)):  # related: a pointer
        value = value if isinstance(value, dict) else {}
        return {field: value.get(field) or "" for field, _ in _STRUCTS[key][1]}
    return value or None


def _go(key: str, value: Any) -> str:
    if key in _STRUCTS:
        if value is None:
            return '"null"'  # a nil pointer, as field.Invalid shows it
        type_name, fields = _STRUCTS[key]
        shown = ", ".join(f"{go_name}:{go_quote(value[field])}" for field, go_name in fields)
        return f"{type_name}{{{shown}}}"
    if key in _TIMES:
        return _go_time(value)
    if key == "count":
        return str(value)
    return go_quote(value)


def _go_time(value: Any) -> str:
    """``time.Time.String()`` in UTC: ``2024-01-02 03:04:05.123456 +0000 UTC``."""
    if not isinstance(value, str):
        return "0001-01-01 00:00:00 +0000 UTC"
    moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(
        datetime.UTC)
    fraction = f".{moment.microsecond:06d}".rstrip("0").rstrip(".")
    return moment.strftime("%Y-%m-%d %H:%M:%S") + fraction + " +0000 UTC"
