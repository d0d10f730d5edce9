"""The core/v1 Events kube-controller-manager's controllers record.

client-go's event recorder: the Event is named after the object and the
time in nanoseconds (hexadecimal), lives in the object's namespace (or
``default`` for a cluster-scoped object), has ``count: 1``, first and last
timestamps in whole seconds, ``source.component`` and ``reportingComponent``
the controller's name and an empty ``reportingInstance``.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from ..machinery.resources import Registry
from ..machinery.status import StatusError
from ..machinery.unstructured import timestamp
from ..registry.generic_store import Storage

__all__ = ["record_event"]


def record_event(storage: Storage, registry: Registry, obj: dict[str, Any], event_type: str,
                 reason: str, message: str, component: str) -> None:
    """Record an Event about ``obj`` (skipped if its namespace is gone)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    ns_table = storage.tables.get(("", "namespaces"))
    if ns_table is None or ("", namespace) not in ns_table.objects:
        return
    rtype = registry.lookup("", "v1", "events")
    assert rtype is not None
    now = storage.now()
    involved = {"kind": obj.get("kind"), "namespace": meta.get("namespace"),
                "name": meta["name"], "uid": meta["uid"], "apiVersion": obj.get("apiVersion")}
    event = {"apiVersion": "v1", "kind": "Event",
             "metadata": {"name": f"{meta['name']}.{time.time_ns():x}"},
             "involvedObject": {k: v for k, v in involved.items() if v},
             "reason": reason, "message": message, "source": {"component": component},
             "firstTimestamp": timestamp(now), "lastTimestamp": timestamp(now), "count": 1,
             "type": event_type, "eventTime": None, "reportingComponent": component,
             "reportingInstance": ""}
    # a name taken in the same nanosecond: the recorder drops the Event too
    with contextlib.suppress(StatusError):
        storage.create(rtype, namespace, event, manager="kube-controller-manager")
