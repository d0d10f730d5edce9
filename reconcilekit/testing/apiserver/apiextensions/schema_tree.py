"""A structural schema as a tree: its nodes, a member's schema, the paths of fields.

The walking that pruning, defaulting and validation (:mod:`.structural_schema`)
and CEL rules (:mod:`.cel_rules`) share, with paths written as kube-apiserver
writes them in its errors.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["child_schema", "join_path", "properties", "schema_nodes"]


def join_path(path: str, step: str | int) -> str:
    """``spec`` + ``tags`` -> ``spec.tags``; ``spec.tags`` + 1 -> ``spec.tags[1]``."""
    if isinstance(step, int):
        return f"{path}[{step}]"
    return f"{path}.{step}" if path else step


def schema_nodes(schema: Mapping[str, Any],
                 path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every node of a schema with its path as CRD validation names it."""
    yield path, schema
    for key, child in (schema.get("properties") or {}).items():
        if isinstance(child, Mapping):
            yield from schema_nodes(child, f"{path}.properties[{key}]")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from schema_nodes(schema[key], f"{path}.{key}")


def properties(node: Mapping[str, Any]) -> Mapping[str, Any]:
    props = node.get("properties")
    return props if isinstance(props, Mapping) else {}


def child_schema(node: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The schema of member ``key`` of an object under ``node``: its property, else the
    ``additionalProperties`` schema, else None (a field the schema does not know)."""
    child = properties(node).get(key)
    if isinstance(child, Mapping):
        return child
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None
