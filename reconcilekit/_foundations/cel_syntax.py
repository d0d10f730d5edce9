"""CEL expressions read into the syntax tree cel-go's parser builds (no macros, not checked).

kube-apiserver reads a shard selector (KEP-5866) by parsing it with cel-go
and walking the tree, never evaluating it; what it accepts and the words of
its errors follow from the tree's shape. This module builds the same shape:

* operators are calls named as cel-go names them (``_||_``, ``_&&_``,
  ``_==_``, ``_<_``, ``@in``, ``_+_``, ``!_``, ``-_``, ``_[_]``,
  ``_?_:_``); ``a || b || c`` is read left to right (cel-go balances the tree,
  which keeps the order of its leaves);
* ``a.b`` is a selection of ``b`` from ``a``; ``a.f(x)`` a call of ``f`` with
  target ``a`` and arguments ``(x)``; ``f(x)`` a global call (macros such as
  ``has()`` are plain calls: kube-apiserver's parser expands none);
* literals keep the Go type cel-go gives them (``int64``, ``uint64``,
  ``float64``, ``bool``, ``string``, ``[]uint8``, ``structpb.NullValue``);
* a node's :class:`Kind` numbers as cel-go's ``ast.ExprKind`` (kube-apiserver
  prints that number in some errors).

Syntax errors are cel-go's: the first error the cel-rust parser (PyPI
``common-expression-language``, a port of cel-go's grammar that reports in
its words) finds, e.g. ``Syntax error: mismatched input '<EOF>' expecting
...`` or ``reserved identifier: if``. That package is imported on the first
:func:`parse`, never with ``import reconcilekit`` (it brings a command-line
toolkit), and only the in-process API server needs its words
(``reconcilekit[testing]`` installs it). Without it this module's own parser
decides alone: an expression cel-go reads gives the same tree; an error is
still a :class:`CELSyntaxError` (``Syntax error: ...`` or ``reserved
identifier: ...``), in words that may differ from cel-go's, and a few
literals cel-go refuses (an escape out of range) are read. A shard selector
is then accepted or refused exactly as with cel-go, since what follows the
parse refuses any tree that is not ``shardRange()`` calls of string bounds.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

__all__ = ["CELSyntaxError", "Kind", "Node", "cel_compile", "parse"]


class CELSyntaxError(ValueError):
    """An expression that cel-go does not parse; the message is cel-go's first error."""


class Kind(enum.IntEnum):
    """cel-go's ``ast.ExprKind``."""

    UNSPECIFIED = 0
    CALL = 1
    COMPREHENSION = 2
    IDENT = 3
    LIST = 4
    LITERAL = 5
    MAP = 6
    SELECT = 7
    STRUCT = 8


@dataclass(frozen=True, slots=True)
class Node:
    """One node: ``name`` is the function (CALL), identifier (IDENT) or field (SELECT).

    ``args`` are a call's arguments (its target excluded), a selection's
    operand, or a list, map or struct literal's parts; ``value`` and
    ``go_type`` are a literal's value and Go type.
    """

    kind: Kind
    name: str = ""
    args: tuple[Node, ...] = ()
    target: Node | None = None
    value: object = None
    go_type: str = ""


_TOKEN: Final = re.compile(r"""
    (?P<space>(?:[ \t\n\r\f]|//[^\n]*)+)
  | (?P<string>(?:[bB][rR]?|[rR][bB]?)?(?:'''(?:[^\\]|\\.)*?'''|\"\"\"(?:[^\\]|\\.)*?\"\"\"
                |'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*"))
  | (?P<float>(?:\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\.\d+(?:[eE][+-]?\d+)?))
  | (?P<uint>(?:0x[0-9a-fA-F]+|\d+)[uU])
  | (?P<int>0x[0-9a-fA-F]+|\d+)
  | (?P<ident>[_a-zA-Z][_a-zA-Z0-9]*)
  | (?P<op>\|\||&&|==|!=|<=|>=|[<>!+\-*/%?:()\[\]{},.])
""", re.VERBOSE | re.DOTALL)
_RELATIONS: Final = {"<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_", "==": "_==_",
                     "!=": "_!=_", "in": "@in"}
# cel-rust expands macros (has, all, exists, map, filter); kube-apiserver's cel-go expands
# none, so a call that misuses one is no syntax error there
_MACRO_ERRORS: Final = ("macro", "argument must be a simple name")
# cel-go's reserved words: none names a variable or a function
_RESERVED: Final = frozenset({"as", "break", "const", "continue", "else", "for", "function",
                              "if", "import", "let", "loop", "package", "namespace", "return",
                              "var", "void", "while"})
_SIMPLE_ESCAPES: Final = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
                          "v": "\v", "\\": "\\", "?": "?", '"': '"', "'": "'", "`": "`"}


@functools.cache
def cel_compile() -> Callable[[str], object] | None:
    """cel-rust's ``cel.compile`` (raises ValueError with its errors), or None when the
    ``common-expression-language`` package is not installed. Imported on first call."""
    try:
        import cel
    except ImportError:
        return None
    return cel.compile


def parse(text: str) -> Node:
    """The syntax tree of ``text``; :class:`CELSyntaxError` with cel-go's message (the
    CEL package installed) or this parser's own (without it), never another error."""
    compile_ = cel_compile()
    if compile_ is not None:
        try:
            compile_(text)
        except ValueError as err:
            message = _first_error(str(err))
            if not any(m in message for m in _MACRO_ERRORS):
                raise CELSyntaxError(message) from None
    try:
        return _CELParser(text).parse()
    except CELSyntaxError:
        raise
    except (ValueError, IndexError, RecursionError) as err:
        # only without cel-rust's check first: a literal or an escape it would have refused
        raise CELSyntaxError(f"Syntax error: {err}") from None


def _first_error(text: str) -> str:
    """The message of cel-rust's first ``ERROR: <input>:L:C: MESSAGE`` line."""
    match = re.search(r"ERROR: <input>:\d+:\d+: (.*)", text)
    return match.group(1) if match else text


class _CELParser:
    """Recursive descent over CEL's grammar (cel-go's CEL.g4), precedence lowest first."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise CELSyntaxError(f"Syntax error: token recognition error at: "
                                     f"'{text[pos]}'")
            pos = match.end()
            assert match.lastgroup is not None
            if match.lastgroup != "space":
                self.tokens.append((match.lastgroup, match.group()))
        self.pos = 0

    def parse(self) -> Node:
        node = self._expr()
        if self.pos != len(self.tokens):
            raise CELSyntaxError(f"Syntax error: extraneous input '{self._peek()}' "
                                 "expecting <EOF>")
        return node

    # -- tokens --------------------------------------------------------------------------

    def _peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.tokens[at][1] if at < len(self.tokens) else "<EOF>"

    def _kind(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.tokens[at][0] if at < len(self.tokens) else ""

    def _take(self, *texts: str) -> str | None:
        if self._peek() in texts and self._kind() in ("op", "ident"):
            self.pos += 1
            return self.tokens[self.pos - 1][1]
        return None

    def _expect(self, text: str) -> None:
        if self._take(text) is None:
            raise CELSyntaxError(f"Syntax error: mismatched input '{self._peek()}' "
                                 f"expecting '{text}'")

    # -- grammar -------------------------------------------------------------------------

    def _expr(self) -> Node:
        condition = self._binary(0)
        if self._take("?") is None:
            return condition
        then = self._binary(0)
        self._expect(":")
        return Node(Kind.CALL, "_?_:_", (condition, then, self._expr()))

    # binary operators by precedence, lowest first; each level is left-associative
    _LEVELS: Final = ({"||": "_||_"}, {"&&": "_&&_"}, _RELATIONS,
                      {"+": "_+_", "-": "_-_"}, {"*": "_*_", "/": "_/_", "%": "_%_"})

    def _binary(self, level: int) -> Node:
        if level == len(self._LEVELS):
            return self._unary()
        operators = self._LEVELS[level]
        node = self._binary(level + 1)
        while (op := self._take(*operators)) is not None:
            node = Node(Kind.CALL, operators[op], (node, self._binary(level + 1)))
        return node

    def _unary(self) -> Node:
        for op, function in (("!", "!_"), ("-", "-_")):
            count = 0
            while self._peek() == op and self._kind() == "op":
                if op == "-" and count == 0 and self._kind(1) in ("int", "float"):
                    break  # a negative literal, as cel-go's grammar reads "-1"
                self.pos += 1
                count += 1
            if count:
                operand = self._member()
                return Node(Kind.CALL, function, (operand,)) if count % 2 else operand
        return self._member()

    def _member(self) -> Node:
        node = self._primary()
        while True:
            if self._take("."):
                field = self._identifier()
                if self._take("("):
                    node = Node(Kind.CALL, field, self._arguments(")"), target=node)
                else:
                    node = Node(Kind.SELECT, field, (node,))
            elif self._take("["):
                index = self._expr()
                self._expect("]")
                node = Node(Kind.CALL, "_[_]", (node, index))
            else:
                return node

    def _primary(self) -> Node:
        kind, text = self._kind(), self._peek()
        if kind == "op" and text == "(":
            self.pos += 1
            node = self._expr()
            self._expect(")")
            return node
        if kind == "op" and text == "[":
            self.pos += 1
            return Node(Kind.LIST, args=self._arguments("]"))
        if kind == "op" and text == "{":
            self.pos += 1
            return Node(Kind.MAP, args=self._entries())
        if (kind == "op" and text == ".") or (kind == "ident" and text not in (
                "true", "false", "null", "in")):
            return self._identified()
        return self._literal()

    def _identified(self) -> Node:
        """``[.]name``, ``[.]name(args)``, or a message literal ``[.]a.b{field: value}``."""
        lead = "." if self._take(".") else ""
        if self._peek() in _RESERVED and self._kind() == "ident":
            raise CELSyntaxError(f"reserved identifier: {self._peek()}")
        name = lead + self._identifier()
        if self._take("("):
            return Node(Kind.CALL, name, self._arguments(")"))
        ahead = 0
        while self._peek(ahead) == "." and self._kind(ahead + 1) == "ident":
            ahead += 2
        if self._peek(ahead) == "{" and self._kind(ahead) == "op":
            while self._take("."):
                name += "." + self._identifier()
            self._expect("{")
            return Node(Kind.STRUCT, name, self._entries())
        return Node(Kind.IDENT, name)

    def _identifier(self) -> str:
        if self._kind() != "ident":
            raise CELSyntaxError(f"Syntax error: mismatched input '{self._peek()}' "
                                 "expecting IDENTIFIER")
        self.pos += 1
        return self.tokens[self.pos - 1][1]

    def _arguments(self, close: str) -> tuple[Node, ...]:
        args: list[Node] = []
        while self._take(close) is None:
            if args:
                self._expect(",")
                if self._take(close) is not None:  # a trailing comma
                    break
            args.append(self._expr())
        return tuple(args)

    def _entries(self) -> tuple[Node, ...]:
        parts: list[Node] = []
        while self._take("}") is None:
            if parts:
                self._expect(",")
                if self._take("}") is not None:
                    break
            parts.append(self._expr())
            self._expect(":")
            parts.append(self._expr())
        return tuple(parts)

    def _literal(self) -> Node:
        kind, text = self._kind(), self._peek()
        sign = ""
        if kind == "op" and text == "-":
            sign = "-"
            self.pos += 1
            kind, text = self._kind(), self._peek()
        self.pos += 1
        match kind:
            case "int":
                return Node(Kind.LITERAL, value=_integer(sign + text), go_type="int64")
            case "uint":
                return Node(Kind.LITERAL, value=_integer(text[:-1]), go_type="uint64")
            case "float":
                return Node(Kind.LITERAL, value=float(sign + text), go_type="float64")
            case "string":
                return _string(text)
            case "ident" if text in ("true", "false"):
                return Node(Kind.LITERAL, value=text == "true", go_type="bool")
            case "ident" if text == "null":
                return Node(Kind.LITERAL, value=None, go_type="structpb.NullValue")
        self.pos -= 1
        raise CELSyntaxError(f"Syntax error: mismatched input '{text}' expecting an "
                             "expression")


def _integer(text: str) -> int:
    """A decimal or ``0x`` hexadecimal literal (CEL's decimals may start with 0)."""
    hexadecimal = text.lstrip("-")[:2] in ("0x", "0X")
    return int(text, 16) if hexadecimal else int(text, 10)


def _string(token: str) -> Node:
    """A string or bytes literal, its escapes (unless raw) decoded as CEL decodes them."""
    prefix = re.match(r"[bBrR]*", token)
    assert prefix is not None
    flags = prefix.group().lower()
    quoted = token[prefix.end():]
    quote = quoted[:3] if quoted[:3] in ("'''", '"""') else quoted[0]
    body = quoted[len(quote):-len(quote)]
    value = body if "r" in flags else _unescape(body)
    if "b" in flags:
        return Node(Kind.LITERAL, value=value.encode("utf-8", "surrogatepass"),
                    go_type="[]uint8")
    return Node(Kind.LITERAL, value=value, go_type="string")


def _unescape(body: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = body[i + 1]
        size = {"x": 2, "X": 2, "u": 4, "U": 8}.get(code, 3)
        digits = body[i + 1:i + 4] if size == 3 else body[i + 2:i + 2 + size]
        if code not in _SIMPLE_ESCAPES and (len(digits) != size or not all(
                c in ("01234567" if size == 3 else "0123456789abcdefABCDEF") for c in digits)):
            raise CELSyntaxError(f"Syntax error: invalid escape sequence at: "
                                 f"'\\{body[i + 1:i + 2 + size]}'")
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
        elif code in "xX":
            out.append(chr(int(body[i + 2:i + 4], 16)))
            i += 4
        elif code == "u":
            out.append(chr(int(body[i + 2:i + 6], 16)))
            i += 6
        elif code == "U":
            out.append(chr(int(body[i + 2:i + 10], 16)))
            i += 10
        else:  # octal, \000 to \377 (cel-rust refused anything else already)
            out.append(chr(int(body[i + 1:i + 4], 8)))
            i += 4
    return "".join(out)
