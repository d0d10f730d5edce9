"""The grammar and validation rules behind :mod:`reconcilekit._foundations.selectors`.

Everything here follows k8s.io/apimachinery: the label selector lexer and
parser (``pkg/labels/selector.go``), label key and value validation
(``api/validate/content``) with ``field.Error`` formatting, and the field
selector term splitting and value escaping (``pkg/fields/selector.go``).
Messages are apimachinery's, because kube-apiserver sends them to clients in
400 BadRequest answers.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Collection
from typing import Final

from .go_compat import byte_len, go_quote, parse_int64


class SelectorError(ValueError):
    """A selector that kube-apiserver would reject with 400 BadRequest.

    ``str(error)`` is the message kube-apiserver gives for the same input,
    for example ``unable to parse requirement: <nil>: Invalid value: "-a":
    name part must consist of ...`` or ``field label not supported: spec.foo``.
    """


class Operator(enum.StrEnum):
    """How a requirement relates a key to its values.

    The values are apimachinery's ``selection.Operator`` strings.
    """

    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    IN = "in"
    NOT_IN = "notin"
    EXISTS = "exists"
    DOES_NOT_EXIST = "!"
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


EXACT_OPERATORS: Final = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.NOT_EQUALS})
SET_OPERATORS: Final = frozenset({Operator.IN, Operator.NOT_IN})
UNARY_OPERATORS: Final = frozenset({Operator.EXISTS, Operator.DOES_NOT_EXIST})
ORDERED_OPERATORS: Final = frozenset({Operator.GREATER_THAN, Operator.LESS_THAN})
POSITIVE_OPERATORS: Final = frozenset({Operator.EQUALS, Operator.DOUBLE_EQUALS, Operator.IN})

# --- validation (apimachinery api/validate/content and util/validation/field) ---

_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE: Final = re.compile(_NAME_FMT)
_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_VALUE_FMT: Final = f"({_NAME_FMT})?"
_VALUE_RE: Final = re.compile(_VALUE_FMT)
_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_DNS_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN_FMT: Final = _DNS_LABEL_FMT + r"(\." + _DNS_LABEL_FMT + ")*"
_SUBDOMAIN_RE: Final = re.compile(_SUBDOMAIN_FMT)
_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)


def to_operator(value: str) -> Operator:
    try:
        return Operator(value)
    except ValueError:
        supported = ", ".join(f'"{op.value}"' for op in Operator)
        raise SelectorError(
            f"operator: Unsupported value: {go_quote(str(value))}: supported values: {supported}"
        ) from None


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    shown = "".join(f"{' or ' if i else ''}'{example}', " for i, example in enumerate(examples))
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def qualified_name_errors(key: str) -> list[str]:
    """``IsQualifiedName``: label keys, condition types, match condition names."""
    parts = key.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if byte_len(prefix) > 253:
                errors.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN_RE.fullmatch(prefix):
                errors.append(
                    "prefix part " + _regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com")
                )
    if not name:
        errors.append("name part must be non-empty")
    elif byte_len(name) > 63:
        errors.append("name part must be no more than 63 bytes")
    if not _NAME_RE.fullmatch(name):
        errors.append(
            "name part " + _regex_error(_NAME_MSG, _NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errors


def _label_value_errors(value: str) -> list[str]:
    errors: list[str] = []
    if byte_len(value) > 63:
        errors.append("must be no more than 63 bytes")
    if not _VALUE_RE.fullmatch(value):
        errors.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def _invalid(path: str, shown_value: str, detail: str) -> str:
    return f"{path}: Invalid value: {shown_value}: {detail}"


def requirement_error(key: str, operator: Operator, values: Collection[str]) -> str | None:
    """Why apimachinery's ``NewRequirement`` would refuse these arguments, or None.

    Checks run in its order (key, value count, integer bound, each value) and
    are reported with its field paths; several are joined as ``[a, b]``.
    """
    errors: list[str] = []
    if key_errors := qualified_name_errors(key):
        errors.append(_invalid("key", go_quote(key), "; ".join(key_errors)))
    shown = json.dumps(list(values), separators=(",", ":")) if values else "null"
    if operator in SET_OPERATORS and not values:
        errors.append(
            _invalid("values", shown, "for 'in', 'notin' operators, values set can't be empty")
        )
    elif operator in EXACT_OPERATORS and len(values) != 1:
        errors.append(
            _invalid("values", shown, "exact-match compatibility requires one single value")
        )
    elif operator in UNARY_OPERATORS and values:
        errors.append(
            _invalid("values", shown, "values set must be empty for exists and does not exist")
        )
    elif operator in ORDERED_OPERATORS:
        if len(values) != 1:
            errors.append(
                _invalid("values", shown, "for 'Gt', 'Lt' operators, exactly one value is required")
            )
        for i, value in enumerate(values):
            if parse_int64(value) is None:
                errors.append(
                    _invalid(
                        f"values[{i}]",
                        go_quote(value),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    for i, value in enumerate(values):
        if value_errors := _label_value_errors(value):
            errors.append(_invalid(f"values[{i}][{key}]", go_quote(value), "; ".join(value_errors)))
    if not errors:
        return None
    unique = list(dict.fromkeys(errors))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"


# --- label selector lexer and parser (same tokens, states and messages as apimachinery) ---

_ERROR, _END, _CLOSE, _COMMA, _NOT, _DOUBLE_EQUALS, _EQUALS = range(7)
_GREATER, _IDENT, _IN, _LESS, _NOT_EQUALS, _NOT_IN, _OPEN = range(7, 14)
_TOKENS: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DOUBLE_EQUALS,
    "=": _EQUALS,
    ">": _GREATER,
    "in": _IN,
    "<": _LESS,
    "!=": _NOT_EQUALS,
    "notin": _NOT_IN,
    "(": _OPEN,
}
_BINARY: Final = {
    _IN: Operator.IN,
    _NOT_IN: Operator.NOT_IN,
    _EQUALS: Operator.EQUALS,
    _DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _NOT_EQUALS: Operator.NOT_EQUALS,
    _GREATER: Operator.GREATER_THAN,
    _LESS: Operator.LESS_THAN,
}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")
_STOP: Final = "\0"  # apimachinery's lexer reads a NUL byte as end of input


def _scan(text: str) -> list[tuple[int, str]]:
    """Split ``text`` into (token, literal) pairs, ending with ``_END``."""
    items: list[tuple[int, str]] = []
    size = len(text)
    pos = 0

    def read() -> str:
        nonlocal pos
        if pos < size:
            pos += 1
            return text[pos - 1]
        return _STOP

    while True:
        ch = read()
        while ch in _WHITESPACE:
            ch = read()
        if ch == _STOP:
            items.append((_END, ""))
            return items
        pos -= 1
        buffer: list[str] = []
        if ch in _SPECIAL:
            last: tuple[int, str] | None = None
            while (ch := read()) != _STOP:
                if ch not in _SPECIAL:
                    pos -= 1
                    break
                buffer.append(ch)
                literal = "".join(buffer)
                if literal in _TOKENS:
                    last = (_TOKENS[literal], literal)
                elif last is not None:
                    pos -= 1
                    break
            items.append(last or (_ERROR, f"error expected: keyword found '{''.join(buffer)}'"))
        else:
            while (ch := read()) != _STOP:
                if ch in _SPECIAL or ch in _WHITESPACE:
                    pos -= 1
                    break
                buffer.append(ch)
            literal = "".join(buffer)
            items.append((_TOKENS.get(literal, _IDENT), literal))


ParsedRequirement = tuple[str, Operator, tuple[str, ...]]


def parse_label_selector(text: str) -> list[ParsedRequirement]:
    """Parse a label selector into ``(key, operator, sorted values)`` triples.

    Raises :class:`SelectorError` with apimachinery's message; every returned
    triple passes :func:`requirement_error`.
    """
    return _SelectorParser(text).parse()


class _SelectorParser:
    """Recursive descent over the scanned tokens (apimachinery's ``Parser``).

    In the *values* context the keywords ``in`` and ``notin`` are identifiers,
    so ``in in (in)`` is a valid selector, as in apimachinery.
    """

    def __init__(self, text: str) -> None:
        self._items = _scan(text)
        self._position = 0

    def _peek(self, values: bool = True) -> tuple[int, str]:
        token, literal = self._items[min(self._position, len(self._items) - 1)]
        if values and token in (_IN, _NOT_IN):
            token = _IDENT
        return token, literal

    def _take(self, values: bool = True) -> tuple[int, str]:
        item = self._peek(values)
        self._position += 1
        return item

    def parse(self) -> list[ParsedRequirement]:
        requirements: list[ParsedRequirement] = []
        while True:
            token, literal = self._peek()
            if token == _END:
                return requirements
            if token not in (_IDENT, _NOT):
                raise SelectorError(
                    f"found '{literal}', expected: !, identifier, or 'end of string'"
                )
            try:
                requirements.append(self._requirement())
            except SelectorError as error:
                raise SelectorError(f"unable to parse requirement: {error}") from None
            token, literal = self._take()
            if token == _END:
                return requirements
            if token != _COMMA:
                raise SelectorError(f"found '{literal}', expected: ',' or 'end of string'")
            token, literal = self._peek()
            if token not in (_IDENT, _NOT):
                raise SelectorError(f"found '{literal}', expected: identifier after ','")

    def _requirement(self) -> ParsedRequirement:
        negated = False
        token, key = self._take()
        if token == _NOT:
            negated = True
            token, key = self._take()
        if token != _IDENT:
            raise SelectorError(f"found '{key}', expected: identifier")
        if key_errors := qualified_name_errors(key):
            raise SelectorError(_invalid("<nil>", go_quote(key), "; ".join(key_errors)))
        if negated:
            return key, Operator.DOES_NOT_EXIST, ()
        if self._peek()[0] in (_END, _COMMA):
            return key, Operator.EXISTS, ()
        token, literal = self._take(values=False)
        operator = _BINARY.get(token)
        if operator is None:
            raise SelectorError(f"found '{literal}', expected: in, notin, =, ==, !=, gt, lt")
        values = tuple(
            sorted(self._value_set() if operator in SET_OPERATORS else self._exact_value())
        )
        if error := requirement_error(key, operator, values):
            raise SelectorError(error)
        return key, operator, values

    def _exact_value(self) -> set[str]:
        if self._peek()[0] in (_END, _COMMA):
            return {""}
        token, literal = self._take()
        if token != _IDENT:
            raise SelectorError(f"found '{literal}', expected: identifier")
        return {literal}

    def _value_set(self) -> set[str]:
        token, literal = self._take()
        if token != _OPEN:
            raise SelectorError(f"found '{literal}' expected: '('")
        token, literal = self._peek()
        if token == _CLOSE:
            self._take()
            return {""}
        if token not in (_IDENT, _COMMA):
            raise SelectorError(f"found '{literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            token, literal = self._take()
            if token == _IDENT:
                values.add(literal)
                following, shown = self._peek()
                if following == _CLOSE:
                    self._take()
                    return values
                if following != _COMMA:
                    raise SelectorError(f"found '{shown}', expected: ',' or ')'")
            elif token == _COMMA:
                if not values:
                    values.add("")  # "(,"
                following, _ = self._peek()
                if following == _CLOSE:
                    self._take()
                    values.add("")  # ",)"
                    return values
                if following == _COMMA:
                    self._take()
                    values.add("")  # ",,"
            else:
                raise SelectorError(f"found '{literal}', expected: ',', or identifier")


# --- field selectors (apimachinery pkg/fields) ---

_FIELD_OPERATORS: Final = (
    ("!=", Operator.NOT_EQUALS),
    ("==", Operator.EQUALS),
    ("=", Operator.EQUALS),
)


def parse_field_selector(text: str) -> list[tuple[str, Operator, str]]:
    """Parse a field selector into ``(field, operator, value)`` triples.

    Terms are split at commas not escaped by a backslash and sorted by their
    text; empty terms are skipped; nothing is trimmed. Each term splits at the
    first ``!=``, ``==`` or ``=`` (``==`` reads as ``=``), and its value is
    unescaped. Raises :class:`SelectorError` with apimachinery's message.
    """
    parsed: list[tuple[str, Operator, str]] = []
    for term in sorted(_split_terms(text)) if text else ():
        if not term:
            continue
        split = _split_term(term)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
        field, operator, raw_value = split
        parsed.append((field, operator, _unescape_field_value(raw_value)))
    return parsed


def escape_field_value(value: str) -> str:
    """Escape backslashes, commas and equals signs (apimachinery's ``EscapeValue``)."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # apimachinery prints the rune as a number
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    start = 0
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, Operator, str] | None:
    for i in range(len(term)):
        for symbol, operator in _FIELD_OPERATORS:
            if term.startswith(symbol, i):
                return term[:i], operator, term[i + len(symbol) :]
    return None
