"""ControllerRevisions: the template history of a StatefulSet (or DaemonSet), as
kube-controller-manager's ``controller/history`` keeps it.

A revision holds a patch that puts back its owner's Pod template
(``{"spec":{"template":{...,"$patch":"replace"}}}``, encoded as Go's
``encoding/json`` encodes a map: keys sorted, ``<``, ``>`` and ``&``
escaped) and is named ``<owner>-<hash>``, the hash being FNV-1 (32 bit) of
those bytes and the collision count, its decimal digits spelled in the safe
alphabet: the same name kube-controller-manager gives the same template.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

__all__ = ["HASH_LABEL", "go_marshal", "revision_hash", "revision_patch", "sort_revisions"]

Obj = dict[str, Any]
HASH_LABEL = "controller.kubernetes.io/hash"
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_ESCAPES = {b"b": rb"\u0008", b"f": rb"\u000c"}  # Go before 1.22 spells these so
_ESCAPE = re.compile(rb"\\(.)")


def go_marshal(value: Any) -> bytes:
    """``value`` as Go's ``json.Marshal`` encodes a ``map[string]interface{}`` of it."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    data = data.replace(b"<", rb"\u003c").replace(b">", rb"\u003e").replace(b"&", rb"\u0026")
    data = data.replace("\u2028".encode(), rb"\u2028").replace("\u2029".encode(), rb"\u2029")
    return _ESCAPE.sub(lambda m: _ESCAPES.get(m[1], m[0]), data)


def revision_patch(owner: Obj) -> Obj:
    """The data of a revision of ``owner``'s Pod template (``getPatch``)."""
    template = dict((owner.get("spec") or {}).get("template") or {})
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def revision_hash(data: Obj, collision_count: int | None) -> str:
    """``HashControllerRevision`` of a revision holding ``data``."""
    h = 0x811C9DC5
    raw = go_marshal(data)
    if collision_count is not None:
        raw += str(collision_count).encode()
    for byte in raw:
        h = ((h * 0x01000193) & 0xFFFFFFFF) ^ byte
    return "".join(_SAFE[ord(ch) % len(_SAFE)] for ch in str(h))


def sort_revisions(revisions: list[Obj]) -> list[Obj]:
    """By revision number, then creation time, then name (``SortControllerRevisions``)."""
    return sorted(revisions, key=lambda r: (int(r.get("revision") or 0),
                                            r["metadata"].get("creationTimestamp") or "",
                                            r["metadata"]["name"]))
