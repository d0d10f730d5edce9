"""The ``managedFields`` a client writes: what an update (PUT or a non-apply patch) asks of
them, as kube-apiserver's field manager reads it (k8s.io/apiserver 1.28).

An update of the main resource whose object carries ``managedFields``
other than the stored ones:

* ``[]``, or a list of one empty entry (``[{}]``), *resets* them: the object
  is left with no managed fields at all;
* a list every entry of which decodes replaces them, entry by entry as
  sent (times kept, an entry without one stays without); two entries of
  the same manager, operation, apiVersion (for an ``Update``) and
  subresource make one, the later;
* anything else is ignored and the stored ones kept: an entry whose
  ``operation`` is not ``Apply`` or ``Update``, whose ``apiVersion`` is
  empty, whose ``fieldsType`` is not ``FieldsV1`` or whose ``fieldsV1`` is
  not a field set. A value of the wrong JSON type never gets here: the
  decoder refuses the body (400, or 422 on ``patch``).

A write to a subresource, a create and an apply never take managedFields
from the request (an applied configuration that carries them is refused,
:func:`check_applied`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from ..machinery.status import StatusError

__all__ = ["check_applied", "sent_entries"]

_OPERATIONS = ("Apply", "Update")


def sent_entries(sent: Any) -> list[dict[str, Any]] | None:
    """The entries an update's ``managedFields`` (``sent``, None when absent) make the
    object's: ``[]`` to reset them, None to keep the stored ones."""
    if not isinstance(sent, list):
        return None
    if not sent or (len(sent) == 1 and _empty(sent[0])):
        return []
    by_identity: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for entry in sent:
        if not _decodes(entry):
            return None
        operation = entry["operation"]
        identity = (str(entry.get("manager") or ""), operation,
                    "" if operation == "Apply" else entry["apiVersion"],
                    str(entry.get("subresource") or ""))
        by_identity.pop(identity, None)  # the later entry wins
        by_identity[identity] = entry
    return list(by_identity.values())


def check_applied(config: Mapping[str, Any]) -> None:
    """400 for an applied configuration that sets ``metadata.managedFields`` (even
    ``[]``): an apply's ownership is the server's to write."""
    if (config.get("metadata") or {}).get("managedFields") is not None:
        raise StatusError.bad_request("metadata.managedFields must be nil")


def _empty(entry: Any) -> bool:
    """Whether an entry is Go's zero ``ManagedFieldsEntry`` (every field unset or empty)."""
    return isinstance(entry, Mapping) and all(v is None or v == "" for v in entry.values())


def _decodes(entry: Any) -> bool:
    """Whether an entry passes k8s.io/apiserver's ``DecodeManagedFields``."""
    if not isinstance(entry, Mapping):
        return False
    if entry.get("operation") not in _OPERATIONS or not entry.get("apiVersion"):
        return False
    if entry.get("fieldsType") != "FieldsV1":
        return False
    fields = entry.get("fieldsV1")
    return fields is None or _field_set(fields)


def _field_set(node: Any) -> bool:
    """Whether ``node`` is a ``fieldsV1`` tree: objects all the way down, each key ``.``
    or a path element (``f:NAME``, ``k:{KEYS}``, ``v:VALUE``, ``i:INDEX``)."""
    if not isinstance(node, Mapping):
        return False
    return all((key == "." or _path_element(key)) and _field_set(below)
               for key, below in node.items())


def _path_element(key: str) -> bool:
    kind, colon, rest = key.partition(":")
    if not colon:
        return False
    if kind == "f":
        return True
    if kind == "i":
        return rest.lstrip("-").isdigit()
    if kind not in ("k", "v"):
        return False
    try:
        value = orjson.loads(rest)
    except orjson.JSONDecodeError:
        return False
    return kind == "v" or isinstance(value, dict)
