"""Objects as the server holds them: decoded JSON, and the words Go gives their parts.

An object is a ``dict`` decoded from JSON (:data:`Obj`); every part of the
server handles objects in that one form.
"""

from __future__ import annotations

import datetime
from typing import Any

__all__ = ["Obj", "epoch_seconds", "json_type", "timestamp"]

Obj = dict[str, Any]


def json_type(value: Any) -> str:
    """How Go's JSON decoder names a value's type in its errors (``number``, ``array``...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object" if isinstance(value, dict) else "value"


def timestamp(seconds: float) -> str:
    """RFC 3339 in seconds, as metav1.Time serializes."""
    return datetime.datetime.fromtimestamp(int(seconds), datetime.UTC).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def epoch_seconds(stamp: str) -> float:
    """An RFC 3339 timestamp (what :func:`timestamp` writes) as seconds since the epoch."""
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
