"""The garbage collector paused while many short-lived, acyclic objects come and go.

Decoding a page or a slab of a List allocates tens of thousands of dicts and
lists, none part of a cycle. With the collector on, every 700 allocations
start a collection of the young generation; the decoded objects are alive at
that moment, so they are promoted and walked again by the older generations'
collections, which also walk everything a cache holds. Paused, the
allocations are counted and the objects freed by reference counting before
the collector resumes take their count back with them: the collector runs
once, at the next allocation, over what is left.

Guarantees: the collector is on again when the block ends (raising or not)
exactly if it was on when the block began; a collector disabled by someone
else stays so. The block must not await: a pause spans synchronous work
only, so no other task ever runs with it.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["collector_paused"]


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """``with collector_paused():`` the block runs with the garbage collector off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
