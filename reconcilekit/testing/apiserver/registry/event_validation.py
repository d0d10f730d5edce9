"""kube-apiserver's validation of a created Event (``ValidateEventCreate``).

It runs on the core form whichever group the request used, so its causes
name core fields (``message``, ``involvedObject.namespace``, ``count``,
``source``), except the reporting controller, named after the request's group. Every Event passes
the legacy rules; those written through events.k8s.io/v1 pass the strict
ones too on a create (``eventTime`` required, ``type`` Normal or Warning,
the deprecated fields unset, a series of at least 2), only the series
rules on an update that changes the series.
"""

from __future__ import annotations

from typing import Any

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
        return causes + (_series(series) if series != old.get("series") else [])
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

