"""From a ``TypedDict`` to the structural OpenAPI v3 schema of a CustomResourceDefinition.

The shape of a kind is a ``TypedDict``; its fields' types map to schemas as
kubebuilder maps Go types:

=============================  =====================================================
Python                         schema
=============================  =====================================================
``str`` / ``int`` / ``float``  ``type: string`` / ``integer`` / ``number``
``bool``                       ``type: boolean``
``Literal["a", "b"]``, Enum    ``enum`` of the values (all strings, or all integers)
``X | None``                   X's schema with ``nullable: true``
``int | str``                  ``x-kubernetes-int-or-string: true``
``list[X]``                    ``type: array`` with ``items``
``dict[str, X]``               ``type: object`` with ``additionalProperties``
``dict[str, Any]``, ``dict``   ``type: object``, ``x-kubernetes-preserve-unknown-fields``
``Any``                        any value: ``x-kubernetes-preserve-unknown-fields``
a ``TypedDict``                ``type: object`` with ``properties`` and ``required``
``kinds.Condition``            metav1.Condition as kubebuilder writes it (below)
``kinds.ObjectMeta``           name, namespace, labels, annotations, finalizers
=============================  =====================================================

The two shapes of :mod:`reconcilekit.kinds` a kind commonly embeds get the
schema kubebuilder gives their Go types: a ``Condition`` has its five
required fields validated as kube-apiserver validates ``metav1.Condition``
(``type`` a qualified name of at most 316 characters, ``status`` one of
True, False, Unknown, ``reason`` CamelCase of 1 to 1024, ``message`` at
most 32768, ``lastTransitionTime`` a date-time, ``observedGeneration`` at
least 0), and a ``list[Condition]`` is a list map keyed by ``type`` (so
server-side apply merges conditions by type); an ``ObjectMeta`` below the
root (a template's) keeps the fields kubebuilder's embedded ObjectMeta keeps.

A field is required unless ``NotRequired[...]`` (or the class is
``total=False`` and the field not ``Required[...]``). A class's docstring is
its object's ``description``. ``Annotated[X, marker, ...]`` adds the
markers' keywords (:mod:`._markers`).

At the root (the kind's shape itself) ``apiVersion`` and ``kind`` are
strings and ``metadata`` is ``type: object`` whatever they are annotated
with: kube-apiserver checks metadata itself. They are never ``required``.

Guarantees: the schema's keys come in a fixed order (a field's type first,
then its markers in the order written; properties in the order of the
class), so dumps are stable; anything a structural schema cannot say (a
union, a recursive type, a tuple, a marker on the wrong type, an unknown
``Annotated`` extra) raises TypeError or ValueError naming the class and
the field.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from typing import Annotated, Any, NotRequired, Required, get_args, get_origin

from ..conditions import (
    CONDITION_MESSAGE_MAX_LENGTH,
    CONDITION_REASON_MAX_LENGTH,
    CONDITION_REASON_PATTERN,
    CONDITION_STATUSES,
    CONDITION_TYPE_MAX_LENGTH,
    CONDITION_TYPE_PATTERN,
)
from ..kinds.meta_v1 import Condition, ObjectMeta
from ._markers import Description, Marker, Schema, class_markers

__all__ = ["shape_schema"]

_ROOT_STRINGS = ("apiVersion", "kind")
_SCALARS: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def shape_schema(shape: object) -> Schema:
    """The ``openAPIV3Schema`` of a kind whose objects have the shape ``shape``."""
    if not (isinstance(shape, type) and typing.is_typeddict(shape)):
        raise TypeError(f"the shape of a kind is a TypedDict class, not {shape!r}")
    return _Builder().typed_dict(shape, getattr(shape, "__qualname__", str(shape)), root=True)


def _name(tp: object) -> str:
    if isinstance(tp, type) and not get_args(tp):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _presence(hint: Any) -> tuple[Any, bool | None]:
    """``hint`` without ``Required``/``NotRequired`` (also inside ``Annotated``), and which
    one it said (None: neither). Python 3.11 misses them in ``__required_keys__`` under
    ``from __future__ import annotations``, so they are read here."""
    origin = get_origin(hint)
    if origin is Required or origin is NotRequired:
        inner, _ = _presence(get_args(hint)[0])
        return inner, origin is Required
    if origin is Annotated:
        inner, said = _presence(hint.__origin__)
        if said is not None:
            return Annotated[(inner, *hint.__metadata__)], said
    return hint, None


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls, include_extras=True)
    except Exception as err:  # NameError, TypeError, SyntaxError from a string annotation
        raise TypeError(f"{_name(cls)}: its annotations cannot be resolved ({err}); the types "
                        "a shape names must be importable from its module") from None


def _docstring(cls: type) -> str | None:
    doc = vars(cls).get("__doc__")
    return inspect.cleandoc(doc) if isinstance(doc, str) and doc.strip() else None


class _Builder:
    """One schema's construction; ``_open`` holds the TypedDicts being built (recursion)."""

    def __init__(self) -> None:
        self._open: list[type] = []

    def typed_dict(self, cls: type, where: str, *, root: bool = False) -> Schema:
        if cls in self._open:
            chain = " -> ".join(_name(c) for c in [*self._open[self._open.index(cls):], cls])
            raise ValueError(f"{where}: {_name(cls)} contains itself ({chain}); a CRD's "
                             "structural schema cannot recurse (type the recursive part "
                             "Any or dict[str, Any])")
        self._open.append(cls)
        try:
            schema = self._object(cls, root=root)
        finally:
            self._open.pop()
        for marker in class_markers(cls):
            marker.apply(schema, _name(cls))
        return schema

    def _object(self, cls: type, *, root: bool) -> Schema:
        schema: Schema = {"type": "object"}
        if (doc := _docstring(cls)) is not None:
            schema["description"] = doc
        required_keys: frozenset[str] = getattr(cls, "__required_keys__", frozenset())
        properties: Schema = {}
        required: list[str] = []
        for name, hint in _hints(cls).items():
            where = f"{_name(cls)}.{name}"
            hint, said = _presence(hint)
            if root and name in _ROOT_STRINGS:
                properties[name] = {"type": "string"}
                continue
            if root and name == "metadata":
                properties[name] = {"type": "object"}
                continue
            properties[name] = self.field(hint, where)
            if said if said is not None else name in required_keys:
                required.append(name)
        if properties:
            schema["properties"] = properties
        if required:
            schema["required"] = required
        return schema

    def field(self, hint: Any, where: str) -> Schema:
        """The schema of a value annotated ``hint`` (markers applied) at ``where``."""
        hint, said = _presence(hint)
        if said is not None:
            raise TypeError(f"{where}: Required/NotRequired only apply to a TypedDict's "
                            "own fields")
        markers: tuple[Any, ...] = ()
        if get_origin(hint) is Annotated:
            hint, markers = hint.__origin__, hint.__metadata__
        for marker in markers:
            if not isinstance(marker, Marker):
                raise TypeError(f"{where}: {marker!r} in Annotated[...] is not a marker of "
                                "reconcilekit.crd")
        schema = self._type(hint, where)
        if any(isinstance(m, Description) for m in markers):
            schema.pop("description", None)  # the field's words over its class's docstring
        for marker in markers:
            marker.apply(schema, where)
        return schema

    def _type(self, tp: Any, where: str) -> Schema:
        origin = get_origin(tp)
        if tp is Any:
            return {"x-kubernetes-preserve-unknown-fields": True}
        if tp in _SCALARS:
            return {"type": _SCALARS[tp]}
        if origin is typing.Union or origin is types.UnionType:
            return self._union(get_args(tp), where)
        if origin is typing.Literal:
            return _enum(list(get_args(tp)), where, "Literal")
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum([member.value for member in tp], where, _name(tp))
        if tp is Condition:
            return _condition_schema()
        if tp is ObjectMeta:
            return _embedded_metadata_schema()
        if origin is list:
            (item,) = get_args(tp)
            schema = {"type": "array", "items": self.field(item, f"{where}[*]")}
            if (item.__origin__ if get_origin(item) is Annotated else item) is Condition:
                schema.update({"x-kubernetes-list-map-keys": ["type"],
                               "x-kubernetes-list-type": "map"})
            return schema
        if origin is dict or tp is dict:
            key, value = get_args(tp) or (str, Any)
            if key is not str:
                raise TypeError(f"{where}: the keys of a map are strings, not {_name(key)}")
            if value is Any:
                return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
            return {"type": "object", "additionalProperties": self.field(value, f"{where}[*]")}
        if typing.is_typeddict(tp):
            return self.typed_dict(tp, where)
        if tp is list:
            raise TypeError(f"{where}: a list names its items' type (list[str])")
        raise TypeError(f"{where}: {_name(tp)} cannot be said in a CRD schema (use str, int, "
                        "float, bool, Literal[...], an Enum, list[X], dict[str, X], a "
                        "TypedDict, X | None, int | str or Any)")

    def _union(self, args: tuple[Any, ...], where: str) -> Schema:
        rest = [a for a in args if a is not type(None)]
        nullable = len(rest) < len(args)
        bases = {a.__origin__ if get_origin(a) is Annotated else a for a in rest}
        if len(rest) == 1:
            schema = self.field(rest[0], where)
        elif bases == {int, str} and len(rest) == 2:
            schema = {"x-kubernetes-int-or-string": True}
            for arm in rest:
                if get_origin(arm) is Annotated:
                    raise TypeError(f"{where}: annotate int | str as a whole "
                                    "(Annotated[int | str, ...]), not one of its arms")
        else:
            raise TypeError(f"{where}: a union of {', '.join(_name(a) for a in rest)} cannot "
                            "be said in a structural schema (only X | None and int | str)")
        if nullable:
            schema["nullable"] = True
        return schema


def _condition_schema() -> Schema:
    """metav1.Condition, as kubebuilder generates it (and kube-apiserver validates it)."""
    return {
        "type": "object",
        "description": "One aspect of the object's current state (metav1.Condition).",
        "properties": {
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "message": {"type": "string", "maxLength": CONDITION_MESSAGE_MAX_LENGTH},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "reason": {"type": "string", "maxLength": CONDITION_REASON_MAX_LENGTH,
                       "minLength": 1, "pattern": CONDITION_REASON_PATTERN},
            "status": {"type": "string", "enum": list(CONDITION_STATUSES)},
            "type": {"type": "string", "maxLength": CONDITION_TYPE_MAX_LENGTH,
                     "pattern": CONDITION_TYPE_PATTERN},
        },
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
    }


def _embedded_metadata_schema() -> Schema:
    """An ObjectMeta below the root, as kubebuilder's ``generateEmbeddedObjectMeta``."""
    strings = {"type": "object", "additionalProperties": {"type": "string"}}
    return {"type": "object", "properties": {
        "annotations": strings,
        "finalizers": {"type": "array", "items": {"type": "string"}},
        "labels": dict(strings),
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    }}


def _enum(values: list[Any], where: str, what: str) -> Schema:
    for kind, name in ((str, "string"), (bool, "boolean"), (int, "integer")):
        if values and all(type(v) is kind for v in values):
            return {"type": name, "enum": values}
    raise TypeError(f"{where}: {what} values are all strings, all integers or all booleans "
                    f"to be an enum, not {values!r}")
