"""``CacheScope``: which objects of one resource a cache lists, watches and holds.

controller-runtime's ``cache.Options`` in Python spelling:
``Cache(default_namespaces=...)`` is ``DefaultNamespaces``, and
``Cache(scopes={resource: CacheScope(...)})`` is ``ByObject`` with its
``Namespaces``, ``Label`` and ``Field``. An operator that cares about a few
labelled ConfigMaps then caches those, not every ConfigMap in the cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from .._foundations.objects import Resource
from .._foundations.selectors import FieldSelector, LabelSelector, SelectorError

__all__ = ["ALL_NAMESPACES", "CacheScope", "CacheScopeError", "resolve_scope"]

ALL_NAMESPACES: Final = ""
"""``CacheScope(namespaces={ALL_NAMESPACES})``: every namespace, whatever the cache's default
(controller-runtime's ``cache.AllNamespaces``)."""

_EVERY_NAMESPACE: Final = frozenset({ALL_NAMESPACES})
_NAMESPACE_NAME: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


@dataclass(frozen=True, slots=True, init=False)
class CacheScope:
    """The part of one resource a :class:`Cache` lists, watches and holds.

    ``namespaces``
        The namespaces to cache, each with a list+watch of its own, merged
        into one store that every read and index sees. ``None`` (the
        default) takes the cache's ``default_namespaces``, which are every
        namespace unless set; ``{ALL_NAMESPACES}`` means every namespace
        whatever that default. A cluster-scoped resource takes no namespaces.
    ``label_selector``
        Sent to the server on every list and watch (``?labelSelector=``), so
        objects outside it never reach the cache. An object that stops
        matching reaches handlers as a delete: the server sends one. A
        selector string, a metav1.LabelSelector dict or a
        :class:`LabelSelector`.
    ``field_selector``
        Likewise ``?fieldSelector=``: a selector string or a
        :class:`FieldSelector`. Which fields a resource supports is the
        server's to say (``metadata.name`` and ``metadata.namespace``
        everywhere, a few more on some kinds such as Pods): one it does not
        support fails the list, and ``Cache.wait_for_sync`` names it.

    Construction validates and normalises. It raises ``ValueError`` (a
    :class:`SelectorError` for a selector) on: a selector the API server
    would refuse to parse, a selector that selects nothing, an empty set of
    namespaces, a namespace that is not a valid name, and
    ``ALL_NAMESPACES`` beside other namespaces; ``TypeError`` on a string
    where a set of namespaces is due.
    Empty selectors become ``None``; selectors are kept parsed, so scopes
    that select the same objects in different spellings compare equal.
    """

    namespaces: frozenset[str] | None
    label_selector: LabelSelector | None
    field_selector: FieldSelector | None

    def __init__(self, *, namespaces: Iterable[str] | None = None,
                 label_selector: str | Mapping[str, Any] | LabelSelector | None = None,
                 field_selector: str | FieldSelector | None = None) -> None:
        object.__setattr__(self, "namespaces", _namespaces(namespaces))
        object.__setattr__(self, "label_selector", _label_selector(label_selector))
        object.__setattr__(self, "field_selector", _field_selector(field_selector))

    @property
    def all_namespaces(self) -> bool:
        """True when the scope names every namespace (``{ALL_NAMESPACES}``)."""
        return self.namespaces == _EVERY_NAMESPACE

    def __str__(self) -> str:
        if self.namespaces is None:
            parts = ["the default namespaces"]
        elif self.all_namespaces:
            parts = ["all namespaces"]
        else:
            parts = [("namespace " if len(self.namespaces) == 1 else "namespaces ")
                     + ", ".join(sorted(self.namespaces))]
        if self.label_selector is not None:
            parts.append(f"labels {self.label_selector}")
        if self.field_selector is not None:
            parts.append(f"fields {self.field_selector}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        args = []
        if self.namespaces is not None:
            names = ", ".join(repr(n) for n in sorted(self.namespaces))
            args.append(f"namespaces={{{names}}}")
        if self.label_selector is not None:
            args.append(f"label_selector={str(self.label_selector)!r}")
        if self.field_selector is not None:
            args.append(f"field_selector={str(self.field_selector)!r}")
        return f"CacheScope({', '.join(args)})"


class CacheScopeError(ValueError):
    """A read outside a resource's cache scope, or a second, different scope for it.

    ``resource`` is the resource, ``scope`` the (resolved) scope it is cached with.
    """

    def __init__(self, message: str, resource: Resource, scope: CacheScope) -> None:
        super().__init__(message)
        self.resource = resource
        self.scope = scope


def resolve_scope(resource: Resource, scope: CacheScope | None,
                  default_namespaces: frozenset[str] | None) -> CacheScope:
    """``scope`` with its namespaces filled in: never None, ``{ALL_NAMESPACES}`` for every one.

    ``default_namespaces`` (None: every namespace) stands in for
    ``namespaces=None``; a cluster-scoped resource is always held whole.
    Raises ValueError for namespaces given to a cluster-scoped resource.
    """
    scope = scope if scope is not None else CacheScope()
    if not resource.namespaced:
        if scope.namespaces is not None and not scope.all_namespaces:
            raise ValueError(f"{resource} is cluster-scoped: its CacheScope cannot name "
                             f"namespaces (got {', '.join(sorted(scope.namespaces))})")
        namespaces = _EVERY_NAMESPACE
    elif scope.namespaces is not None:
        namespaces = scope.namespaces
    else:
        namespaces = default_namespaces or _EVERY_NAMESPACE
    return replace(scope, namespaces=namespaces)


def _namespaces(given: Iterable[str] | None) -> frozenset[str] | None:
    if given is None:
        return None
    if isinstance(given, str):
        raise TypeError(f"namespaces takes a collection of namespace names, not the string "
                        f"{given!r}: write {{{given!r}}}")
    namespaces = frozenset(given)
    if not namespaces:
        raise ValueError("namespaces is empty: a scope of no namespace would cache nothing "
                         "(leave it None for the cache's default namespaces)")
    for name in sorted(namespaces):
        if not isinstance(name, str):
            raise TypeError(f"namespaces must be strings, got {name!r}")
        if name == ALL_NAMESPACES:
            if len(namespaces) > 1:
                raise ValueError("ALL_NAMESPACES cannot be combined with other namespaces: "
                                 f"got {sorted(namespaces)}")
        elif len(name) > 63 or not _NAMESPACE_NAME.fullmatch(name):
            raise ValueError(f"invalid namespace {name!r}: a namespace is a lowercase RFC 1123 "
                             "label (lower case alphanumerics and '-', starting and ending "
                             "with an alphanumeric, at most 63 characters)")
    return namespaces


def _label_selector(given: str | Mapping[str, Any] | LabelSelector | None
                    ) -> LabelSelector | None:
    if given is None:
        return None
    try:
        selector = LabelSelector.of(given)
    except SelectorError as err:
        raise SelectorError(f"invalid label_selector {given!r}: {err}") from err
    if selector == LabelSelector.nothing():
        raise SelectorError("label_selector selects nothing (a null metav1.LabelSelector): "
                            "a scope that caches nothing is a mistake")
    return None if selector.is_empty else selector


def _field_selector(given: str | FieldSelector | None) -> FieldSelector | None:
    if given is None:
        return None
    try:
        selector = given if isinstance(given, FieldSelector) else FieldSelector.parse(given)
    except SelectorError as err:
        raise SelectorError(f"invalid field_selector {given!r}: {err}") from err
    return None if selector.is_empty else selector
