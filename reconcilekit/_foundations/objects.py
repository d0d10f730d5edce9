"""Resource descriptions, object keys and metadata accessors.

Objects are plain JSON mappings exactly as the API server sends them; nothing
here deserializes into models.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Generic, NamedTuple, TypeAlias, TypedDict

if sys.version_info >= (3, 13):
    from typing import TypeVar
else:  # a TypeVar's default (PEP 696) before Python 3.13
    from typing_extensions import TypeVar

__all__ = ["Obj", "ObjT", "ObjView", "ObjViewT_contra", "ObjectKey", "ObjectList", "Resource",
           "TypedResource", "object_key", "resource_version_of"]

Obj: TypeAlias = dict[str, Any]
"""A Kubernetes object as decoded JSON (``apiVersion``, ``kind``, ``metadata``, ...)."""
ObjView: TypeAlias = Mapping[str, Any]
"""An object read, not written: a plain dict or a typed kind's ``TypedDict``."""
ObjT = TypeVar("ObjT", bound=Mapping[str, Any])
"""The type of an object a helper takes and gives back: ``dict[str, Any]``, or a typed
kind (a ``TypedDict``, which is a dict at run time), so that the helper keeps it typed."""
ObjViewT_contra = TypeVar("ObjViewT_contra", bound=Mapping[str, Any], contravariant=True,
                          default=Mapping[str, Any])
"""The objects a callback reads (a predicate, a mapper): any mapping unless said
(``Predicate[Website]``), so a bare ``Predicate`` takes every object."""


@dataclass(frozen=True, slots=True, eq=False)
class Resource:
    """One REST resource of the API server, e.g. core/v1 ``pods``.

    ``group`` is ``""`` for the core group. ``plural`` names the URL segment;
    ``kind`` names the objects. ``namespaced`` is False for cluster-scoped
    resources (Namespaces, CustomResourceDefinitions, ...).

    Two resources are equal (and hash alike) when these five fields are,
    whatever their class: a :class:`TypedResource` from :mod:`reconcilekit.kinds`
    or a custom kind's resource names the same cache entry, informer and
    work as a ``Resource`` written by hand.
    """

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    _key: tuple[str, str, str, str, bool] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Computed once: resources key the cache's informers and every work item's lookups.
        key = (self.group, self.version, self.kind, self.plural, self.namespaced)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    @property
    def api_version(self) -> str:
        """``v1`` for the core group, ``group/version`` otherwise."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """``pods`` or ``leases.coordination.k8s.io``, as kube-apiserver names it in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        """The URL path of the collection, or of one object when ``name`` is given."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base = f"{base}/namespaces/{namespace}"
        base = f"{base}/{self.plural}"
        return f"{base}/{name}" if name is not None else base

    def __str__(self) -> str:
        return f"{self.group_resource}/{self.version}"

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Resource):
            return NotImplemented
        return self._key == other._key

    def __hash__(self) -> int:
        return self._hash


T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True, eq=False)
class TypedResource(Resource, Generic[T_co]):
    """A :class:`Resource` whose objects the type checker knows the shape of.

    ``T`` is a ``TypedDict`` (the built-in kinds' shapes are in
    :mod:`reconcilekit.kinds`); reads of a ``TypedResource[T]`` through the
    cache and the client are typed ``T``, so ``mypy --strict`` rejects a
    misspelled field. At run time nothing changes: the objects are the same
    plain dicts, and a ``TypedResource`` equals the ``Resource`` with the same
    fields.

    ``T_co`` is covariant: a ``TypedResource[ConfigMap]`` is a
    ``TypedResource[ConfigMap | None]``, so a read whose expected type is wider
    (``return await client.get(CONFIG_MAPS, ...)`` in a function returning
    ``ConfigMap | None``) still picks the typed overload.
    """


class ObjectList(TypedDict, Generic[T_co]):
    """A List as the API server sends it: ``items`` of the resource's shape.

    What the client's ``list`` and ``list_all`` of a ``TypedResource[T]`` are typed.
    ``metadata`` holds ``resourceVersion`` and, for a page, ``continue``."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    items: list[T_co]


class ObjectKey(NamedTuple):
    """``namespace/name`` of an object; ``namespace`` is ``""`` for cluster-scoped ones.

    A named tuple: it keys every store, index and queue, so hashing, comparing
    and sorting it run in C (a dataclass's would call Python for each).
    Ordered by namespace, then name.
    """

    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


def object_key(obj: Mapping[str, Any]) -> ObjectKey:
    """The :class:`ObjectKey` of a raw object (its namespace interned: the same few recur
    in every key a cache or queue holds)."""
    meta = obj.get("metadata") or {}
    namespace = meta.get("namespace") or ""
    # tuple.__new__ as the named tuple's own __new__ does, without its Python frame
    return _new_key(ObjectKey, (sys.intern(namespace) if type(namespace) is str else namespace,
                                meta.get("name") or ""))


_new_key: Final = tuple.__new__


def resource_version_of(obj: Mapping[str, Any]) -> str:
    """A raw object's ``metadata.resourceVersion``; ``""`` when it has none."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
