"""Markers: what ``typing.Annotated[T, ...]`` adds to a field's schema.

Each marker is a frozen dataclass naming one OpenAPI v3 keyword (or one
Kubernetes extension) of a CustomResourceDefinition's structural schema,
as kubebuilder's ``+kubebuilder:validation:...`` markers do in Go::

    replicas: Annotated[int, Minimum(0), Maximum(100), Default(1)]

Invariants:
  * a marker only writes its own keywords into the schema of the field it
    annotates (a ``Rule`` adds one entry to ``x-kubernetes-validations``);
  * a marker that does not apply to the field's type (``MinLength`` on an
    integer, ``ListType`` on a string) raises TypeError naming the field;
  * the same keyword given twice on one field (two ``Minimum``) raises
    ValueError naming the field, instead of one silently winning.

A marker on a ``TypedDict`` class (:func:`marked`) applies wherever the
class is used, the root of a kind included (a rule across spec and status).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, TypeAlias, TypeVar

__all__ = [
    "Default",
    "Description",
    "EmbeddedResource",
    "Format",
    "Int32",
    "Int64",
    "ListType",
    "MapType",
    "Marker",
    "MaxItems",
    "MaxLength",
    "MaxProperties",
    "Maximum",
    "MinItems",
    "MinLength",
    "MinProperties",
    "Minimum",
    "MultipleOf",
    "Pattern",
    "PreserveUnknownFields",
    "Rule",
    "class_markers",
    "marked",
]

Schema = dict[str, Any]
_NUMBERS = ("integer", "number")


def _kind(schema: Schema) -> str:
    """The field's type as markers see it: an OpenAPI type, ``int-or-string`` or ``any``."""
    if schema.get("x-kubernetes-int-or-string"):
        return "int-or-string"
    return str(schema.get("type", "any"))


class Marker:
    """A keyword of a field's schema, given in ``Annotated[...]`` (or :func:`marked`).

    ``applies_to`` names the types the marker makes sense for (empty: any).
    """

    applies_to: ClassVar[tuple[str, ...]] = ()

    def keywords(self) -> Schema:
        """The schema keywords this marker sets."""
        raise NotImplementedError

    def apply(self, schema: Schema, where: str) -> None:
        """Write this marker's keywords into ``schema``, the schema of field ``where``."""
        kind = _kind(schema)
        if self.applies_to and kind not in self.applies_to:
            raise TypeError(f"{where}: {type(self).__name__} applies to "
                            f"{' or '.join(self.applies_to)} fields, not to {kind}")
        for key, value in self.keywords().items():
            if key in schema and schema[key] != value:
                raise ValueError(f"{where}: {key} is given twice ({schema[key]!r} and "
                                 f"{value!r})")
            schema[key] = value


@dataclass(frozen=True, slots=True)
class Description(Marker):
    """``description``: what the field means (a ``TypedDict``'s docstring describes its object)."""

    text: str

    def keywords(self) -> Schema:
        return {"description": self.text}


@dataclass(frozen=True, slots=True)
class Default(Marker):
    """``default``: the value the API server writes when the field is absent (or null on a
    non-nullable field). Given as JSON (dicts, lists, str, int, float, bool)."""

    value: Any

    def keywords(self) -> Schema:
        return {"default": copy.deepcopy(self.value)}


@dataclass(frozen=True, slots=True)
class Minimum(Marker):
    """``minimum`` (and ``exclusiveMinimum: true`` when ``exclusive``)."""

    applies_to: ClassVar[tuple[str, ...]] = _NUMBERS
    value: int | float
    exclusive: bool = False

    def keywords(self) -> Schema:
        return {"minimum": self.value, **({"exclusiveMinimum": True} if self.exclusive else {})}


@dataclass(frozen=True, slots=True)
class Maximum(Marker):
    """``maximum`` (and ``exclusiveMaximum: true`` when ``exclusive``)."""

    applies_to: ClassVar[tuple[str, ...]] = _NUMBERS
    value: int | float
    exclusive: bool = False

    def keywords(self) -> Schema:
        return {"maximum": self.value, **({"exclusiveMaximum": True} if self.exclusive else {})}


@dataclass(frozen=True, slots=True)
class MultipleOf(Marker):
    """``multipleOf``: the value divided by it is a whole number."""

    applies_to: ClassVar[tuple[str, ...]] = _NUMBERS
    value: int | float

    def keywords(self) -> Schema:
        return {"multipleOf": self.value}


@dataclass(frozen=True, slots=True)
class MinLength(Marker):
    """``minLength`` of a string, in characters."""

    applies_to: ClassVar[tuple[str, ...]] = ("string",)
    value: int

    def keywords(self) -> Schema:
        return {"minLength": self.value}


@dataclass(frozen=True, slots=True)
class MaxLength(Marker):
    """``maxLength`` of a string, in characters (CEL rules' cost estimates rely on it)."""

    applies_to: ClassVar[tuple[str, ...]] = ("string",)
    value: int

    def keywords(self) -> Schema:
        return {"maxLength": self.value}


@dataclass(frozen=True, slots=True)
class Pattern(Marker):
    """``pattern``: an ECMA 262 regular expression the string must match (unanchored)."""

    applies_to: ClassVar[tuple[str, ...]] = ("string",)
    regex: str

    def keywords(self) -> Schema:
        return {"pattern": self.regex}


@dataclass(frozen=True, slots=True)
class Format(Marker):
    """``format``: ``int32``/``int64`` on integers, ``date-time``, ``date``, ``byte``,
    ``duration``, ``uri``, ``uuid``, ... on strings (the ones kube-openapi checks)."""

    applies_to: ClassVar[tuple[str, ...]] = ("string", "integer", "number")
    name: str

    def keywords(self) -> Schema:
        return {"format": self.name}


Int32: TypeAlias = Annotated[int, Format("int32")]
"""An integer of ``format: int32`` (Go's ``int32``: replica counts, ports)."""
Int64: TypeAlias = Annotated[int, Format("int64")]
"""An integer of ``format: int64`` (Go's ``int64``: generations, sizes)."""


@dataclass(frozen=True, slots=True)
class MinItems(Marker):
    """``minItems`` of a list."""

    applies_to: ClassVar[tuple[str, ...]] = ("array",)
    value: int

    def keywords(self) -> Schema:
        return {"minItems": self.value}


@dataclass(frozen=True, slots=True)
class MaxItems(Marker):
    """``maxItems`` of a list."""

    applies_to: ClassVar[tuple[str, ...]] = ("array",)
    value: int

    def keywords(self) -> Schema:
        return {"maxItems": self.value}


@dataclass(frozen=True, slots=True)
class MinProperties(Marker):
    """``minProperties`` of an object or map."""

    applies_to: ClassVar[tuple[str, ...]] = ("object",)
    value: int

    def keywords(self) -> Schema:
        return {"minProperties": self.value}


@dataclass(frozen=True, slots=True)
class MaxProperties(Marker):
    """``maxProperties`` of an object or map."""

    applies_to: ClassVar[tuple[str, ...]] = ("object",)
    value: int

    def keywords(self) -> Schema:
        return {"maxProperties": self.value}


@dataclass(frozen=True, slots=True)
class ListType(Marker):
    """``x-kubernetes-list-type``: ``atomic`` (replaced whole by apply), ``set`` (unique
    scalars) or ``map`` (objects unique by ``keys``: ``x-kubernetes-list-map-keys``)."""

    applies_to: ClassVar[tuple[str, ...]] = ("array",)
    type: Literal["atomic", "set", "map"]
    keys: Sequence[str] = ()

    def keywords(self) -> Schema:
        return {"x-kubernetes-list-type": self.type,
                **({"x-kubernetes-list-map-keys": list(self.keys)} if self.keys else {})}

    def apply(self, schema: Schema, where: str) -> None:
        if self.type not in ("atomic", "set", "map"):
            raise ValueError(f"{where}: ListType is atomic, set or map, not {self.type!r}")
        if (self.type == "map") != bool(self.keys):
            raise ValueError(f"{where}: ListType('map') takes keys, and only it does")
        if self.type == "map":
            item = schema.get("items") or {}
            missing = [k for k in self.keys if k not in (item.get("properties") or {})]
            if item.get("type") != "object" or missing:
                raise TypeError(f"{where}: ListType('map') needs items that are objects "
                                f"with the keys {list(self.keys)} as fields")
        Marker.apply(self, schema, where)


@dataclass(frozen=True, slots=True)
class MapType(Marker):
    """``x-kubernetes-map-type``: ``granular`` (merged key by key by apply) or ``atomic``."""

    applies_to: ClassVar[tuple[str, ...]] = ("object",)
    type: Literal["granular", "atomic"]

    def keywords(self) -> Schema:
        return {"x-kubernetes-map-type": self.type}


@dataclass(frozen=True, slots=True)
class Rule(Marker):
    """One CEL rule of ``x-kubernetes-validations`` (``self`` is the annotated value).

    ``message`` (fixed) or ``message_expression`` (CEL that yields the message),
    ``reason`` (``FieldValueInvalid``, ``FieldValueForbidden``,
    ``FieldValueRequired`` or ``FieldValueDuplicate``) and ``field_path`` (the
    field the error names, relative to ``self``: ``.spec.replicas``) are optional.
    A rule that reads ``oldSelf`` is a transition rule (run on updates only).
    Several rules on one field are all kept, in order.
    """

    rule: str
    message: str | None = None
    message_expression: str | None = None
    reason: str | None = None
    field_path: str | None = None

    def keywords(self) -> Schema:
        entry: Schema = {"rule": self.rule}
        for key, value in (("message", self.message),
                           ("messageExpression", self.message_expression),
                           ("reason", self.reason), ("fieldPath", self.field_path)):
            if value is not None:
                entry[key] = value
        return entry

    def apply(self, schema: Schema, where: str) -> None:
        schema.setdefault("x-kubernetes-validations", []).append(self.keywords())


@dataclass(frozen=True, slots=True)
class PreserveUnknownFields(Marker):
    """``x-kubernetes-preserve-unknown-fields: true``: fields the schema does not name
    are kept instead of pruned (an object with some known fields, or any value)."""

    def keywords(self) -> Schema:
        return {"x-kubernetes-preserve-unknown-fields": True}


@dataclass(frozen=True, slots=True)
class EmbeddedResource(Marker):
    """``x-kubernetes-embedded-resource: true``: the object is a Kubernetes object of its
    own (``apiVersion``, ``kind``, ``metadata`` checked and kept)."""

    applies_to: ClassVar[tuple[str, ...]] = ("object",)

    def keywords(self) -> Schema:
        return {"x-kubernetes-embedded-resource": True}


# -- markers of a TypedDict class ------------------------------------------------------------

_CLASS_MARKERS = "__reconcilekit_crd_markers__"
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class _ClassMarkers:
    markers: tuple[Marker, ...] = field(default=())


def marked(*markers: Marker) -> Callable[[C], C]:
    """A class decorator: ``markers`` apply to the object schema of this ``TypedDict``
    wherever it is used (its CEL rules across fields, the root of a kind included)::

        @marked(Rule("self.min <= self.max", message="min must not exceed max"))
        class Range(TypedDict): ...
    """
    for marker in markers:
        if not isinstance(marker, Marker):
            raise TypeError(f"marked() takes markers, not {marker!r}")

    def mark(cls: C) -> C:
        setattr(cls, _CLASS_MARKERS, _ClassMarkers(markers))
        return cls
    return mark


def class_markers(cls: object) -> tuple[Marker, ...]:
    """The markers :func:`marked` put on ``cls`` itself (not on a base class)."""
    found = vars(cls).get(_CLASS_MARKERS) if isinstance(cls, type) else None
    return found.markers if isinstance(found, _ClassMarkers) else ()
