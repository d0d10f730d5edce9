"""Go's rules where Kubernetes shows them (reconcilekit/_foundations/go_compat.py)."""

from __future__ import annotations

import pytest

from reconcilekit._foundations.go_compat import byte_len, go_quote, parse_int64


@pytest.mark.parametrize(("text", "quoted"), [
    ("plain", '"plain"'),
    ("ünï 😀", '"ünï 😀"'),                 # printable runes stay
    ('x"y\\z', '"x\\"y\\\\z"'),
    ("a\tb\n\r\a\b\f\v", '"a\\tb\\n\\r\\a\\b\\f\\v"'),
    ("\x01\x7f", '"\\x01\\x7f"'),            # other ASCII controls: \xNN
    ("a\u00a0b", '"a\\u00a0b"'),             # a space other than ASCII's is not printable
    ("\u200b", '"\\u200b"'),                 # nor is a format character
    ("\U000e0001", '"\\U000e0001"'),         # beyond the BMP: \UNNNNNNNN
    ("\ud800", '"\\xed\\xa0\\x80"'),         # not UTF-8: byte by byte
])
def test_go_quote_is_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


def test_int64_and_lengths_follow_go() -> None:
    assert parse_int64("-9223372036854775808") == -(2**63)
    assert parse_int64("9223372036854775808") is None
    assert parse_int64("1e3") is None
    assert byte_len("ü") == 2
