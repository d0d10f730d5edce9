"""The caches a client's read-then-write helpers may read through instead of a GET.

A :class:`~reconcilekit.Cache` registers itself with the client it watches
through (``client.read_caches``); :func:`reconcilekit.upsert.create_or_update`
and ``create_or_patch`` then read an object from the cache when one holds its
kind, as controller-runtime's client does by default, and send a GET when
none does.

Guarantees: a cache is used only while it is running, holds a full (not a
metadata-only) informer of the kind that has synced (never waiting on a list
that may not succeed), covers the object's namespace, and has
seen this client's last write to the object (so a read never predates our own
write); the registry holds caches weakly, so a cache nobody uses any more is
never read nor kept alive by it.
"""

from __future__ import annotations

import weakref
from typing import Any, Protocol

from .._foundations.objects import Resource

__all__ = ["ReadCache", "ReadCaches"]


class ReadCache(Protocol):
    """What a cache offers a read-then-write helper (:class:`~reconcilekit.Cache` does)."""

    def caches(self, resource: Resource, namespace: str | None = None) -> bool: ...

    def has_seen_own_write(self, resource: Resource, name: str,
                           namespace: str | None = None) -> bool: ...

    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  shared: bool | None = None) -> dict[str, Any]: ...


class ReadCaches:
    """The caches registered with one client, oldest first."""

    def __init__(self) -> None:
        self._caches: list[weakref.ref[ReadCache]] = []

    def add(self, cache: ReadCache) -> None:
        self._caches = [ref for ref in self._caches if ref() is not None]
        self._caches.append(weakref.ref(cache))

    def for_object(self, resource: Resource, name: str,
                   namespace: str | None) -> ReadCache | None:
        """The first cache that may answer a read of the object, or None (send a GET)."""
        for ref in self._caches:
            cache = ref()
            if (cache is not None and cache.caches(resource, namespace)
                    and cache.has_seen_own_write(resource, name, namespace)):
                return cache
        return None
