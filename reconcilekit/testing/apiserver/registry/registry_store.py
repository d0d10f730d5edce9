"""The write path of a kind's objects: kube-apiserver's generic registry ``Store``
(``k8s.io/apiserver/pkg/registry/generic/registry/store.go``).

:class:`RegistryStore` runs a create and an update as kube-apiserver's does, over
:class:`~.generic_store.Storage` and each kind's strategy; what lies above
the registry comes in as functions the caller builds for its request:
admission (:class:`WriteAdmission`: the mutating webhooks, then the
validating ones) and conversion between the request's version and the
storage version (:class:`Versions`).

Guarantees:

* a create is mutated by admission before it has a generated name or any
  server-set metadata; it is validated (the strategy's rules, then a custom
  resource's schema) and prepared (:meth:`Storage.prepare_create`) before
  validating admission sees it, as it would be stored but for its
  resourceVersion;
* an update is GuaranteedUpdate: read, the change applied, mutating
  admission, the update's rules and validation, validating admission, then
  a commit that succeeds only if the object read is still the stored one;
  otherwise it starts over from the new one;
* fields a mutating webhook added beyond a custom resource's schema are
  pruned after validating admission saw them; nothing is stored on a dry run;
* a delete is admitted with the stored object unless it changes nothing (an
  object already waiting on its finalizers), and done only if the object
  admitted is still the stored one; otherwise it starts over. The observer
  given at construction hears of every deletion that did not remove its
  object at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from ..machinery.resources import ResourceType
from ..machinery.status import StatusError
from ..machinery.unstructured import Obj
from .generic_store import Storage, Superseded

__all__ = ["Change", "DeleteAdmission", "DeletionStarted", "RegistryStore", "Versions",
           "WriteAdmission", "dedup_owner_references"]

# What an update makes of the stored object (in the request's version): the new object,
# and the managed fields to give it (an apply's) or None.
Change: TypeAlias = Callable[[Obj], tuple[Obj, list[Obj] | None]]
Convert: TypeAlias = Callable[[Obj], Awaitable[Obj]]
Check: TypeAlias = Callable[[Obj, Obj], None]
# Admission of a DELETE, given the stored object in the request's version.
DeleteAdmission: TypeAlias = Callable[[Obj], Awaitable[None]]
# Told of an object a DELETE marked for deletion without removing it (the lifecycle
# controllers' observer).
DeletionStarted: TypeAlias = Callable[[ResourceType, Obj], None]


@dataclass(frozen=True, slots=True)
class Versions:
    """The request's version of a kind and its storage version: ``shown`` converts a
    stored object to the request's version, ``stored`` the other way."""

    shown: Convert
    stored: Convert


class WriteAdmission(Protocol):
    """Admission of one write (kube-apiserver's mutating admission and its
    createValidation / updateValidation functions), built by the handler for its request.

    Each :meth:`mutate` starts an attempt (an update may make several);
    :meth:`validate` and :attr:`patched` are of the latest one.
    """

    @property
    def patched(self) -> bool:
        """Whether mutating admission changed the object."""
        ...

    async def mutate(self, obj: Obj, old: Obj | None) -> Obj:
        """The object as the mutating webhooks leave it (refusals raise StatusError)."""
        ...

    async def validate(self, obj: Obj) -> None:
        """Validating admission of the object as it would be stored (raises StatusError)."""
        ...


class RegistryStore:
    """Creates, updates and deletes of every kind, each by its strategy, over ``storage``;
    ``deletion_started`` is told of the objects a delete marked but did not remove."""

    def __init__(self, storage: Storage, *, deletion_started: DeletionStarted) -> None:
        self.storage = storage
        self.deletion_started = deletion_started

    # -- validation ------------------------------------------------------------------

    def validate(self, rtype: ResourceType, obj: Obj, namespace: str,
                 old: Obj | None = None) -> None:
        """The kind's validation (its strategy's, then a custom resource's schema's), and
        its update rules when ``old`` is given (422 Invalid)."""
        strategy = self.storage.strategies.of(rtype)
        causes = strategy.validate_metadata(obj["metadata"])
        causes.extend(strategy.validate(obj, namespace) if old is None else
                      strategy.validate_update(obj, old, namespace))
        if rtype.schema is not None:
            causes.extend(rtype.schema.validate(obj, old))
        if causes:
            shown = strategy.reported_type(rtype)
            raise StatusError.invalid(shown.qualified_kind(), obj["metadata"].get("name", ""),
                                      causes, shown.resource.group)

    def update_validation(self, rtype: ResourceType, namespace: str,
                          subresource: str | None) -> Check | None:
        """The validation of an update: the kind's for the main resource (and for a
        custom resource's ``scale``, which writes its spec), the schema's for a custom
        resource's ``status``, the strategy's for ``finalize`` and a built-in kind's
        ``status`` (none for other subresources)."""
        schema = rtype.schema
        if subresource == "finalize":
            strategy = self.storage.strategies.of(rtype)

            def check_finalize(old: Obj, new: Obj) -> None:
                causes = strategy.validate_finalize(new)
                if causes:
                    raise StatusError.invalid(rtype.qualified_kind(), new["metadata"]["name"],
                                              causes)
            return check_finalize
        if subresource == "status":  # a custom resource's schema, or a built-in strategy
            rules = schema if schema is not None else self.storage.strategies.of(rtype)

            def check_status(old: Obj, new: Obj) -> None:
                causes = rules.validate_status(new, old)
                if causes:
                    raise StatusError.invalid(rtype.qualified_kind(), new["metadata"]["name"],
                                              causes, rtype.resource.group)
            return check_status
        if subresource == "ephemeralcontainers":
            strategy = self.storage.strategies.of(rtype)

            def check_ephemeral(old: Obj, new: Obj) -> None:
                causes = strategy.validate_ephemeral_containers(new, old)
                if causes:
                    raise StatusError.invalid(rtype.qualified_kind(), new["metadata"]["name"],
                                              causes)
            return check_ephemeral
        if subresource and not (subresource == "scale" and schema is not None):
            return None
        return lambda old, new: self.validate(rtype, new, namespace, old)

    def prune(self, rtype: ResourceType, obj: Obj) -> None:
        """Fields beyond a custom resource's schema go (kube-apiserver prunes what a
        mutating webhook added when it stores the object, after the validating webhooks
        saw them)."""
        if rtype.schema is not None:
            rtype.schema.decode(obj, default=False)

    # -- writes ----------------------------------------------------------------------

    async def create(self, rtype: ResourceType, namespace: str, obj: Obj, *, manager: str,
                     dry_run: bool, admission: WriteAdmission, versions: Versions,
                     managed_fields: list[Obj] | None = None) -> Obj:
        """Admit, validate and store a new object (a create, or an apply that creates);
        the answer in the request's version (what would be stored, on a dry run)."""
        obj = await admission.mutate(obj, None)
        meta = obj["metadata"]
        dedup_owner_references(meta)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self.storage.generate_name(rtype, namespace, meta["generateName"])
        self.validate(rtype, obj, namespace)
        prepared = self.storage.prepare_create(rtype, namespace, obj, manager=manager,
                                               dry_run=dry_run, managed_fields=managed_fields)
        await admission.validate(prepared)
        if admission.patched:
            self.prune(rtype, prepared)
        if dry_run:
            return prepared
        created = self.storage.commit_create(rtype, namespace, await versions.stored(prepared))
        return await versions.shown(created)

    async def guaranteed_update(self, rtype: ResourceType, namespace: str, name: str,
                                change: Change, *, subresource: str | None, manager: str,
                                dry_run: bool, check_rv: bool, admission: WriteAdmission,
                                versions: Versions) -> Obj:
        """Admit, validate and store ``change`` of a stored object (as the request's
        version shows it), started over when another write comes first."""
        check = self.update_validation(rtype, namespace, subresource)
        while True:
            stored = self.storage.get(rtype, namespace, name)
            old = await versions.shown(stored)
            new, managed_fields = change(old)
            new = await admission.mutate(new, old)
            if admission.patched:
                dedup_owner_references(new["metadata"])
            result = self.storage.prepare_update(
                rtype, old, new, subresource=subresource, manager=manager, check_rv=check_rv,
                managed_fields=managed_fields, check=check)
            await admission.validate(result)
            if result is old or dry_run:
                return result
            if admission.patched:
                self.prune(rtype, result)
            try:
                committed = self.storage.commit_update(rtype, stored,
                                                       await versions.stored(result))
            except Superseded:
                continue
            return await versions.shown(committed)


    async def delete(self, rtype: ResourceType, namespace: str, name: str, *,
                     uid: str | None, resource_version: str | None,
                     propagation_finalizer: str | None, grace_period: int | None,
                     dry_run: bool, admission: DeleteAdmission, versions: Versions
                     ) -> tuple[Obj, bool]:
        """Delete (or start deleting) by :meth:`Storage.delete`'s rules, admitted; the
        answer's object in the request's version, and whether it is gone."""
        table = self.storage.table(rtype)

        def attempt(dry: bool) -> tuple[Obj, bool]:
            return self.storage.delete(rtype, namespace, name, uid=uid,
                                       resource_version=resource_version,
                                       propagation_finalizer=propagation_finalizer,
                                       grace_period=grace_period, dry_run=dry)

        while True:
            stored = self.storage.get(rtype, namespace, name)
            obj, gone = attempt(True)
            if obj is not stored or gone:
                await admission(await versions.shown(stored))
            if dry_run:
                return await versions.shown(obj), gone
            if table.objects.get((namespace, name)) is stored:
                break
        obj, gone = attempt(False)
        if not gone:
            self.deletion_started(rtype, obj)
            if not self.storage.strategies.of(rtype).lifecycle_deletion:
                obj = table.objects.get((namespace, name), obj)  # after its observers
        return await versions.shown(obj), gone

def dedup_owner_references(meta: Obj) -> None:
    """The registry drops an owner reference equal to an earlier one, entirely equal
    (references that only share a UID are kept); kube-apiserver adds a Warning."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return
    unique: list[Any] = []
    for ref in refs:
        if ref not in unique:
            unique.append(ref)
    meta["ownerReferences"] = unique
