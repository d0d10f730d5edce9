"""Read-your-own-writes: what :class:`reconcilekit.Client` remembers of its successful writes.

A controller that writes an object and then reads it from a watch-fed cache
may see the cache's older copy. The cure is to remember the resourceVersion
each write returned and to distrust the cache until it has seen that version
(resourceVersion expectations). This module is the client's half: every
successful write becomes a :class:`WriteRecord`, passed to observers (the
cache wires its expectations here) and kept in a bounded map.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache

from .._foundations.objects import ObjectKey, Resource

__all__ = ["WriteRecord", "WriteTracker"]

log = logging.getLogger("reconcilekit.client")


@dataclass(frozen=True, slots=True)
class WriteRecord:
    """A successful write, as passed to write observers.

    ``verb`` names the client method (create, update, patch, update_status,
    patch_status, delete, delete_collection). ``key`` is the object's
    namespace/name (namespace ``""`` for cluster-scoped resources).
    ``resource_version`` and ``uid`` are those the answer carried (a delete
    answered with a bare Status carries no resourceVersion). ``deleted`` is
    True when the object is gone, False when it still exists, including an
    object whose deletion waits for finalizers or a grace period: that DELETE
    updated it, with a new resourceVersion.
    """

    verb: str
    resource: Resource
    key: ObjectKey
    resource_version: str | None
    uid: str | None
    deleted: bool


class WriteTracker:
    """Turns write answers into :class:`WriteRecord`\\ s; remembers the latest resourceVersions.

    Invariants: the map holds at most ``max_objects`` entries (least recently
    written evicted first); an object whose last write deleted it has no entry.
    """

    def __init__(self, max_objects: int = 10_000) -> None:
        self._written: LRUCache[tuple[Resource, ObjectKey], str] = LRUCache(max_objects)
        self._observers: list[Callable[[WriteRecord], None]] = []

    def add_observer(self, callback: Callable[[WriteRecord], None]) -> Callable[[], None]:
        self._observers.append(callback)

        def remove() -> None:
            if callback in self._observers:
                self._observers.remove(callback)

        return remove

    def last_written_rv(self, resource: Resource, key: ObjectKey) -> str | None:
        return self._written.get((resource, key))

    def observe(self, verb: str, resource: Resource, answer: Mapping[str, Any],
                key: ObjectKey | None = None) -> None:
        """Record the answer to a successful write; ``key`` names the object of a DELETE."""
        if answer.get("kind") == "Status":  # a delete that removed a built-in object
            if key is None:
                return
            details = answer.get("details") or {}
            rv, uid, deleted = None, details.get("uid"), True
        else:
            meta = answer.get("metadata") or {}
            key = ObjectKey((meta.get("namespace") or "") if resource.namespaced else "",
                            meta.get("name") or (key.name if key else ""))
            rv, uid = meta.get("resourceVersion"), meta.get("uid")
            deleted = verb.startswith("delete") and not deletion_pending(answer)
        if deleted:
            self._written.pop((resource, key), None)
        elif rv:
            self._written[(resource, key)] = rv
        if self._observers:
            record = WriteRecord(verb, resource, key, rv, uid, deleted)
            for observer in list(self._observers):
                try:
                    observer(record)
                except Exception:
                    log.exception("write observer %r failed on %s", observer, record)


def deletion_pending(obj: Mapping[str, Any]) -> bool:
    """Whether a DELETE's answer shows the object still present, waiting to go.

    kube-apiserver removes an object at once unless finalizers or a grace
    period hold it (store.Delete's deleteImmediately); a Namespace waits in
    phase Terminating for its spec.finalizers.
    """
    meta = obj.get("metadata") or {}
    if not meta.get("deletionTimestamp"):
        return False
    if meta.get("finalizers") or (meta.get("deletionGracePeriodSeconds") or 0) > 0:
        return True
    return obj.get("kind") == "Namespace" and (obj.get("status") or {}).get(
        "phase") == "Terminating"
