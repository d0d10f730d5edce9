"""Resource quantities (``500m``, ``1Gi``, ``2``): their value, and the canonical text
apimachinery's ``resource.Quantity`` writes for a value in a format."""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["format_quantity", "is_binary", "parse_quantity"]

_QUANTITY = re.compile(r"([+-]?[0-9.]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_DECIMAL = (("E", 18), ("P", 15), ("T", 12), ("G", 9), ("M", 6), ("k", 3), ("", 0),
            ("m", -3), ("u", -6), ("n", -9))
_BINARY = (("Ei", 60), ("Pi", 50), ("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10))
_SUFFIXES = {s: Fraction(10) ** e for s, e in _DECIMAL if s} | {
    s: Fraction(2) ** e for s, e in _BINARY}


def parse_quantity(value: object) -> Fraction | None:
    """A quantity's value (None: not a quantity)."""
    match = _QUANTITY.fullmatch(str(value))
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        amount = Fraction(number)
    except ValueError:
        return None
    if suffix is None:
        return amount
    if suffix[0] in "eE" and len(suffix) > 1:
        return amount * Fraction(10) ** int(suffix[1:])
    return amount * _SUFFIXES[suffix]


def is_binary(value: object) -> bool:
    """Whether a quantity is written with a binary suffix (``Ki`` ... ``Ei``)."""
    return str(value).endswith("i")


def format_quantity(value: Fraction, binary: bool = False) -> str:
    """The canonical text of ``value``: the largest binary suffix that divides it (when
    ``binary``), else the largest decimal one, rounding up below ``n``."""
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value == 0:
        return "0"
    if binary and value.denominator == 1:
        for suffix, exponent in _BINARY:
            if value % (2 ** exponent) == 0:
                return f"{sign}{value // 2 ** exponent}{suffix}"
        if value < 1024:
            return f"{sign}{value}"
    for suffix, exponent in _DECIMAL:
        scaled = value / Fraction(10) ** exponent
        if scaled.denominator == 1:
            return f"{sign}{scaled}{suffix}"
    nanos = -(-value * 10**9 // 1)
    return f"{sign}{nanos}n"
