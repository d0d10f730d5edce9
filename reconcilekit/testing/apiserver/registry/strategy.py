"""A kind's rules, in one object: kube-apiserver's REST strategies (``pkg/registry/rest``).

A :class:`Strategy` holds what kube-apiserver's ``RESTCreateStrategy``,
``RESTUpdateStrategy`` and ``RESTDeleteStrategy`` of a kind do, and the
scheme's defaulting of it: decoding checks, defaults, PrepareForCreate and
PrepareForUpdate, Validate and ValidateUpdate, graceful deletion, the
admission plugins kube-apiserver runs on the kind by default, and its
TableConvertor. The base
:class:`Strategy` is the default one: a kind without rules of its own (most
built-in kinds, every custom resource) gets exactly what it does.

:class:`StrategyTable` is the one place a kind's strategy is found: the
registry, the admission chain and the HTTP handlers all ask it, and none of
them compares a kind's group and resource. Built-in kinds are registered by
(group, resource); every custom resource has the table's custom resource
strategy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar

from ..machinery.resources import ResourceType
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..machinery.validation import validate_object_meta
from ..storage.versioned_store import TableKey
from .table_convertor import (
    Cells,
    TableConvertor,
    builtin_printer,
    default_table,
    printer_columns,
)

__all__ = ["Strategy", "StrategyTable", "StoredObjects"]

# (group, plural) -> the objects the server holds of that resource, by (namespace, name);
# empty for a resource it does not serve. What admission plugins read (read-only).
StoredObjects = Callable[[str, str], Mapping[tuple[str, str], Obj]]


class Strategy:
    """The default strategy: a kind with no rules beyond the generic registry's.

    Every method leaves an object it does not concern untouched; methods
    named ``validate*`` return the causes of a 422 Invalid (empty: valid) and
    never raise for a bad object.
    """

    # An object of the kind is a namespace: admission attributes a request on one to the
    # namespace it names, and webhooks' namespace selectors read its own labels.
    own_namespace: ClassVar[bool] = False
    # DELETE only starts the kind's lifecycle (a controller finishes it): the first one
    # never removes the object, and the answer is the object as marked for deletion.
    lifecycle_deletion: ClassVar[bool] = False
    # A DELETE that removes an object answers with it rather than a Success Status
    # (the registry's ReturnDeletedObject).
    return_deleted_object: ClassVar[bool] = False
    # Object names are DNS labels rather than subdomains.
    label_names: ClassVar[bool] = False
    # A kind of kube-apiserver itself, whose finalizers must be standard or qualified.
    core_metadata: ClassVar[bool] = True
    # A scale subresource read of a missing object is NotFound for ``<plural>/scale``
    # (False: for the resource itself, as StatefulSets and custom resources answer).
    scale_names_subresource: ClassVar[bool] = True
    # Metadata fields a ``status`` write takes from the request (kube-apiserver's status
    # strategies that reset only the spec, and perhaps labels, of what they are sent: a
    # Deployment's revision annotation is written with its status); the rest is kept.
    status_metadata: ClassVar[tuple[str, ...]] = ()

    def __init__(self, *, cells: Cells | None = None) -> None:
        """``cells``: kube-apiserver's printer for the kind (none: the default Table)."""
        self._cells = cells

    # -- decoding and defaults -------------------------------------------------------

    def check_encoding(self, obj: Obj) -> None:
        """Decode what the kind's Go type holds beyond the generic decoder (raises
        :class:`~..machinery.status.DecodeError`)."""

    def default(self, obj: Obj) -> None:
        """The scheme's defaulting of the kind (``SetDefaults_*``), in place."""

    def admit(self, obj: Obj, namespace: str, stored: StoredObjects) -> None:
        """The built-in mutating admission plugins of a create that concern the kind,
        in place, reading what they need from ``stored`` (raises
        :class:`~..machinery.status.StatusError` to refuse it)."""

    def storage_type(self, rtype: ResourceType) -> ResourceType:
        """The type whose table stores objects of ``rtype`` (itself but for kinds served
        by several groups)."""
        return rtype

    def convert_version(self, obj: Obj, api_version: str) -> Obj | None:
        """``obj`` converted to ``api_version`` for a built-in kind whose versions differ
        beyond their apiVersion (None: renaming the apiVersion is all it takes)."""
        return None

    def converts_stored(self, rtype: ResourceType) -> bool:
        """Whether an object stored as :meth:`storage_type` must be converted (not just
        renamed) to be shown as ``rtype``."""
        return False

    def canonical(self, obj: Obj) -> Obj:
        """``obj`` as storage keeps it (and every answer and watch event shows it): a
        built-in kind's fields in its Go type's order, which is how they are kept."""
        return obj

    # -- create and update -----------------------------------------------------------

    def prepare_for_create(self, rtype: ResourceType, obj: Obj, existing: Iterable[Obj]
                           ) -> None:
        """PrepareForCreate, in place (``existing``: the kind's stored objects): a kind
        with a status subresource is created without status."""
        if rtype.status_subresource:
            obj.pop("status", None)

    def prepare_for_update(self, old: Obj, new: Obj, subresource: str | None) -> None:
        """PrepareForUpdate: what an update of ``old`` may not change, put back in ``new``."""

    # -- validation ------------------------------------------------------------------

    def validate_metadata(self, meta: Obj) -> list[Cause]:
        """``ValidateObjectMeta`` as the kind asks for it."""
        return validate_object_meta(meta, label_name=self.label_names,
                                    core=self.core_metadata)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        """Validate: the kind's rules on a new object (metadata aside)."""
        return []

    def validate_update(self, obj: Obj, old: Obj, namespace: str) -> list[Cause]:
        """ValidateUpdate: :meth:`validate`'s rules, then what may not change from ``old``."""
        return self.validate(obj, namespace) + self.immutable(old, obj)

    def immutable(self, old: Obj, new: Obj) -> list[Cause]:
        """The fields an update changed that the kind does not let change."""
        return []

    def validate_status(self, obj: Obj, old: Obj) -> list[Cause]:
        """The rules of a ``status`` subresource write of a built-in kind (metadata aside)."""
        return []

    def validate_ephemeral_containers(self, obj: Obj, old: Obj) -> list[Cause]:
        """The rules of an ``ephemeralcontainers`` subresource write (Pods')."""
        return []

    def validate_finalize(self, obj: Obj) -> list[Cause]:
        """The rules of a ``finalize`` subresource write (the kinds that have one)."""
        return []

    def reported_type(self, rtype: ResourceType) -> ResourceType:
        """The type a 422 Invalid names (the request's, but for kinds validated as another)."""
        return rtype

    # -- deletion --------------------------------------------------------------------

    def check_delete(self, name: str) -> None:
        """Refuse a DELETE of the object ``name`` before anything else is looked at
        (raises :class:`~..machinery.status.StatusError`; a kind's storage that keeps
        some objects for good, such as the system PriorityClasses)."""

    def graceful_period(self, obj: Obj, requested: int | None) -> int | None:
        """CheckGracefulDelete: seconds a DELETE leaves the object terminating (0: none),
        or None when the kind is not deleted gracefully."""
        return None

    def blocks_delete(self, obj: Obj) -> bool:
        """Whether removal waits for a lifecycle step beyond ``metadata.finalizers``."""
        return False

    def mark_deleting(self, obj: Obj, grace: int) -> None:
        """What marking ``obj`` (a copy) for deletion sets beside its deletionTimestamp."""
        obj["metadata"]["deletionGracePeriodSeconds"] = grace

    # -- printing --------------------------------------------------------------------

    def table_convertor(self, rtype: ResourceType) -> TableConvertor:
        """TableConvertor: the columns of the kind's Table and each object's cells (the
        kind's printer under kube-apiserver's captured columns, or Name and Created At)."""
        return default_table() if self._cells is None else builtin_printer(rtype, self._cells)


class CustomResourceStrategy(Strategy):
    """Every custom resource's strategy: its schema does the rest."""

    core_metadata = False

    scale_names_subresource = False

    def canonical(self, obj: Obj) -> Obj:
        """Keys sorted at every level: kube-apiserver keeps a custom resource as a Go map,
        which encodes its keys in order."""
        return {k: _sorted_keys(obj[k]) for k in sorted(obj)}

    def table_convertor(self, rtype: ResourceType) -> TableConvertor:
        """The version's ``additionalPrinterColumns`` (Age when it declares none)."""
        return printer_columns(rtype.printer_columns or ())


class StrategyTable:
    """The strategies of the served kinds: built-in kinds by (group, resource), the
    default :class:`Strategy` for a built-in kind registered with none, and
    :class:`CustomResourceStrategy` for every custom resource.

    Invariant: a kind has one strategy (registering a kind twice is an error).
    """

    def __init__(self) -> None:
        self._strategies: dict[TableKey, Strategy] = {}
        self._default = Strategy()
        self._custom = CustomResourceStrategy()

    def register(self, group: str, plural: str, strategy: Strategy) -> None:
        key = (group, plural)
        if key in self._strategies:
            raise ValueError(f"{plural}.{group} has a strategy already")
        self._strategies[key] = strategy

    def of(self, rtype: ResourceType) -> Strategy:
        """The strategy of ``rtype``'s kind."""
        if not rtype.builtin:
            return self._custom
        r = rtype.resource
        return self._strategies.get((r.group, r.plural), self._default)

    def lookup(self, group: str, plural: str) -> Strategy:
        """The strategy of a built-in resource named by group and plural."""
        return self._strategies.get((group, plural), self._default)


def _sorted_keys(value: object) -> object:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value
