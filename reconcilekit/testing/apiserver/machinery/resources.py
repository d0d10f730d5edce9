"""The resource types the test API server serves, and its discovery documents.

Built-in types are kube-apiserver's, read from its captured discovery by
:mod:`.builtin_kinds` when a server is made; custom resources are added and
removed as CustomResourceDefinitions are created and deleted (see
:mod:`..controllers.builtin_controllers`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...._foundations.objects import Resource
from .status import Cause
from .unstructured import Obj

__all__ = ["COMMON_FIELDS", "ObjectSchema", "Registry", "ResourceType"]


class ObjectSchema(Protocol):
    """What a custom resource's structural schema does for its objects (implemented by
    :class:`~..apiextensions.structural_schema.CustomResourceSchema`)."""

    @property
    def schema(self) -> Mapping[str, Any]:
        """The ``openAPIV3Schema`` itself."""

    def decode(self, obj: Obj, *, default: bool = True) -> list[str]:
        """Prune unknown fields, drop non-nullable nulls, then default; the pruned paths."""

    def default(self, obj: Obj) -> None:
        """Give absent fields their schema's defaults, in place."""

    def validate(self, obj: Obj, old: Obj | None = None) -> list[Cause]:
        """Every reason the object is invalid (``old``: an update's transition rules)."""

    def validate_status(self, obj: Obj, old: Obj | None) -> list[Cause]:
        """Every reason the object's ``status`` is invalid (a status update)."""

# a custom resource's verbs in the order kube-apiserver 1.28 lists them in discovery
_ALL_VERBS = ("delete", "deletecollection", "get", "list", "patch", "create", "update", "watch")
COMMON_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True, slots=True)
class ResourceType:
    """A :class:`Resource` plus how kube-apiserver's storage strategy treats it.

    ``status_subresource``: writes to the main resource leave ``status`` alone
    and ``/status`` writes change only ``status``.
    ``generation``: ``metadata.generation`` is kept and bumped when anything
    outside metadata (and status, with a status subresource) changes.
    ``unconditional_update``: a PUT without ``metadata.resourceVersion`` is
    allowed (ConfigMaps), instead of refused with 422 (Leases, custom resources).
    ``scale_subresource``: ``/scale`` reads and writes ``spec.replicas`` as an
    ``autoscaling/v1`` Scale; ``scale_paths``: a custom resource's
    ``specReplicasPath``, ``statusReplicasPath`` and ``labelSelectorPath`` (None:
    a built-in kind's own fields).
    ``deprecation_warning``: the warning every request to a deprecated version
    (a custom resource's, or a built-in one's) is answered with.
    ``builtin``: accepts strategic-merge patches; list items carry no
    ``kind``/``apiVersion``.
    ``schema``: a custom resource's structural schema (pruning, defaults,
    validation). ``printer_columns``: a custom resource's
    ``additionalPrinterColumns`` (None for built-in kinds, printed by their own rules).
    ``stored``: False for a review (an access review, a TokenReview, a
    SelfSubjectReview): created only, answered from the request, never stored.
    ``discovery``: a built-in type's discovery entries as kube-apiserver serves them
    (the resource's, then its subresources'); empty for custom resources, whose
    entries are made from the other fields.
    """

    resource: Resource
    singular: str
    short_names: tuple[str, ...] = ()
    status_subresource: bool = False
    scale_subresource: bool = False
    generation: bool = False
    unconditional_update: bool = True
    builtin: bool = True
    field_labels: frozenset[str] = COMMON_FIELDS
    categories: tuple[str, ...] = ()
    crd_name: str | None = None
    schema: ObjectSchema | None = field(default=None, compare=False)
    printer_columns: tuple[dict[str, Any], ...] | None = field(default=None, compare=False)
    scale_paths: tuple[str, str, str | None] | None = None
    deprecation_warning: str | None = None
    stored: bool = True
    discovery: tuple[Mapping[str, Any], ...] = field(default=(), compare=False)

    @property
    def list_kind(self) -> str:
        return f"{self.resource.kind}List"

    @property
    def plural(self) -> str:
        return self.resource.plural

    @property
    def group_version(self) -> str:
        return self.resource.api_version

    def qualified_kind(self) -> str:
        """``Pod`` or ``CNClaim.core.matrixorigin.io``, as Invalid errors name it."""
        r = self.resource
        return f"{r.kind}.{r.group}" if r.group else r.kind

    def subresource_verbs(self, sub: str) -> tuple[str, ...] | None:
        """The verbs served on subresource ``sub`` (None: not served): a built-in
        type's from its discovery entries (``pods/binding`` create, ``namespaces/finalize``
        update), a custom resource's ``status`` and ``scale`` from its CRD."""
        if self.discovery:
            name = f"{self.resource.plural}/{sub}"
            for entry in self.discovery:
                if entry.get("name") == name:
                    return tuple(entry.get("verbs") or ())
            return None
        if (sub == "status" and self.status_subresource) or (
                sub == "scale" and self.scale_subresource):
            return ("get", "patch", "update")
        return None

    def api_resources(self) -> list[dict[str, Any]]:
        """The ``APIResourceList.resources`` entries for this type (and its subresources)."""
        if self.discovery:
            return [dict(entry) for entry in self.discovery]
        r = self.resource
        entry: dict[str, Any] = {
            "name": r.plural,
            "singularName": self.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(_ALL_VERBS),
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        digest = hashlib.sha256(f"{r.group}/{r.version}/{r.kind}".encode()).digest()
        entry["storageVersionHash"] = _b64(digest[:8])
        out = [entry]
        if self.status_subresource:
            out.append({"name": f"{r.plural}/status", "singularName": "",
                        "namespaced": r.namespaced, "kind": r.kind,
                        "verbs": ["get", "patch", "update"]})
        return out


def _b64(raw: bytes) -> str:
    import base64

    return base64.b64encode(raw).decode()


class Registry:
    """Resource types by group/version/plural; the source of discovery documents."""

    def __init__(self, builtin: Iterable[ResourceType] = (),
                 group_order: tuple[str, ...] = ()) -> None:
        """``builtin``: the built-in types; ``group_order``: the built-in groups in
        kube-apiserver's order (custom resources' groups come after them)."""
        self.group_order = group_order
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        for rtype in builtin:
            self.add(rtype)

    def add(self, rtype: ResourceType) -> None:
        r = rtype.resource
        self._types[(r.group, r.version, r.plural)] = rtype

    def remove(self, group: str, version: str, plural: str) -> None:
        self._types.pop((group, version, plural), None)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def for_kind(self, api_version: str, kind: str) -> ResourceType | None:
        """The served resource of a kind (the REST mapping of an apiVersion and kind)."""
        group, _, version = api_version.rpartition("/")
        for rtype in self._types.values():
            r = rtype.resource
            if r.group == group and r.version == version and r.kind == kind:
                return rtype
        return None

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))

    def has_group_version(self, group: str, version: str) -> bool:
        return any(g == group and v == version for g, v, _ in self._types)

    def groups(self) -> dict[str, list[str]]:
        """Non-core group name -> served versions, in the order first registered."""
        out: dict[str, list[str]] = {}
        for g, v, _ in self._types:
            if g and v not in out.setdefault(g, []):
                out[g].append(v)
        return out

    # -- discovery documents ----------------------------------------------------

    def api_versions(self, server_address: str) -> dict[str, Any]:
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [
                    {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self.groups().get(group)
        if not versions:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                "versions": entries, "preferredVersion": entries[0]}

    def api_group_list(self) -> dict[str, Any]:
        groups = []
        rank = {name: i for i, name in enumerate(self.group_order)}
        for name in sorted(self.groups(), key=lambda g: rank.get(g, len(rank))):
            doc = self.api_group(name)
            assert doc is not None
            del doc["kind"], doc["apiVersion"]
            groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def api_resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        if not self.has_group_version(group, version):
            return None
        resources: list[dict[str, Any]] = []
        for (g, v, _), rtype in sorted(self._types.items()):
            if g == group and v == version:
                resources.extend(rtype.api_resources())
        doc: dict[str, Any] = {"kind": "APIResourceList"}
        if group:
            doc["apiVersion"] = "v1"
        doc["groupVersion"] = f"{group}/{version}" if group else version
        doc["resources"] = resources
        return doc
