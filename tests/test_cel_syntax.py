"""CEL expressions read into cel-go's syntax tree (no macros), as kube-apiserver's shard
selector parser sees them."""

from __future__ import annotations

import pytest

from reconcilekit._foundations.cel_syntax import CELSyntaxError, Kind, Node, parse


def _shape(node: Node) -> object:
    """A compact view: calls as (name, args...), selections as 'a.b', the rest by kind."""
    match node.kind:
        case Kind.CALL:
            call = (node.name, *map(_shape, node.args))
            return ("." + node.name, _shape(node.target), *call[1:]) if node.target else call
        case Kind.SELECT:
            return f"{_shape(node.args[0])}.{node.name}"
        case Kind.IDENT:
            return node.name
        case Kind.LITERAL:
            return (node.go_type, node.value)
        case _:
            return (node.kind.name, node.name, *map(_shape, node.args))


@pytest.mark.parametrize(("text", "shape"), [
    ("a || b || c", ("_||_", ("_||_", "a", "b"), "c")),
    ("a || b && c", ("_||_", "a", ("_&&_", "b", "c"))),
    ("a == 1 + 2 * 3", ("_==_", "a", ("_+_", ("int64", 1), ("_*_", ("int64", 2),
                                                             ("int64", 3))))),
    ("x in [1, 2,]", ("@in", "x", ("LIST", "", ("int64", 1), ("int64", 2)))),
    ("a ? b : c", ("_?_:_", "a", "b", "c")),
    ("!a", ("!_", "a")), ("!!a", "a"), ("-a", ("-_", "a")), ("-1", ("int64", -1)),
    ("x[0]", ("_[_]", "x", ("int64", 0))),
    ("object.metadata.uid", "object.metadata.uid"), (".a.b", ".a.b"),
    ("t.f(1)", (".f", "t", ("int64", 1))), ("has(a.b)", ("has", "a.b")),
    ("(a)", "a"), ("{1: 'x'}", ("MAP", "", ("int64", 1), ("string", "x"))),
    ("p.M{f: 1}", ("STRUCT", "p.M", "f", ("int64", 1))),
    ("1u", ("uint64", 1)), ("2.5", ("float64", 2.5)), ("0x10", ("int64", 16)),
    ("true", ("bool", True)), ("null", ("structpb.NullValue", None)),
    ("b'\\x41'", ("[]uint8", b"A")), ('"\\u00e9\\n"', ("string", "é\n")),
    ("r'\\n'", ("string", "\\n")), ("'''a'b'''", ("string", "a'b")),
    ("a // a comment\n || b", ("_||_", "a", "b")),
])
def test_the_tree_is_the_one_cel_go_builds(text: str, shape: object) -> None:
    assert _shape(parse(text)) == shape


def test_kinds_number_as_cel_gos_expr_kind() -> None:
    assert [k.value for k in (Kind.CALL, Kind.IDENT, Kind.LIST, Kind.LITERAL, Kind.MAP,
                              Kind.SELECT, Kind.STRUCT)] == [1, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize(("text", "message"), [
    ("a b", "Syntax error: extraneous input 'b' expecting <EOF>"),
    ("f(", "Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', ')', '.', '-', "
     "'!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, "
     "IDENTIFIER}"),
    ("#", "Syntax error: token recognition error at: '#'"),
    ("if", "reserved identifier: if"),
    ("a.?b", "unsupported syntax '.?'"),
])
def test_a_syntax_error_is_cel_gos_first_error(text: str, message: str) -> None:
    with pytest.raises(CELSyntaxError) as caught:
        parse(text)
    assert str(caught.value) == message
