"""A cache's memory budget: a new informer is refused rather than grow without bound.

What is counted is what the stores hold of their objects, the JSON
(``reconcilekit_cache_bytes``): exact, kept up to date on every change,
and what the process's memory for the cache grows with: a store of
30,000 Pods costs the process 1.1 to 1.4 bytes per JSON byte held, the
label sets, indexes and keys included, and a small store up to 3
(``benchmarks/informer_lifecycle.py`` measures it). The decoded
objects kept for shared reads are bounded apart, per informer
(``shared_read_memory``).

Guarantees:
  * an informer is admitted only while the total held is below the budget;
    its first list is counted page by page as it is prepared, and refused
    (:class:`CacheMemoryBudgetExceeded`) as soon as the total with it would
    exceed the budget: the cache never holds more than the budget plus one
    list page because of a new informer;
  * informers already synced are never refused nor trimmed (a store that
    dropped objects would answer wrong): what they grow by after their first
    list is counted against the next new informer;
  * the error names the resource refused, the budget, and what each informer
    holds, largest first.
"""

from __future__ import annotations

from collections.abc import Iterable

from .._foundations.objects import Resource
from .watch_sink import SinkRefused

__all__ = ["CacheMemoryBudgetExceeded", "MemoryBudget"]

_SHOWN = 5  # informers named in the error, largest first


class CacheMemoryBudgetExceeded(SinkRefused):
    """A new informer was refused: the cache would hold more than its ``memory_budget``.

    ``resource`` is the one refused, ``budget`` the limit in bytes, ``held`` what
    each informer held (resource name to JSON bytes), the refused one with what
    its list had reached.
    """

    def __init__(self, resource: Resource, budget: int, held: dict[str, int]) -> None:
        self.resource, self.budget, self.held = resource, budget, held
        largest = sorted(held.items(), key=lambda item: -item[1])
        shown = ", ".join(f"{name} {_mib(nbytes)}" for name, nbytes in largest[:_SHOWN])
        more = f" and {len(largest) - _SHOWN} more" if len(largest) > _SHOWN else ""
        super().__init__(
            f"cannot cache {resource}: the cache's memory budget is {_mib(budget)} and it "
            f"would hold {_mib(sum(held.values()))} with it ({shown}{more}). Raise the budget "
            "(Manager(cache_memory_budget=...)), narrow what is cached (a scope's namespaces "
            "or selectors, a metadata-only watch), or stop informers no longer needed")


class MemoryBudget:
    """The budget of one cache, in JSON bytes held by its stores (None: unlimited)."""

    __slots__ = ("limit",)

    def __init__(self, limit: int | None) -> None:
        if limit is not None and limit <= 0:
            raise ValueError(f"memory_budget must be > 0 bytes (or None: unlimited), "
                             f"got {limit}")
        self.limit = limit

    def admit(self, resource: Resource, held: Iterable[tuple[str, int]],
              adding: int = 0) -> None:
        """Raise :class:`CacheMemoryBudgetExceeded` unless ``held`` (per informer, the
        new one's included) plus ``adding`` bytes of ``resource``'s first list fit:
        below the budget when ``adding`` is 0 (a new informer), within it otherwise."""
        limit = self.limit
        if limit is None:
            return
        totals: dict[str, int] = {}
        for name, nbytes in held:
            totals[name] = totals.get(name, 0) + nbytes
        total = sum(totals.values()) + adding
        if (total > limit) if adding else (total >= limit):
            totals[str(resource)] = totals.get(str(resource), 0) + adding
            raise CacheMemoryBudgetExceeded(resource, limit, totals)


def _mib(nbytes: int) -> str:
    return f"{nbytes / 2**20:.1f} MiB"
