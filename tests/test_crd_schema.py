"""reconcilekit.crd: each Python type and marker becomes the schema kube-apiserver expects.

The shapes are at module level: their annotations (strings, under
``from __future__ import annotations``) must resolve.
"""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal, NotRequired, Required, TypedDict

import pytest

from reconcilekit.crd import (
    CustomKind,
    Default,
    Description,
    EmbeddedResource,
    Format,
    Int32,
    Int64,
    ListType,
    MapType,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    Pattern,
    PreserveUnknownFields,
    PrinterColumn,
    Rule,
    Scale,
    Version,
    marked,
)


class Color(enum.StrEnum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Item(TypedDict):
    """One keyed item."""

    key: str
    value: NotRequired[Annotated[str, Default("none")]]


@marked(Rule("self.min <= self.max", message="min must not exceed max", reason="FieldValueInvalid",
             field_path=".min"))
class Range(TypedDict, total=False):
    min: Required[int]
    max: int


class Everything(TypedDict):
    """Every feature once."""

    text: str
    count: int
    ratio: float
    flag: bool
    small: Int32
    big: Int64
    maybe: NotRequired[str | None]
    port: NotRequired[int | str]
    port_or_none: NotRequired[int | str | None]
    mode: NotRequired[Literal["fast", "slow"]]
    weight: NotRequired[Literal[1, 2, 3]]
    color: NotRequired[Color]
    level: NotRequired[Level]
    tags: NotRequired[Annotated[list[Annotated[str, MinLength(1)]], ListType("set"),
                                MinItems(1), MaxItems(5)]]
    items: NotRequired[Annotated[list[Item], ListType("map", keys=("key",))]]
    labels: NotRequired[Annotated[dict[str, str], MaxProperties(3), MinProperties(1)]]
    free: NotRequired[dict[str, Any]]
    anything: NotRequired[Any]
    bare: NotRequired[dict]  # type: ignore[type-arg]
    kept: NotRequired[Annotated[Item, PreserveUnknownFields()]]
    embedded: NotRequired[Annotated[dict[str, Any], EmbeddedResource()]]
    granular: NotRequired[Annotated[dict[str, int], MapType("atomic")]]
    bounded: NotRequired[Annotated[int, Minimum(0, exclusive=True), Maximum(10),
                                   MultipleOf(2)]]
    fraction: NotRequired[Annotated[float, Minimum(0.5), Maximum(1.5, exclusive=True)]]
    name: NotRequired[Annotated[str, MinLength(2), MaxLength(5), Pattern("^[a-z]+$")]]
    when: NotRequired[Annotated[str, Format("date-time")]]
    described: NotRequired[Annotated[Item, Description("the field's own words")]]
    defaulted: NotRequired[Annotated[Range, Default({"min": 1})]]
    immutable: NotRequired[Annotated[str, Rule("self == oldSelf", message="immutable")]]
    computed: NotRequired[Annotated[str, Rule("self != 'x'",
                                              message_expression="'no ' + self")]]


class EverythingObject(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Everything


def spec_schema() -> dict[str, Any]:
    kind = CustomKind(group="crd.reconcilekit.dev", kind="Everything", plural="everythings",
                      versions=[Version("v1", EverythingObject, storage=True)])
    root = kind.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema: dict[str, Any] = root["properties"]["spec"]
    return schema


def test_the_root_names_apiversion_kind_and_metadata_without_requiring_them() -> None:
    kind = CustomKind(group="crd.reconcilekit.dev", kind="Everything", plural="everythings",
                      versions=[Version("v1", EverythingObject, storage=True)])
    root = kind.crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["type"] == "object"
    assert {k: root["properties"][k] for k in ("apiVersion", "kind", "metadata")} == {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"}}
    assert root["required"] == ["spec"]


def test_scalars_and_requiredness() -> None:
    spec = spec_schema()
    props = spec["properties"]
    assert spec["description"] == "Every feature once."
    assert spec["required"] == ["text", "count", "ratio", "flag", "small", "big"]
    assert props["text"] == {"type": "string"}
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["flag"] == {"type": "boolean"}
    assert props["small"] == {"type": "integer", "format": "int32"}
    assert props["big"] == {"type": "integer", "format": "int64"}


def test_nullable_and_int_or_string() -> None:
    props = spec_schema()["properties"]
    assert props["maybe"] == {"type": "string", "nullable": True}
    assert props["port"] == {"x-kubernetes-int-or-string": True}
    assert props["port_or_none"] == {"x-kubernetes-int-or-string": True, "nullable": True}


def test_enums_from_literals_and_enum_classes() -> None:
    props = spec_schema()["properties"]
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert props["weight"] == {"type": "integer", "enum": [1, 2, 3]}
    assert props["color"] == {"type": "string", "enum": ["red", "green"]}
    assert props["level"] == {"type": "integer", "enum": [1, 2]}


def test_lists_with_items_bounds_and_list_types() -> None:
    props = spec_schema()["properties"]
    assert props["tags"] == {"type": "array", "items": {"type": "string", "minLength": 1},
                             "x-kubernetes-list-type": "set", "minItems": 1, "maxItems": 5}
    assert props["items"] == {
        "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"],
        "items": {"type": "object", "description": "One keyed item.", "required": ["key"],
                  "properties": {"key": {"type": "string"},
                                 "value": {"type": "string", "default": "none"}}}}


def test_maps_free_form_and_embedded_objects() -> None:
    props = spec_schema()["properties"]
    assert props["labels"] == {"type": "object", "additionalProperties": {"type": "string"},
                               "maxProperties": 3, "minProperties": 1}
    free = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert props["free"] == free
    assert props["bare"] == free
    assert props["anything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["kept"]["x-kubernetes-preserve-unknown-fields"] is True
    assert props["kept"]["properties"]["key"] == {"type": "string"}
    assert props["embedded"] == {**free, "x-kubernetes-embedded-resource": True}
    assert props["granular"] == {"type": "object", "additionalProperties": {"type": "integer"},
                                 "x-kubernetes-map-type": "atomic"}


def test_bounds_lengths_patterns_and_formats() -> None:
    props = spec_schema()["properties"]
    assert props["bounded"] == {"type": "integer", "minimum": 0, "exclusiveMinimum": True,
                                "maximum": 10, "multipleOf": 2}
    assert props["fraction"] == {"type": "number", "minimum": 0.5, "maximum": 1.5,
                                 "exclusiveMaximum": True}
    assert props["name"] == {"type": "string", "minLength": 2, "maxLength": 5,
                             "pattern": "^[a-z]+$"}
    assert props["when"] == {"type": "string", "format": "date-time"}


def test_descriptions_defaults_and_rules_at_every_level() -> None:
    props = spec_schema()["properties"]
    assert props["described"]["description"] == "the field's own words"
    assert props["defaulted"] == {
        "type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
        "required": ["min"], "default": {"min": 1},
        "x-kubernetes-validations": [{"rule": "self.min <= self.max",
                                      "message": "min must not exceed max",
                                      "reason": "FieldValueInvalid", "fieldPath": ".min"}]}
    assert props["immutable"]["x-kubernetes-validations"] == [
        {"rule": "self == oldSelf", "message": "immutable"}]
    assert props["computed"]["x-kubernetes-validations"] == [
        {"rule": "self != 'x'", "messageExpression": "'no ' + self"}]


class Spec(TypedDict):
    replicas: Int32


class Status(TypedDict, total=False):
    replicas: Int32
    selector: str
    ready: bool
    since: Annotated[str, Format("date-time")]


@marked(Rule("self.metadata.name.size() < 20", message="short names"))
class Scaled(TypedDict):
    """A kind with the scale subresource."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[Spec]
    status: NotRequired[Status]


class NoStatus(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[Spec]


def test_names_scope_versions_subresources_and_columns() -> None:
    kind = CustomKind(
        group="crd.reconcilekit.dev", kind="Scaled", plural="scaleds", namespaced=False,
        short_names=["sc"], categories=["all", "reconcilekit"],
        versions=[
            Version[Any]("v1alpha1", NoStatus, deprecated=True,
                         deprecation_warning="use v1"),
            Version("v1", Scaled, storage=True,
                    scale=Scale(label_selector_path=".status.selector"),
                    printer_columns=[
                        PrinterColumn("Replicas", ".spec.replicas"),
                        PrinterColumn("Ready", ".status.ready", priority=1),
                        PrinterColumn("Since", ".status.since", description="since when"),
                        PrinterColumn("Age", ".metadata.creationTimestamp"),
                        PrinterColumn("Other", ".status.nothing", format="name")])])
    crd = kind.crd()
    assert crd["metadata"] == {"name": "scaleds.crd.reconcilekit.dev"}
    spec = crd["spec"]
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {"kind": "Scaled", "listKind": "ScaledList", "plural": "scaleds",
                             "singular": "scaled", "shortNames": ["sc"],
                             "categories": ["all", "reconcilekit"]}
    old, new = spec["versions"]
    assert (old["name"], old["served"], old["storage"], old["deprecated"],
            old["deprecationWarning"]) == ("v1alpha1", True, False, True, "use v1")
    assert "subresources" not in old and "additionalPrinterColumns" not in old
    assert new["subresources"] == {"status": {}, "scale": {
        "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector"}}
    assert new["additionalPrinterColumns"] == [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready", "priority": 1},
        {"name": "Since", "type": "date", "jsonPath": ".status.since",
         "description": "since when"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Other", "type": "string", "jsonPath": ".status.nothing", "format": "name"}]
    root = new["schema"]["openAPIV3Schema"]
    assert root["description"] == "A kind with the scale subresource."
    assert root["x-kubernetes-validations"] == [{"rule": "self.metadata.name.size() < 20",
                                                 "message": "short names"}]
    assert "required" not in root


def test_the_status_subresource_follows_the_shape_unless_told() -> None:
    def subresources(version: Version[Any]) -> Any:
        kind = CustomKind(group="crd.reconcilekit.dev", kind="Scaled", plural="scaleds",
                          versions=[version])
        return kind.crd()["spec"]["versions"][0].get("subresources")

    assert subresources(Version("v1", NoStatus, storage=True)) is None
    assert subresources(Version("v1", NoStatus, storage=True, status=True)) == {"status": {}}
    assert subresources(Version("v1", Scaled, storage=True, status=False)) is None


def test_resources_carry_their_definition_and_equal_plain_resources() -> None:
    from reconcilekit import Resource, TypedResource

    kind = CustomKind(group="crd.reconcilekit.dev", kind="Scaled", plural="scaleds",
                      versions=[Version[Any]("v1alpha1", NoStatus),
                                Version("v1", Scaled, storage=True)])
    resource = kind.resource
    assert isinstance(resource, TypedResource)
    assert resource.definition is kind
    assert resource == Resource("crd.reconcilekit.dev", "v1", "Scaled", "scaleds")
    assert hash(resource) == hash(Resource("crd.reconcilekit.dev", "v1", "Scaled", "scaleds"))
    assert kind.resource_for("v1alpha1") == Resource("crd.reconcilekit.dev", "v1alpha1",
                                                     "Scaled", "scaleds")
    assert getattr(kind.resource_for("v1alpha1"), "definition", None) is kind
    with pytest.raises(KeyError, match="Scaled has no version 'v2' \\(it has v1alpha1, v1\\)"):
        kind.resource_for("v2")


def test_the_crd_is_the_same_on_every_call_and_a_new_dict_each_time() -> None:
    import json

    kind = CustomKind(group="crd.reconcilekit.dev", kind="Everything", plural="everythings",
                      versions=[Version("v1", EverythingObject, storage=True)])
    first, second = kind.crd(), kind.crd()
    assert json.dumps(first) == json.dumps(second)
    first["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].clear()
    assert json.dumps(kind.crd()) == json.dumps(second)
