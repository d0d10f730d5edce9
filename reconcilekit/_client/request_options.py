"""How a :class:`reconcilekit.Client` call becomes a request: path, query and body.

Arguments that cannot make a valid request raise ValueError here, before
anything is sent, with a message naming the call and the argument.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .._foundations.objects import Resource
from .._foundations.selectors import FieldSelector, LabelSelector
from .transport import Params

__all__ = [
    "PATCH_CONTENT_TYPES",
    "FieldSelectorLike",
    "LabelSelectorLike",
    "delete_options",
    "list_params",
    "object_path",
    "path_of",
    "required_namespace",
    "scope",
    "with_type",
]

LabelSelectorLike = str | Mapping[str, str] | LabelSelector
FieldSelectorLike = str | Mapping[str, str] | FieldSelector

PATCH_CONTENT_TYPES: Final[Mapping[str, str]] = {
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",  # JSON is YAML: the body is sent as JSON
}


def scope(resource: Resource, namespace: str | None) -> str | None:
    """The namespace of a collection request: None means all namespaces (or cluster scope)."""
    return (namespace or None) if resource.namespaced else None


def required_namespace(resource: Resource, namespace: str | None, verb: str) -> str | None:
    """``namespace`` for a namespaced resource (ValueError if missing), None otherwise.

    A namespace given for a cluster-scoped resource is ignored, as
    controller-runtime's client does.
    """
    if not resource.namespaced:
        return None
    if not namespace:
        raise ValueError(f"{verb}: {resource.group_resource} is namespaced; pass a namespace")
    return namespace


def object_path(resource: Resource, namespace: str | None, name: str, verb: str) -> str:
    """The URL path of one object."""
    if not name or "/" in name:
        raise ValueError(f"{verb}: invalid object name {name!r} for {resource.group_resource}")
    return resource.path(required_namespace(resource, namespace, verb), name)


def path_of(resource: Resource, obj: Mapping[str, Any], verb: str) -> str:
    """The URL path of ``obj``, named by its own metadata."""
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError(f"{verb}: the object has no metadata.name")
    if resource.namespaced and not meta.get("namespace"):
        raise ValueError(f"{verb}: {resource.group_resource} is namespaced and the object has "
                         "no metadata.namespace")
    return object_path(resource, meta.get("namespace"), name, verb)


def with_type(resource: Resource, obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """``obj`` with ``apiVersion`` and ``kind`` filled in from ``resource`` where missing."""
    if "apiVersion" in obj and "kind" in obj:
        return obj
    return {"apiVersion": resource.api_version, "kind": resource.kind, **obj}


def _selector(value: LabelSelectorLike | FieldSelectorLike | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        return ",".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def list_params(label_selector: LabelSelectorLike | None,
                field_selector: FieldSelectorLike | None, limit: int | None,
                continue_: str | None, resource_version: str | None) -> Params:
    """The query of a list (or delete-collection) request; None values are left out."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return {"labelSelector": _selector(label_selector) or None,
            "fieldSelector": _selector(field_selector) or None,
            "limit": limit or None, "continue": continue_ or None,
            "resourceVersion": resource_version}


def delete_options(uid: str | None, resource_version: str | None,
                   propagation_policy: str | None,
                   grace_period_seconds: int | None) -> dict[str, Any] | None:
    """A DeleteOptions body (preconditions included), or None when every option is unset."""
    options: dict[str, Any] = {}
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                     if v is not None}
    if preconditions:
        options["preconditions"] = preconditions
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if not options:
        return None
    return {"kind": "DeleteOptions", "apiVersion": "v1", **options}
