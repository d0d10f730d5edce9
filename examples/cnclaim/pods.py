"""Writes to CN Pods: take one for a claim, release it, drop a stale claim label.

Every write is a PUT carrying the resourceVersion the decision was made on,
so it lands only on the Pod as it was read: the optimistic concurrency that
makes binding safe without any lock but the API server's. The Pod given is
never changed (it may be the cache's shared object): each write changes a
copy of what it touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from reconcilekit import Client, Conflict, NotFound
from reconcilekit.kinds import PODS
from reconcilekit.rbac import Permission

from .resources import (
    CLAIMED_BY_LABEL,
    LAST_OWNER_ANNOTATION,
    PHASE_LABEL,
    PodPhase,
    claimed_by,
    name_of,
    namespace_of,
)

__all__ = ["POD_WRITES", "drop_claim_label", "relabelled", "release", "take"]

Obj = dict[str, Any]
_ATTEMPTS: Final = 5

POD_WRITES: Final = Permission(PODS, "get", "update")
"""What these functions send: an update of the Pod as read, and a read of it again when it
changed meanwhile (a 409). The reconcilers that call them declare it."""


def relabelled(pod: Mapping[str, Any], changes: Mapping[str, str | None]) -> Obj:
    """``pod`` with labels set (or, for None, removed), to write (a :func:`_writable` copy);
    ``pod`` is left as it was."""
    copy = _writable(pod)
    _set_labels(copy, changes)
    return copy


def _writable(pod: Mapping[str, Any]) -> Obj:
    """A copy of ``pod``'s top level and metadata, what a label or annotation change
    touches; the rest is shared with ``pod``, read-only."""
    return {**pod, "metadata": dict(pod.get("metadata") or {})}


def _set_labels(pod: Obj, changes: Mapping[str, str | None]) -> None:
    """Set (or, for None, remove) labels on ``pod``, giving it a new labels dict."""
    meta = pod.setdefault("metadata", {})
    current = dict(meta.get("labels") or {})
    for label, value in changes.items():
        if value is None:
            current.pop(label, None)
        else:
            current[label] = value
    meta["labels"] = current


async def take(client: Client, pod: Obj, claim: str) -> Obj | None:
    """Label ``pod`` (as read) Bound and claimed by ``claim``; None if someone else got it.

    A 409 means the Pod changed since it was read (another claim took it,
    or the pool deleted or relabelled it): the caller tries its next candidate.
    """
    try:
        return await client.update(PODS, relabelled(pod, {CLAIMED_BY_LABEL: claim,
                                                          PHASE_LABEL: PodPhase.BOUND}))
    except (Conflict, NotFound):
        return None


async def _rewrite(client: Client, pod: Obj, change: Callable[[Obj], bool]) -> Obj | None:
    """Apply ``change`` and update; on 409 re-read and apply again (``change`` decides anew).

    ``change`` returns False when the Pod as read needs nothing. Returns the
    Pod as written (or as read, when nothing was needed), None if it is gone.
    """
    current: Obj | None = _writable(pod)
    for attempt in range(_ATTEMPTS):
        assert current is not None
        if not change(current):
            return pod if attempt == 0 else current
        try:
            return await client.update(PODS, current)
        except NotFound:
            return None
        except Conflict:
            if attempt == _ATTEMPTS - 1:
                raise
        try:
            current = await client.get(PODS, name_of(pod), namespace_of(pod))
        except NotFound:
            return None
    raise AssertionError("unreachable")


async def release(client: Client, pod: Obj, claim: str) -> Obj | None:
    """Hand a Pod held by ``claim`` (or by nobody, for ``""``) back to its pool: Draining,
    no claim label.

    The Pod remembers ``claim`` as its last owner. Nothing is written if
    another claim holds the Pod by then.
    """

    def change(current: Obj) -> bool:
        if claimed_by(current) not in ("", claim):
            return False
        _set_labels(current, {CLAIMED_BY_LABEL: None, PHASE_LABEL: PodPhase.DRAINING})
        if claim:
            notes = dict(current["metadata"].get("annotations") or {})
            notes[LAST_OWNER_ANNOTATION] = claim
            current["metadata"]["annotations"] = notes
        return True

    return await _rewrite(client, pod, change)


async def drop_claim_label(client: Client, pod: Obj, claim: str) -> Obj | None:
    """Remove a stale ``claimed-by=<claim>`` label, leaving the Pod to the claim that has it."""

    def change(current: Obj) -> bool:
        if claimed_by(current) != claim:
            return False
        _set_labels(current, {CLAIMED_BY_LABEL: None})
        return True

    return await _rewrite(client, pod, change)
