"""How each field of a kind merges: strategic merge patch's lists, server-side apply's sets.

kube-apiserver publishes both in its OpenAPI v3 documents, which
``data/kube-apiserver-1.28-openapi-v3.json.gz`` holds as v1.28.7 serves them
(captured by ``tools/capture_openapi_v3.py``); nothing here is written per
kind. A :class:`SchemaNode` is one field's rules:

* ``rule``, for strategic merge patch: ``x-kubernetes-patch-strategy``
  containing ``merge`` makes a list merge, by ``x-kubernetes-patch-merge-key``
  for a list of objects (a :class:`MergeList`), as a set for primitives; any
  other list is replaced whole;
* ``list_type`` and ``keys``, for server-side apply (structured-merge-diff's
  schema, as kube-openapi converts it): ``x-kubernetes-list-type`` (``map``
  by ``x-kubernetes-list-map-keys``, ``set``, ``atomic``); a list without one
  but with a merge patch strategy is a map by its merge key, or a set;
* ``atomic``: ``x-kubernetes-map-type: atomic`` (a LabelSelector, a RoleRef,
  a Service's selector), owned and replaced as one value;
* ``value``: the field is a Go struct held by value, not by pointer, which
  the documents mark with ``default: {}``: the zero object a create is
  compared with already holds it, empty, so a create does not own the field
  itself, only what it put inside. A required field (``required``: Go
  encodes it without ``omitempty``) is in the zero object too, as ``null``
  (:meth:`SchemaNode.in_zero_object`).

A custom resource's schema compiles to the same nodes
(:func:`custom_resource_node`), so both kinds of resource merge and own
fields by one set of rules.

Guarantees: nothing is compiled before it is needed, each kind once per
process (:func:`patch_schema_for`); named types are shared between kinds and
may refer to themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..machinery.builtin_schema import kind_schema_name, openapi_schemas

__all__ = [
    "MergeList",
    "PatchSchema",
    "SchemaNode",
    "custom_resource_node",
    "metadata_patch_schema",
    "patch_schema_for",
]

_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@dataclass(frozen=True, slots=True)
class MergeList:
    """A list field with ``patchStrategy: merge``.

    ``key`` is the ``patchMergeKey`` of a list of objects; ``None`` means a
    list of primitives, merged as a set.
    """

    key: str | None = None


class _Type:
    """The structure of a type: its fields, list items and map values (shared by every
    field of that type)."""

    __slots__ = ("atomic", "extra", "fields", "items", "required")

    def __init__(self) -> None:
        self.fields: dict[str, SchemaNode] = {}  # filled as its fields are compiled
        self.items: SchemaNode | None = None
        self.extra: SchemaNode | None = None
        self.atomic = False
        self.required: frozenset[str] = frozenset()

    def define(self, *, items: SchemaNode | None, extra: SchemaNode | None, atomic: bool,
               required: frozenset[str]) -> None:
        """Complete the type once its fields are compiled (a named type exists before
        them: they may refer to it)."""
        self.items, self.extra, self.atomic, self.required = items, extra, atomic, required


class SchemaNode:
    """One field: its type's structure and the field's own merge rules (module docstring).
    Treat it as read-only."""

    __slots__ = ("_type", "atomic", "keys", "list_type", "rule", "value")

    def __init__(self, structure: _Type | None = None, *, rule: MergeList | None = None,
                 list_type: str | None = None, keys: tuple[str, ...] = (),
                 atomic: bool = False, value: bool = False) -> None:
        self._type = structure or _Type()
        self.rule = rule
        if list_type is None and rule is not None:  # schemaconv: a merge list is associative
            list_type, keys = ("set", ()) if rule.key is None else ("map", (rule.key,))
        self.list_type = list_type or "atomic"
        self.keys = keys
        self.atomic = atomic or self._type.atomic
        self.value = value

    @property
    def fields(self) -> Mapping[str, SchemaNode]:
        return self._type.fields

    @property
    def items(self) -> SchemaNode | None:
        return self._type.items

    def declares(self, name: str) -> bool:
        """Whether ``name`` is a declared field (not a key of a map's values)."""
        return name in self._type.fields

    def in_zero_object(self, name: str) -> bool:
        """Whether the field ``name`` is in this type's zero value as Go encodes it (null
        or empty): a required field, which Go writes without ``omitempty``."""
        return name in self._type.required

    def child(self, name: str) -> SchemaNode:
        return self._type.fields.get(name) or self._type.extra or _LEAF

    def item(self) -> SchemaNode:
        return self._type.items or _LEAF


_LEAF: Final = SchemaNode()


class _RuleCompiler:
    """OpenAPI schemas to nodes; a named type is compiled once and shared."""

    def __init__(self, schemas: Mapping[str, Any], *, values: bool = True) -> None:
        self.schemas = schemas
        self.values = values  # whether ``default: {}`` marks a field held by value
        self.named: dict[str, _Type] = {}

    def named_type(self, name: str) -> _Type:
        found = self.named.get(name)
        if found is None:
            found = self.named[name] = _Type()  # before its fields: they may refer to it
            self._fill(found, self.schemas.get(name) or {})
        return found

    def _fill(self, structure: _Type, schema: Mapping[str, Any]) -> None:
        properties = schema.get("properties")
        if isinstance(properties, Mapping):
            for name, sub in properties.items():
                if isinstance(sub, Mapping):
                    structure.fields[name] = self.node(sub)
        items, extra = schema.get("items"), schema.get("additionalProperties")
        required = schema.get("required")
        structure.define(
            items=self.node(items) if isinstance(items, Mapping) else None,
            extra=self.node(extra) if isinstance(extra, Mapping) else None,
            atomic=schema.get("x-kubernetes-map-type") == "atomic",
            required=frozenset(str(r) for r in required) if (
                self.values and isinstance(required, list)) else frozenset())

    def node(self, schema: Mapping[str, Any]) -> SchemaNode:
        """The node of a field whose schema is ``schema`` (a reference or inline)."""
        ref = schema.get("$ref")
        if ref is None and isinstance(schema.get("allOf"), list) and schema["allOf"]:
            ref = schema["allOf"][0].get("$ref")
        if isinstance(ref, str):
            structure = self.named_type(ref.removeprefix("#/components/schemas/"))
        else:
            structure = _Type()
            self._fill(structure, schema)
        strategy = str(schema.get("x-kubernetes-patch-strategy") or "").split(",")
        key = schema.get("x-kubernetes-patch-merge-key")
        rule = MergeList(key if isinstance(key, str) else None) if "merge" in strategy else None
        list_type = schema.get("x-kubernetes-list-type")
        explicit = list_type in ("map", "set", "atomic")
        return SchemaNode(structure, rule=rule,
                          list_type=str(list_type) if explicit else None,
                          keys=tuple(schema.get("x-kubernetes-list-map-keys") or ()) if (
                              explicit) else (),
                          atomic=schema.get("x-kubernetes-map-type") == "atomic",
                          value=self.values and schema.get("default") == {})


class PatchSchema:
    """The merge rules of one kind's fields: a tree of :class:`SchemaNode` from ``root``.

    Built from a kind's OpenAPI schema (:func:`patch_schema_for`), or from
    rules by dotted path, for tests and for callers with their own kinds:
    ``[]`` after a list name steps into its items, so ``{"spec.containers":
    MergeList("name"), "spec.containers[].env": MergeList("name")}`` merges
    containers by name and each container's env by name. Lists not named are
    replaced whole; objects always merge member by member.
    """

    __slots__ = ("root",)

    def __init__(self, lists: Mapping[str, MergeList] | None = None, *,
                 root: SchemaNode | None = None) -> None:
        self.root = root or _from_rules(lists or {})

    def __repr__(self) -> str:
        return f"PatchSchema(root={self.root!r})"


def _from_rules(rules: Mapping[str, MergeList]) -> SchemaNode:
    """A tree of nodes from rules by dotted path (see :class:`PatchSchema`)."""
    tree: dict[str, Any] = {}
    for path, rule in rules.items():
        spot = tree
        for step in path.split("."):
            name, into_items = (step[:-2], True) if step.endswith("[]") else (step, False)
            spot = spot.setdefault("fields", {}).setdefault(name, {})
            if into_items:
                spot = spot.setdefault("items", {})
        spot["rule"] = rule
    return _built(tree)


def _built(spec: Mapping[str, Any]) -> SchemaNode:
    structure = _Type()
    for name, below in spec.get("fields", {}).items():
        structure.fields[name] = _built(below)
    structure.define(items=_built(spec["items"]) if "items" in spec else None, extra=None,
                     atomic=False, required=frozenset())
    return SchemaNode(structure, rule=spec.get("rule"))


@functools.cache
def _compiler() -> _RuleCompiler:
    return _RuleCompiler(openapi_schemas())


@functools.cache
def patch_schema_for(group: str, version: str, kind: str) -> PatchSchema:
    """The rules of a built-in kind, compiled once; for any other kind, ObjectMeta's
    (:func:`metadata_patch_schema`)."""
    name = kind_schema_name(group, version, kind)
    if name is None:
        return metadata_patch_schema()
    return PatchSchema(root=_compiler().node({"$ref": name}))


@functools.cache
def metadata_patch_schema() -> PatchSchema:
    """A kind that only has ObjectMeta's rules (``metadata`` held by value)."""
    return PatchSchema(root=_compiler().node({"properties": {
        "metadata": {"$ref": _OBJECT_META, "default": {}}}}))


@functools.cache
def _object_meta_field() -> SchemaNode:
    return _compiler().node({"$ref": _OBJECT_META, "default": {}})


def custom_resource_node(schema: Mapping[str, Any]) -> SchemaNode:
    """A custom resource's node from its structural schema: its ``metadata`` is an
    ObjectMeta held by value; no other field is (a custom resource is unstructured, and a
    ``default: {}`` in its schema is a default, nothing more)."""
    node = _RuleCompiler(openapi_schemas(), values=False).node(
        {k: v for k, v in schema.items() if k != "$ref"})
    node._type.fields["metadata"] = _object_meta_field()
    return node
