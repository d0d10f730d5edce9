"""Go's encoding/json syntax errors, worded as ``json.Unmarshal`` words them.

:func:`syntax_error` runs the state machine of Go's ``encoding/json``
scanner (scanner.go: ``checkValid``) over a body and gives the message of
the first error it meets (``invalid character 'o' in literal null (expecting
'u')``, ``unexpected end of JSON input``, ...), or None for valid JSON. At
the end of the input the scanner steps once more with a space, as Go's does,
so a literal or number cut short names ``' '``. :func:`unmarshal_type_error`
is the error of a valid value of the wrong JSON type.
"""

from __future__ import annotations

from collections.abc import Callable

from .unstructured import json_type

__all__ = ["syntax_error", "unmarshal_type_error"]

_SPACE = b" \t\r\n"
_State = Callable[[int], None]


class _SyntaxError(Exception):
    pass


def _quote_char(c: int) -> str:
    """Go's ``quoteChar``: the byte as a Go rune literal."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    ch = chr(c)
    escapes = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
               "\v": "\\v", "\\": "\\\\"}
    if ch in escapes:
        return f"'{escapes[ch]}'"
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if 0x80 <= c <= 0x9F or c == 0xAD:  # not printable as a rune
        return f"'\\u{c:04x}'"
    return f"'{ch}'"


class _Scanner:
    """encoding/json's scanner: one state function per byte, a stack of open values."""

    def __init__(self) -> None:
        self.step: _State = self._begin_value
        self.parse: list[str] = []  # "object key", "object value", "array value"
        self.end_top = False

    def _error(self, c: int, context: str) -> None:
        raise _SyntaxError(f"invalid character {_quote_char(c)} {context}")

    def _begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == ord("]"):
            self._end_value(c)
            return
        self._begin_value(c)

    def _begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        literal = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}
        if c == ord("{"):
            self.step = self._begin_string_or_empty
            self.parse.append("object key")
        elif c == ord("["):
            self.step = self._begin_value_or_empty
            self.parse.append("array value")
        elif c == ord('"'):
            self.step = self._in_string
        elif c == ord("-"):
            self.step = self._neg
        elif c == ord("0"):
            self.step = self._zero
        elif ord("1") <= c <= ord("9"):
            self.step = self._digits
        elif c in literal:
            self.step = self._literal(literal[c], 1)
        else:
            self._error(c, "looking for beginning of value")

    def _begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == ord("}"):
            self.parse[-1] = "object value"
            self._end_value(c)
            return
        self._begin_string(c)

    def _begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c != ord('"'):
            self._error(c, "looking for beginning of object key string")
        self.step = self._in_string

    def _end_value(self, c: int) -> None:
        if not self.parse:
            self.step, self.end_top = self._end_top, True
            self._end_top(c)
            return
        if c in _SPACE:
            self.step = self._end_value
            return
        top = self.parse[-1]
        if top == "object key":
            if c != ord(":"):
                self._error(c, "after object key")
            self.parse[-1], self.step = "object value", self._begin_value
        elif top == "object value":
            if c == ord(","):
                self.parse[-1], self.step = "object key", self._begin_string
            elif c == ord("}"):
                self._pop()
            else:
                self._error(c, "after object key:value pair")
        elif c == ord(","):
            self.step = self._begin_value
        elif c == ord("]"):
            self._pop()
        else:
            self._error(c, "after array element")

    def _pop(self) -> None:
        self.parse.pop()
        if not self.parse:
            self.step, self.end_top = self._end_top, True
        else:
            self.step = self._end_value

    def _end_top(self, c: int) -> None:
        if c not in _SPACE:
            self._error(c, "after top-level value")

    def _in_string(self, c: int) -> None:
        if c == ord('"'):
            self.step = self._end_value
        elif c == ord("\\"):
            self.step = self._in_string_escape
        elif c < 0x20:
            self._error(c, "in string literal")

    def _in_string_escape(self, c: int) -> None:
        if c in b'bfnrt\\/"':
            self.step = self._in_string
        elif c == ord("u"):
            self.step = self._hex(4)
        else:
            self._error(c, "in string escape code")

    def _hex(self, left: int) -> _State:
        def step(c: int) -> None:
            if chr(c) not in "0123456789abcdefABCDEF":
                self._error(c, "in \\u hexadecimal character escape")
            self.step = self._hex(left - 1) if left > 1 else self._in_string
        return step

    def _neg(self, c: int) -> None:
        if c == ord("0"):
            self.step = self._zero
        elif ord("1") <= c <= ord("9"):
            self.step = self._digits
        else:
            self._error(c, "in numeric literal")

    def _digits(self, c: int) -> None:
        if ord("0") <= c <= ord("9"):
            return
        self._zero(c)

    def _zero(self, c: int) -> None:
        if c == ord("."):
            self.step = self._dot
        elif c in b"eE":
            self.step = self._e
        else:
            self._end_value(c)

    def _dot(self, c: int) -> None:
        if not ord("0") <= c <= ord("9"):
            self._error(c, "after decimal point in numeric literal")
        self.step = self._dot_digits

    def _dot_digits(self, c: int) -> None:
        if ord("0") <= c <= ord("9"):
            return
        if c in b"eE":
            self.step = self._e
        else:
            self._end_value(c)

    def _e(self, c: int) -> None:
        if c in b"+-":
            self.step = self._e_sign
            return
        self._e_sign(c)

    def _e_sign(self, c: int) -> None:
        if not ord("0") <= c <= ord("9"):
            self._error(c, "in exponent of numeric literal")
        self.step = self._e_digits

    def _e_digits(self, c: int) -> None:
        if not ord("0") <= c <= ord("9"):
            self._end_value(c)

    def _literal(self, word: bytes, at: int) -> _State:
        def step(c: int) -> None:
            if c != word[at]:
                self._error(c, f"in literal {word.decode()} (expecting "
                               f"{_quote_char(word[at])})")
            self.step = self._literal(word, at + 1) if at + 1 < len(word) else self._end_value
        return step


def syntax_error(data: bytes) -> str | None:
    """The message of Go's ``json.Unmarshal`` for ``data`` if it is not valid JSON."""
    scanner = _Scanner()
    try:
        for c in data:
            scanner.step(c)
        if not scanner.end_top:
            scanner.step(ord(" "))
    except _SyntaxError as err:
        return str(err)
    return None if scanner.end_top else "unexpected end of JSON input"


def unmarshal_type_error(value: object, go_type: str) -> str:
    """``json: cannot unmarshal array into Go value of type ...``."""
    return f"json: cannot unmarshal {json_type(value)} into Go value of type {go_type}"
