"""reconcilekit.crd: a definition a structural schema cannot say fails at once, naming the
class and the field (never a traceback from inside typing, never at install time)."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from reconcilekit.crd import (
    CustomKind,
    ListType,
    Maximum,
    Minimum,
    MinLength,
    Pattern,
    Version,
)


class Node(TypedDict):
    name: str
    children: NotRequired[list[Node]]


class Outer(TypedDict):
    inner: Inner


class Inner(TypedDict):
    back: NotRequired[Outer]


class WithUnion(TypedDict):
    value: int | float


class WithTuple(TypedDict):
    pair: tuple[int, int]


class WithForeign(TypedDict):
    value: Annotated[int, "a string is not a marker"]


class WithWrongMarker(TypedDict):
    count: Annotated[int, MinLength(1)]


class WithPatternOnList(TypedDict):
    names: Annotated[list[str], Pattern("^a$")]


class WithTwice(TypedDict):
    count: Annotated[int, Minimum(0), Minimum(1)]


class WithBareList(TypedDict):
    names: list  # type: ignore[type-arg]


class WithIntKeys(TypedDict):
    byNumber: dict[int, str]


class Keyed(TypedDict):
    name: str


class WithMapWithoutKeys(TypedDict):
    items: Annotated[list[Keyed], ListType("map")]


class WithMapOfStrings(TypedDict):
    items: Annotated[list[str], ListType("map", keys=("name",))]


class WithMarkerOnAny(TypedDict):
    value: Annotated[Any, Maximum(1)]


class WithUnresolvable(TypedDict):
    value: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


def shape(spec: type) -> type:
    """A kind's shape with ``spec`` as its spec."""
    return TypedDict("Shape", {"apiVersion": str, "kind": str,  # type: ignore[operator]
                               "metadata": dict[str, Any], "spec": spec})


def define(spec: type) -> CustomKind[Any]:
    return CustomKind(group="crd.reconcilekit.dev", kind="Bad", plural="bads",
                      versions=[Version("v1", shape(spec), storage=True)])


@pytest.mark.parametrize(("spec", "error", "message"), [
    (Node, ValueError, r"^Node\.children\[\*\]: Node contains itself \(Node -> Node\); a "
                       r"CRD's structural schema cannot recurse"),
    (Outer, ValueError, r"^Inner\.back: Outer contains itself \(Outer -> Inner -> Outer\)"),
    (WithUnion, TypeError, r"^WithUnion\.value: a union of int, float cannot be said in a "
                           r"structural schema \(only X \| None and int \| str\)"),
    (WithTuple, TypeError, r"^WithTuple\.pair: tuple\[int, int\] cannot be said in a CRD "
                           r"schema"),
    (WithForeign, TypeError, r"^WithForeign\.value: 'a string is not a marker' in "
                             r"Annotated\[\.\.\.\] is not a marker of reconcilekit\.crd"),
    (WithWrongMarker, TypeError, r"^WithWrongMarker\.count: MinLength applies to string "
                                 r"fields, not to integer"),
    (WithPatternOnList, TypeError, r"^WithPatternOnList\.names: Pattern applies to string "
                                   r"fields, not to array"),
    (WithTwice, ValueError, r"^WithTwice\.count: minimum is given twice \(0 and 1\)"),
    (WithBareList, TypeError, r"^WithBareList\.names: a list names its items' type"),
    (WithIntKeys, TypeError, r"^WithIntKeys\.byNumber: the keys of a map are strings, not "
                             r"int"),
    (WithMapWithoutKeys, ValueError, r"^WithMapWithoutKeys\.items: ListType\('map'\) takes "
                                     r"keys, and only it does"),
    (WithMapOfStrings, TypeError, r"^WithMapOfStrings\.items: ListType\('map'\) needs items "
                                  r"that are objects with the keys \['name'\] as fields"),
    (WithMarkerOnAny, TypeError, r"^WithMarkerOnAny\.value: Maximum applies to integer or "
                                  r"number fields, not to any"),
    (WithUnresolvable, TypeError, r"^WithUnresolvable: its annotations cannot be resolved "
                                  r"\(name 'NotDefinedAnywhere' is not defined\)"),
])
def test_a_shape_a_structural_schema_cannot_say_is_refused_naming_the_field(
        spec: type, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        define(spec)


class Good(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]


def test_exactly_one_served_storage_version() -> None:
    def kind(*versions: Version[Any]) -> CustomKind[Any]:
        return CustomKind(group="crd.reconcilekit.dev", kind="Bad", plural="bads",
                          versions=versions)

    with pytest.raises(ValueError, match=r"^Bad: exactly one version is the storage version "
                                         r"\(storage=True\), not 2 \(v1, v2\)$"):
        kind(Version("v1", Good, storage=True), Version("v2", Good, storage=True))
    with pytest.raises(ValueError, match=r"^Bad: exactly one version is the storage version "
                                         r"\(storage=True\), not 0 \(none\)$"):
        kind(Version("v1", Good), Version("v2", Good))
    with pytest.raises(ValueError, match=r"^Bad: a kind has at least one version$"):
        kind()
    with pytest.raises(ValueError, match=r"^Bad: versions are named twice: \['v1', 'v1'\]$"):
        kind(Version("v1", Good, storage=True), Version("v1", Good))
    with pytest.raises(ValueError, match=r"^Bad: the storage version v1 is served$"):
        kind(Version("v1", Good, storage=True, served=False))


def test_a_shape_is_a_typeddict() -> None:
    with pytest.raises(TypeError, match=r"^the shape of a kind is a TypedDict class, not "
                                        r"<class 'dict'>$"):
        CustomKind(group="crd.reconcilekit.dev", kind="Bad", plural="bads",
                   versions=[Version("v1", dict, storage=True)])


def test_short_names_are_a_sequence_of_names() -> None:
    with pytest.raises(TypeError, match="short_names and categories are sequences of names"):
        CustomKind(group="crd.reconcilekit.dev", kind="Bad", plural="bads", short_names="bd",
                   versions=[Version("v1", Good, storage=True)])
