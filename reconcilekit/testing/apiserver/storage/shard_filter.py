"""Sharded list and watch (KEP-5866): ``shardSelector`` as kube-apiserver v1.36 serves it.

With the ``ShardedListAndWatch`` feature gate on (the in-process server's
default; ``APIServer(sharded_list_watch=False)`` turns it off), a list,
watch or deletecollection request with a non-empty ``shardSelector``:

1. has it read as kube-apiserver reads it (cel-go's grammar, ``shardRange()``
   and ``||`` only, 16-digit bounds: :func:`reconcilekit.sharding.ShardSelector.parse`);
   one that does not read is a 400 BadRequest ``invalid shard selector:
   <the parser's message>``, before anything is listed or streamed;
2. sees only the objects whose FNV-1a hash of ``metadata.uid`` (or
   ``metadata.namespace``) falls in one of the ranges, on top of its label and
   field selectors (storage's predicate: the cacher's ``GetList`` and watch
   filter);
3. for a list, gets ``metadata.shardInfo.selector``: the ranges as written,
   in their order, each printed ``shardRange(<field>, '<start>', '<end>')``
   and joined by `` || `` (the parsed selector's ``String()``), on every page;
   pages count matching objects only, and carry no ``remainingItemCount``
   (kube-apiserver gives none for a filtered list); the continue token is the
   usual one and does not hold the selector: each page is filtered by the
   ``shardSelector`` sent with it, as each is by its label selector;
4. for a watch, gets the events of matching objects only, on every path
   (initial ADDED events, history replayed from a resourceVersion, live
   events, ``sendInitialEvents``); an object's uid and namespace never change,
   so no object moves into or out of a shard (no synthetic ADDED or DELETED
   as for label selectors), and a DELETED event is filtered by the object's
   last state like any other; BOOKMARKs are sent as without a selector.

With the gate off, or before v1.36, the parameter is not known: it is ignored
as any unknown query parameter is (every object, no ``shardInfo``, no 400),
which is how a client learns that it must filter for itself.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ...._foundations.shard_selector import ShardSelector, ShardSelectorError, shard_ranges
from ..machinery.status import StatusError

__all__ = ["ShardFilter", "shard_filter"]

# informers send the same few selectors with every list and watch
_read: Final = functools.lru_cache(maxsize=256)(shard_ranges)


@dataclass(frozen=True, slots=True)
class ShardFilter:
    """A request's shard selector: what it selects, and how a list says so."""

    selector: ShardSelector  # merged, for matching
    applied: str  # the selector as kube-apiserver prints it back

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return self.selector.matches(obj)

    def mark_list(self, list_meta: dict[str, Any]) -> None:
        """Say in a list's metadata that it is this shard (and no count of the rest)."""
        list_meta["shardInfo"] = {"selector": self.applied}
        list_meta.pop("remainingItemCount", None)


def shard_filter(query: Mapping[str, str], gate: bool) -> ShardFilter | None:
    """The request's shard selector; None without one or with the gate off (ignored)."""
    text = query.get("shardSelector", "")
    if not gate or not text:
        return None
    try:
        field, ranges = _read(text)
    except ShardSelectorError as err:
        raise StatusError.bad_request(f"invalid shard selector: {err}") from None
    applied = " || ".join(str(ShardSelector(field, (r,))) for r in ranges)
    return ShardFilter(ShardSelector.of(field, ranges), applied)
