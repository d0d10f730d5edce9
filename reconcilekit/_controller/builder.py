"""``ControllerBuilder``: sugar for wiring a :class:`Controller`, in controller-runtime's style.

Each method says which lower-level call it stands for; everything it does
can be written by hand with :class:`Controller` and :meth:`Controller.watch`.

Cache scopes: ``for_``, ``owns`` and ``watches`` take ``scope=`` (a
:class:`CacheScope`), which stands for ``manager.cache.require_scope(resource,
scope)`` before the watch. Without it a watch asks for the scope the manager
was built with for that resource (``Manager(cache_scopes=...)``, else its
default namespaces). The manager's cache holds one scope per resource, so two
controllers (or two watches of one) asking for different scopes of a resource
are refused: :meth:`complete` raises :class:`CacheScopeError` naming both,
before it creates the controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Protocol, overload

from .._cache.cache import Cache
from .._cache.scope import CacheScope
from .._foundations.objects import ObjT, Resource, TypedResource
from .._workqueue.rate_limiters import RateLimiter
from .controller import Controller
from .fairness import Fairness, ObjectFairness
from .mappers import Mapper, enqueue_object, enqueue_owner
from .predicates import Predicate
from .reconciler import Reconciler, Request

__all__ = ["ControllerBuilder", "ControllerHost"]


class ControllerHost(Protocol):
    """What the builder needs of a :class:`~reconcilekit.Manager` (it has both): the
    cache its watches read, and a way to create and register a controller."""

    @property
    def cache(self) -> Cache: ...

    def new_controller(self, name: str, reconciler: Reconciler, *,
                       primary: Resource | None = None,
                       max_concurrent_reconciles: int = 1,
                       rate_limiter: RateLimiter[Request] | None = None,
                       reconcile_timeout: float | None = None,
                       fairness: Fairness = ...) -> Controller: ...


_UNSET: Final[Any] = object()


@dataclass(frozen=True, slots=True)
class _Watch:
    resource: Resource
    mapper: Mapper[Any] | None  # None: the controlling owner, of the for_ kind
    predicates: tuple[Predicate[Any], ...]
    metadata: bool
    scope: CacheScope | None  # None: the manager's scope for the resource


class ControllerBuilder:
    """``ControllerBuilder(manager).for_(R).owns(C).watches(X, mapper).complete(reconciler)``."""

    def __init__(self, manager: ControllerHost) -> None:
        self._manager = manager
        self._name: str | None = None
        self._for: _Watch | None = None
        self._watches: list[_Watch] = []
        self._global: list[Predicate] = []
        self._options: dict[str, Any] = {}
        self._fairness: Fairness = _UNSET

    def named(self, name: str) -> ControllerBuilder:
        """The controller's name in logs and metrics (default: the ``for_`` kind, lowercased)."""
        self._name = name
        return self

    @overload
    def for_(self, resource: TypedResource[ObjT], *predicates: Predicate[ObjT],
             scope: CacheScope | None = None) -> ControllerBuilder: ...
    @overload
    def for_(self, resource: Resource, *predicates: Predicate,
             scope: CacheScope | None = None) -> ControllerBuilder: ...
    def for_(self, resource: Resource, *predicates: Predicate[Any],
             scope: CacheScope | None = None) -> ControllerBuilder:
        """Reconcile objects of ``resource`` (those in ``scope``, if given).

        Stands for ``cache.require_scope(resource, scope)`` then
        ``controller.watch(resource, enqueue_object, predicates=...)``.
        """
        if self._for is not None:
            raise ValueError(f"for_ was already given ({self._for.resource}); a controller "
                             "reconciles one kind")
        self._for = _Watch(resource, None, predicates, False, scope)
        return self

    @overload
    def owns(self, resource: TypedResource[ObjT], *predicates: Predicate[ObjT],
             scope: CacheScope | None = None) -> ControllerBuilder: ...
    @overload
    def owns(self, resource: Resource, *predicates: Predicate,
             scope: CacheScope | None = None) -> ControllerBuilder: ...
    def owns(self, resource: Resource, *predicates: Predicate[Any],
             scope: CacheScope | None = None) -> ControllerBuilder:
        """Reconcile the controlling owner (of the ``for_`` kind) of objects of ``resource``.

        Stands for ``cache.require_scope(resource, scope)`` then
        ``controller.watch(resource, enqueue_owner(kind, group), predicates=...)``.
        """
        self._watches.append(_Watch(resource, None, predicates, False, scope))
        return self

    @overload
    def watches(self, resource: TypedResource[ObjT], mapper: Mapper[ObjT],
                *predicates: Predicate[ObjT], metadata: bool = False,
                scope: CacheScope | None = None) -> ControllerBuilder: ...
    @overload
    def watches(self, resource: Resource, mapper: Mapper, *predicates: Predicate,
                metadata: bool = False, scope: CacheScope | None = None
                ) -> ControllerBuilder: ...
    def watches(self, resource: Resource, mapper: Mapper[Any], *predicates: Predicate[Any],
                metadata: bool = False, scope: CacheScope | None = None) -> ControllerBuilder:
        """Reconcile what ``mapper(obj)`` returns for events of ``resource``.

        Stands for ``cache.require_scope(resource, scope)`` then
        ``controller.watch(resource, mapper, predicates=..., metadata=...)``;
        the mapper is synchronous and may read the manager's cache and its
        field indexes with :meth:`Cache.lookup`.
        """
        self._watches.append(_Watch(resource, mapper, predicates, metadata, scope))
        return self

    def with_predicates(self, *predicates: Predicate) -> ControllerBuilder:
        """Predicates applied to every watch of this controller (controller-runtime's
        ``WithEventFilter``)."""
        self._global.extend(predicates)
        return self

    def with_options(self, *, max_concurrent_reconciles: int | None = None,
                     rate_limiter: RateLimiter[Request] | None = None,
                     reconcile_timeout: float | None = None,
                     fairness: Fairness = _UNSET) -> ControllerBuilder:
        """Options of the :class:`Controller` constructor. ``fairness``: what the
        work queue serves keys of one priority fairly across (not given: the
        namespace; a function of the Request; :func:`fairness_by_object` of a
        function of the object; None: first come, first served)."""
        for key, value in (("max_concurrent_reconciles", max_concurrent_reconciles),
                           ("rate_limiter", rate_limiter),
                           ("reconcile_timeout", reconcile_timeout)):
            if value is not None:
                self._options[key] = value
        if fairness is not _UNSET:
            if fairness is not None and not callable(fairness) and not isinstance(
                    fairness, ObjectFairness):
                raise TypeError(f"fairness must be a function of a Request, "
                                f"fairness_by_object(...) or None, not {fairness!r}")
            self._fairness = fairness
        return self

    def complete(self, reconciler: Reconciler) -> Controller:
        """Build the controller and register it with the manager (``manager.add``).

        Asks the manager's cache for every watch's scope first: a conflict
        raises :class:`CacheScopeError` before the controller exists.
        """
        if self._for is None:
            raise ValueError("call for_(resource) before complete(): which kind is reconciled?")
        primary = self._for.resource
        for watch in (self._for, *self._watches):
            self._manager.cache.require_scope(watch.resource, watch.scope)
        name = self._name or primary.kind.lower()
        options = dict(self._options)
        if self._fairness is not _UNSET:
            options["fairness"] = self._fairness
        controller = self._manager.new_controller(name, reconciler, primary=primary,
                                                  **options)
        controller.watch(primary, enqueue_object,
                         predicates=(*self._global, *self._for.predicates))
        for watch in self._watches:
            controller.watch(watch.resource, watch.mapper or _owner_mapper(primary),
                             predicates=(*self._global, *watch.predicates),
                             metadata=watch.metadata)
        return controller


def _owner_mapper(primary: Resource) -> Mapper:
    by_ref = enqueue_owner(primary.kind, primary.group)
    if primary.namespaced:
        return by_ref
    return lambda obj: [Request("", r.name) for r in by_ref(obj)]
