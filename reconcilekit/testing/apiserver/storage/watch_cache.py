"""Watch streams of the test API server: history, filtering and delivery.

Every write appends one :class:`Event` to its resource's bounded history and
offers it to the open watches of that resource. A watch sees an event through
its filter (namespace, label and field selector) the way kube-apiserver's
watch cache presents it: a MODIFIED object that starts matching arrives as
ADDED, one that stops matching as DELETED (carrying the object as it was
before that change, with the change's resourceVersion).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["Event", "CacheWatcher", "encode_event"]

Filter = Callable[[Mapping[str, Any]], bool]


@dataclass(slots=True, eq=False)
class Event:
    """One stored change: ``obj`` is the state after it (the last state for DELETED),
    ``prev`` the state before it (None for ADDED)."""

    type: str
    rv: int
    obj: dict[str, Any]
    prev: dict[str, Any] | None
    dropped: bool = False
    _encoded: bytes | None = field(default=None, repr=False)

    def encoded_object(self) -> bytes:
        if self._encoded is None:
            self._encoded = orjson.dumps(self.obj)
        return self._encoded


def encode_event(type_: str, obj_json: bytes) -> bytes:
    """One line of a watch stream: ``{"type":..., "object":...}\\n``."""
    return b'{"type":"' + type_.encode() + b'","object":' + obj_json + b"}\n"


class CacheWatcher:
    """One open watch: a bounded buffer of encoded lines and a wake-up signal.

    Invariants:
      * an event with ``rv <= start_rv`` is never offered to the stream
        (it was part of the state the client started from).
      * when the buffer would exceed ``limit`` lines the watch is closed, as
        kube-apiserver terminates a watcher that cannot keep up; the client
        must resume from the last resourceVersion it saw.
    """

    def __init__(self, *, namespace: str | None, matches: Filter, start_rv: int,
                 rewrite: Callable[[dict[str, Any]], bytes | None] | None, limit: int,
                 bookmark_line: Callable[..., bytes] | None = None) -> None:
        self.namespace = namespace
        self.matches = matches
        self.start_rv = start_rv
        # A BOOKMARK is sent only for a newer rv than this: the start, or the last
        # event replayed from history when the watch opened (shown to it or not).
        self.bookmark_floor = start_rv
        self.rewrite = rewrite  # an object's encoding, None for the usual one
        self.limit = limit
        self.lines: deque[bytes] = deque()
        self.closed = False
        self.overflowed = False
        # Set when the client asked for bookmarks: rv -> encoded BOOKMARK line.
        self.bookmark_line = bookmark_line
        self._wake = asyncio.Event()

    def _visible(self, obj: Mapping[str, Any] | None) -> bool:
        if obj is None:
            return False
        if self.namespace is not None:
            meta = obj.get("metadata") or {}
            if meta.get("namespace") != self.namespace:
                return False
        return self.matches(obj)

    def start_at(self, rv: int, objects: Iterable[dict[str, Any]]) -> None:
        """Open on the state at ``rv``: an ADDED line for each visible object of it."""
        self.start_rv = self.bookmark_floor = rv
        for obj in objects:
            if self._visible(obj):
                body = (self.rewrite(obj) if self.rewrite else None) or orjson.dumps(obj)
                self.push(encode_event("ADDED", body))

    def resume_at(self, rv: int, history: Iterable[Event], limit: int) -> None:
        """Open after ``rv``: the history's later events up to ``limit`` (what was
        offered to every watch), shown or not as this watch should see them."""
        self.start_rv = self.bookmark_floor = rv
        for event in history:
            if event.rv > limit:
                break
            self.offer(event)
            self.bookmark_floor = max(self.bookmark_floor, event.rv)

    def offer(self, event: Event) -> None:
        """Queue ``event`` as this watch should see it, if at all."""
        if self.closed or event.dropped or event.rv <= self.start_rv:
            return
        now = self._visible(event.obj)
        if event.type == "MODIFIED":
            before = self._visible(event.prev)
            if now and not before:
                type_ = "ADDED"
            elif before and not now:
                type_ = "DELETED"
            elif now:
                type_ = "MODIFIED"
            else:
                return
        elif now:
            type_ = event.type
        else:
            return
        if type_ == "DELETED" and event.type == "MODIFIED":
            # As kube-apiserver's watch cache: the object as it was before the change
            # (as the watch last matched it), with the change's resourceVersion.
            assert event.prev is not None
            prev = dict(event.prev, metadata={**event.prev["metadata"],
                                              "resourceVersion": str(event.rv)})
            body = (self.rewrite(prev) if self.rewrite else None) or orjson.dumps(prev)
        else:
            body = (self.rewrite(event.obj) if self.rewrite else None) or (
                event.encoded_object())
        self.push(encode_event(type_, body))

    def push(self, line: bytes) -> None:
        if self.closed:
            return
        if len(self.lines) >= self.limit:
            self.overflowed = True
            self.close()
            return
        self.lines.append(line)
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def wait(self, seconds: float) -> None:
        """Return when a line is buffered, the watch closed, or ``seconds`` passed."""
        if self.lines or self.closed:
            return
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
