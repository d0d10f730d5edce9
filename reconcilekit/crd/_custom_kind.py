"""A custom kind defined once in Python: its CustomResourceDefinition and its resources.

:class:`CustomKind` holds the names (group, kind, plural, scope, short
names, categories) and the :class:`Version` s; each version names the
``TypedDict`` its objects have (see :mod:`._schema`), its printer columns and
its subresources. :meth:`CustomKind.crd` is the apiextensions.k8s.io/v1
CustomResourceDefinition, :attr:`CustomKind.resource` the storage version's
:class:`CustomKindResource` (a :class:`~reconcilekit.TypedResource` of its shape).

Invariants (checked when the kind is made, ValueError naming the kind):
  * exactly one version is the storage version, and it is served;
  * version names are unique;
  * a version's shape is a ``TypedDict``; its schema is built at once, so
    a shape a structural schema cannot say fails here, not at install time.

:meth:`CustomKind.crd` returns a new dict each call, with keys in a fixed
order (the same definition dumps to the same YAML on every run).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from .._foundations.objects import TypedResource
from ._markers import Schema
from ._schema import shape_schema

__all__ = ["CustomKind", "CustomKindResource", "PrinterColumn", "Scale", "Version"]

T = TypeVar("T")
S_co = TypeVar("S_co", covariant=True)

_COLUMN_TYPES = ("integer", "number", "string", "boolean", "date")


@dataclass(frozen=True, slots=True, eq=False)
class CustomKindResource(TypedResource[T]):
    """The resource of one version of a :class:`CustomKind`; ``definition`` is that kind.

    Equal to (and hashed as) any :class:`~reconcilekit.Resource` with the same
    five fields: ``definition`` is not part of its identity. A tool that
    installs what an operator needs finds the CRD of a resource with
    ``getattr(resource, "definition", None)`` and ``.crd()``.
    """

    definition: CustomKind[Any] = field(kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PrinterColumn:
    """A column of ``kubectl get`` (``additionalPrinterColumns``).

    ``json_path`` is a simple JSONPath into the object (``.spec.replicas``,
    ``.status.conditions[?(@.type=="Ready")].status``). ``type`` is found
    from the shape when the path names a field of it (``integer``,
    ``number``, ``boolean``, ``date`` for ``format: date-time`` and
    ``.metadata.creationTimestamp``, else ``string``). ``priority`` 0 shows
    in the standard view, more only with ``-o wide``.
    """

    name: str
    json_path: str
    type: Literal["integer", "number", "string", "boolean", "date"] | None = None
    description: str | None = None
    format: str | None = None
    priority: int = 0

    def column(self, schema: Schema) -> Schema:
        """The ``additionalPrinterColumns`` entry, its type found in ``schema`` if not given."""
        column: Schema = {"name": self.name, "type": self.type or _column_type(schema,
                                                                              self.json_path),
                          "jsonPath": self.json_path}
        if self.description is not None:
            column["description"] = self.description
        if self.format is not None:
            column["format"] = self.format
        if self.priority:
            column["priority"] = self.priority
        return column


def _column_type(schema: Schema, path: str) -> str:
    if path == ".metadata.creationTimestamp":
        return "date"
    node: Schema | None = schema
    for part in path.lstrip(".").split("."):
        node = (node or {}).get("properties", {}).get(part)
    if node is None:
        return "string"
    if node.get("type") == "string" and node.get("format") == "date-time":
        return "date"
    kind = node.get("type")
    return kind if kind in ("integer", "number", "boolean") else "string"


@dataclass(frozen=True, slots=True)
class Scale:
    """The ``scale`` subresource (``kubectl scale``, the HorizontalPodAutoscaler):
    where the wanted and the current replica counts are, and the label selector of
    what is scaled (a string, in ``status``), all as ``.spec.x`` paths."""

    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str | None = None

    def subresource(self) -> Schema:
        scale: Schema = {"specReplicasPath": self.spec_replicas_path,
                         "statusReplicasPath": self.status_replicas_path}
        if self.label_selector_path is not None:
            scale["labelSelectorPath"] = self.label_selector_path
        return scale


@dataclass(frozen=True)  # no slots: Version[Any](...) sets __orig_class__
class Version(Generic[S_co]):
    """One version of a kind: its name, the ``TypedDict`` its objects have, and how it is
    served.

    ``status``: the status subresource (``/status``: spec and status written
    apart, ``metadata.generation`` moved by spec changes only); None turns it
    on when the shape has a ``status`` field. ``storage``: the version objects
    are stored in (exactly one). ``deprecated`` versions answer with a warning
    (``deprecation_warning``, or kube-apiserver's own).
    """

    name: str
    shape: type[S_co]
    served: bool = True
    storage: bool = False
    deprecated: bool = False
    deprecation_warning: str | None = None
    printer_columns: Sequence[PrinterColumn] = ()
    status: bool | None = None
    scale: Scale | None = None

    def schema(self) -> Schema:
        """The version's ``openAPIV3Schema`` (a new dict each call)."""
        return shape_schema(self.shape)

    def has_status(self) -> bool:
        """Whether the version serves ``/status``: ``status``, or whether the shape has one."""
        if self.status is not None:
            return self.status
        keys: frozenset[str] = (getattr(self.shape, "__required_keys__", frozenset())
                                | getattr(self.shape, "__optional_keys__", frozenset()))
        return "status" in keys

    def definition(self, schema: Schema) -> Schema:
        """The ``spec.versions[]`` entry of the CRD, with ``schema`` as its schema."""
        version: Schema = {"name": self.name, "served": self.served, "storage": self.storage}
        if self.deprecated:
            version["deprecated"] = True
        if self.deprecation_warning is not None:
            version["deprecationWarning"] = self.deprecation_warning
        version["schema"] = {"openAPIV3Schema": schema}
        subresources: Schema = {}
        if self.has_status():
            subresources["status"] = {}
        if self.scale is not None:
            subresources["scale"] = self.scale.subresource()
        if subresources:
            version["subresources"] = subresources
        if self.printer_columns:
            version["additionalPrinterColumns"] = [c.column(schema)
                                                   for c in self.printer_columns]
        return version


class CustomKind(Generic[T]):
    """A custom kind: its names, scope and versions; ``T`` is the storage version's shape.

    ``CustomKind(group="example.dev", kind="Website", plural="websites",
    versions=[Version("v1", Website, storage=True)])`` is a ``CustomKind[Website]``;
    its :attr:`resource` is a ``TypedResource[Website]``. With versions of other
    shapes, say which is stored: ``CustomKind[WebsiteV2](..., versions=[
    Version[Any]("v1", WebsiteV1), Version("v2", WebsiteV2, storage=True)])``.

    ``singular`` defaults to the kind in lower case, ``list_kind`` to the kind
    and ``List``; ``namespaced=False`` makes a cluster-scoped kind.
    """

    def __init__(self, *, group: str, kind: str, plural: str,
                 versions: Sequence[Version[T]], namespaced: bool = True,
                 singular: str | None = None, list_kind: str | None = None,
                 short_names: Sequence[str] = (), categories: Sequence[str] = ()) -> None:
        self.group = group
        self.kind = kind
        self.plural = plural
        self.versions: tuple[Version[T], ...] = tuple(versions)
        self.namespaced = namespaced
        self.singular = singular if singular is not None else kind.lower()
        self.list_kind = list_kind if list_kind is not None else f"{kind}List"
        self.short_names = tuple(short_names)
        self.categories = tuple(categories)
        if isinstance(short_names, str) or isinstance(categories, str):
            raise TypeError(f"{kind}: short_names and categories are sequences of names, "
                            "not one string")
        self._schemas = {v.name: v.schema() for v in self._checked_versions()}

    def _checked_versions(self) -> tuple[Version[T], ...]:
        names = [v.name for v in self.versions]
        if not names:
            raise ValueError(f"{self.kind}: a kind has at least one version")
        if len(set(names)) != len(names):
            raise ValueError(f"{self.kind}: versions are named twice: {names}")
        stored = [v.name for v in self.versions if v.storage]
        if len(stored) != 1:
            raise ValueError(f"{self.kind}: exactly one version is the storage version "
                             f"(storage=True), not {len(stored)} ({', '.join(stored) or 'none'})")
        if not self.storage_version.served:
            raise ValueError(f"{self.kind}: the storage version {stored[0]} is served")
        return self.versions

    @property
    def name(self) -> str:
        """The CRD's name: ``plural.group``."""
        return f"{self.plural}.{self.group}"

    @property
    def storage_version(self) -> Version[T]:
        return next(v for v in self.versions if v.storage)

    @property
    def resource(self) -> CustomKindResource[T]:
        """The storage version's resource (the one to watch and write)."""
        return self._resource(self.storage_version)

    def resource_for(self, version: str) -> CustomKindResource[Any]:
        """The resource of the version named ``version`` (KeyError naming the versions)."""
        for candidate in self.versions:
            if candidate.name == version:
                return self._resource(candidate)
        raise KeyError(f"{self.kind} has no version {version!r} (it has "
                       f"{', '.join(v.name for v in self.versions)})")

    def _resource(self, version: Version[Any]) -> CustomKindResource[Any]:
        return CustomKindResource(self.group, version.name, self.kind, self.plural,
                              self.namespaced, definition=self)

    def crd(self) -> dict[str, Any]:
        """The apiextensions.k8s.io/v1 CustomResourceDefinition (a new dict each call)."""
        names: Schema = {"kind": self.kind, "listKind": self.list_kind, "plural": self.plural,
                         "singular": self.singular}
        if self.short_names:
            names["shortNames"] = list(self.short_names)
        if self.categories:
            names["categories"] = list(self.categories)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {
                "group": self.group,
                "names": names,
                "scope": "Namespaced" if self.namespaced else "Cluster",
                "versions": [v.definition(copy.deepcopy(self._schemas[v.name]))
                             for v in self.versions],
            },
        }

    def __repr__(self) -> str:
        return (f"CustomKind({self.name}, versions="
                f"{[v.name for v in self.versions]}, storage={self.storage_version.name})")
