"""``ControllerBuilder``: sugar for wiring a :class:`Controller`, in controller-runtime's style.

Each method says which lower-level call it stands for; everything it does
can be written by hand with :class:`Controller` and :meth:`Controller.watch`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._controller import Controller
from ._mappers import Mapper, enqueue_object, enqueue_owner
from ._objects import Resource
from ._predicates import Predicate
from ._rate_limiters import RateLimiter
from ._reconciler import Reconciler, Request

if TYPE_CHECKING:
    from ._manager import Manager

__all__ = ["ControllerBuilder"]


class ControllerBuilder:
    """``ControllerBuilder(manager).for_(R).owns(C).watches(X, mapper).complete(reconciler)``."""

    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._name: str | None = None
        self._for: tuple[Resource, tuple[Predicate, ...]] | None = None
        # (resource, mapper or None for "the owner", predicates, metadata-only)
        self._watches: list[tuple[Resource, Mapper | None, tuple[Predicate, ...], bool]] = []
        self._global: list[Predicate] = []
        self._options: dict[str, Any] = {}

    def named(self, name: str) -> ControllerBuilder:
        """The controller's name in logs and metrics (default: the ``for_`` kind, lowercased)."""
        self._name = name
        return self

    def for_(self, resource: Resource, *predicates: Predicate) -> ControllerBuilder:
        """Reconcile objects of ``resource``.

        Stands for ``controller.watch(resource, enqueue_object, predicates=...)``.
        """
        if self._for is not None:
            raise ValueError(f"for_ was already given ({self._for[0]}); a controller "
                             "reconciles one kind")
        self._for = (resource, predicates)
        return self

    def owns(self, resource: Resource, *predicates: Predicate) -> ControllerBuilder:
        """Reconcile the controlling owner (of the ``for_`` kind) of objects of ``resource``.

        Stands for ``controller.watch(resource, enqueue_owner(kind, group), predicates=...)``.
        """
        self._watches.append((resource, None, predicates, False))
        return self

    def watches(self, resource: Resource, mapper: Mapper, *predicates: Predicate,
                metadata: bool = False) -> ControllerBuilder:
        """Reconcile what ``mapper(obj)`` returns for events of ``resource``.

        Stands for ``controller.watch(resource, mapper, predicates=..., metadata=...)``;
        the mapper is synchronous and may read the manager's cache and its
        field indexes with :meth:`Cache.lookup`.
        """
        self._watches.append((resource, mapper, predicates, metadata))
        return self

    def with_predicates(self, *predicates: Predicate) -> ControllerBuilder:
        """Predicates applied to every watch of this controller (controller-runtime's
        ``WithEventFilter``)."""
        self._global.extend(predicates)
        return self

    def with_options(self, *, max_concurrent_reconciles: int | None = None,
                     rate_limiter: RateLimiter[Request] | None = None,
                     reconcile_timeout: float | None = None) -> ControllerBuilder:
        """Options of the :class:`Controller` constructor."""
        for key, value in (("max_concurrent_reconciles", max_concurrent_reconciles),
                           ("rate_limiter", rate_limiter),
                           ("reconcile_timeout", reconcile_timeout)):
            if value is not None:
                self._options[key] = value
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Build the controller and register it with the manager (``manager.add``)."""
        if self._for is None:
            raise ValueError("call for_(resource) before complete(): which kind is reconciled?")
        primary, primary_predicates = self._for
        name = self._name or primary.kind.lower()
        controller = self._manager.new_controller(name, reconciler, **self._options)
        controller.watch(primary, enqueue_object,
                         predicates=(*self._global, *primary_predicates))
        for resource, mapper, predicates, metadata in self._watches:
            controller.watch(resource, mapper or _owner_mapper(primary),
                             predicates=(*self._global, *predicates), metadata=metadata)
        return controller


def _owner_mapper(primary: Resource) -> Mapper:
    by_ref = enqueue_owner(primary.kind, primary.group)
    if primary.namespaced:
        return by_ref
    return lambda obj: [Request("", r.name) for r in by_ref(obj)]
