"""``Requests``: what the cleanup needs of a :class:`Cluster`: one raw request at a time.

The namespace release, discovery and leftover check are written against
this protocol so that :mod:`._cluster` can use them without an import cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["Answer", "Requests"]


class Answer(Protocol):
    """An answer's status code and decoded body (a :class:`HTTPResult`)."""

    @property
    def status(self) -> int: ...

    @property
    def body(self) -> Any: ...


class Requests(Protocol):
    """Something that sends one request to the API server (a :class:`Cluster`)."""

    async def request(self, method: str, path: str, *, json: Any = None,
                      content_type: str | None = None,
                      headers: Mapping[str, str] | None = None) -> Answer: ...
