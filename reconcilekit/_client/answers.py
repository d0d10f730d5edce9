"""What a List answer and a watch event must look like before anything reads them.

The API server's answers are decoded JSON; code downstream indexes into
them (``item["metadata"]["name"]``, the store's keys, the resume point). A
broken proxy, a truncated body or a server bug must not surface there as a
KeyError or TypeError with a traceback: each answer is checked once, where
it arrives, and a bad one raises :class:`APIError` (reason
``InvalidResponse``) naming the field and what was wrong.

Guarantees:
  * a List that passes :func:`check_list` has ``items``, a list of objects
    each with ``metadata`` an object whose ``name`` is a non-empty string
    and whose ``namespace`` and ``resourceVersion``, when present, are
    strings; its own ``metadata`` (if any) is an object whose
    ``resourceVersion`` and ``continue`` are strings;
  * an event that passes :func:`watch_event` is ``(type, object)``: type
    one of ADDED, MODIFIED, DELETED, BOOKMARK, ERROR; the object an object;
    ADDED/MODIFIED/DELETED objects as list items above; a BOOKMARK's
    ``metadata`` an object with a string ``resourceVersion`` if any;
  * the messages quote at most 200 characters of what was received.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from .._foundations.errors import APIError

__all__ = ["INVALID_RESPONSE", "check_items", "check_list", "check_object", "invalid",
           "watch_event"]

INVALID_RESPONSE: Final = "InvalidResponse"
EVENT_TYPES: Final = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")


def invalid(message: str) -> APIError:
    """The error for an answer that is not what the API server sends."""
    return APIError(message, status=200, reason=INVALID_RESPONSE)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"


def check_object(obj: Any, where: str) -> dict[str, Any]:
    """``obj`` if it is an object with a usable ``metadata``; :func:`invalid` otherwise."""
    problem = _problem(obj)
    if problem is not None:
        raise invalid(where + problem)
    return obj  # type: ignore[no-any-return]


def check_items(items: list[Any], what: str) -> None:
    """Each of ``items`` checked as :func:`check_object` checks it, the message naming
    ``the {what}'s items[i]``; formatted only for an item that fails (a list of
    100,000 formats none)."""
    for index, item in enumerate(items):
        problem = _problem(item)
        if problem is not None:
            raise invalid(f"the {what}'s items[{index}]{problem}")


def _problem(obj: Any) -> str | None:
    """What makes ``obj`` not an object with a usable ``metadata`` (the message after the
    place it was found), or None."""
    if not isinstance(obj, dict):
        return f" is not an object: {_shown(obj)}"
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return f".metadata is not an object: {_shown(meta)}"
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return f".metadata.name is not a non-empty string: {_shown(name)}"
    for field in ("namespace", "resourceVersion"):
        value = meta.get(field)
        if value is not None and not isinstance(value, str):
            return f".metadata.{field} is not a string: {_shown(value)}"
    return None


def check_list(answer: Mapping[str, Any], what: str) -> dict[str, Any]:
    """``answer`` if it is a List (see the module docstring); :func:`invalid` otherwise.

    ``what`` names the request in the message (``list of configmaps``)."""
    if not isinstance(answer, dict) or "items" not in answer:
        raise invalid(f"the answer to the {what} is not a List (no items): "
                      f"{_shown(answer)}")
    meta = answer.get("metadata")
    if meta is not None:
        if not isinstance(meta, dict):
            raise invalid(f"the {what}'s metadata is not an object: {_shown(meta)}")
        for field in ("resourceVersion", "continue"):
            value = meta.get(field)
            if value is not None and not isinstance(value, str):
                raise invalid(f"the {what}'s metadata.{field} is not a string: "
                              f"{_shown(value)}")
    items = answer["items"]
    if items is None:  # Go writes an empty list as null
        answer["items"] = items = []
    if not isinstance(items, list):
        raise invalid(f"the {what}'s items is not a list: {_shown(items)}")
    check_items(items, what)
    return answer


def watch_event(line: bytes) -> tuple[str, dict[str, Any]]:
    """The ``(type, object)`` of one line of a watch body; :func:`invalid` if it is not one."""
    try:
        event = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise invalid(f"a watch line is not JSON ({err}): {_shown(line)}") from None
    if not isinstance(event, dict):
        raise invalid(f"a watch line is not an object: {_shown(line)}")
    type_, obj = event.get("type"), event.get("object")
    if type_ not in EVENT_TYPES:
        raise invalid(f"a watch event has type {_shown(type_)}, not one of "
                      f"{', '.join(EVENT_TYPES)}")
    if not isinstance(obj, dict):
        raise invalid(f"a {type_} watch event has no object: {_shown(line)}")
    if type_ == "BOOKMARK":
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if not isinstance(meta, dict) or not (rv is None or isinstance(rv, str)):
            raise invalid(f"a BOOKMARK's metadata.resourceVersion is not a string: "
                          f"{_shown(line)}")
    elif type_ != "ERROR":
        check_object(obj, f"the {type_} event's object")
    return type_, obj
