"""Finalizers: add and remove one safely, delete then release, and the Apply/Cleanup runner.

Every helper works on raw objects through :class:`FinalizerClient` and writes
only with RFC 6902 JSON patches whose ``test`` operations pin down the state
the write was computed from: no write lands on a list, or object, it did not read.
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, Generic, Protocol, TypeAlias, TypeVar, cast

from ._foundations.conflict_retry import http_status, retry_on_conflict
from ._foundations.objects import Obj, ObjT, ObjView, Resource

__all__ = [
    "CleanupDone",
    "CleanupNotDone",
    "CleanupResult",
    "FinalizeAction",
    "FinalizerClient",
    "FinalizerResult",
    "add_finalizer",
    "delete_then_release",
    "finalizer_ops",
    "finalize",
    "remove_finalizer",
]

T = TypeVar("T")

_RETRY_ON: Final = frozenset({404, 409, 422})  # NotFound, Conflict, Invalid: re-read first


class FinalizerClient(Protocol):
    """The three calls the finalizer helpers make; reconcilekit's ``Client`` has them.

    ``patch(..., type="json")`` sends an RFC 6902 JSON patch (a list of
    operations). ``delete(..., uid=...)`` sends that UID as a precondition.

    Errors are recognised by an ``int`` attribute ``status`` holding the HTTP
    code (reconcilekit's errors carry it, as do kubernetes-asyncio's
    ``ApiException`` and aiohttp's ``ClientResponseError``): 404 NotFound,
    409 Conflict, 422 Invalid. Any other exception propagates unchanged.
    """

    async def get(self, resource: Resource, name: str,
                  namespace: str | None = None) -> dict[str, Any]: ...

    async def patch(self, resource: Resource, name: str, patch: Any,
                    namespace: str | None = None, *, type: str = "merge") -> dict[str, Any]: ...

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     uid: str | None = None,
                     resource_version: str | None = None) -> dict[str, Any]: ...


class FinalizerResult(enum.Enum):
    """What :func:`add_finalizer` found or did."""

    ADDED = "added"
    """The finalizer was written; the object now carries it."""
    ALREADY_PRESENT = "already-present"
    """The object already carried the finalizer; nothing was written."""
    BEING_DELETED = "being-deleted"
    """The object has a deletionTimestamp (with or without the finalizer): run cleanup
    if the finalizer is there, otherwise leave the object alone. Nothing was written."""
    GONE = "gone"
    """The object no longer exists (its name may now belong to a new object, untouched)."""


class FinalizeAction(enum.Enum):
    """What :func:`finalize` did instead of running ``apply`` or ``cleanup``."""

    FINALIZER_ADDED = "finalizer-added"
    """The finalizer is on the object now; ``apply`` did not run. The write's watch
    event reconciles the object again, and that reconcile applies."""
    NOT_OURS = "not-ours"
    """The object is being deleted, or is gone, without our finalizer (as read): nothing
    ran or was written. Should a fresher copy carry it, the deletion's event calls again."""


@dataclass(frozen=True, slots=True)
class CleanupDone(Generic[T]):
    """Cleanup has finished: :func:`finalize` removes the finalizer and returns ``value``."""

    value: T


@dataclass(frozen=True, slots=True)
class CleanupNotDone(Generic[T]):
    """Cleanup is still under way: the finalizer stays and :func:`finalize` returns
    ``value``, which says when to look again (e.g. a requeue after some seconds)."""

    value: T


CleanupResult: TypeAlias = CleanupDone[T] | CleanupNotDone[T]
"""What a ``cleanup`` function passed to :func:`finalize` returns."""


async def add_finalizer(client: FinalizerClient, resource: Resource, obj: ObjView,
                        finalizer: str) -> FinalizerResult:
    """Add ``finalizer`` to ``obj`` unless it is there or the object is being deleted.

    Expected flow (each write is a JSON patch; each retry starts at step 1 on a
    fresh read of the object):

    1. The object is gone (404, or its name now has another UID): ``GONE``.
    2. It has a deletionTimestamp: ``BEING_DELETED``, and no request is sent:
       the API server would refuse the new finalizer with 422 Invalid
       ("no new finalizers can be added if the object is being deleted").
    3. It carries the finalizer: ``ALREADY_PRESENT``.
    4. Otherwise patch: ``test`` the UID and the finalizers list as read (the
       resourceVersion if there is no list), then append: ``ADDED``. A 409, a
       422 (a failed ``test``, or deletion started since the read) or a 404
       means the object changed: re-read and go to step 1.

    Guarantees:
      * Never adds a finalizer to an object being deleted, or to a new object
        that took the name of the one read.
      * Never drops or duplicates another entry of the list: the append is
        applied only to the list it was computed from.

    Assumptions: ``obj`` was read from the API server (``metadata.name`` and
    ``metadata.uid`` set); it may be stale. Cancellation at any await leaves
    the finalizer either added or not; calling again settles it.

    Caveats: ``BEING_DELETED`` wins over ``ALREADY_PRESENT``; the caller
    checks for its finalizer before cleaning up (:func:`finalize` does).

    Errors: after 5 writes the last 409/422 is raised; any other client error at
    once. A 422 that persists for another reason (a webhook refusing the
    object) therefore surfaces as that 422.
    """
    name, namespace, uid = _identity(obj)
    read = _reads(client, resource, obj)

    async def attempt() -> FinalizerResult:
        match current := await read():
            case None:
                return FinalizerResult.GONE
            case {"metadata": {"deletionTimestamp": str()}}:
                return FinalizerResult.BEING_DELETED
            case _ if finalizer in _finalizers(current):
                return FinalizerResult.ALREADY_PRESENT
        await client.patch(resource, name, _add_ops(current, uid, finalizer), namespace,
                           type="json")
        return FinalizerResult.ADDED

    return await retry_on_conflict(attempt, retriable=_changed_since_read)


async def remove_finalizer(client: FinalizerClient, resource: Resource, obj: ObjT,
                           finalizer: str) -> ObjT | None:
    """Remove ``finalizer`` (every entry of that name) and nothing else from ``obj``.

    Expected flow (each retry starts at step 1 on a fresh read):

    1. The object is gone (404, or its name now has another UID): return None.
    2. It does not carry the finalizer: return it unchanged, nothing written.
    3. Otherwise patch: ``test`` the UID and the whole finalizers list as
       read, then ``remove`` the finalizer's index (indices). A 409, a 422
       (the list or object changed since the read) or a 404 means: re-read
       and go to step 1.
    4. The answer has a deletionTimestamp, no finalizers and no grace period
       left: that was the last finalizer, the API server removed the
       object and answered with its last state: return None. Otherwise
       return the patched object.

    Guarantees:
      * Never removes another controller's entry and never brings back one
        that was removed since the read: the removal by index is applied
        only to the exact list the index was computed from.
      * Never touches a new object that took the name of the one read.

    Assumptions: ``obj`` was read from the API server (``metadata.name`` and
    ``metadata.uid`` set); it may be stale. Cancellation at any await leaves
    the finalizer either removed or not; calling again settles it.

    Caveats: a Pod still in its termination grace period stays after its
    last finalizer goes (the kubelet removes it); it is returned, not None.

    Errors: after 5 writes the last 409/422 is raised; any other client error at once.
    """
    name, namespace, uid = _identity(obj)
    read = _reads(client, resource, obj)

    async def attempt() -> ObjView | None:
        match current := await read():
            case None:
                return None
            case _ if finalizer not in _finalizers(current):
                return current
        patched = await client.patch(resource, name, _remove_ops(current, uid, finalizer),
                                     namespace, type="json")
        return None if _removed(patched) else patched

    # The answer is the same object as ``obj``, read again: of the same shape.
    return cast("ObjT | None", await retry_on_conflict(attempt, retriable=_changed_since_read))


async def delete_then_release(client: FinalizerClient, resource: Resource, obj: ObjT,
                              finalizer: str) -> ObjT | None:
    """Delete ``obj``, then remove ``finalizer`` from it: in that order.

    Between the two steps the object has a deletionTimestamp, so the API
    server refuses any new finalizer (removing first, then deleting, lets a
    controller re-add one in between, and the object never goes away).

    Expected flow:

    1. DELETE with ``obj``'s UID as precondition. 404: return None. 409 (the
       precondition failed, or a conflict): re-read; if the name now has
       another UID or nothing, return None, else DELETE again.
    2. The answer carries ``finalizer``: :func:`remove_finalizer` on it, and
       return what that returns.
    3. The answer has a deletionTimestamp but not our finalizer (others still
       hold the object): return it.
    4. Otherwise the object was removed at once (the answer is a Success
       Status or its last state): return None.

    Guarantees:
      * The DELETE reaches the API server before any finalizer is removed.
      * A new object that took the name is never deleted or changed.
      * Only ``finalizer`` is removed; other controllers' entries still
        hold the object until they release it.

    Assumptions: ``obj`` was read from the API server (``metadata.name`` and
    ``metadata.uid`` set). Cancellation between the steps leaves the object
    being deleted with the finalizer still on; calling again (or
    :func:`remove_finalizer`) finishes the release.

    Errors: after 5 DELETEs the last 409 is raised; any other client error at
    once; :func:`remove_finalizer`'s errors.
    """
    name, namespace, uid = _identity(obj)
    first = True

    async def attempt() -> Obj | None:
        nonlocal first
        if not first and await _reread(client, resource, name, namespace, uid) is None:
            return None  # the 409 was the UID precondition: the object read is gone
        first = False
        try:
            return await client.delete(resource, name, namespace, uid=uid)
        except Exception as err:
            if http_status(err) == 404:
                return None
            raise

    deleted = cast("ObjT | None", await retry_on_conflict(attempt))  # obj's shape, read again
    if deleted is None:
        return None
    match deleted:
        case {"metadata": {"finalizers": [*held]}} if finalizer in held:
            return await remove_finalizer(client, resource, deleted, finalizer)
        case {"metadata": {"deletionTimestamp": str()}}:
            return deleted
        case _:
            return None


async def finalize(client: FinalizerClient, resource: Resource, obj: ObjT, name: str, *,
                   apply: Callable[[ObjT], Awaitable[T]],
                   cleanup: Callable[[ObjT], Awaitable[CleanupResult[T]]]
                   ) -> T | FinalizeAction:
    """Run ``apply`` or ``cleanup`` for ``obj``, guarded by the finalizer ``name``.

    Expected flow (call it from ``reconcile`` with the object as read; the
    cache's copy will do):

    1. Not being deleted, finalizer absent: add it (:func:`add_finalizer`)
       and return ``FINALIZER_ADDED`` without applying. The write changes the
       object, its watch event reconciles it again, and that call applies,
       on an object that already carries the finalizer. If the add finds the
       object being deleted or gone, return ``NOT_OURS``.
    2. Not being deleted, finalizer present: return ``await apply(obj)``.
    3. Being deleted, finalizer present: ``outcome = await cleanup(obj)``.
       ``CleanupDone``: remove the finalizer (:func:`remove_finalizer`; the
       API server then deletes the object unless other finalizers hold it).
       ``CleanupNotDone``: keep it. Return ``outcome.value`` either way.
    4. Being deleted, finalizer absent: return ``NOT_OURS``; nothing runs or
       is written, and the finalizer is never added.

    Guarantees:
      * ``apply`` runs only while the object carries the finalizer, so every
        object ``apply`` touched gets ``cleanup`` before it goes away
        (unless someone else strips the finalizer).
      * ``cleanup`` runs only on an object being deleted that carries the
        finalizer; the finalizer is removed only after ``CleanupDone``.
      * The finalizer is never added to an object being deleted.
      * A 409 (or a failed ``test``) while adding or removing the finalizer
        is retried on a fresh read, not raised (up to 5 writes).

    Assumptions:
      * ``apply`` and ``cleanup`` are idempotent: each may run again for the
        same state (a stale cache, a retry, a restart).
      * Cancellation can happen at every await. Cancelled after ``cleanup``
        finished but before the finalizer is removed, the next reconcile runs
        ``cleanup`` again; nothing is lost, since the finalizer still holds
        the object.

    Caveats:
      * ``CleanupNotDone`` does not schedule anything: its ``value`` must say
        when to look again, or the object waits for its next event.
      * After ``FINALIZER_ADDED`` nothing requeues either; the write's own
        watch event does. A caller without a watch on the object must requeue.

    Errors: whatever ``apply`` or ``cleanup`` raise (the finalizer stays);
    :func:`add_finalizer`'s and :func:`remove_finalizer`'s errors.
    """
    match (name in _finalizers(obj), _deleting(obj)):
        case (False, False):
            match await add_finalizer(client, resource, obj, name):
                case FinalizerResult.ADDED | FinalizerResult.ALREADY_PRESENT:
                    return FinalizeAction.FINALIZER_ADDED
                case FinalizerResult.BEING_DELETED | FinalizerResult.GONE:
                    return FinalizeAction.NOT_OURS
        case (True, False):
            return await apply(obj)
        case (True, True):
            outcome = await cleanup(obj)
            if isinstance(outcome, CleanupDone):
                await remove_finalizer(client, resource, obj, name)
            return outcome.value
        case _:
            return FinalizeAction.NOT_OURS



def _changed_since_read(err: BaseException) -> bool:
    """404 NotFound, 409 Conflict, 422 Invalid (a failed ``test``): re-read and try again."""
    return http_status(err) in _RETRY_ON


def _finalizers(obj: ObjView) -> list[str]:
    return list((obj.get("metadata") or {}).get("finalizers") or ())


def _deleting(obj: ObjView) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _removed(obj: ObjView) -> bool:
    """Whether a write's answer is the last state of an object the server then removed."""
    meta = obj.get("metadata") or {}
    return bool(meta.get("deletionTimestamp")) and not meta.get("finalizers") and (
        not meta.get("deletionGracePeriodSeconds"))


def _identity(obj: ObjView) -> tuple[str, str | None, str]:
    """Name, namespace (None if cluster-scoped) and UID of an object read from the server."""
    meta = obj.get("metadata") or {}
    name, uid = meta.get("name"), meta.get("uid")
    if not isinstance(name, str) or not isinstance(uid, str):
        raise ValueError("finalizer helpers need an object read from the API server, "
                         f"with metadata.name and metadata.uid; got metadata {meta!r}")
    return name, meta.get("namespace") or None, uid


async def _reread(client: FinalizerClient, resource: Resource, name: str,
                  namespace: str | None, uid: str) -> Obj | None:
    """The object now, or None if it is gone or its name belongs to a new object."""
    try:
        fresh = await client.get(resource, name, namespace)
    except Exception as err:
        if http_status(err) == 404:
            return None
        raise
    return fresh if (fresh.get("metadata") or {}).get("uid") == uid else None


def _reads(client: FinalizerClient, resource: Resource,
           obj: ObjView) -> Callable[[], Awaitable[ObjView | None]]:
    """``obj`` on the first call, then a fresh read each call (None once it is gone)."""
    name, namespace, uid = _identity(obj)
    pending: list[ObjView] = [obj]

    async def read() -> ObjView | None:
        if pending:
            return pending.pop()
        return await _reread(client, resource, name, namespace, uid)

    return read


def finalizer_ops(obj: ObjView, finalizer: str) -> list[Obj]:
    """JSON patch operations that add ``finalizer`` to ``obj``, to send with other ops.

    For a controller that wants the finalizer to join its first real write
    instead of costing a write (and a reconcile) of its own: append these
    to the operations of that write and send them as one JSON patch. The
    patch applies only to the object as read: it ``test``s the UID and the
    finalizers list (or, with no list, the resourceVersion), so it never
    adds the finalizer to a new object that took the name, never drops
    another entry, and fails (422, or 404) if the object changed or went.
    kube-apiserver refuses it with 422 when the object is being deleted.

    The pattern is safe only where everything done before that write can be
    left behind if the object is deleted meanwhile: the object then goes
    without cleanup. Either undo it when the write fails, or have something
    else collect it (see the CNClaim operator's binding). An object already
    being deleted must not get the finalizer: check before, as
    :func:`add_finalizer` does.
    """
    return _add_ops(obj, _identity(obj)[2], finalizer)


def _add_ops(obj: ObjView, uid: str, finalizer: str) -> list[Obj]:
    meta = obj["metadata"]
    ops: list[Obj] = [{"op": "test", "path": "/metadata/uid", "value": uid}]
    if isinstance(meta.get("finalizers"), list):
        return [*ops, {"op": "test", "path": "/metadata/finalizers", "value": meta["finalizers"]},
                {"op": "add", "path": "/metadata/finalizers/-", "value": finalizer}]
    return [*ops,
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
            {"op": "add", "path": "/metadata/finalizers", "value": [finalizer]}]


def _remove_ops(obj: ObjView, uid: str, finalizer: str) -> list[Obj]:
    held = obj["metadata"]["finalizers"]
    return [{"op": "test", "path": "/metadata/uid", "value": uid},
            {"op": "test", "path": "/metadata/finalizers", "value": held},
            *({"op": "remove", "path": f"/metadata/finalizers/{i}"}
              for i in reversed(range(len(held))) if held[i] == finalizer)]
