"""Object storage of the test API server: the semantics of kube-apiserver's registry.

One global resourceVersion counter orders every write. Each resource keeps
its objects, a bounded history of events (its "watch cache") and its open
watches. The write paths implement the generic registry rules that
controllers depend on:

* create: uid, resourceVersion, creationTimestamp, generation 1, generateName;
  the namespace must exist and not be terminating.
* update/patch: optimistic concurrency on resourceVersion; server-owned
  metadata cannot be changed; generation bumps only when something outside
  metadata (and status, for a status subresource) changed; a write that
  changes nothing keeps the resourceVersion and emits no event.
* delete: with finalizers, deletionTimestamp is set (generation bumps) and
  the object stays; once the last finalizer is removed the object is gone and
  only a DELETED event is emitted. No new finalizer may be added to an
  object being deleted.

There is no kubelet or scheduler; the namespace, CRD and garbage-collector
behaviour a bare API server cluster still shows lives in ``_lifecycle.py``.
"""

from __future__ import annotations

import copy
import datetime
import secrets
import uuid
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ._registry import ResourceType
from ._status import APIError, Cause
from ._watch import Event, Watcher

__all__ = ["Storage", "Table", "timestamp"]

TableKey = tuple[str, str]  # (group, plural)
ObjKey = tuple[str, str]  # (namespace, name)
_SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                "generation", "selfLink")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


def timestamp(seconds: float) -> str:
    """RFC 3339 in seconds, as metav1.Time serializes."""
    return datetime.datetime.fromtimestamp(int(seconds), datetime.UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


@dataclass(eq=False)
class Table:
    """The objects of one resource (all versions share it) and its event history."""

    rtype: ResourceType
    history_limit: int
    objects: dict[ObjKey, dict[str, Any]] = field(default_factory=dict)
    history: deque[Event] = field(default_factory=deque)
    oldest_rv: int = 0  # a watch may resume from any rv >= oldest_rv
    watchers: set[Watcher] = field(default_factory=set)
    drop_next: int = 0

    def record(self, event: Event) -> None:
        self.history.append(event)
        while len(self.history) > self.history_limit:
            self.oldest_rv = self.history.popleft().rv


class Storage:
    """All objects of the server. Not thread-safe: used from one event loop."""

    def __init__(self, *, history_limit: int = 10_000, now: Callable[[], float]) -> None:
        self.rv = 1
        self.now = now
        self.history_limit = history_limit
        self.tables: dict[TableKey, Table] = {}
        self.paused = False
        self._pending: list[tuple[Table, Event]] = []
        self.delivered_rv = 1
        self.owners: dict[str, set[tuple[TableKey, ObjKey]]] = {}
        # Called after an object is really gone: (table, object).
        self.on_removed: list[Callable[[Table, dict[str, Any]], None]] = []
        # Called after an object is created or changed: (table, object).
        self.on_written: list[Callable[[Table, dict[str, Any]], None]] = []

    # -- tables ---------------------------------------------------------------

    def table(self, rtype: ResourceType) -> Table:
        key = (rtype.resource.group, rtype.resource.plural)
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = Table(rtype, self.history_limit, oldest_rv=self.rv)
        return table

    def drop_table(self, table: Table) -> None:
        for w in list(table.watchers):
            w.close()
        self.tables.pop((table.rtype.resource.group, table.rtype.resource.plural), None)

    # -- events ---------------------------------------------------------------

    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _emit(self, table: Table, type_: str, obj: dict[str, Any],
              prev: dict[str, Any] | None) -> None:
        event = Event(type_, int(obj["metadata"]["resourceVersion"]), obj, prev)
        if table.drop_next > 0:
            table.drop_next -= 1
            event.dropped = True
        table.record(event)
        if self.paused:
            self._pending.append((table, event))
            return
        self._deliver(table, event)

    def _deliver(self, table: Table, event: Event) -> None:
        self.delivered_rv = event.rv
        for w in list(table.watchers):
            w.offer(event)

    def pause(self) -> None:
        self.paused = True

    def resume(self) -> None:
        self.paused = False
        pending, self._pending = self._pending, []
        for table, event in pending:
            self._deliver(table, event)
        self.delivered_rv = self.rv

    def bookmark_rv(self) -> int:
        """The resourceVersion a BOOKMARK may carry: every event up to it was offered."""
        return self.delivered_rv if self.paused or self._pending else self.rv

    def compact(self) -> None:
        """Forget all history: resuming a watch from an older rv then gets 410."""
        for table in self.tables.values():
            table.history.clear()
            table.oldest_rv = self.rv

    # -- reads ----------------------------------------------------------------

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.table(rtype).objects.get((namespace, name))
        if obj is None:
            raise APIError.not_found(rtype.resource.group_resource, name, rtype.resource.group)
        return obj

    def snapshot(self, rtype: ResourceType, rv: int) -> dict[ObjKey, dict[str, Any]]:
        """The objects as they were at resourceVersion ``rv`` (410 if compacted)."""
        table = self.table(rtype)
        if rv < table.oldest_rv:
            raise APIError.expired(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list.")
        objects = dict(table.objects)
        for event in reversed(table.history):
            if event.rv <= rv:
                break
            meta = event.obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            if event.type == "ADDED":
                objects.pop(key, None)
            elif event.prev is not None:
                objects[key] = event.prev
        return objects

    # -- writes ---------------------------------------------------------------

    def create(self, rtype: ResourceType, namespace: str, obj: dict[str, Any], *,
               manager: str) -> dict[str, Any]:
        table = self.table(rtype)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            for _ in range(100):
                meta["name"] = meta["generateName"] + "".join(
                    secrets.choice(_NAME_CHARS) for _ in range(5))
                if (namespace, meta["name"]) not in table.objects:
                    break
        key = (namespace, meta["name"])
        if key in table.objects:
            raise APIError.already_exists(rtype.resource.group_resource, meta["name"],
                                          rtype.resource.group)
        for k in _SERVER_META:
            meta.pop(k, None)
        if rtype.resource.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["resourceVersion"] = str(self._next_rv())
        meta["creationTimestamp"] = timestamp(self.now())
        if rtype.generation:
            meta["generation"] = 1
        _prepare_for_create(rtype, obj)
        meta["managedFields"] = [self._managed_entry(rtype, obj, manager, "Update")]
        self._write(table, key, None, obj)
        return obj

    def update(self, rtype: ResourceType, namespace: str, name: str, new: dict[str, Any], *,
               subresource: str | None, manager: str, check_rv: bool,
               operation: str = "Update") -> dict[str, Any]:
        """Replace an object (PUT semantics; patches call this with the patched object)."""
        table = self.table(rtype)
        old = self.get(rtype, namespace, name)
        res = rtype.resource
        new_meta = new.get("metadata")
        if not isinstance(new_meta, dict):
            new_meta = new["metadata"] = {}
        rv = new_meta.get("resourceVersion")
        if check_rv and not rv and not rtype.unconditional_update:
            raise APIError.invalid(rtype.qualified_kind(), name, [Cause(
                "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion")], res.group)
        if rv and str(rv) != old["metadata"]["resourceVersion"]:
            raise APIError.stale(res.group_resource, name, res.group)
        uid = new_meta.get("uid")
        if uid and uid != old["metadata"]["uid"]:
            raise APIError.conflict(
                res.group_resource, name,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {old['metadata']['uid']}", res.group)
        result = self._merge_update(rtype, old, new, subresource)
        self._check_finalizers(rtype, old, result)
        if _same(old, result):
            return old
        meta = result["metadata"]
        if rtype.generation and _spec_changed(rtype, old, result):
            meta["generation"] = old["metadata"].get("generation", 0) + 1
        meta["resourceVersion"] = str(self._next_rv())
        meta["managedFields"] = [self._managed_entry(rtype, result, manager, operation)]
        key = (namespace, name)
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and (
                not self._blocks_delete(table)):
            self._remove(table, key, result)
            return result
        self._write(table, key, old, result)
        return result

    def _write(self, table: Table, key: ObjKey, old: dict[str, Any] | None,
               new: dict[str, Any]) -> None:
        """Store ``new`` under ``key``: owner index, one event, then the lifecycle hooks."""
        table.objects[key] = new
        self._index_owners(table, key, old, new)
        self._emit(table, "ADDED" if old is None else "MODIFIED", new, old)
        for hook in self.on_written:
            hook(table, new)

    def _merge_update(self, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any],
                      subresource: str | None) -> dict[str, Any]:
        if subresource == "status":
            result = copy.deepcopy(old)
            if "status" in new:
                result["status"] = new["status"]
            else:
                result.pop("status", None)
            return result
        result = dict(new)
        result["apiVersion"], result["kind"] = old["apiVersion"], old["kind"]
        meta = dict(new["metadata"])
        old_meta = old["metadata"]
        for k in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                  "generation", "name", "namespace", "managedFields", "resourceVersion"):
            if k in old_meta:
                meta[k] = old_meta[k]
            else:
                meta.pop(k, None)
        result["metadata"] = meta
        if rtype.status_subresource and subresource != "binding":  # a binding writes both
            if "status" in old:
                result["status"] = old["status"]
            else:
                result.pop("status", None)
        return result

    def _check_finalizers(self, rtype: ResourceType, old: dict[str, Any],
                          new: dict[str, Any]) -> None:
        if not old["metadata"].get("deletionTimestamp"):
            return
        before = set(old["metadata"].get("finalizers") or ())
        added = [f for f in new["metadata"].get("finalizers") or () if f not in before]
        if added:
            quoted = ", ".join(f'"{f}"' for f in added)
            raise APIError.invalid(rtype.qualified_kind(), old["metadata"]["name"], [Cause(
                "FieldValueForbidden",
                "Forbidden: no new finalizers can be added if the object is being deleted, "
                f"found new finalizers []string{{{quoted}}}", "metadata.finalizers")],
                rtype.resource.group)

    def delete(self, rtype: ResourceType, namespace: str, name: str, *,
               uid: str | None = None, resource_version: str | None = None,
               orphan: bool = False) -> tuple[dict[str, Any], bool]:
        """Delete or start deleting; returns (object, whether it is gone now)."""
        table = self.table(rtype)
        old = self.get(rtype, namespace, name)
        res = rtype.resource
        meta = old["metadata"]
        # kube-apiserver names the kind here, not the resource (the storage layer's error)
        if uid is not None and uid != meta["uid"]:
            raise APIError.conflict(
                res.kind, name, f"the UID in the precondition ({uid}) does not match the UID "
                f"in record ({meta['uid']}). The object might have been deleted and then "
                "recreated", res.group)
        if resource_version is not None and resource_version != meta["resourceVersion"]:
            raise APIError.conflict(
                res.kind, name, f"the ResourceVersion in the precondition ({resource_version}) "
                f"does not match the ResourceVersion in record ({meta['resourceVersion']}). "
                "The object might have been modified", res.group)
        key = (namespace, name)
        if orphan:
            self.orphan_dependents(meta["uid"])
        if meta.get("finalizers") or self._blocks_delete(table):
            if meta.get("deletionTimestamp"):
                return old, False
            result = copy.deepcopy(old)
            rmeta = result["metadata"]
            rmeta["deletionTimestamp"] = timestamp(self.now())
            rmeta["deletionGracePeriodSeconds"] = 0
            if rtype.generation:
                rmeta["generation"] = meta.get("generation", 0) + 1
            if rtype.resource.kind == "Namespace" and not rtype.resource.group:
                result["status"] = dict(result.get("status") or {}, phase="Terminating")
            rmeta["resourceVersion"] = str(self._next_rv())
            table.objects[key] = result
            self._emit(table, "MODIFIED", result, old)
            return result, False
        gone = copy.copy(old)
        gone["metadata"] = dict(meta, resourceVersion=str(self._next_rv()))
        self._remove(table, key, gone)
        return gone, True

    def _blocks_delete(self, table: Table) -> bool:
        """Whether removal waits for a lifecycle step (terminating namespaces, CRDs)."""
        return table.rtype.resource.plural in ("namespaces", "customresourcedefinitions") and (
            table.rtype.resource.group in ("", "apiextensions.k8s.io"))

    def _remove(self, table: Table, key: ObjKey, last: dict[str, Any]) -> None:
        old = table.objects.pop(key)
        self._index_owners(table, key, old, None)
        self._emit(table, "DELETED", last, None)
        for hook in self.on_removed:
            hook(table, last)

    def remove_now(self, rtype: ResourceType, namespace: str, name: str) -> None:
        """Remove an object whose lifecycle step finished (no finalizers left to wait on)."""
        table = self.table(rtype)
        obj = table.objects.get((namespace, name))
        if obj is None:
            return
        gone = copy.copy(obj)
        gone["metadata"] = dict(obj["metadata"], resourceVersion=str(self._next_rv()))
        self._remove(table, (namespace, name), gone)

    def replace_status(self, rtype: ResourceType, namespace: str, name: str,
                       status: dict[str, Any]) -> None:
        """A server-side status write (CRD conditions, namespace phase)."""
        obj = self.get(rtype, namespace, name)
        self.update(rtype, namespace, name, dict(obj, status=status), subresource="status",
                    manager="kube-apiserver", check_rv=False)

    # -- owner references (garbage collection support) -------------------------

    def _index_owners(self, table: Table, key: ObjKey, old: dict[str, Any] | None,
                      new: dict[str, Any] | None) -> None:
        tkey = (table.rtype.resource.group, table.rtype.resource.plural)
        for uid in _owner_uids(old):
            deps = self.owners.get(uid)
            if deps is not None:
                deps.discard((tkey, key))
                if not deps:
                    del self.owners[uid]
        for uid in _owner_uids(new):
            self.owners.setdefault(uid, set()).add((tkey, key))

    def dependents(self, uid: str) -> list[tuple[Table, dict[str, Any]]]:
        out = []
        for tkey, key in sorted(self.owners.get(uid, ())):
            table = self.tables.get(tkey)
            obj = table.objects.get(key) if table else None
            if table is not None and obj is not None:
                out.append((table, obj))
        return out

    def orphan_dependents(self, uid: str) -> None:
        for table, obj in self.dependents(uid):
            self.remove_owner_reference(table, obj, uid)

    def remove_owner_reference(self, table: Table, obj: dict[str, Any], uid: str) -> None:
        meta = obj["metadata"]
        refs = [r for r in meta.get("ownerReferences") or () if r.get("uid") != uid]
        new = dict(obj, metadata=dict(meta, ownerReferences=refs))
        if not refs:
            del new["metadata"]["ownerReferences"]
        self.update(table.rtype, meta.get("namespace", ""), meta["name"], new,
                    subresource=None, manager="garbage-collector", check_rv=False)

    # -- helpers -----------------------------------------------------------------

    def _managed_entry(self, rtype: ResourceType, obj: dict[str, Any], manager: str,
                       operation: str) -> dict[str, Any]:
        skip = ("apiVersion", "kind", "status", "metadata")
        fields: dict[str, Any] = {f"f:{k}": {} for k in sorted(obj) if k not in skip}
        entry: dict[str, Any] = {
            "manager": manager, "operation": operation, "apiVersion": obj.get("apiVersion"),
            "time": timestamp(self.now()), "fieldsType": "FieldsV1", "fieldsV1": fields}
        return entry


def _prepare_for_create(rtype: ResourceType, obj: dict[str, Any]) -> None:
    """Status a create may not set, as the kinds' PrepareForCreate strategies reset it."""
    r = rtype.resource
    if r.group == "" and r.plural == "namespaces":
        obj["spec"] = {"finalizers": ["kubernetes"]}
        obj["status"] = {"phase": "Active"}
    elif r.group == "" and r.plural == "pods":
        obj["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    elif rtype.status_subresource:
        obj.pop("status", None)


def _owner_uids(obj: dict[str, Any] | None) -> Iterable[str]:
    if obj is None:
        return ()
    return [r["uid"] for r in obj["metadata"].get("ownerReferences") or ()
            if isinstance(r, dict) and isinstance(r.get("uid"), str)]


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    meta = {k: v for k, v in obj["metadata"].items()
            if k not in ("resourceVersion", "managedFields")}
    return dict(obj, metadata=meta)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return _strip(a) == _strip(b)


def _spec_changed(rtype: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> bool:
    ignore = {"metadata", "status", "apiVersion", "kind"} if rtype.status_subresource else {
        "metadata", "apiVersion", "kind"}
    keys = (set(old) | set(new)) - ignore
    return any(old.get(k) != new.get(k) for k in keys)
