"""What a controller's keys are served fairly across: the namespace, or a function of the object.

A controller's work queue serves the keys of one priority round-robin
across lanes (see :class:`~reconcilekit.workqueue.WorkQueue`). The lane of
a key is, by default, its namespace; ``fairness=`` may instead be a
function of the :class:`Request`, or :func:`fairness_by_object` of a
function of the object the key names (a tenant label, an owner), read from
the controller's primary informer when the key becomes ready.

Guarantees: a lane is read once per key becoming ready, from the cache
(never the API server), without a copy; a key whose object the cache does
not hold (deleted, or not listed yet) is in the lane ``None``; a function
that raises puts the key in the lane ``None`` and is logged with its
traceback once per distinct error: a key is never dropped because its lane
could not be read.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from .._cache.cache import Cache
from .._foundations.clock import Clock
from .._foundations.logging import RepeatFilter
from .._foundations.objects import Resource
from .reconciler import Request

__all__ = ["Fairness", "ObjectFairness", "by_namespace", "fairness_by_object", "lane_function"]

logger = logging.getLogger("reconcilekit.controller")


def by_namespace(request: Request) -> Hashable:
    """The default lane of a key: its namespace."""
    return request.namespace


@dataclass(frozen=True, slots=True)
class ObjectFairness:
    """Keys served fairly across ``lane(obj)`` of the objects they name; made by
    :func:`fairness_by_object`."""

    lane: Callable[[Mapping[str, Any]], Hashable]


def fairness_by_object(lane: Callable[[Mapping[str, Any]], Hashable]) -> ObjectFairness:
    """Serve a controller's keys fairly across ``lane(obj)``, ``obj`` the cached object
    of the controller's primary resource the key names (read-only: the cache's own)::

        manager.controller().for_(KVSTORES).with_options(
            fairness=fairness_by_object(lambda obj: obj["metadata"]["labels"]["tenant"]))
    """
    if not callable(lane):
        raise TypeError(f"fairness_by_object takes a function of an object, not {lane!r}")
    return ObjectFairness(lane)


Fairness = Callable[[Request], Hashable] | ObjectFairness | None


def lane_function(fairness: Fairness, cache: Cache, primary: Resource | None,
                  controller: str, clock: Clock) -> Callable[[Request], Hashable] | None:
    """The work queue's lane function for ``fairness``; ValueError for object fairness
    without a ``primary`` resource to read objects of."""
    if not isinstance(fairness, ObjectFairness):
        if fairness is not None and not callable(fairness):
            raise TypeError(f"fairness must be a function of a Request, "
                            f"fairness_by_object(...) or None, not {fairness!r}")
        return fairness
    if primary is None:
        raise ValueError(f"controller {controller!r}: fairness_by_object needs the "
                         "controller's primary resource (a builder's for_, or primary=)")
    of_object, failures = fairness.lane, RepeatFilter(window=math.inf, clock=clock)

    def lane(request: Request) -> Hashable:
        informer = cache.existing_informer(primary)
        obj = None if informer is None else informer.store.get(
            (request.namespace, request.name), shared=True)
        if obj is None:
            return None
        try:
            return of_object(obj)
        except Exception as err:
            failures.log(logger, logging.ERROR, (type(err), str(err)),
                         "fairness_by_object: the lane of %s could not be read, served "
                         "in the default lane: %s", request, err, exc_info=err,
                         extra={"controller": controller, "key": str(request)})
            return None
    return lane
