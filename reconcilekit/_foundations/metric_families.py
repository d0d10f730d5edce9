"""Prometheus metric families registered once per registry, shared by every part on it.

A registry refuses a second family of the same name, yet a manager's
controllers, work queues, leases and expectations all report to the
manager's one registry. Each kind of part therefore keeps a
:class:`FamiliesPerRegistry`: the families are made (and registered) the
first time a registry is asked for, and every later part on that registry
reuses them, with a label value of its own.

Guarantees: the families of a registry are made once, on first use; a
``name`` is claimed once per registry (a second claim raises ValueError,
naming ``what`` and the name), so two parts never write one series at
once (a part that is gone releases its name, and the next to claim it
continues its series: counters keep counting up); the
registries are held weakly, so a dropped registry takes its families with
it. Nothing here is process-global state beyond that weak map: no family
is ever put on prometheus_client's default registry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry

__all__ = ["FamiliesPerRegistry"]

F = TypeVar("F")


class FamiliesPerRegistry(Generic[F]):
    """One set of families ``F`` per registry, made by ``make(registry)`` when first asked.

    ``what`` names the parts that claim series on it ("a work queue") in the
    error a name claimed twice raises.
    """

    __slots__ = ("_held", "_make", "_what")

    def __init__(self, make: Callable[[CollectorRegistry], F], what: str) -> None:
        self._make = make
        self._what = what
        self._held: weakref.WeakKeyDictionary[CollectorRegistry, tuple[F, set[str]]] = (
            weakref.WeakKeyDictionary())

    def of(self, registry: CollectorRegistry) -> F:
        """The families of ``registry``, made and registered on the first call."""
        return self._entry(registry)[0]

    def claim(self, registry: CollectorRegistry, name: str) -> F:
        """The families of ``registry``, for the part ``name``; ValueError if it is taken."""
        families, names = self._entry(registry)
        if name in names:
            raise ValueError(f"{self._what} named {name!r} already reports to this registry")
        names.add(name)
        return families

    def release(self, registry: CollectorRegistry, name: str) -> None:
        """Give up the claim on ``name`` (its part is gone): a new part may claim it and
        continue its series."""
        held = self._held.get(registry)
        if held is not None:
            held[1].discard(name)

    def _entry(self, registry: CollectorRegistry) -> tuple[F, set[str]]:
        held = self._held.get(registry)
        if held is None:
            held = self._held[registry] = (self._make(registry), set())
        return held
