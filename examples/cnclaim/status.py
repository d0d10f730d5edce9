"""Status writes that happen only when something changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconcilekit import Client, Resource

from .resources import name_of, namespace_of, status_of

__all__ = ["set_status"]


async def set_status(client: Client, resource: Resource, obj: Mapping[str, Any],
                     changes: Mapping[str, Any]) -> bool:
    """Merge ``changes`` into ``obj``'s status (None removes a field); True if it wrote.

    Nothing is written when the status already says so: a reconcile that
    changes nothing makes no request, and so causes no event.
    """
    current = status_of(obj)
    if all(current.get(k) == v for k, v in changes.items()):
        return False
    await client.patch_status(resource, name_of(obj), {"status": dict(changes)},
                              namespace_of(obj) or None)
    return True
