"""Label and field selectors behave like k8s.io/apimachinery's."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reconcilekit._foundations.selectors import (
    FieldRequirement,
    FieldSelector,
    LabelSelector,
    Operator,
    Requirement,
    SelectorError,
)

NAME_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    f"regex used for validation is '{NAME_REGEX}')"
)
VALUE_ERROR = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '({NAME_REGEX})?')"
)
SUBDOMAIN_ERROR = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

# --- label selectors: parsing and canonical form ---


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("", ""),
        ("x=a", "x=a"),
        ("x==a", "x==a"),
        ("x!=a", "x!=a"),
        ("x in (b,a,a)", "x in (a,b)"),
        ("x notin (a)", "x notin (a)"),
        ("x", "x"),
        ("!x", "!x"),
        ("x>1", "x>1"),
        ("x<10", "x<10"),
        (" x = a ,\ty in ( c , b )\n", "x=a,y in (b,c)"),
        ("z=1,a=2,m", "a=2,m,z=1"),
        ("x in ()", "x in ()"),
        ("x in (,a)", "x in (,a)"),
        ("x in (a,,b)", "x in (,a,b)"),
        ("x in (a,)", "x in (,a)"),
        ("x=", "x="),
        ("x=,y", "x=,y"),
        ("in in (in)", "in in (in)"),
        ("notin=notin", "notin=notin"),
        ("example.com/app=web", "example.com/app=web"),
        ("x==", "x=="),
    ],
)
def test_parse_gives_canonical_string(text: str, canonical: str) -> None:
    selector = LabelSelector.parse(text)
    assert str(selector) == canonical
    assert LabelSelector.parse(canonical) == selector


def test_parse_empty_selector_matches_everything() -> None:
    selector = LabelSelector.parse("")
    assert selector.is_empty
    assert selector.matches(None)
    assert selector.matches({"a": "b"})
    assert selector == LabelSelector.everything()


def test_parse_empty_value_set_means_the_empty_value() -> None:
    (requirement,) = LabelSelector.parse("x in ()").requirements
    assert requirement == Requirement("x", Operator.IN, ("",))


def test_parse_keeps_requirements_sorted_by_key_and_values_sorted() -> None:
    selector = LabelSelector.parse("b notin (z,y),a in (c,b)")
    assert [r.key for r in selector.requirements] == ["a", "b"]
    assert selector.requirements[1].values == ("y", "z")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x=a b", "found 'b', expected: ',' or 'end of string'"),
        (
            "x y",
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("x=a,", "found '', expected: identifier after ','"),
        (",", "found ',', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x in (a,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x in (a)b", "found 'b', expected: ',' or 'end of string'"),
        ("x===a", "unable to parse requirement: found '=', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("-x=a", f'unable to parse requirement: <nil>: Invalid value: "-x": {NAME_ERROR}'),
        (
            "x=a@b",
            f'unable to parse requirement: values[0][x]: Invalid value: "a@b": {VALUE_ERROR}',
        ),
        (
            "x>a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x=" + "a" * 64,
            f'unable to parse requirement: values[0][x]: Invalid value: "{"a" * 64}": '
            "must be no more than 63 bytes",
        ),
        (
            "a/b/c",
            'unable to parse requirement: <nil>: Invalid value: "a/b/c": a valid label key '
            + NAME_ERROR.removeprefix("name part ")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "Example.com/x",
            'unable to parse requirement: <nil>: Invalid value: "Example.com/x": '
            + SUBDOMAIN_ERROR,
        ),
        (
            "/x",
            'unable to parse requirement: <nil>: Invalid value: "/x": '
            "prefix part must be non-empty",
        ),
        (
            "p/",
            'unable to parse requirement: <nil>: Invalid value: "p/": '
            f"name part must be non-empty; {NAME_ERROR}",
        ),
    ],
)
def test_parse_rejects_with_apimachinery_message(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        LabelSelector.parse(text)
    assert str(caught.value) == message


def test_selector_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        LabelSelector.parse("x in")


# --- label selectors: matching ---

_MATCH_CASES: list[tuple[str, dict[str, str] | None, bool]] = [
    ("x=a", {"x": "a"}, True),
    ("x=a", {"x": "b"}, False),
    ("x=a", {}, False),
    ("x=", {}, False),
    ("x=", {"x": ""}, True),
    ("x==a", {"x": "a", "y": "b"}, True),
    ("x!=a", {}, True),
    ("x!=a", {"x": "a"}, False),
    ("x!=a", {"x": "b"}, True),
    ("x in (a,b)", {"x": "b"}, True),
    ("x in (a,b)", {"x": "c"}, False),
    ("x in (a,b)", None, False),
    ("x notin (a,b)", {}, True),
    ("x notin (a,b)", {"x": "a"}, False),
    ("x notin (a,b)", {"x": "c"}, True),
    ("x", {"x": ""}, True),
    ("x", {"y": "x"}, False),
    ("!x", {"y": "x"}, True),
    ("!x", {"x": "y"}, False),
    ("x>1", {"x": "2"}, True),
    ("x>1", {"x": "1"}, False),
    ("x>1", {"x": "two"}, False),
    ("x>1", {}, False),
    ("x<1", {"x": "-5"}, True),
    ("x<1", {"x": "+0"}, True),
    ("x<1", {"x": " 0"}, False),
    ("x=a,y", {"x": "a", "y": ""}, True),
    ("x=a,y", {"x": "a"}, False),
]


@pytest.mark.parametrize(("text", "labels", "expected"), _MATCH_CASES)
def test_matches(text: str, labels: dict[str, str] | None, expected: bool) -> None:
    selector = LabelSelector.parse(text)
    assert selector.matches(labels) is expected
    if labels is not None:
        assert all(r.matches(labels) for r in selector.requirements) is expected


def test_nothing_selector_matches_nothing() -> None:
    nothing = LabelSelector.nothing()
    assert not nothing.matches({})
    assert not nothing.is_empty
    assert nothing != LabelSelector.everything()
    assert str(nothing) == ""


def test_equality_requirements_come_from_exact_and_single_value_in() -> None:
    selector = LabelSelector.parse("a=1,b in (2),c in (3,4),d!=5,e==6,f,a=7")
    assert dict(selector.equality_requirements()) == {"a": "1", "b": "2", "e": "6"}


def test_from_labels_requires_every_pair() -> None:
    selector = LabelSelector.from_labels({"b": "2", "a": "1"})
    assert str(selector) == "a=1,b=2"
    assert selector.matches({"a": "1", "b": "2", "c": "3"})
    assert not selector.matches({"a": "1"})
    assert LabelSelector.from_labels({}).is_empty


# --- label selectors: metav1.LabelSelector objects ---


def test_from_dict_none_selects_nothing_and_empty_selects_everything() -> None:
    assert LabelSelector.from_dict(None) == LabelSelector.nothing()
    assert LabelSelector.from_dict({}).is_empty
    assert LabelSelector.from_dict({"matchLabels": {}, "matchExpressions": []}).is_empty


def test_from_dict_combines_labels_and_expressions() -> None:
    selector = LabelSelector.from_dict(
        {
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "env", "operator": "NotIn", "values": ["prod"]},
                {"key": "owner", "operator": "Exists"},
                {"key": "legacy", "operator": "DoesNotExist", "values": []},
            ],
        }
    )
    assert str(selector) == "app=web,env notin (prod),!legacy,owner,tier in (a,b)"
    assert selector.matches({"app": "web", "tier": "a", "owner": "me"})
    assert not selector.matches({"app": "web", "tier": "a", "owner": "me", "legacy": ""})


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        (
            {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
            '"Bogus" is not a valid label selector operator',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In"}]},
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]},
            'values: Invalid value: ["b"]: values set must be empty for exists and does not exist',
        ),
        (
            {"matchLabels": {"a": "b c"}},
            f'values[0][a]: Invalid value: "b c": {VALUE_ERROR}',
        ),
        (
            {"matchExpressions": [{"key": "-a", "operator": "NotIn", "values": []}]},
            f'[key: Invalid value: "-a": {NAME_ERROR}, values: Invalid value: null: '
            "for 'in', 'notin' operators, values set can't be empty]",
        ),
    ],
)
def test_from_dict_rejects_with_apimachinery_message(obj: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        LabelSelector.from_dict(obj)
    assert str(caught.value) == message


def test_requirement_rejects_wrong_value_count() -> None:
    with pytest.raises(SelectorError, match="exact-match compatibility requires one single value"):
        Requirement("a", Operator.EQUALS, ("b", "c"))
    with pytest.raises(SelectorError, match='Unsupported value: "~"'):
        Requirement("a", "~", ())  # type: ignore[arg-type]


# --- label selectors: properties ---

_ALNUM = string.ascii_letters + string.digits
_LOWER = string.ascii_lowercase + string.digits
_names = st.one_of(
    st.sampled_from(_ALNUM),
    st.builds(
        "".join,
        st.tuples(
            st.sampled_from(_ALNUM), st.text(_ALNUM + "-_.", max_size=8), st.sampled_from(_ALNUM)
        ),
    ),
)
_prefixes = st.lists(st.text(_LOWER, min_size=1, max_size=4), min_size=1, max_size=3).map(".".join)
_keys = st.one_of(_names, st.builds(lambda p, n: f"{p}/{n}", _prefixes, _names))
_values = st.one_of(st.just(""), _names)


@st.composite
def _requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_keys)
    op = draw(st.sampled_from(list(Operator)))
    if op in (Operator.EXISTS, Operator.DOES_NOT_EXIST):
        values: tuple[str, ...] = ()
    elif op in (Operator.IN, Operator.NOT_IN):
        values = tuple(draw(st.lists(_values, min_size=1, max_size=4)))
    elif op in (Operator.GREATER_THAN, Operator.LESS_THAN):
        values = (str(draw(st.integers(min_value=0, max_value=10**12))),)
    else:
        values = (draw(_values),)
    return Requirement(key, op, values)


@given(st.lists(_requirements(), max_size=5), st.sampled_from(["", " ", "\t", " \n "]))
def test_canonical_string_reparses_to_equal_selector(
    requirements: list[Requirement], space: str
) -> None:
    selector = LabelSelector(requirements)
    text = f"{space},{space}".join(
        str(r).replace(" in (", f"{space} in {space}(").replace("notin (", f"notin{space} (")
        for r in requirements
    )
    parsed = LabelSelector.parse(text)
    assert parsed == selector
    assert LabelSelector.parse(str(parsed)) == parsed


@given(st.text(alphabet=string.ascii_letters[:6] + "0123-./!=<>(), \t", max_size=30))
def test_parse_of_any_text_fails_cleanly_or_round_trips(text: str) -> None:
    try:
        selector = LabelSelector.parse(text)
    except SelectorError:
        return
    assert LabelSelector.parse(str(selector)) == selector


@given(st.lists(_requirements(), max_size=4), st.dictionaries(_keys, _values, max_size=4))
def test_selector_matches_exactly_when_every_requirement_does(
    requirements: list[Requirement], labels: dict[str, str]
) -> None:
    selector = LabelSelector(requirements)
    assert selector.matches(labels) == all(r.matches(labels) for r in requirements)
    if selector.matches(labels):
        for key, value in selector.equality_requirements().items():
            assert labels[key] == value


# --- field selectors ---


def test_field_selector_parses_and_matches_dotted_paths() -> None:
    selector = FieldSelector.parse("metadata.name=foo,metadata.namespace!=bar")
    assert str(selector) == "metadata.name=foo,metadata.namespace!=bar"
    assert selector.fields() == {"metadata.name", "metadata.namespace"}
    assert selector.matches({"metadata": {"name": "foo", "namespace": "default"}})
    assert not selector.matches({"metadata": {"name": "foo", "namespace": "bar"}})
    assert not selector.matches({"metadata": {"name": "other"}})


def test_field_selector_double_equals_is_equals() -> None:
    (requirement,) = FieldSelector.parse("spec.nodeName==n1").requirements
    assert requirement == FieldRequirement("spec.nodeName", Operator.EQUALS, "n1")
    assert str(requirement) == "spec.nodeName=n1"


def test_field_selector_missing_and_non_string_fields() -> None:
    assert FieldSelector.parse("spec.nodeName=").matches({"spec": {}})
    assert FieldSelector.parse("spec.nodeName!=").matches({"spec": {"nodeName": "n1"}})
    assert FieldSelector.parse("spec.hostNetwork=true").matches({"spec": {"hostNetwork": True}})
    assert FieldSelector.parse("spec.replicas=3").matches({"spec": {"replicas": 3}})
    assert FieldSelector.parse("spec.x=").matches({"spec": {"x": {"nested": 1}}})
    assert FieldSelector.parse("a.b=").matches({"a": "not a mapping"})


def test_field_selector_unescapes_values_and_escapes_them_back() -> None:
    selector = FieldSelector.parse(r"metadata.name=a\,b\=c\\d")
    (requirement,) = selector.requirements
    assert requirement.value == "a,b=c\\d"
    assert str(selector) == r"metadata.name=a\,b\=c\\d"
    assert selector.matches({"metadata": {"name": "a,b=c\\d"}})


def test_field_selector_skips_empty_terms_and_sorts() -> None:
    selector = FieldSelector.parse(",b=2,,a=1,")
    assert str(selector) == "a=1,b=2"
    assert FieldSelector.parse("").is_empty
    assert FieldSelector.parse(",").is_empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("foo", "invalid selector: 'foo'; can't understand 'foo'"),
        ("a=b,foo", "invalid selector: 'a=b,foo'; can't understand 'foo'"),
        ("a=b=c", "invalid field selector: unescaped character in value: 61"),
        ("a=b,c=d,e", "invalid selector: 'a=b,c=d,e'; can't understand 'e'"),
        (r"a=b\x", r"invalid field selector: invalid escape sequence: \x"),
        ("a=b\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_field_selector_rejects_with_apimachinery_message(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        FieldSelector.parse(text)
    assert str(caught.value) == message


def test_field_selector_splits_at_first_operator() -> None:
    (requirement,) = FieldSelector.parse("a!=b").requirements
    assert (requirement.field, requirement.operator, requirement.value) == (
        "a",
        Operator.NOT_EQUALS,
        "b",
    )
    (requirement,) = FieldSelector.parse(" a = b ").requirements
    assert (requirement.field, requirement.value) == (" a ", " b ")


def test_field_selector_validate_names_the_unsupported_label() -> None:
    selector = FieldSelector.parse("metadata.name=a,spec.foo=b")
    selector.validate({"metadata.name", "spec.foo"})
    with pytest.raises(SelectorError) as caught:  # a kind with field labels of its own
        selector.validate({"metadata.name", "metadata.namespace", "spec.nodeName"})
    assert str(caught.value) == "field label not supported: spec.foo"
    with pytest.raises(SelectorError) as caught:  # a kind with only the generic two
        selector.validate({"metadata.name", "metadata.namespace"})
    assert str(caught.value) == ('"spec.foo" is not a known field selector: only '
                                 '"metadata.name", "metadata.namespace"')


def test_field_selector_matches_a_precomputed_field_set() -> None:
    selector = FieldSelector.parse("source=kubelet,type!=Warning")
    assert selector.matches_fields({"source": "kubelet", "type": "Normal"})
    assert not selector.matches_fields({"source": "kubelet", "type": "Warning"})
    assert not selector.matches_fields({})


def test_field_selector_equality_requirements() -> None:
    selector = FieldSelector.parse("metadata.name=a,metadata.namespace!=b")
    assert dict(selector.equality_requirements()) == {"metadata.name": "a"}
    assert FieldSelector.from_fields({"b": "2", "a": "1"}) == FieldSelector.parse("a=1,b=2")


def test_field_requirement_rejects_set_operators() -> None:
    with pytest.raises(SelectorError):
        FieldRequirement("a", Operator.IN, "b")


@given(st.text(alphabet="ab.=!,\\ x", max_size=24))
def test_field_parse_of_any_text_fails_cleanly_or_round_trips(text: str) -> None:
    try:
        selector = FieldSelector.parse(text)
    except SelectorError:
        return
    assert FieldSelector.parse(str(selector)) == selector


@given(
    st.lists(
        st.builds(
            FieldRequirement,
            st.sampled_from(["metadata.name", "metadata.namespace", "status.phase"]),
            st.sampled_from([Operator.EQUALS, Operator.NOT_EQUALS]),
            st.text(alphabet="a=,\\!", max_size=6),
        ),
        max_size=4,
    )
)
def test_field_canonical_string_reparses_to_equal_selector(
    requirements: list[FieldRequirement],
) -> None:
    selector = FieldSelector(requirements)
    assert FieldSelector.parse(str(selector)) == selector
