"""Expectations crossed off by watch events, for any owner of any kind.

A pool expects the Pods it creates and deletes, a claim set the claims: each
registers a handler on the cache that, for every event of a child, crosses
off the expectation of the owner ``owners(child)`` names. Deletions are
counted by UID, once: when deletion starts (deletionTimestamp set) or when
the object is gone, whichever is seen first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from reconcilekit import EventHandler, Expectations, Request

from .resources import deleting, uid_of

__all__ = ["expectations_handler"]

Obj = Mapping[str, Any]


def expectations_handler(expectations: Expectations[Request],
                         owners: Callable[[Obj], Iterable[Request]]) -> EventHandler:
    """Child events crossing off their owners' expected creations and deletions."""

    def on_add(child: Obj) -> None:
        for key in owners(child):
            expectations.creation_observed(key)

    def on_update(old: Obj, new: Obj) -> None:
        if deleting(new) and not deleting(old):
            for key in owners(new):
                expectations.deletion_observed_uid(key, uid_of(new))

    def on_delete(child: Obj) -> None:
        for key in owners(child):
            expectations.deletion_observed_uid(key, uid_of(child))

    return EventHandler(on_add, on_update, on_delete)
