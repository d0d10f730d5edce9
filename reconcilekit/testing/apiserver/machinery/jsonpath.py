"""client-go's ``util/jsonpath``, the subset a CRD's printer columns evaluate.

A column's ``jsonPath`` is parsed as kube-apiserver's table convertor parses
it (``{`` path ``}``, missing keys allowed) and evaluated over the object:
fields (``.a``, ``['a']``, ``\\``-escaped dots), ``..`` recursive descent,
``*`` wildcards, indexes (negative too), slices with a step, unions
(``[0,1]``) and filters (``[?(@.type=="Ready")]`` with ``==``, ``!=``,
``<``, ``>``, ``<=``, ``>=``, or existence ``[?(@.v)]``), comparing as Go's
text/template does (values of different kinds do not compare: an error).

:func:`find` gives every result, or raises :class:`PathError` where
client-go fails (a path that does not parse, an index out of range, a filter
over a non-list, a comparison of different kinds); the table convertor shows
no cell then. :func:`go_text` prints a value as the column's ``string`` type
prints it (Go's ``fmt`` for scalars, ``encoding/json`` for maps and lists).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeAlias

import orjson

__all__ = ["PathError", "find", "go_text"]

_TERMINATORS = set(" \t\r\n.,[]$@{}")
_SLICE = re.compile(r"^(-?\d*)(:-?\d*)?(:-?\d*)?$")
_DICT_KEY = re.compile(r"^'([^']*)'$")
_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.DOTALL)


class PathError(ValueError):
    """The path does not parse, or client-go's evaluation of it fails."""


@dataclass(frozen=True, slots=True)
class _Field:
    name: str


@dataclass(frozen=True, slots=True)
class _Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class _Recursive:
    pass


@dataclass(frozen=True, slots=True)
class _Slice:
    start: int | None
    end: int | None
    step: int | None
    single: bool  # [n]: end is start + 1 (and 0 means the end of the list)


@dataclass(frozen=True, slots=True)
class _Union:
    branches: tuple[tuple[_Node, ...], ...]


@dataclass(frozen=True, slots=True)
class _Literal:
    value: Any


@dataclass(frozen=True, slots=True)
class _Filter:
    left: tuple[_Node, ...]
    operator: str  # "exists" for [?(@.x)]
    right: tuple[_Node, ...]


_Node: TypeAlias = "_Field | _Wildcard | _Recursive | _Slice | _Union | _Literal | _Filter"


def parse(path: str) -> tuple[_Node, ...]:
    """The nodes of ``path`` (the text inside a ``{...}`` action)."""
    nodes: list[_Node] = []
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c in " \t$@":
            i += 1
        elif path.startswith("..", i):
            nodes.append(_Recursive())
            i += 2 if i + 2 < n and path[i + 2] == "[" else 1
        elif c == ".":
            i = _field(path, i + 1, nodes)
        elif path.startswith("[?(", i):
            i = _filter(path, i, nodes)
        elif c == "[":
            end = path.find("]", i)
            if end < 0:
                raise PathError("unterminated array")
            nodes.extend(_array(path[i + 1:end]))
            i = end + 1
        elif c in "\"'":
            end = path.find(c, i + 1)
            if end < 0:
                raise PathError("unterminated quoted string")
            nodes.append(_Literal(path[i + 1:end]))
            i = end + 1
        elif c.isdigit() or c in "+-":
            m = re.match(r"[-+0-9.eE]+", path[i:])
            assert m is not None
            text = m.group()
            try:
                nodes.append(_Literal(float(text) if "." in text or "e" in text.lower()
                                      else int(text)))
            except ValueError:
                raise PathError(f"cannot parse number {text}") from None
            i += len(text)
        elif path.startswith(("true", "false"), i):
            word = "true" if path.startswith("true", i) else "false"
            nodes.append(_Literal(word == "true"))
            i += len(word)
        else:
            raise PathError(f"unrecognized character in action: {c!r}")
    return tuple(nodes)


def _field(path: str, i: int, nodes: list[_Node]) -> int:
    name: list[str] = []
    while i < len(path) and path[i] not in _TERMINATORS:
        if path[i] == "\\" and i + 1 < len(path):
            i += 1
        name.append(path[i])
        i += 1
    text = "".join(name)
    nodes.append(_Wildcard() if text == "*" else _Field(text))
    return i


def _array(text: str) -> list[_Node]:
    text = "*" if text.strip() == "*" else text
    if "," in text:
        return [_Union(tuple(tuple(_array(part.strip())) for part in text.split(",")))]
    if text == "*":
        return [_Slice(None, None, None, False)]
    key = _DICT_KEY.match(text)
    if key:
        return list(parse("." + key.group(1)))
    m = _SLICE.match(text)
    if m is None:
        raise PathError(f"invalid array index {text}")
    start = int(m.group(1)) if m.group(1) not in ("", "-") else None
    if m.group(2) is None:
        return [_Slice(start or 0, None, None, True)]
    end, step = (int(g[1:]) if g and g[1:] not in ("", "-") else None
                 for g in (m.group(2), m.group(3)))
    return [_Slice(start, end, step, False)]


def _filter(path: str, i: int, nodes: list[_Node]) -> int:
    j, quote = i + 3, ""
    while True:
        if j >= len(path):
            raise PathError("unterminated filter")
        c = path[j]
        if quote:
            quote = "" if c == quote and path[j - 1] != "\\" else quote
        elif c in "\"'":
            quote = c
        elif c == ")":
            break
        j += 1
    if j + 1 >= len(path) or path[j + 1] != "]":
        raise PathError("unclosed array expect ]")
    text = path[i + 3:j]
    m = _FILTER.match(text)
    if m is None:
        nodes.append(_Filter(parse(text), "exists", ()))
    else:
        nodes.append(_Filter(parse(m.group(1)), m.group(2), parse(m.group(3))))
    return j + 2


# -- evaluation -----------------------------------------------------------------------------

def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj``, in client-go's order."""
    return _eval(parse(path.strip()), [obj])


def _eval(nodes: tuple[_Node, ...], values: list[Any]) -> list[Any]:
    for node in nodes:
        values = _step(node, values)
    return values


def _children(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        yield from value.values()
    elif isinstance(value, list | str):
        yield from value


def _step(node: _Node, values: list[Any]) -> list[Any]:
    out: list[Any] = []
    if isinstance(node, _Field):
        out = [v[node.name] for v in values if isinstance(v, Mapping) and node.name in v]
    elif isinstance(node, _Wildcard):
        out = [c for v in values if v is not None for c in _children(v)]
    elif isinstance(node, _Recursive):
        out = [d for v in values if v is not None for d in _descend(v)]
    elif isinstance(node, _Slice):
        out = [item for v in values if v is not None for item in _slice(v, node)]
    elif isinstance(node, _Union):
        out = [r for branch in node.branches for r in _eval(branch, values)]
    elif isinstance(node, _Literal):
        out = [node.value]
    else:
        out = [item for v in values for item in _filtered(v, node)]
    return out


def _descend(value: Any) -> Iterator[Any]:
    """``value`` and its descendants that have children themselves, depth first (a
    string's children are Go bytes, which have none)."""
    if isinstance(value, str):
        if value:
            yield value
        return
    children = list(_children(value))
    if children:
        yield value
        for child in children:
            if child is not None:
                yield from _descend(child)


def _slice(value: Any, node: _Slice) -> list[Any]:
    if not isinstance(value, list):
        raise PathError(f"{type(value).__name__} is not array or slice")
    length = len(value)
    start = node.start or 0
    start += length if start < 0 else 0
    if node.single:
        end = start + 1
    else:
        end = length if node.end is None else node.end
        end += length if end < 0 else 0
    if start == end:
        return []
    if not 0 <= start < length or not 0 <= end <= length:
        raise PathError(f"array index out of bounds: index {start}, length {length}")
    if start > end:
        raise PathError(f"starting index {start} is greater than ending index {end}")
    if node.step is not None and node.step <= 0:
        raise PathError("step must be > 0")
    return value[start:end:node.step or 1]


def _filtered(value: Any, node: _Filter) -> list[Any]:
    if not isinstance(value, list):
        raise PathError(f"{value} is not array or slice and cannot be filtered")
    out = []
    for item in value:
        lefts = _eval(node.left, [item])
        if node.operator == "exists":
            if lefts:
                out.append(item)
            continue
        rights = _eval(node.right, [item]) if lefts else []
        if not lefts or not rights:
            continue
        if len(lefts) > 1 or len(rights) > 1:
            raise PathError("can only compare one element at a time")
        if _compare(node.operator, lefts[0], rights[0]):
            out.append(item)
    return out


def _kind(value: Any) -> str:
    """text/template's basicKind."""
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("string", str)):
        if isinstance(value, types):
            return kind
    raise PathError("invalid type for comparison")


_LESS: dict[str, Callable[[Any, Any], bool]] = {
    "<": lambda a, b: bool(a < b), ">": lambda a, b: bool(a > b),
    "<=": lambda a, b: bool(a <= b), ">=": lambda a, b: bool(a >= b)}


def _compare(operator: str, left: Any, right: Any) -> bool:
    kind = _kind(left)
    if _kind(right) != kind:
        raise PathError("incompatible types for comparison")
    if operator in ("==", "!="):
        return bool(left == right) == (operator == "==")
    if operator not in _LESS:
        raise PathError(f"unrecognized filter operator {operator}")
    if kind == "bool":
        raise PathError("invalid type for comparison")
    return _LESS[operator](left, right)


# -- printing ---------------------------------------------------------------------------------

def _digits(value: float) -> tuple[str, int]:
    """The shortest digits that read back as ``value``, and its decimal point's place."""
    _, digits, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    text = "".join(map(str, digits)) or "0"
    return text, len(text) + int(exponent)


def go_float(value: float) -> str:
    """Go's ``fmt.Sprint`` of a float64 (``%g``, shortest, ``%e`` from 1e+06 on)."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}[repr(value)]
    if value == 0:
        return "0"
    digits, point = _digits(value)
    sign = "-" if value < 0 else ""
    exp = point - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return sign + _positional(digits, point)


def _positional(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return digits[:point] + "." + digits[point:]


def _json_float(value: float) -> str:
    """Go's encoding/json of a float64: positional, but for the very small and very large."""
    if value == 0:
        return "0"
    digits, point = _digits(value)
    sign = "-" if value < 0 else ""
    if 1e-6 <= abs(value) < 1e21:
        return sign + _positional(digits, point)
    exp = point - 1
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp)}"


def _go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of a decoded value: keys sorted, <, > and & escaped."""
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_go_json(str(k))}:{_go_json(value[k])}"
                              for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if isinstance(value, float):
        return _json_float(value)
    text = orjson.dumps(value).decode()
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def go_text(value: Any) -> str:
    """How client-go's ``JSONPath.PrintResults`` prints one value."""
    if isinstance(value, Mapping | list):
        return _go_json(value)
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_float(value)
    return str(value)
