"""Shard keys and shard selectors: the 64-bit FNV-1a hash of a metadata field, and ranges of it.

The key space is Kubernetes' own (KEP-5866, ``ShardedListAndWatch``, alpha
in v1.36): the 64-bit FNV-1a hash of ``metadata.uid`` or
``metadata.namespace`` (sharding by namespace keeps a namespace's objects
together). A :class:`ShardSelector` is a union of half-open ranges
``[start, end)`` of that hash, written on the wire as the API server reads
it::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
      || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')

Bounds are ``0x``-prefixed, 16 lowercase hex digits, except the upper bound
2^64, ``0x10000000000000000``. :func:`ShardSelector.parse` refuses anything
else with a message that names the problem (the in-process API server
answers those as a 400, as kube-apiserver does).

Guarantees: ``str(ShardSelector.parse(s))`` round-trips a normalized
selector; ranges are kept sorted and merged (adjacent or overlapping ranges
become one), so two selectors that select the same keys are equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["SHARD_FIELDS", "KEY_SPACE", "ShardSelector", "ShardSelectorError", "fnv1a64",
           "shard_key"]

KEY_SPACE: Final = 1 << 64
SHARD_FIELDS: Final = ("object.metadata.uid", "object.metadata.namespace")
_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK: Final = KEY_SPACE - 1
_REQUIREMENT = re.compile(
    r"\s*shardRange\(\s*([A-Za-z.]+)\s*,\s*'([^']*)'\s*,\s*'([^']*)'\s*\)\s*")


class ShardSelectorError(ValueError):
    """A shard selector that cannot be parsed; the message names the part that is wrong."""


def fnv1a64(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def shard_key(obj: Mapping[str, Any], field: str = "object.metadata.uid") -> int:
    """The shard key of ``obj``: the hash of its uid or namespace (``""`` if it has none)."""
    meta = obj.get("metadata") or {}
    return fnv1a64(str(meta.get(field.rpartition(".")[2]) or ""))


def _bound(text: str, what: str) -> int:
    if not re.fullmatch(r"0x[0-9a-f]+", text):
        raise ShardSelectorError(f"{what} {text!r} must be a 0x-prefixed lowercase hex number")
    value = int(text, 16)
    if value > KEY_SPACE:
        raise ShardSelectorError(f"{what} {text!r} is above 0x10000000000000000 (2^64)")
    return value


def _hex(value: int) -> str:
    return "0x10000000000000000" if value == KEY_SPACE else f"0x{value:016x}"


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """Keys of ``field`` whose hash is in one of ``ranges`` (sorted, merged, half-open)."""

    field: str
    ranges: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if self.field not in SHARD_FIELDS:
            raise ShardSelectorError(f"field {self.field!r} cannot be sharded on: supported "
                                     f"are {', '.join(SHARD_FIELDS)}")
        for start, end in self.ranges:
            if not 0 <= start < end <= KEY_SPACE:
                raise ShardSelectorError(f"range [{_hex(start)}, {_hex(end)}) is empty or "
                                         f"outside [0, 2^64)")

    @classmethod
    def of(cls, field: str, ranges: Iterable[tuple[int, int]]) -> ShardSelector:
        """The selector of ``ranges`` (in any order, possibly overlapping), merged."""
        merged: list[tuple[int, int]] = []
        for start, end in sorted(ranges):
            if merged and start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
            else:
                merged.append((start, end))
        return cls(field, tuple(merged))

    @classmethod
    def parse(cls, text: str) -> ShardSelector:
        """Read the wire form; :class:`ShardSelectorError` names what is wrong."""
        if not text.strip():
            raise ShardSelectorError("the shard selector is empty")
        fields: set[str] = set()
        ranges = []
        for part in text.split("||"):
            match = _REQUIREMENT.fullmatch(part)
            if match is None:
                raise ShardSelectorError(
                    f"{part.strip()!r} is not shardRange(<field>, '<hex start>', '<hex end>')")
            field, start, end = match.groups()
            if field not in SHARD_FIELDS:
                raise ShardSelectorError(f"field {field!r} cannot be sharded on: supported "
                                         f"are {', '.join(SHARD_FIELDS)}")
            low, high = _bound(start, "start"), _bound(end, "end")
            if low >= high:
                raise ShardSelectorError(f"shardRange start {start} is not below its end {end}")
            fields.add(field)
            ranges.append((low, high))
        if len(fields) > 1:
            raise ShardSelectorError(f"a shard selector hashes one field, not "
                                     f"{', '.join(sorted(fields))}")
        return cls.of(fields.pop(), ranges)

    def __str__(self) -> str:
        return " || ".join(f"shardRange({self.field}, '{_hex(s)}', '{_hex(e)}')"
                           for s, e in self.ranges)

    def matches_key(self, key: int) -> bool:
        return any(start <= key < end for start, end in self.ranges)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj``'s shard key falls in one of the ranges."""
        return self.matches_key(shard_key(obj, self.field))

    @property
    def everything(self) -> bool:
        return self.ranges == ((0, KEY_SPACE),)
