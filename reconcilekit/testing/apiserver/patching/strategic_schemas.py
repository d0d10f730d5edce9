"""Which list fields a strategic merge patch merges, for the built-in kinds.

In Kubernetes these are Go struct tags on the API types: ``patchStrategy:
"merge"`` with a ``patchMergeKey`` (k8s.io/api ``core/v1/types.go``,
``meta/v1/types.go``). Here they are data: a :class:`PatchSchema` per kind,
naming each merged list by its dotted path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "BUILTIN_PATCH_SCHEMAS",
    "METADATA_PATCH_SCHEMA",
    "MergeList",
    "PatchSchema",
    "SchemaNode",
    "patch_schema_for",
]


@dataclass(frozen=True, slots=True)
class MergeList:
    """A list field with ``patchStrategy: merge``.

    ``key`` is the ``patchMergeKey`` of a list of objects; ``None`` means a
    list of primitives, merged as a set.
    """

    key: str | None = None


class SchemaNode:
    """The schema below one field: its list rule and its children."""

    __slots__ = ("fields", "items", "rule")

    def __init__(self) -> None:
        self.fields: dict[str, SchemaNode] = {}
        self.items: SchemaNode | None = None
        self.rule: MergeList | None = None

    def child(self, name: str) -> SchemaNode:
        return self.fields.get(name, _LEAF)

    def item(self) -> SchemaNode:
        return self.items or _LEAF


_LEAF: Final = SchemaNode()


class PatchSchema:
    """The merge rules of one kind's list fields, by dotted path.

    ``[]`` after a list name steps into its items, so
    ``{"spec.containers": MergeList("name"), "spec.containers[].env":
    MergeList("name")}`` merges containers by name and each container's env
    by name. Lists not named are replaced whole (as ``patchStrategy`` absent
    or ``replace`` does); objects always merge member by member.

    ``root`` is the compiled tree of rules that :func:`strategic_merge_patch`
    walks; treat it as read-only.
    """

    __slots__ = ("_lists", "root")

    def __init__(self, lists: Mapping[str, MergeList]) -> None:
        self._lists = dict(lists)
        self.root = SchemaNode()
        for path, rule in self._lists.items():
            node = self.root
            for step in path.split("."):
                name, into_items = (step[:-2], True) if step.endswith("[]") else (step, False)
                node = node.fields.setdefault(name, SchemaNode())
                if into_items:
                    node.items = node.items or SchemaNode()
                    node = node.items
            node.rule = rule

    @property
    def lists(self) -> Mapping[str, MergeList]:
        """The rules this schema was built from."""
        return dict(self._lists)

    def extend(self, lists: Mapping[str, MergeList]) -> PatchSchema:
        """A schema with these rules added (or replacing rules for the same path)."""
        return PatchSchema({**self._lists, **lists})

    def __repr__(self) -> str:
        return f"PatchSchema({self._lists!r})"


METADATA_PATCH_SCHEMA: Final = PatchSchema(
    {"metadata.finalizers": MergeList(), "metadata.ownerReferences": MergeList("uid")}
)
"""The ObjectMeta rules, which hold for every kind."""


def _container_rules(path: str) -> dict[str, MergeList]:
    return {
        path: MergeList("name"),
        f"{path}[].ports": MergeList("containerPort"),
        f"{path}[].env": MergeList("name"),
        f"{path}[].volumeMounts": MergeList("mountPath"),
        f"{path}[].volumeDevices": MergeList("devicePath"),
    }


BUILTIN_PATCH_SCHEMAS: Final[Mapping[str, PatchSchema]] = {
    "Pod": METADATA_PATCH_SCHEMA.extend(
        {
            **_container_rules("spec.containers"),
            **_container_rules("spec.initContainers"),
            **_container_rules("spec.ephemeralContainers"),
            "spec.volumes": MergeList("name"),
            "spec.imagePullSecrets": MergeList("name"),
            "spec.hostAliases": MergeList("ip"),
            "spec.topologySpreadConstraints": MergeList("topologyKey"),
            "spec.schedulingGates": MergeList("name"),
            "spec.resourceClaims": MergeList("name"),
            "status.conditions": MergeList("type"),
            "status.podIPs": MergeList("ip"),
            "status.hostIPs": MergeList("ip"),
            "status.resourceClaimStatuses": MergeList("name"),
        }
    ),
    "ConfigMap": METADATA_PATCH_SCHEMA,
    "Secret": METADATA_PATCH_SCHEMA,
    "Namespace": METADATA_PATCH_SCHEMA.extend({"status.conditions": MergeList("type")}),
    "Event": METADATA_PATCH_SCHEMA,
    "Lease": METADATA_PATCH_SCHEMA,
    "MutatingWebhookConfiguration": METADATA_PATCH_SCHEMA.extend({"webhooks": MergeList("name")}),
    "ValidatingWebhookConfiguration": METADATA_PATCH_SCHEMA.extend(
        {"webhooks": MergeList("name")}),
}
"""Merge rules of the built-in kinds the test API server serves, by kind."""


def patch_schema_for(kind: str) -> PatchSchema:
    """The merge rules of a built-in kind; the ObjectMeta rules for any other kind."""
    return BUILTIN_PATCH_SCHEMAS.get(kind, METADATA_PATCH_SCHEMA)
