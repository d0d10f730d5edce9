"""Shard keys and shard selectors: the 64-bit FNV-1a hash of a metadata field, and ranges of it.

The key space is Kubernetes' own (KEP-5866, ``ShardedListAndWatch``, alpha
in v1.36): the 64-bit FNV-1a hash of ``metadata.uid`` or
``metadata.namespace`` (sharding by namespace keeps a namespace's objects
together). A :class:`ShardSelector` is a union of half-open ranges
``[start, end)`` of that hash, written on the wire as the API server reads
it::

    shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
      || shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')

The grammar is kube-apiserver's (``k8s.io/apiserver/pkg/sharding``): a CEL
expression, parsed and never evaluated, whose tree is ``shardRange()`` calls
joined by ``||`` (parentheses and either quote style allowed); the field is
``object.metadata.uid`` or ``object.metadata.namespace``, the same in every
range; each bound is a string of ``0x`` and exactly 16 lowercase hex digits,
or ``0x10000000000000000`` (2^64); start below end. :func:`shard_ranges`
and :meth:`ShardSelector.parse` refuse anything else with kube-apiserver's
message (the in-process API server answers those as a 400).

Guarantees: ``str(ShardSelector.parse(s))`` round-trips a normalized
selector; ranges are kept sorted and merged (adjacent or overlapping ranges
become one), so two selectors that select the same keys are equal.
:func:`shard_ranges` keeps them as written, in their order, which is what
kube-apiserver prints back in a list's ``metadata.shardInfo``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from .cel_syntax import CELSyntaxError, Kind, Node, parse
from .go_compat import go_quote

__all__ = ["SHARD_FIELDS", "KEY_SPACE", "ShardSelector", "ShardSelectorError", "fnv1a64",
           "shard_key", "shard_of", "shard_range", "shard_ranges"]

KEY_SPACE: Final = 1 << 64
SHARD_FIELDS: Final = ("object.metadata.uid", "object.metadata.namespace")
_FNV_OFFSET: Final = 0xCBF29CE484222325
_FNV_PRIME: Final = 0x100000001B3
_MASK: Final = KEY_SPACE - 1
_TOP: Final = "0x10000000000000000"  # 2^64, the only bound of 17 digits


class ShardSelectorError(ValueError):
    """A shard selector that cannot be parsed; the message is kube-apiserver's."""


def fnv1a64(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes."""
    h = _FNV_OFFSET
    for byte in value.encode():
        h = ((h ^ byte) * _FNV_PRIME) & _MASK
    return h


def shard_of(key: int, shards: int) -> int:
    """Which of ``shards`` equal slices of the key space holds ``key`` (its top bits).

    ``key`` is a 64-bit shard key (:func:`shard_key`), ``shards`` at least 1;
    anything else is a ValueError.
    """
    if shards < 1 or not 0 <= key < KEY_SPACE:
        raise ValueError(f"shard_of: the key must be in [0, 2**64) and shards at least 1, "
                         f"not key={key}, shards={shards}")
    return key * shards >> 64


def shard_range(shard: int, shards: int) -> tuple[int, int]:
    """The keys of ``shard``: ``[start, end)`` of the 64-bit key space, exactly the keys
    :func:`shard_of` puts in it (each bound rounded up: ``key * shards >> 64 == shard``
    from ``ceil(shard * 2**64 / shards)`` on)."""
    return -(-shard * KEY_SPACE // shards), -(-(shard + 1) * KEY_SPACE // shards)


def shard_key(obj: Mapping[str, Any], field: str = "object.metadata.uid") -> int:
    """The shard key of ``obj``: the hash of its uid or namespace (``""`` if it has none)."""
    meta = obj.get("metadata") or {}
    return fnv1a64(str(meta.get(field.rpartition(".")[2]) or ""))


def _hex(value: int) -> str:
    return _TOP if value == KEY_SPACE else f"0x{value:016x}"


def shard_ranges(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The field and ranges of a selector, as written (in order, unmerged).

    Reads ``text`` as kube-apiserver's ``sharding.Parse`` does, step for step,
    so that the first problem found is the one it reports, in its words.
    """
    text = text.strip()
    if not text:
        raise ShardSelectorError(
            "empty shard selector is not allowed; omit the parameter for unfiltered lists")
    try:
        tree = parse(text)
    except CELSyntaxError as err:
        raise ShardSelectorError(f"CEL parse error: {err}") from None
    requirements = list(_walk(tree))
    field = requirements[0][0]
    for other, _, _ in requirements[1:]:
        if other != field:
            raise ShardSelectorError(f"all shard ranges must use the same field, got "
                                     f"{go_quote(field)} and {go_quote(other)}")
    return field, tuple((start, end) for _, start, end in requirements)


def _walk(node: Node) -> Iterable[tuple[str, int, int]]:
    """The ``shardRange()`` calls of a tree of them joined by ``||``, left to right."""
    if node.kind != Kind.CALL:
        raise ShardSelectorError(f"unexpected expression kind {node.kind.value}; expected "
                                 "shardRange() call or || operator")
    if node.name == "_||_":
        for side in node.args:
            yield from _walk(side)
    elif node.name == "shardRange":  # a target (x.shardRange(...)) is not looked at
        yield _requirement(node.args)
    else:
        raise ShardSelectorError(f"unsupported function {go_quote(node.name)}; only "
                                 "shardRange() and || are allowed")


def _requirement(args: tuple[Node, ...]) -> tuple[str, int, int]:
    if len(args) != 3:
        raise ShardSelectorError(f"shardRange() requires exactly 3 arguments, got {len(args)}")
    field = _field_path(args[0])
    if field not in SHARD_FIELDS:
        raise ShardSelectorError(f"unsupported field path {go_quote(field)}; supported: "
                                 f"{', '.join(SHARD_FIELDS)}")
    start, end = _bound(args[1], "hexStart"), _bound(args[2], "hexEnd")
    if start >= end:
        raise ShardSelectorError(f"shard range start {_hex(start)} must be less than "
                                 f"end {_hex(end)}")
    return field, start, end


def _field_path(node: Node) -> str:
    if node.kind == Kind.IDENT:
        return node.name
    if node.kind == Kind.SELECT:
        return f"{_field_path(node.args[0])}.{node.name}"
    raise ShardSelectorError(f"shardRange() first argument: expected field path (e.g. "
                             f"object.metadata.uid), got expression kind {node.kind.value}")


def _bound(node: Node, name: str) -> int:
    """A bound's value: ``'0x'`` and 16 lowercase hex digits, or 2^64."""
    if node.kind != Kind.LITERAL:
        raise ShardSelectorError(f"{name} must be a string literal (e.g. '0xff'), got "
                                 f"expression kind {node.kind.value}")
    if not isinstance(node.value, str):
        raise ShardSelectorError(f"{name} must be a string literal, got {node.go_type}")
    text = node.value
    if not text.startswith("0x"):
        raise ShardSelectorError(f"{name} must have '0x' prefix, got {go_quote(text)}")
    digits = text[2:]
    if not digits:
        raise ShardSelectorError(f"{name}: hex value is required after '0x'")
    size = len(digits.encode())  # Go counts bytes
    if size > 17:
        raise ShardSelectorError(f"{name}: hex value too long ({size} chars, max 17): "
                                 f"{go_quote(digits)}")
    for char in digits:
        if char not in "0123456789abcdef":
            raise ShardSelectorError(f"{name}: invalid hex character {go_quote(char)} in "
                                     f"{go_quote(text)}")
    if size == 17 and text != _TOP:
        raise ShardSelectorError(f"{name}: 17-digit hex value must be '{_TOP}' (2^64), got "
                                 f"{go_quote(text)}")
    if size < 16:
        padded = "0x" + digits.rjust(16, "0")
        raise ShardSelectorError(f"{name} must be a 0x-prefixed 16-digit hex value, got "
                                 f"{go_quote(text)} (did you mean {go_quote(padded)}?)")
    return int(digits, 16)


@dataclass(frozen=True, slots=True)
class ShardSelector:
    """Keys of ``field`` whose hash is in one of ``ranges`` (sorted, merged, half-open)."""

    field: str
    ranges: tuple[tuple[int, int], ...]

    def __post_init__(self) -> None:
        if self.field not in SHARD_FIELDS:
            raise ShardSelectorError(f"unsupported field path {go_quote(self.field)}; "
                                     f"supported: {', '.join(SHARD_FIELDS)}")
        if not self.ranges:
            raise ShardSelectorError("a shard selector needs at least one range")
        for start, end in self.ranges:
            if not 0 <= start < end <= KEY_SPACE:
                raise ShardSelectorError(f"range [{start:#x}, {end:#x}) is empty or "
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
        """Read the wire form as kube-apiserver does (:func:`shard_ranges`), then merge."""
        return cls.of(*shard_ranges(text))

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
