"""Object storage of the test API server: the semantics of kube-apiserver's registry.

The objects, the resourceVersion counter and each resource's event history
are :class:`~..storage.versioned_store.VersionedStore`'s; this module's
:class:`Storage` writes them by the generic registry rules that controllers
depend on:

* create: uid, resourceVersion, creationTimestamp, generation 1, generateName;
  the namespace must exist and not be terminating.
* update/patch: optimistic concurrency on resourceVersion; server-owned
  metadata cannot be changed; generation bumps only when something outside
  metadata (and status, for a status subresource) changed; a write that
  changes nothing keeps the resourceVersion and emits no event.
* delete: with finalizers, deletionTimestamp is set (generation bumps) and
  the object stays; once the last finalizer is removed the object is gone and
  only a DELETED event is emitted, carrying the object as it was before that
  last update. A namespace is held by its ``spec.finalizers`` too, and the
  first DELETE of one never removes it. No new finalizer may be added to an
  object being deleted. A Pod bound to a node is deleted gracefully: it stays
  with a deletionTimestamp in the future until a DELETE with a grace period
  of 0 (the kubelet's) removes it.
* dry run: every write can be asked to check and answer without storing.

What a kind adds to these rules (a namespace's lifecycle, a Pod's grace
period, the status a create stores, ...) is its strategy's (:mod:`.strategy`),
found in the table the store is made with.

There is no kubelet or scheduler; the namespace, CRD and garbage-collector
behaviour a bare API server cluster still shows lives in :mod:`..controllers.builtin_controllers`.
"""

from __future__ import annotations

import copy
import secrets
import uuid
from collections.abc import Callable
from typing import Any, TypeAlias

from ...._foundations.go_compat import go_quote
from ..machinery.resources import ResourceType
from ..machinery.status import Cause, StatusError
from ..machinery.unstructured import epoch_seconds, timestamp
from ..machinery.validation import path_segment_problems
from ..patching.field_ownership import FieldOwnership
from ..patching.sent_managed_fields import sent_entries
from ..storage.versioned_store import ObjKey, Table, TableKey, VersionedStore
from .strategy import StrategyTable
from .update_rules import (
    check_finalizers,
    merge_update,
    same,
    spec_changed,
    storage_key,
)

__all__ = ["IndexObserver", "Storage", "Superseded"]

_SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                "generation", "selfLink")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


# Told of every object stored under a key (old: what it replaced, None when created) or
# removed (new: None), before its event and the hooks: the garbage collector's owner index.
IndexObserver: TypeAlias = Callable[[Table, ObjKey, dict[str, Any] | None,
                                     dict[str, Any] | None], None]


class Superseded(Exception):
    """The stored object changed since an update was prepared from it."""


class Storage(VersionedStore):
    """All objects of the server, with the registry's rules for writing them and each
    kind's strategy (``strategies``) applied."""

    def __init__(self, *, strategies: StrategyTable, index: IndexObserver,
                 history_limit: int = 10_000, now: Callable[[], float]) -> None:
        super().__init__(history_limit=history_limit)
        self.strategies = strategies
        self.index = index
        self.now = now
        self._ownership: dict[ResourceType, FieldOwnership] = {}
        # Called after an object is really gone: (table, object).
        self.on_removed: list[Callable[[Table, dict[str, Any]], None]] = []
        # Called after an object is created or changed: (table, object).
        self.on_written: list[Callable[[Table, dict[str, Any]], None]] = []
        # The same, with the object it replaced (None when created): (table, object, old).
        self.on_changed: list[Callable[[Table, dict[str, Any], dict[str, Any] | None],
                                       None]] = []

    # -- tables ---------------------------------------------------------------

    def table(self, rtype: ResourceType) -> Table:
        """The table of ``rtype``: its strategy's storage type's (events.k8s.io Events
        share the core one)."""
        return self.table_at(self.table_key(rtype),
                             self.strategies.of(rtype).storage_type(rtype))

    def table_key(self, rtype: ResourceType) -> TableKey:
        """Where ``rtype``'s objects are stored: (group, plural) of its storage type."""
        stored = self.strategies.of(rtype).storage_type(rtype)
        return (stored.resource.group, stored.resource.plural)

    # -- reads ----------------------------------------------------------------

    def check_key(self, rtype: ResourceType, namespace: str | None, name: str) -> None:
        """The registry's KeyFunc checks of a request naming one object: 400 for a
        namespaced one without a namespace, or a name that cannot be a path segment."""
        if rtype.resource.namespaced and not namespace:
            raise StatusError.bad_request("Namespace parameter required.")
        if not name:
            raise StatusError.bad_request("Name parameter required.")
        problems = path_segment_problems(name)
        if problems:
            raise StatusError.bad_request(f"Name parameter invalid: {go_quote(name)}: "
                                          + ";".join(problems))

    def get(self, rtype: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.table(rtype).objects.get((namespace, name))
        if obj is None:
            raise StatusError.not_found(rtype.resource.group_resource, name, rtype.resource.group)
        return obj

    def snapshot(self, rtype: ResourceType, rv: int, *, expired: str | None = None
                 ) -> dict[ObjKey, dict[str, Any]]:
        """The objects as they were at resourceVersion ``rv``.

        410 Expired if compacted, with ``expired`` as the message (the
        continue-token one by default).
        """
        table = self.table(rtype)
        if rv < table.oldest_rv:
            raise StatusError.expired(expired or (
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list."))
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

    def generate_name(self, rtype: ResourceType, namespace: str, prefix: str) -> str:
        """``names.SimpleNameGenerator``: the prefix and 5 random characters, unused here."""
        objects = self.table(rtype).objects
        name = prefix
        for _ in range(100):
            name = prefix + "".join(secrets.choice(_NAME_CHARS) for _ in range(5))
            if (namespace, name) not in objects:
                break
        return name

    def ownership(self, rtype: ResourceType) -> FieldOwnership:
        """The field ownership rules of a kind (its ``managedFields``)."""
        rules = self._ownership.get(rtype)
        if rules is None or rules.rtype.schema is not rtype.schema:
            rules = self._ownership[rtype] = FieldOwnership(rtype)
        return rules

    def create(self, rtype: ResourceType, namespace: str, obj: dict[str, Any], *,
               manager: str, dry_run: bool = False,
               managed_fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """:meth:`prepare_create` then, unless a dry run, :meth:`commit_create`."""
        obj = self.prepare_create(rtype, namespace, obj, manager=manager, dry_run=dry_run,
                                  managed_fields=managed_fields)
        return obj if dry_run else self.commit_create(rtype, namespace, obj)

    def prepare_create(self, rtype: ResourceType, namespace: str, obj: dict[str, Any], *,
                       manager: str, dry_run: bool = False,
                       managed_fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """``obj`` (changed in place) as a create would store it, checked, but without a
        resourceVersion: what a dry run answers, and what admission validates."""
        table = self.table(rtype)
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self.generate_name(rtype, namespace, meta["generateName"])
        key = (namespace, meta["name"])
        if key in table.objects:
            raise StatusError.already_exists(rtype.resource.group_resource, meta["name"],
                                             rtype.resource.group)
        rv = meta.pop("resourceVersion", None)
        if not dry_run and isinstance(rv, str) and rv.isdigit() and int(rv):
            # the storage layer's own error, which kube-apiserver passes on as a 500
            raise StatusError(500, "", "resourceVersion should not be set on objects to be created")
        for k in _SERVER_META:
            meta.pop(k, None)
        if rtype.resource.namespaced:
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = timestamp(self.now())
        if rtype.generation:
            meta["generation"] = 1
        # the field manager runs before the kind's PrepareForCreate (kube-apiserver's create
        # handler): what the strategy sets (a Namespace's spec.finalizers, a Pod's status)
        # belongs to no manager
        managed = managed_fields if managed_fields is not None else (
            self.ownership(rtype).updated(None, obj, manager, None, self.now()))
        self.strategies.of(rtype).prepare_for_create(rtype, obj, table.objects.values())
        _set_managed_fields(meta, managed)
        return obj

    def commit_create(self, rtype: ResourceType, namespace: str,
                      obj: dict[str, Any]) -> dict[str, Any]:
        """Store what :meth:`prepare_create` made (409 if the name was taken meanwhile)."""
        table = self.table(rtype)
        meta = obj["metadata"]
        key = (namespace, meta["name"])
        if key in table.objects:
            raise StatusError.already_exists(rtype.resource.group_resource, meta["name"],
                                             rtype.resource.group)
        meta["resourceVersion"] = str(self._next_rv())
        obj = self.strategies.of(rtype).canonical(obj)
        self._write(table, key, None, obj)
        return obj

    def update(self, rtype: ResourceType, namespace: str, name: str, new: dict[str, Any], *,
               subresource: str | None, manager: str, check_rv: bool,
               managed_fields: list[dict[str, Any]] | None = None,
               check: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
               dry_run: bool = False) -> dict[str, Any]:
        """Replace an object (PUT semantics; patches call this with the patched object).

        ``check(old, new)`` validates the object about to be stored (raising
        StatusError); a dry run answers what would be stored and stores nothing.
        ``managed_fields`` (an apply's) replaces the update's field ownership;
        without it, managedFields the object sent in place of the stored ones are
        taken, or reset, as :mod:`..patching.sent_managed_fields` says.
        """
        old = self.get(rtype, namespace, name)
        result = self.prepare_update(rtype, old, new, subresource=subresource, manager=manager,
                                     check_rv=check_rv, managed_fields=managed_fields,
                                     check=check)
        if dry_run or result is old:
            return result
        return self.commit_update(rtype, old, result)

    def prepare_update(self, rtype: ResourceType, old: dict[str, Any], new: dict[str, Any], *,
                       subresource: str | None, manager: str, check_rv: bool,
                       managed_fields: list[dict[str, Any]] | None = None,
                       check: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
                       ) -> dict[str, Any]:
        """What an update of ``old`` to ``new`` would store, checked, still at old's
        resourceVersion (what a dry run answers); ``old`` itself if it changes nothing.

        ``old`` is the stored object as the request's version sees it.
        """
        meta = old["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        res = rtype.resource
        new_meta = new.get("metadata")
        if not isinstance(new_meta, dict):
            new_meta = new["metadata"] = {}
        rv = new_meta.get("resourceVersion")
        if check_rv and not rv and not rtype.unconditional_update:
            # the registry's BeforeUpdate names the resource, not the kind (kube-apiserver 1.28)
            raise StatusError.invalid(res.group_resource, name, [Cause(
                "FieldValueInvalid", "Invalid value: 0x0: must be specified for an update",
                "metadata.resourceVersion")], res.group)
        if rv and not str(rv).isdigit():
            raise StatusError(500, "", f'strconv.ParseUint: parsing "{rv}": invalid syntax')
        if rv and str(rv) != meta["resourceVersion"]:
            raise StatusError.stale(res.group_resource, name, res.group)
        uid = new_meta.get("uid")
        if uid and uid != meta["uid"]:
            raise StatusError.conflict(
                res.group_resource, name,
                "StorageError: invalid object, Code: 4, Key: "
                f"{storage_key(rtype, namespace, name)}, ResourceVersion: 0, "
                "AdditionalErrorMsg: Precondition failed: UID in "
                f"precondition: {uid}, UID in object meta: {meta['uid']}", res.group)
        # the update's own managedFields, if it changes them (a subresource's are not read)
        sent = None
        if subresource is None and managed_fields is None and (
                new_meta.get("managedFields") != meta.get("managedFields")):
            sent = sent_entries(new_meta.get("managedFields"))
        result = merge_update(rtype, old, new, subresource,
                              self.strategies.of(rtype).status_metadata)
        self.strategies.of(rtype).prepare_for_update(old, result, subresource)
        if check is not None:
            check(old, result)
        check_finalizers(rtype, old, result)
        unchanged = same(old, result)
        if unchanged and managed_fields is None and sent is None:
            return old  # an update that changes nothing changes no one's fields either
        if managed_fields is None:
            managed_fields = self.ownership(rtype).updated(
                old, result, manager, subresource if subresource == "status" else None,
                self.now(), sent=sent)
        if unchanged and managed_fields == (meta.get("managedFields") or []):
            return old
        rmeta = result["metadata"]
        if rtype.generation and spec_changed(rtype, old, result):
            rmeta["generation"] = meta.get("generation", 0) + 1
        rmeta["resourceVersion"] = meta["resourceVersion"]
        _set_managed_fields(rmeta, managed_fields)
        return result

    def commit_update(self, rtype: ResourceType, old: dict[str, Any],
                      result: dict[str, Any]) -> dict[str, Any]:
        """Store what :meth:`prepare_update` made of ``old``, the stored object.

        Raises :class:`Superseded` if ``old`` is no longer what is stored (a
        write came in meanwhile): the caller starts over, as kube-apiserver's
        GuaranteedUpdate does.
        """
        table = self.table(rtype)
        meta = result["metadata"]
        key = (old["metadata"].get("namespace", ""), old["metadata"]["name"])
        if table.objects.get(key) is not old:
            raise Superseded(key)
        if result is old:
            return old
        # registry.Store.shouldDeleteDuringUpdate: no finalizers left, no grace period pending.
        # The update is never written: etcd deletes the stored object, which the DELETED event
        # carries (finalizers and all) at the deletion's resourceVersion, while the answer is
        # the update's object at the resourceVersion it was made from (kube-apiserver 1.28).
        if meta.get("deletionTimestamp") and not meta.get("finalizers") and (
                not meta.get("deletionGracePeriodSeconds")) and not self._blocks_delete(table,
                                                                                  result):
            gone = dict(old, metadata=dict(old["metadata"],
                                           resourceVersion=str(self._next_rv())))
            self._remove(table, key, gone)
            return result
        meta["resourceVersion"] = str(self._next_rv())
        result = self.strategies.of(rtype).canonical(result)
        self._write(table, key, old, result)
        return result

    def _write(self, table: Table, key: ObjKey, old: dict[str, Any] | None,
               new: dict[str, Any]) -> None:
        """Store ``new`` under ``key``: the index, one event, then the lifecycle hooks."""
        table.objects[key] = new
        self.index(table, key, old, new)
        self._emit(table, "ADDED" if old is None else "MODIFIED", new, old)
        for changed in self.on_changed:
            changed(table, new, old)
        for hook in self.on_written:
            hook(table, new)

    def delete(self, rtype: ResourceType, namespace: str, name: str, *,
               uid: str | None = None, resource_version: str | None = None,
               propagation_finalizer: str | None = None, grace_period: int | None = None,
               dry_run: bool = False) -> tuple[dict[str, Any], bool]:
        """Delete or start deleting; returns (the answer's object, whether it is gone now).

        ``grace_period`` is DeleteOptions.gracePeriodSeconds (None: not given);
        what it means for the kind is its strategy's ``graceful_period`` to say.
        ``propagation_finalizer`` (``orphan`` or ``foregroundDeletion``) is
        added to an object not yet being deleted, as kube-apiserver does for
        those propagation policies; the garbage collector removes it.
        """
        table = self.table(rtype)
        self.strategies.of(table.rtype).check_delete(name)
        old = self.get(rtype, namespace, name)
        res = rtype.resource
        meta = old["metadata"]
        # kube-apiserver names the kind here, not the resource (the storage layer's error)
        if uid is not None and uid != meta["uid"]:
            raise StatusError.conflict(
                res.kind, name, f"the UID in the precondition ({uid}) does not match the UID "
                f"in record ({meta['uid']}). The object might have been deleted and then "
                "recreated", res.group)
        if resource_version is not None and resource_version != meta["resourceVersion"]:
            raise StatusError.conflict(
                res.kind, name, f"the ResourceVersion in the precondition ({resource_version}) "
                f"does not match the ResourceVersion in record ({meta['resourceVersion']}). "
                "The object might have been modified", res.group)
        if propagation_finalizer and not meta.get("deletionTimestamp") and (
                propagation_finalizer not in (meta.get("finalizers") or ())):
            old = copy.deepcopy(old)
            meta = old["metadata"]
            meta["finalizers"] = [*(meta.get("finalizers") or ()), propagation_finalizer]
        strategy = self.strategies.of(table.rtype)
        # the first DELETE of a namespace only starts its lifecycle, whatever its spec
        held = bool(meta.get("finalizers")) or self._blocks_delete(table, old) or (
            strategy.lifecycle_deletion and not meta.get("deletionTimestamp"))
        now = self.now()
        if meta.get("deletionTimestamp"):
            pending = meta.get("deletionGracePeriodSeconds") or 0
            shorter = grace_period if grace_period is not None and grace_period >= 0 else 1
            if (held and not pending) or (pending and (grace_period is None
                                              or shorter >= pending)):
                return old, False  # waiting on finalizers or a grace period: nothing changes
            if pending:  # only a shorter grace period may be given (rest.BeforeDelete)
                when = epoch_seconds(meta["deletionTimestamp"]) - pending + shorter
                return self._mark_deleting(table, old, when, shorter, held, dry_run)
            return self._remove_now(table, old, None, dry_run), True
        period = strategy.graceful_period(old, grace_period)
        if period or held:
            return self._mark_deleting(table, old, now + (period or 0), period or 0, held,
                                       dry_run, first=True)
        return self._remove_now(table, old, None if period is None else now, dry_run), True

    def _mark_deleting(self, table: Table, old: dict[str, Any], when: float, grace: int,
                       held: bool, dry_run: bool, first: bool = False
                       ) -> tuple[dict[str, Any], bool]:
        """Set deletionTimestamp (``when``) and the grace period; remove at once if
        nothing holds the object any more (a grace period shortened to 0)."""
        if grace == 0 and not held:
            return self._remove_now(table, old, when, dry_run), True
        result = copy.deepcopy(old)
        rmeta = result["metadata"]
        rmeta["deletionTimestamp"] = timestamp(when)
        rtype = table.rtype
        self.strategies.of(rtype).mark_deleting(result, grace)
        if first and rtype.generation:
            rmeta["generation"] = rmeta.get("generation", 0) + 1
        if dry_run:
            return result, False
        rmeta["resourceVersion"] = str(self._next_rv())
        meta = old["metadata"]
        # Written as any change is: the controllers hear of it (a ReplicaSet replaces a Pod
        # that is terminating without waiting for it to go, as kube-controller-manager's do).
        self._write(table, (meta.get("namespace", ""), meta["name"]), old, result)
        return result, False

    def _remove_now(self, table: Table, old: dict[str, Any], when: float | None,
                    dry_run: bool) -> dict[str, Any]:
        """Remove ``old``; the answer carries deletionTimestamp ``when`` (graceful kinds)."""
        meta = old["metadata"]
        gone = copy.copy(old)
        gone["metadata"] = dict(meta)
        if not dry_run:
            gone["metadata"]["resourceVersion"] = str(self._next_rv())
            self._remove(table, (meta.get("namespace", ""), meta["name"]), gone)
        if when is None:
            return gone
        return dict(gone, metadata=dict(gone["metadata"], deletionTimestamp=timestamp(when),
                                        deletionGracePeriodSeconds=0))

    def _blocks_delete(self, table: Table, obj: dict[str, Any]) -> bool:
        """Whether removal waits for a lifecycle step (a namespace's ``spec.finalizers``,
        a CRD's cleanup): the kind's strategy says."""
        return self.strategies.of(table.rtype).blocks_delete(obj)

    def _remove(self, table: Table, key: ObjKey, last: dict[str, Any]) -> None:
        old = table.objects.pop(key)
        self.index(table, key, old, None)
        # prev: what a list at an earlier resourceVersion (a continue token's) still shows
        self._emit(table, "DELETED", last, old)
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


def _set_managed_fields(meta: dict[str, Any], managed: list[Any]) -> None:
    """``metadata.managedFields``, omitted when no manager owns a field (Go's omitempty)."""
    if managed:
        meta["managedFields"] = managed
    else:
        meta.pop("managedFields", None)
