"""Predicates: which object events are worth a reconcile.

A predicate answers for each kind of event; the controller drops the events
any of its predicates refuses. Deletion always passes
:func:`generation_changed`: an object whose ``deletionTimestamp`` has just
been set is reconciled, so a finalizer is never left unprocessed.

A predicate is generic over the objects it reads: ``Predicate[Website]``
(from ``predicate(create=lambda w: w["spec"]["replicas"] > 0)`` on a function
typed for ``Website``) is accepted for a watch of a typed Website resource;
the bare ``Predicate`` (every built-in one here) reads any object, so it is
accepted for every watch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic

from .._foundations.objects import ObjT, ObjView, ObjViewT_contra
from .._foundations.selectors import LabelSelector

__all__ = [
    "Predicate",
    "all_of",
    "annotations_changed",
    "any_of",
    "generation_changed",
    "label_selector_predicate",
    "labels_changed",
    "negate",
    "predicate",
    "resource_version_changed",
]



def _always(*_: ObjView) -> bool:
    return True


@dataclass(frozen=True, slots=True)
class Predicate(Generic[ObjViewT_contra]):
    """Filters for create, update(old, new) and delete events (all pass by default).

    Predicates only read: the objects they are given are the cache's."""

    create: Callable[[ObjViewT_contra], bool] = _always
    update: Callable[[ObjViewT_contra, ObjViewT_contra], bool] = _always
    delete: Callable[[ObjViewT_contra], bool] = _always


def predicate(*, create: Callable[[ObjT], bool] | None = None,
              update: Callable[[ObjT, ObjT], bool] | None = None,
              delete: Callable[[ObjT], bool] | None = None) -> Predicate[ObjT]:
    """A custom predicate; what is not given passes. Typed as its functions are."""
    return Predicate(create or _always, update or _always, delete or _always)


def _meta(obj: ObjView) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _deletion_started(old: ObjView, new: ObjView) -> bool:
    return bool(_meta(new).get("deletionTimestamp")) and not _meta(old).get("deletionTimestamp")


def generation_changed() -> Predicate:
    """Updates that changed ``metadata.generation`` (the spec), or started deletion."""
    return predicate(update=lambda old, new: _deletion_started(old, new) or (
        _meta(old).get("generation") != _meta(new).get("generation")))


def label_selector_predicate(selector: str | Mapping[str, str]) -> Predicate:
    """Events of objects whose labels match ``selector`` (``"app=web,tier!=db"`` or
    ``{"app": "web"}``), as controller-runtime's ``LabelSelectorPredicate``.

    An update passes when the old or the new object matches, so an object
    that stops matching is reconciled once more (controller-runtime looks at
    the new one only). A malformed selector raises :class:`SelectorError`
    naming the problem, when the predicate is made.
    """
    text = selector if isinstance(selector, str) else ",".join(
        f"{k}={v}" for k, v in selector.items())
    parsed = LabelSelector.parse(text)

    def matches(obj: ObjView) -> bool:
        return parsed.matches(_meta(obj).get("labels"))

    return predicate(create=matches, update=lambda old, new: matches(old) or matches(new),
                     delete=matches)


def labels_changed() -> Predicate:
    return predicate(update=lambda old, new: _meta(old).get("labels") != _meta(new).get("labels"))


def annotations_changed() -> Predicate:
    return predicate(update=lambda old, new: (
        _meta(old).get("annotations") != _meta(new).get("annotations")))


def resource_version_changed() -> Predicate:
    return predicate(update=lambda old, new: (
        _meta(old).get("resourceVersion") != _meta(new).get("resourceVersion")))


def all_of(*predicates: Predicate[ObjT]) -> Predicate[ObjT]:
    """Passes when every one passes."""
    return Predicate(lambda o: all(p.create(o) for p in predicates),
                     lambda a, b: all(p.update(a, b) for p in predicates),
                     lambda o: all(p.delete(o) for p in predicates))


def any_of(*predicates: Predicate[ObjT]) -> Predicate[ObjT]:
    """Passes when at least one passes."""
    return Predicate(lambda o: any(p.create(o) for p in predicates),
                     lambda a, b: any(p.update(a, b) for p in predicates),
                     lambda o: any(p.delete(o) for p in predicates))


def negate(p: Predicate[ObjT]) -> Predicate[ObjT]:
    """Passes when ``p`` does not."""
    return Predicate(lambda o: not p.create(o), lambda a, b: not p.update(a, b),
                     lambda o: not p.delete(o))
