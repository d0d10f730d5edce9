"""Where a :class:`~reconcilekit.lowlevel.Watcher` delivers what it learns.

A :class:`WatchSink` gets each complete list (``replace``) and each watch
event (``apply``). A sink that also has ``begin_list()`` gets each list page
by page instead, through the :class:`ListSink` it returns, so neither side
holds a whole list of decoded objects (the :class:`~reconcilekit.lowlevel.Informer`
is one).

Invariant: a :class:`ListSink` is finished at most once, after its last
page; one whose list failed is dropped unfinished, and the sink must then
behave as if that list never began.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["ListSink", "SinkRefused", "WatchSink", "begin_list"]


class SinkRefused(Exception):
    """Raised by a sink that will not take what it is given (an informer whose first
    list would exceed its cache's memory budget): the watcher stops and its ``run``
    raises it, instead of retrying as it does after a failure."""


class WatchSink(Protocol):
    """Where a :class:`Watcher` delivers what it learns (an informer).

    A sink may also have ``begin_list()`` returning a :class:`ListSink`: the
    watcher then delivers each list page by page instead of calling
    ``replace`` (as :class:`~reconcilekit.lowlevel.Informer` does).
    """

    def replace(self, objects: list[dict[str, Any]], resource_version: str) -> None:
        """The complete state at ``resource_version`` (after a list)."""

    def apply(self, event_type: str, obj: dict[str, Any]) -> None:
        """One watch event: ``ADDED``, ``MODIFIED`` or ``DELETED``."""


class ListSink(Protocol):
    """One list, page by page, from a sink's ``begin_list()``; dropped unfinished if the
    list fails."""

    def add(self, objects: list[dict[str, Any]]) -> None:
        """The items of the next page."""

    def finish(self, resource_version: str) -> None:
        """The list is complete: it is the state at ``resource_version``."""


class _Collected:
    """The :class:`ListSink` of a sink without ``begin_list``: the whole list, then
    ``replace``."""

    __slots__ = ("_items", "_sink")

    def __init__(self, sink: WatchSink) -> None:
        self._sink = sink
        self._items: list[dict[str, Any]] = []

    def add(self, objects: list[dict[str, Any]]) -> None:
        self._items.extend(objects)

    def finish(self, resource_version: str) -> None:
        self._sink.replace(self._items, resource_version)


def begin_list(sink: WatchSink) -> ListSink:
    """A new list into ``sink``: its own ``begin_list()``, else one collected for
    ``replace``."""
    begin: Callable[[], ListSink] | None = getattr(sink, "begin_list", None)
    return begin() if begin is not None else _Collected(sink)
