"""JSON merge patch (RFC 7386) and JSON patch (RFC 6902) for the test API server.

Pure functions on JSON-like values (dicts, lists, str, int, float, bool,
None): they never modify their arguments, and the value they return shares no
dict or list with them. Strategic merge patch lives in
:mod:`reconcilekit.testing.apiserver.patching.strategic_merge`.

How kube-apiserver answers a patch it cannot apply (k8s.io/apiserver
``endpoints/handlers/patch.go``, and ``api/errors.NewGenericServerResponse``
for the 422 case) is recorded on each error class as ``status`` and
``reason``; :attr:`PatchError.api_message` is the message it sends:

* JSON patch body that is not a JSON array of objects: 400 BadRequest with the
  decoder's message, "error decoding patch: json: cannot unmarshal object into
  Go value of type []handlers.jsonPatchOp" (:class:`MalformedPatch`); a
  ``null`` body is no patch at all.
* More than 10,000 JSON patch operations: 413 RequestEntityTooLarge,
  "Request entity too large: The allowed maximum operations in a JSON patch
  is 10000, got N" (:class:`PatchTooLarge`).
* Any failure while applying JSON patch operations (a failed ``test``, a path
  that does not exist, an index out of range, an unknown ``op``, a missing
  ``path``/``from``/``value``): 422 Invalid with the fixed message "the
  server rejected our request due to an error in our request" and empty
  details; the specific reason is dropped (:class:`PatchError`,
  :class:`PatchTestFailed`).
* JSON merge patch body that is not an object (other than ``null``, no patch):
  400 BadRequest "error decoding patch: json: cannot unmarshal array into Go
  value of type map[string]interface {}". :func:`merge_patch` itself follows
  RFC 7386 and accepts any patch; the server checks the body.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

from ..machinery.unstructured import json_type

__all__ = [
    "INVALID_PATCH_MESSAGE",
    "JSON",
    "MAX_JSON_PATCH_OPERATIONS",
    "MalformedPatch",
    "PatchError",
    "PatchTestFailed",
    "PatchTooLarge",
    "UnmergeablePatch",
    "copy_json",
    "json_patch",
    "merge_patch",
]

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
"""A JSON-like value. Public functions take and return ``Any``, as :func:`json.loads`
does, so callers holding ``dict[str, Any]`` need no casts; this alias types the internals."""

INVALID_PATCH_MESSAGE: Final = "the server rejected our request due to an error in our request"
MAX_JSON_PATCH_OPERATIONS: Final = 10_000


class PatchError(ValueError):
    """A patch that cannot be applied to its target.

    ``str(error)`` says exactly what went wrong. ``status`` and ``reason`` are
    the HTTP status and Status reason kube-apiserver answers with for the
    same failure; :attr:`api_message` is the Status message it sends.
    This base class is the 422 Invalid case.
    """

    status: int = 422
    reason: str = "Invalid"

    @property
    def api_message(self) -> str:
        """The Status message kube-apiserver sends.

        For 422 answers it replaces the detail with
        :data:`INVALID_PATCH_MESSAGE`; otherwise it sends ``str(self)``.
        """
        return INVALID_PATCH_MESSAGE if self.status == 422 else str(self)


class PatchTestFailed(PatchError):
    """A JSON patch ``test`` operation found a different value (422 Invalid)."""


class MalformedPatch(PatchError):
    """The patch document itself has the wrong shape (400 BadRequest)."""

    status = 400
    reason = "BadRequest"


class PatchTooLarge(PatchError):
    """A JSON patch with more than 10,000 operations (413 RequestEntityTooLarge)."""

    status = 413
    reason = "RequestEntityTooLarge"

    @property
    def api_message(self) -> str:
        return f"Request entity too large: {self}"


class UnmergeablePatch(PatchError):
    """A strategic merge patch that does not fit the object's merge rules.

    For example a list item without its merge key, list items of mixed types
    or an unknown ``$patch`` value. kube-apiserver answers these with a plain
    500 and an empty reason (``StatusReasonUnknown``), message ``str(self)``.
    """

    status = 500
    reason = ""


def copy_json(value: JSON) -> JSON:
    """A deep copy of a JSON-like value (faster than :func:`copy.deepcopy`)."""
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


# --- RFC 7386 JSON merge patch ---


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch.

    An object patch merges into the target member by member: ``null`` removes
    a member, an object merges recursively (into ``{}`` if the member is
    missing or not an object), anything else replaces the member. Any other
    patch (array, scalar, ``null``) replaces the target. Arrays are never
    merged. Never raises.

    kube-apiserver's merge (evanphx/json-patch) also drops ``null`` items
    from arrays it copies in; this function keeps them, as RFC 7386 says.
    """
    if not isinstance(patch, dict):
        return copy_json(patch)
    result = copy_json(target) if isinstance(target, dict) else {}
    assert isinstance(result, dict)
    _merge_into(result, patch)
    return result


def _merge_into(target: dict[str, JSON], patch: dict[str, JSON]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
            _merge_into(current, value)
        else:
            target[key] = copy_json(value)


# --- RFC 6902 JSON patch ---

_OPERATIONS: Final = frozenset({"add", "remove", "replace", "move", "copy", "test"})
_ARRAY_INDEX: Final = re.compile(r"0|[1-9][0-9]*")
_BAD_ESCAPE: Final = re.compile(r"~(?![01])")



def json_patch(target: Any, ops: Any) -> Any:
    """Apply an RFC 6902 JSON patch: a list of operation objects, in order.

    Operations: ``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``;
    paths are RFC 6901 JSON pointers (``~1`` is ``/``, ``~0`` is ``~``); ``-``
    appends to an array in ``add`` (and as a ``move``/``copy`` target); the
    empty path is the whole document. Members other than ``op``, ``path``,
    ``from`` and ``value`` are ignored. The patch applies completely or not at
    all.

    Raises:
      MalformedPatch: ``ops`` is not a list of objects (400).
      PatchTooLarge: more than 10,000 operations (413).
      PatchTestFailed: a ``test`` operation found a different value (422).
      PatchError: any other operation failure (422): an unknown ``op``; a
        missing or non-string ``path``/``from``; a missing ``value``; a path
        that does not exist (for ``add``, its parent); an array index out of
        range, with a leading zero, or ``-`` where an element must exist;
        a ``move`` into its own child; removing the whole document.

    Where kube-apiserver (evanphx/json-patch v4) departs from RFC 6902, this
    function follows the RFC: the answer differs only in that kube-apiserver
    accepts negative array indices, lets ``test`` of ``null`` pass on a
    missing member, lets ``add`` without ``value`` add ``null``, and rejects
    the empty (whole-document) path. All of these are 422 there as here when
    they fail.
    """
    if not isinstance(ops, list):
        raise MalformedPatch(f"error decoding patch: json: cannot unmarshal {json_type(ops)} "
                             "into Go value of type []handlers.jsonPatchOp")
    for op in ops:
        if not isinstance(op, dict):
            raise MalformedPatch(f"error decoding patch: json: cannot unmarshal "
                                 f"{json_type(op)} into Go value of type handlers.jsonPatchOp")
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchTooLarge(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    document: JSON = copy_json(target)
    for index, op in enumerate(ops):
        assert isinstance(op, dict)
        try:
            document = _apply(document, op)
        except PatchError as error:
            raise type(error)(f"operation {index} ({_describe(op)}): {error}") from None
    return document


def _describe(op: Mapping[str, JSON]) -> str:
    return " ".join(str(op.get(name)) for name in ("op", "path") if name in op)


def _apply(document: JSON, op: dict[str, JSON]) -> JSON:
    kind = op.get("op")
    if not isinstance(kind, str) or kind not in _OPERATIONS:
        raise PatchError(f"unknown operation {kind!r}")
    path = _pointer(op, "path")
    if kind == "remove":
        return _remove(document, path)[0]
    if kind in ("move", "copy"):
        source = _pointer(op, "from")
        if kind == "move":
            if path[: len(source)] == source and len(path) > len(source):
                raise PatchError("cannot move a value into one of its own children")
            document, value = _remove(document, source)
        else:
            value = copy_json(_get(document, source))
        return _add(document, path, value)
    if "value" not in op:
        raise PatchError(f"{kind} needs a value")
    value = copy_json(op["value"])
    if kind == "add":
        return _add(document, path, value)
    if kind == "replace":
        if not path:
            return value
        parent, key = _parent(document, path)
        _get(parent, [key])
        if isinstance(parent, list):
            parent[int(key)] = value
        else:
            assert isinstance(parent, dict)
            parent[key] = value
        return document
    actual = _get(document, path)
    if not _json_equal(actual, value):
        raise PatchTestFailed(f"value is {actual!r}, not {value!r}")
    return document


def _pointer(op: Mapping[str, JSON], member: str) -> list[str]:
    pointer = op.get(member)
    if not isinstance(pointer, str):
        raise PatchError(f"missing or non-string {member!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must be empty or start with '/'")
    if _BAD_ESCAPE.search(pointer):
        raise PatchError(f"JSON pointer {pointer!r} has a '~' not followed by '0' or '1'")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _index(container: list[JSON], token: str, *, end_ok: bool) -> int:
    if token == "-" and end_ok:
        return len(container)
    if not _ARRAY_INDEX.fullmatch(token):
        raise PatchError(f"{token!r} is not an array index")
    index = int(token)
    if index > len(container) or (index == len(container) and not end_ok):
        raise PatchError(f"index {index} is out of range for an array of {len(container)}")
    return index


def _get(document: JSON, path: list[str]) -> JSON:
    current = document
    for depth, token in enumerate(path):
        if isinstance(current, dict):
            if token not in current:
                raise PatchError(f"no member {token!r} at {_render(path[:depth])}")
            current = current[token]
        elif isinstance(current, list):
            current = current[_index(current, token, end_ok=False)]
        else:
            raise PatchError(f"{_render(path[:depth])} is not an object or array")
    return current


def _parent(document: JSON, path: list[str]) -> tuple[dict[str, JSON] | list[JSON], str]:
    parent = _get(document, path[:-1])
    if not isinstance(parent, dict | list):
        raise PatchError(f"{_render(path[:-1])} is not an object or array")
    return parent, path[-1]


def _add(document: JSON, path: list[str], value: JSON) -> JSON:
    if not path:
        return value
    parent, key = _parent(document, path)
    if isinstance(parent, list):
        parent.insert(_index(parent, key, end_ok=True), value)
    else:
        parent[key] = value
    return document


def _remove(document: JSON, path: list[str]) -> tuple[JSON, JSON]:
    if not path:
        raise PatchError("cannot remove the whole document")
    parent, key = _parent(document, path)
    if isinstance(parent, list):
        return document, parent.pop(_index(parent, key, end_ok=False))
    if key not in parent:
        raise PatchError(f"no member {key!r} at {_render(path[:-1])}")
    return document, parent.pop(key)


def _render(path: list[str]) -> str:
    escaped = (part.replace("~", "~0").replace("/", "~1") for part in path)
    return "/" + "/".join(escaped) if path else "the document root"


def _json_equal(left: JSON, right: JSON) -> bool:
    """RFC 6902 equality: numbers by value, booleans apart from numbers."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    return type(left) is type(right) and left == right
