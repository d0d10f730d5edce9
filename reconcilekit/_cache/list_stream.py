"""A List answer read item by item as its body arrives, never decoded whole.

kube-apiserver answers a list served from its watch cache in one response,
whatever the ``limit``: 100,000 Pods' metadata is some 340 MB of JSON, which
decoded at once would take gigabytes. :class:`ListSplitter` takes the body
in chunks and hands out its items in slabs of a few hundred kilobytes, each
decoded on its own, so a list holds no more than a slab decoded.

How a slab is cut: kube-apiserver writes the List's own fields, then
``"items":[``, then the items, each starting with the same bytes (the first
item's, up to and including ``"metadata":{``: ``{"metadata":{`` for a
built-in kind, ``{"kind":"PartialObjectMetadata","apiVersion":...,"metadata":{``
for metadata alone). A slab ends just before a comma followed by those
bytes, and is decoded as a JSON array: a cut inside an item (the same bytes
nested in it) leaves braces unbalanced, the decoding fails, and the slab is
cut at another such place or grows until one decodes. Whatever the bytes,
an item is never handed out unless the slab around it decoded as JSON, and
the answer's fields after its items (a custom resource's List writes
``kind`` and ``metadata`` there) are read at the end.

Metadata alone (``PartialObjectMetadata``) carries ``managedFields``, four
fifths of its bytes, as the last field of its ``metadata``, which is its
last field (kube-apiserver writes them as Go writes the structs, in the
order of their fields): with ``drop_managed_fields`` they are cut from the
bytes before decoding (decoding and freeing them was most of the CPU of such
a list), when what is cut is one balanced JSON array of objects closing the
item, with no field after it. An item whose bytes do not look so is decoded
whole.

Guarantees: the items handed out are exactly the List's, in order, each
checked as :func:`~reconcilekit._client.answers.check_object` checks a list
item (with ``managedFields`` dropped if asked); :meth:`ListSplitter.finish`
returns the List's own ``metadata``, checked as ``check_list`` checks it, or
raises :class:`~reconcilekit.lowlevel.APIError` (reason ``InvalidResponse``)
for a body that is not a List.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from .._client.answers import check_items, check_list, invalid
from .._foundations.collector import collector_paused

__all__ = ["ListSplitter"]

_ITEMS: Final = b'"items":['
_METADATA: Final = b'"metadata":{'
_PARTIAL: Final = b'{"kind":"PartialObjectMetadata",'
_MANAGED: Final = b',"managedFields":'
_SLAB: Final = 512 * 1024  # bytes of items decoded at once
_HEAD_MAX: Final = 64 * 1024  # a List's fields before its items, at most
_TRIES: Final = 4  # cuts tried in a slab before waiting for more of the body
_TAIL_TRIES: Final = 16  # where the items may end, tried from the end of the body

Items = list[dict[str, Any]]


class ListSplitter:
    """One List answer, fed in chunks (:meth:`feed`), its items handed out in slabs.

    Not thread-safe; feed the chunks in order, then :meth:`finish`.
    """

    __slots__ = ("_buffer", "_drop", "_head", "_marker", "_slab", "_start", "_what")

    def __init__(self, what: str, *, drop_managed_fields: bool = False) -> None:
        """``what`` names the request in error messages (``list of pods``);
        ``drop_managed_fields`` cuts ``metadata.managedFields`` from metadata alone."""
        self._what = what
        self._drop = drop_managed_fields
        self._buffer = bytearray()
        self._start = 0  # where the next item begins in the buffer (once the head is read)
        self._head: bytes | None = None  # the List up to and including ``"items":[``
        self._marker: bytes | None = None  # ``,`` and the bytes every item starts with
        self._slab = _SLAB

    def feed(self, chunk: bytes) -> Items:
        """The next bytes of the body; the items complete so far (may be none)."""
        self._buffer += chunk
        if self._head is None and not self._read_head():
            return []
        if self._marker is None and not self._read_marker():
            return []
        if len(self._buffer) - self._start < self._slab:
            return []
        return self._cut()

    def finish(self) -> tuple[Items, dict[str, Any]]:
        """The body is complete: its last items and the List's ``metadata``."""
        buffer = self._buffer
        if self._head is None:  # not a List written as kube-apiserver writes one
            answer = check_list(_loads(bytes(buffer), self._what), self._what)
            return answer["items"], answer.get("metadata") or {}
        end = len(buffer)
        for _ in range(_TAIL_TRIES):
            end = buffer.rfind(b"]", self._start, end)
            if end < 0:
                break
            try:
                answer = orjson.loads(self._head + buffer[end:])
            except orjson.JSONDecodeError:
                continue
            items = self._decode(bytes(buffer[self._start:end]))
            if items is None:
                continue
            answer = check_list(answer, self._what)
            self._buffer = bytearray()
            return items, answer.get("metadata") or {}
        raise invalid(f"the answer to the {self._what} is not a List: its items do not end "
                      f"in a JSON array")

    # -- the head and the marker ---------------------------------------------------------

    def _read_head(self) -> bool:
        at = self._buffer.find(_ITEMS)
        if at < 0:
            if len(self._buffer) > _HEAD_MAX:
                raise invalid(f"the answer to the {self._what} has no items in its first "
                              f"{_HEAD_MAX} bytes")
            return False
        self._start = at + len(_ITEMS)
        self._head = bytes(self._buffer[:self._start])
        return True

    def _read_marker(self) -> bool:
        buffer, start = self._buffer, self._start
        if len(buffer) <= start:
            return False
        if buffer[start:start + 1] != b"{":  # no items (``]``), or not objects: read whole
            self._marker = b"\0"  # never found: the items are cut at the end only
            return True
        at = buffer.find(_METADATA, start, start + 1024)
        if at < 0:
            if len(buffer) - start < 1024:
                return False
            self._marker = b"\0"
            return True
        self._marker = b"," + bytes(buffer[start:at + len(_METADATA)])
        return True

    # -- slabs ---------------------------------------------------------------------------

    def _cut(self) -> Items:
        buffer, marker, start = self._buffer, self._marker, self._start
        assert marker is not None
        cut = len(buffer)
        for _ in range(_TRIES):
            cut = buffer.rfind(marker, start + 1, cut)
            if cut < 0:
                break
            items = self._decode(bytes(buffer[start:cut]))
            if items is not None:
                del buffer[:cut + 1]  # the comma too: the buffer starts with the next item
                self._start = 0
                self._slab = _SLAB
                return items
        self._slab *= 2  # nested copies of the marker: wait for a larger slab
        return []

    def _decode(self, slab: bytes) -> Items | None:
        """The items of ``slab`` (whole items, comma-separated), or None if it is not."""
        if not slab:
            return []
        if self._drop and slab.startswith(_PARTIAL):
            assert self._marker is not None
            array = _array_without_managed_fields(slab, self._marker)
        else:
            array = b"[" + slab + b"]"
        try:
            items = _loads(array, None)
        except orjson.JSONDecodeError:
            return None
        check_items(items, self._what)
        return items  # type: ignore[no-any-return]


def _array_without_managed_fields(slab: bytes, marker: bytes) -> bytes:
    """The JSON array of ``slab``'s items (PartialObjectMetadata, separated by
    ``marker``), each without ``metadata.managedFields`` where they close it as one
    array of objects, and as it is otherwise; only the bytes kept are copied.

    The array closes an item when its first ``]`` is followed by the ``}}``
    that close the item, then by the next item's first bytes or the end of
    the slab: its entries hold no array (``fieldsV1`` is objects all the way
    down), so a field after the array, or anything else, puts a ``]``
    earlier, or none where it must be. The key cannot be matched inside a
    string (a quote there is escaped); a label named so has a string for its
    value, and the item is then looked at as a whole: cut where its last key
    of that name is such an array, kept whole otherwise."""
    view = memoryview(slab)
    pieces: list[bytes | memoryview] = [b"["]
    start, size, skip = 0, len(slab), len(_MANAGED)
    while start < size:
        at = slab.find(_MANAGED, start)
        close = slab.find(b"]", at + skip) if at >= 0 else -1
        after = close + 3  # past ``]}}``
        if (close >= 0 and slab.startswith(b"[{", at + skip)
                and slab.startswith(b"]}}", close)
                and (after == size or slab.startswith(marker, after))):
            pieces += (view[start:at], b"}}")
        else:  # the item up to the next one, cut only as exactly
            after = slab.find(marker, start)
            if after < 0:
                after = size
            at = slab.rfind(_MANAGED, start, after)
            if (at >= 0 and slab.startswith(b"[{", at + skip)
                    and slab.find(b"]", at + skip, after) == after - 3
                    and slab.startswith(b"]}}", after - 3)):
                pieces += (view[start:at], b"}}")
            else:
                pieces.append(view[start:after])
        pieces.append(b",")
        start = after + 1  # past the comma: the marker's own bytes begin the next item
    pieces[-1] = b"]"
    return b"".join(pieces)


def _loads(raw: bytes, what: str | None) -> Any:
    """``raw`` decoded (with the collector paused: decoded JSON holds no cycle); with
    ``what``, an undecodable body is :func:`invalid` naming it."""
    try:
        with collector_paused():
            return orjson.loads(raw)
    except orjson.JSONDecodeError:
        if what is None:
            raise
        raise invalid(f"the answer to the {what} is not JSON") from None
