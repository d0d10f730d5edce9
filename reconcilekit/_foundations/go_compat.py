"""Go's behaviour where Kubernetes shows it: quoting, integers, string lengths, durations.

kube-apiserver and client-go are Go programs, and what they write (error
messages, limits, durations in API objects) follows Go's standard library.
Wherever reconcilekit must answer or read exactly as they do, it uses these
helpers, so that each Go rule has one home:

* :func:`go_quote` is ``fmt``'s ``%q`` (strconv.Quote) for the text the API
  server puts in its messages: Go's escapes, printable non-ASCII kept;
* :func:`go_format` is ``%v`` of a decoded JSON value (maps with sorted keys),
  :func:`go_value` a value as ``field.Invalid`` prints it, :func:`go_slice`
  ``%#v`` of a ``[]string``, :func:`go_string_map` and :func:`go_interface_map`
  ``%#v`` of a ``map[string]string`` and a ``map[string]interface {}``;
* :func:`parse_bool` is ``strconv.ParseBool``;
* :func:`parse_int64` is ``strconv.ParseInt(text, 10, 64)``: an optional
  sign and decimal digits, in the int64 range, else ``None``;
* :func:`byte_len` is Go's ``len`` of a string: its length in UTF-8 bytes,
  which is what Kubernetes' length limits count;
* :func:`parse_duration` reads the durations the API server writes
  (``time.Duration.String``: ``10s``, ``1m30s``, ``500ms``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["byte_len", "go_format", "go_interface_map", "go_quote", "go_slice", "go_string_map",
           "go_value", "parse_bool", "parse_duration", "parse_int64"]

_INT64_RE: Final = re.compile(r"[+-]?[0-9]+")
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
_DURATION_UNITS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001, "us": 1e-6,
                          "µs": 1e-6, "ns": 1e-9}
_UNITS_LONGEST_FIRST: Final = ("ms", "us", "µs", "ns", "h", "m", "s")


_QUOTE_ESCAPES: Final = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n",
                         "\r": "\\r", "\t": "\\t", "\v": "\\v", "\\": "\\\\",
                         '"': '\\"'}


def go_quote(text: str) -> str:
    """``text`` as Go's ``%q`` (``strconv.Quote``) writes it in the API server's messages.

    Printable characters (``unicode.IsPrint``: letters, marks, numbers,
    punctuation, symbols and the ASCII space) stay as they are; the C escapes
    Go knows are used; any other ASCII character is ``\\xNN``, any other rune
    ``\\uNNNN`` or ``\\UNNNNNNNN``; a lone surrogate (not valid UTF-8) is
    escaped byte by byte, as Go escapes bytes that are not UTF-8.
    """
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    out = ['"']
    for ch in text:
        escape = _QUOTE_ESCAPES.get(ch)
        if escape is not None:
            out.append(escape)
        elif ch.isprintable():
            out.append(ch)
        elif (code := ord(ch)) < 0x80:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.extend(f"\\x{b:02x}" for b in ch.encode("utf-8", "surrogatepass"))
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def parse_int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: the number, or ``None`` where Go fails."""
    if not _INT64_RE.fullmatch(text):
        return None
    number = int(text)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def byte_len(text: str) -> int:
    """Go's ``len(text)``: UTF-8 bytes, a lone surrogate counted as Go would read it."""
    return len(text.encode("utf-8", "surrogatepass"))


def parse_duration(text: str | None) -> float | None:
    """Seconds in a positive Go duration (``10s``, ``1m30s``, ``500ms``); ``None`` if absent,
    malformed or not positive."""
    if not text:
        return None
    total, number = 0.0, ""
    i = 0
    try:
        while i < len(text):
            if text[i].isdigit() or text[i] == ".":
                number += text[i]
                i += 1
                continue
            unit = next(u for u in _UNITS_LONGEST_FIRST if text.startswith(u, i))
            total += float(number) * _DURATION_UNITS[unit]
            number, i = "", i + len(unit)
    except (StopIteration, ValueError):
        return None
    return total if not number and total > 0 else None


def go_format(value: Any) -> str:
    """A decoded JSON value as Go's ``%v`` prints it (maps with sorted keys)."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + " ".join(go_format(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{go_format(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def go_value(value: Any) -> str:
    """A value as ``field.Invalid`` prints it: strings quoted, numbers and booleans bare."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return "null" if value is None else str(value)


def go_slice(values: Iterable[Any], element: str = "string") -> str:
    """``%#v`` of a slice of strings (``[]string{"a", "b"}``)."""
    return f"[]{element}{{" + ", ".join(go_quote(str(v)) for v in values) + "}"


def go_string_map(value: Mapping[str, Any]) -> str:
    """``%#v`` of a ``map[string]string``: keys sorted, as Go prints maps."""
    inner = ", ".join(f'"{k}":"{value[k]}"' for k in sorted(value))
    return f"map[string]string{{{inner}}}"


def go_interface_map(value: Mapping[str, Any]) -> str:
    """``%#v`` of a ``map[string]interface {}`` of scalars, keys sorted."""
    inner = ", ".join(f"{go_quote(k)}:{go_value(value[k])}" for k in sorted(value))
    return "map[string]interface {}{" + inner + "}"


def parse_bool(text: str) -> bool | None:
    """``strconv.ParseBool``: the value, or ``None`` where Go fails."""
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    return None
