"""Create or update: make an object what a mutate function says, writing only if needed.

``create_or_update`` and ``create_or_patch`` follow controller-runtime's
``controllerutil.CreateOrUpdate`` / ``CreateOrPatch``: read the object, let
``mutate`` change it in place (it is also given a new object, with only
apiVersion, kind, name and namespace, when there is none), then create it,
or write what changed, or write nothing at all.

The first read comes from a cache when one holds the kind (controller-runtime's
default: its client reads through the manager's cache): a
:class:`~reconcilekit.Cache` built on ``client`` that is running, has a full
informer of the kind, covers the namespace and has seen this client's last
write to the object. Otherwise, and for every retry, it is a GET.
``read_through_cache=False`` always sends the GET.

Guarantees:
  * nothing is written when ``mutate`` changed nothing: the outcome is
    ``Outcome.UNCHANGED`` and no request but the read (none, from a cache)
    was made;
  * ``create_or_update`` writes with the resourceVersion it read: a change
    made meanwhile by someone else is never overwritten; the 409 is retried
    with a fresh read from the API server, up to ``attempts`` times, as is a
    create that finds the object created meanwhile or kept out of the cache
    (its selector, say): AlreadyExists;
  * ``create_or_patch`` sends a JSON merge patch of what ``mutate`` changed,
    so fields it did not touch are never written back, and a concurrent
    change of other fields needs no retry. Read from a cache that lags, the
    patch may leave out a field the cache still shows as wanted; the watch
    event of the change that made it differ wakes the reconciler, whose next
    pass writes it;
  * ``mutate`` may not rename or move the object: ValueError.

Typing: with a typed resource (a :class:`~reconcilekit.TypedResource`, such as
``reconcilekit.kinds.SERVICES`` or a custom kind's), ``mutate`` may take the
kind's shape (``def service(obj: Service) -> None``) and the object returned
is typed so; a ``mutate`` taking ``dict[str, Any]`` works with any resource.
"""

from __future__ import annotations

import copy
import enum
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias, overload

from ._client.client import Client
from ._foundations.conflict_retry import retry_on_conflict
from ._foundations.errors import AlreadyExists, Conflict, NotFound
from ._foundations.objects import Obj, ObjT, Resource, TypedResource

__all__ = ["Mutate", "Outcome", "create_or_patch", "create_or_update", "merge_patch"]

Mutate: TypeAlias = Callable[[ObjT], Awaitable[None] | None]
"""Changes the object it is given in place (sync or async); ``Mutate[Service]``."""


class Outcome(enum.StrEnum):
    """What :func:`create_or_update` / :func:`create_or_patch` did."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


@overload
async def create_or_update(  # type: ignore[overload-overlap]
        client: Client, resource: TypedResource[ObjT], name: str, namespace: str | None,
        mutate: Mutate[ObjT], *, attempts: int = 5,
        read_through_cache: bool = True) -> tuple[Outcome, ObjT]: ...
@overload
async def create_or_update(client: Client, resource: Resource, name: str,
                           namespace: str | None, mutate: Mutate[Obj], *, attempts: int = 5,
                           read_through_cache: bool = True) -> tuple[Outcome, Obj]: ...
async def create_or_update(client: Client, resource: Resource, name: str,
                           namespace: str | None, mutate: Mutate[Any], *, attempts: int = 5,
                           read_through_cache: bool = True) -> tuple[Outcome, Any]:
    """Make the object ``name`` what ``mutate`` says, with an update (PUT) if it exists.

    Returns what was done and the object as stored (or as read, unchanged).
    """
    return await _converge(client, resource, name, namespace, mutate, attempts,
                           patch=False, cached=read_through_cache)


@overload
async def create_or_patch(  # type: ignore[overload-overlap]
        client: Client, resource: TypedResource[ObjT], name: str, namespace: str | None,
        mutate: Mutate[ObjT], *, attempts: int = 5,
        read_through_cache: bool = True) -> tuple[Outcome, ObjT]: ...
@overload
async def create_or_patch(client: Client, resource: Resource, name: str,
                          namespace: str | None, mutate: Mutate[Obj], *, attempts: int = 5,
                          read_through_cache: bool = True) -> tuple[Outcome, Obj]: ...
async def create_or_patch(client: Client, resource: Resource, name: str,
                          namespace: str | None, mutate: Mutate[Any], *, attempts: int = 5,
                          read_through_cache: bool = True) -> tuple[Outcome, Any]:
    """Like :func:`create_or_update`, writing only the changed fields (a merge patch)."""
    return await _converge(client, resource, name, namespace, mutate, attempts,
                           patch=True, cached=read_through_cache)


async def _converge(client: Client, resource: Resource, name: str, namespace: str | None,
                    mutate: Mutate[Any], attempts: int, *, patch: bool,
                    cached: bool) -> tuple[Outcome, Obj]:
    ns = namespace if resource.namespaced else None
    first = True

    async def read() -> Obj:
        nonlocal first
        cache = client.read_caches.for_object(resource, name, ns) if first and cached else None
        first = False
        if cache is not None:
            # a fresh copy, ours to mutate, whatever the cache shares by default
            return await cache.get(resource, name, ns, shared=False)
        return await client.get(resource, name, ns)

    async def attempt() -> tuple[Outcome, Obj]:
        try:
            current = await read()
        except NotFound:
            fresh: Obj = {"apiVersion": resource.api_version, "kind": resource.kind,
                          "metadata": {"name": name, **({"namespace": ns} if ns else {})}}
            await _mutate(mutate, fresh, name, ns)
            return Outcome.CREATED, await client.create(resource, fresh, ns)
        before = copy.deepcopy(current)
        await _mutate(mutate, current, name, ns)
        if current == before:
            return Outcome.UNCHANGED, current
        if patch:
            diff = merge_patch(before, current)
            return Outcome.UPDATED, await client.patch(resource, name, diff, ns)
        return Outcome.UPDATED, await client.update(resource, current)

    # A 409 means the object changed since the read; AlreadyExists, that it was
    # created meanwhile: either way, read it again and mutate that.
    return await retry_on_conflict(
        attempt, attempts=attempts,
        retriable=lambda err: isinstance(err, Conflict | AlreadyExists))


async def _mutate(mutate: Mutate[Any], obj: Obj, name: str, namespace: str | None) -> None:
    result = mutate(obj)
    if inspect.isawaitable(result):
        await result
    meta = obj.get("metadata") or {}
    if meta.get("name") != name or (meta.get("namespace") or None) != namespace:
        raise ValueError(f"mutate changed the object's name or namespace (to "
                         f"{meta.get('namespace')}/{meta.get('name')}); it may change "
                         "anything else")


def merge_patch(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``before`` into ``after``."""
    out: dict[str, Any] = {}
    for key in before.keys() - after.keys():
        out[key] = None
    for key, value in after.items():
        old = before.get(key, _MISSING)
        if old == value:
            continue
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            out[key] = merge_patch(old, value)
        else:
            out[key] = value
    return out


_MISSING: Any = object()
