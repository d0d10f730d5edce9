"""Shard keys and selectors: FNV-1a as Kubernetes hashes, shardRange selectors read as
kube-apiserver v1.36 reads them (k8s.io/apiserver/pkg/sharding/parser.go), and written."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconcilekit._foundations import cel_syntax as _cel_syntax
from reconcilekit._foundations.shard_selector import KEY_SPACE, shard_ranges
from reconcilekit.sharding import ShardSelector, ShardSelectorError, fnv1a64, shard_key

UID = "object.metadata.uid"
NS = "object.metadata.namespace"
ZERO, HALF, TOP = "0x0000000000000000", "0x8000000000000000", "0x10000000000000000"


def sel(start: str = ZERO, end: str = HALF, field: str = UID) -> str:
    return f"shardRange({field}, '{start}', '{end}')"


@pytest.fixture(params=["cel-rust", "without-cel"])
def parser(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test twice: with the CEL package (the testing extra's) and, as an operator's
    plain install runs, without it (the syntax tree parser alone)."""
    if request.param == "without-cel":
        monkeypatch.setattr(_cel_syntax, "cel_compile", lambda: None)
    return str(request.param)


@pytest.mark.parametrize(("value", "expected"), [
    # the FNV reference test vectors (FNV-1a, 64 bits)
    ("", 0xCBF29CE484222325), ("a", 0xAF63DC4C8601EC8C), ("b", 0xAF63DF4C8601F1A5),
    ("fo", 0x08985907B541D342), ("foo", 0xDCB27518FED9D577), ("foobar", 0x85944171F73967E8),
])
def test_fnv1a64_matches_the_reference_vectors(value: str, expected: int) -> None:
    assert fnv1a64(value) == expected


def test_fnv1a64_hashes_utf8_bytes() -> None:
    assert fnv1a64("é") == fnv1a64("\u00e9") != fnv1a64("e")
    assert 0 <= fnv1a64("é" * 100) < KEY_SPACE


def test_the_key_of_an_object_hashes_its_uid_or_namespace() -> None:
    obj = {"metadata": {"uid": "1f0c", "namespace": "team-a"}}
    assert shard_key(obj) == fnv1a64("1f0c")
    assert shard_key(obj, NS) == fnv1a64("team-a")
    assert shard_key({"metadata": {}}, NS) == fnv1a64("")  # cluster-scoped: all in one shard


def test_selectors_print_as_the_api_server_reads_them_and_parse_back() -> None:
    half = ShardSelector.of(UID, [(0, 1 << 63)])
    assert str(half) == sel()
    whole = ShardSelector.of(UID, [(1 << 63, KEY_SPACE), (0, 1 << 63)])
    assert whole.ranges == ((0, KEY_SPACE),) and whole.everything
    assert str(whole) == sel(ZERO, TOP)
    two = ShardSelector.of(UID, [(32, 48), (0, 16)])
    assert str(two) == (f"{sel(ZERO, '0x0000000000000010')} || "
                        f"{sel('0x0000000000000020', '0x0000000000000030')}")
    assert ShardSelector.parse(str(two)) == two
    assert two.matches_key(15) and not two.matches_key(16) and two.matches_key(32)
    assert not two.matches_key(48)


def test_parsing_merges_adjacent_and_overlapping_ranges_but_shard_ranges_keeps_them() -> None:
    text = (f"{sel(HALF, TOP)} || {sel(ZERO, '0x4000000000000000')} || "
            f"{sel('0x3000000000000000', HALF)}")
    assert ShardSelector.parse(text) == ShardSelector.of(UID, [(0, KEY_SPACE)])
    assert shard_ranges(text) == (UID, ((1 << 63, KEY_SPACE), (0, 1 << 62),
                                        (0x3 << 60, 1 << 63)))


@pytest.mark.parametrize("text", [
    # kube-apiserver's parser_test.go, valid cases
    sel(), sel(ZERO, TOP), sel("0x00000000000000aa", "0x00000000000000ff", NS),
    f"{sel()} || {sel(HALF, TOP)}",
    f"shardRange(object.metadata.uid,'{ZERO}','{HALF}')",
    f"  shardRange( object.metadata.uid ,  '{ZERO}' ,  '{HALF}' )  ",
    # CEL's syntax: either quotes, raw strings, parentheses, newlines
    f'shardRange(object.metadata.uid, "{ZERO}", r"{HALF}")',
    f"({sel()}) || (({sel(HALF, TOP)}))",
    f"{sel()}\n|| {sel(HALF, TOP)}",
])
def test_what_kube_apiserver_accepts_is_accepted(text: str, parser: str) -> None:
    field, ranges = shard_ranges(text)
    assert field in (UID, NS) and ranges
    assert ShardSelector.parse(text) == ShardSelector.of(field, ranges)


def test_a_target_of_shard_range_is_not_looked_at_as_kube_apiserver_does_not() -> None:
    assert shard_ranges(f"anything.{sel()}") == (UID, ((0, 1 << 63),))


@given(st.lists(st.tuples(st.integers(0, KEY_SPACE - 1), st.integers(1, KEY_SPACE)).filter(
    lambda r: r[0] < r[1]), min_size=1, max_size=6), st.sampled_from([UID, NS]))
def test_any_selector_round_trips_through_its_wire_form(
        ranges: list[tuple[int, int]], field: str) -> None:
    selector = ShardSelector.of(field, ranges)
    assert ShardSelector.parse(str(selector)) == selector
    assert shard_ranges(str(selector)) == (field, selector.ranges)
    for start, end in ranges:
        assert selector.matches_key(start) and selector.matches_key(end - 1)


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    (" \t", "empty shard selector is not allowed; omit the parameter for unfiltered lists"),
    ("if", "CEL parse error: reserved identifier: if"),
    ("nonsense", "unexpected expression kind 3; expected shardRange() call or || operator"),
    ("true", "unexpected expression kind 5; expected shardRange() call or || operator"),
    (f"[{sel()}]", "unexpected expression kind 4; expected shardRange() call or || operator"),
    ("invalidFunc(object.metadata.uid, '0x00', '0x80')",
     'unsupported function "invalidFunc"; only shardRange() and || are allowed'),
    (f"{sel()} && {sel(HALF, TOP)}",
     'unsupported function "_&&_"; only shardRange() and || are allowed'),
    ("object.metadata.uid > '0x0'",
     'unsupported function "_>_"; only shardRange() and || are allowed'),
    (f"{sel()} || !{sel(HALF, TOP)}",
     'unsupported function "!_"; only shardRange() and || are allowed'),
    ("has(object.metadata.uid)",  # no macros: has() is a plain call
     'unsupported function "has"; only shardRange() and || are allowed'),
    ("shardRange(object.metadata.uid, '0x0')",
     "shardRange() requires exactly 3 arguments, got 2"),
    (f"shardRange('object.metadata.uid', '{ZERO}', '{HALF}')",
     "shardRange() first argument: expected field path (e.g. object.metadata.uid), got "
     "expression kind 5"),
    (sel(field="object.metadata.name"), 'unsupported field path "object.metadata.name"; '
     "supported: object.metadata.uid, object.metadata.namespace"),
    (sel(field="metadata.uid"), 'unsupported field path "metadata.uid"; '
     "supported: object.metadata.uid, object.metadata.namespace"),
    ("shardRange(object.metadata.uid, 0, 8)", "hexStart must be a string literal, got int64"),
    (f"shardRange(object.metadata.uid, '{ZERO}', 8u)",
     "hexEnd must be a string literal, got uint64"),
    ("shardRange(object.metadata.uid, hex(0), '0x8')",
     "hexStart must be a string literal (e.g. '0xff'), got expression kind 1"),
    (sel("0000000000000000"), 'hexStart must have \'0x\' prefix, got "0000000000000000"'),
    (sel(ZERO, "8000000000000000"), 'hexEnd must have \'0x\' prefix, got "8000000000000000"'),
    (sel("0x"), "hexStart: hex value is required after '0x'"),
    (sel("0x000000000000000000"),
     'hexStart: hex value too long (18 chars, max 17): "000000000000000000"'),
    (sel("0x0g"), 'hexStart: invalid hex character "g" in "0x0g"'),
    (sel(ZERO, "0xFFFFFFFFFFFFFFFF"), 'hexEnd: invalid hex character "F" in '
     '"0xFFFFFFFFFFFFFFFF"'),
    (sel(ZERO, "0x1ffffffffffffffff"), "hexEnd: 17-digit hex value must be "
     "'0x10000000000000000' (2^64), got \"0x1ffffffffffffffff\""),
    (sel("0x0"), 'hexStart must be a 0x-prefixed 16-digit hex value, got "0x0" '
     '(did you mean "0x0000000000000000"?)'),
    (sel(ZERO, "0xff"), 'hexEnd must be a 0x-prefixed 16-digit hex value, got "0xff" '
     '(did you mean "0x00000000000000ff"?)'),
    (sel(HALF, HALF), f"shard range start {HALF} must be less than end {HALF}"),
    (sel("0xffffffffffffffff", ZERO),
     f"shard range start 0xffffffffffffffff must be less than end {ZERO}"),
    (sel(TOP, TOP), f"shard range start {TOP} must be less than end {TOP}"),
    (f"{sel()} || {sel(HALF, TOP, NS)}", 'all shard ranges must use the same field, got '
     '"object.metadata.uid" and "object.metadata.namespace"'),
])
def test_a_bad_selector_is_refused_with_kube_apiservers_message(text: str, message: str,
                                                                parser: str) -> None:
    with pytest.raises(ShardSelectorError) as caught:
        ShardSelector.parse(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(("text", "start"), [
    ("shardRange(", "CEL parse error: Syntax error: mismatched input '<EOF>' expecting {"),
    (f"{sel()} ||", "CEL parse error: Syntax error: mismatched input '<EOF>' expecting {"),
    (f"{sel()} {sel()}", "CEL parse error: Syntax error: mismatched input 'shardRange' "
     "expecting {"),
    ("nonsense nonsense", "CEL parse error: Syntax error: extraneous input 'nonsense' "
     "expecting <EOF>"),
    (f"{sel()}, {sel()}", "CEL parse error: Syntax error: "),  # the old comma-joined form
    ("shardRange(object.metadata.uid, '0x0", "CEL parse error: Syntax error: token "
     "recognition error at: "),
])
def test_a_selector_that_is_not_cel_is_refused_with_cel_gos_syntax_error(text: str,
                                                                        start: str) -> None:
    with pytest.raises(ShardSelectorError, match="^" + re.escape(start)):
        shard_ranges(text)


@pytest.mark.parametrize("text", [
    "shardRange(", f"{sel()} ||", f"{sel()} {sel()}", "nonsense nonsense", f"{sel()}, {sel()}",
    "shardRange(object.metadata.uid, '0x0", "shardRange(object.metadata.uid, '\\q', '0x8')",
    "(" * 5000 + sel() + ")" * 5000,
])
def test_without_cel_a_selector_that_is_not_cel_is_still_a_syntax_error(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_cel_syntax, "cel_compile", lambda: None)
    with pytest.raises(ShardSelectorError, match="^" + re.escape("CEL parse error: Syntax "
                                                                 "error: ")):
        shard_ranges(text)


def test_a_selector_is_built_only_of_ranges_of_a_known_field() -> None:
    with pytest.raises(ShardSelectorError, match="unsupported field path"):
        ShardSelector.of("object.metadata.name", [(0, 1)])
    with pytest.raises(ShardSelectorError, match="at least one range"):
        ShardSelector.of(UID, [])  # an empty selector on the wire would select everything
    with pytest.raises(ShardSelectorError, match="empty or outside"):
        ShardSelector(UID, ((5, 5),))
    with pytest.raises(ShardSelectorError, match="empty or outside"):
        ShardSelector(UID, ((0, KEY_SPACE + 1),))


def test_matches_hashes_the_selected_field_of_the_object() -> None:
    obj = {"metadata": {"uid": "u-1", "namespace": "team-a"}}
    key = fnv1a64("team-a")
    assert ShardSelector.of(NS, [(key, key + 1)]).matches(obj)
    assert not ShardSelector.of(NS, [(0, key)]).matches(obj)
    assert ShardSelector.of(UID, [(0, KEY_SPACE)]).matches(obj)
