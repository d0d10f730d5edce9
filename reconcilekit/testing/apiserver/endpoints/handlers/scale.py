"""The ``scale`` subresource of built-in kinds: an ``autoscaling/v1`` Scale view of an object.

As kube-apiserver 1.28 answers it (measured on v1.28.7) for Deployments,
StatefulSets, ReplicaSets and ReplicationControllers: the Scale carries the
object's name, namespace, uid, resourceVersion and creationTimestamp,
``spec.replicas`` from the object's spec (left out when 0, as Go's
``omitempty`` leaves it), ``status.replicas`` from its status
(0 when unset) and ``status.selector`` the object's selector as a label
selector string. GET reads it; PUT and PATCH (JSON, merge and strategic merge
patches of the Scale) change only the object's ``spec.replicas`` (which bumps
its generation); a Scale's resourceVersion, when given, must be current (409);
a negative count is a 422 on ``Scale.autoscaling``; a missing object is a 404
naming ``<plural>/scale`` (the plural alone where the kind's strategy says so).

A custom resource's Scale reads and writes the paths of its CRD's ``scale``
subresource (``specReplicasPath``, ``statusReplicasPath``, and
``labelSelectorPath`` for ``status.selector``, left out when absent); a
missing spec replicas field is a 500 as kube-apiserver answers it (a PUT of
the Scale writes it), and a missing object the custom resource's own 404.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import ADMIN, RequestUser
from ...machinery.status import StatusError
from ...machinery.unstructured import Obj
from ...machinery.validation import invalid
from ...patching.json_patch import PatchError, json_patch, merge_patch
from .write_options import WriteOptions
from .write_path import WritePath

__all__ = ["get_scale", "patch_scale", "update_scale"]

_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def _format_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector`` (a LabelSelector) or ``SelectorFromSet`` (a map)."""
    if not isinstance(selector, Mapping):
        return ""
    expressions: list[Any] = []
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        labels = selector
    else:
        labels, expressions = selector.get("matchLabels") or {}, (
            selector.get("matchExpressions") or [])
    parts = [(k, f"{k}={v}") for k, v in labels.items()]
    for e in expressions:
        key, op, values = e.get("key", ""), e.get("operator", ""), sorted(e.get("values") or [])
        shown = {"In": f"{key} in ({','.join(values)})",
                 "NotIn": f"{key} notin ({','.join(values)})",
                 "Exists": key, "DoesNotExist": f"!{key}"}.get(op, "")
        parts.append((key, shown))
    return ",".join(text for _, text in sorted(parts))


def _at(obj: Obj, path: str) -> tuple[Any, bool]:
    """The value at a ``.a.b`` path of ``obj``, and whether it is there."""
    value: Any = obj
    for part in path.lstrip(".").split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None, False
        value = value[part]
    return value, True


def _set_at(obj: Obj, path: str, value: Any) -> None:
    *parents, last = path.lstrip(".").split(".")
    for part in parents:
        if not isinstance(obj.get(part), dict):
            obj[part] = {}
        obj = obj[part]
    obj[last] = value


def scale_of(obj: Obj, paths: tuple[str, str, str | None] | None = None) -> Obj:
    """The Scale view of a stored object (``paths``: a custom resource's)."""
    meta = obj["metadata"]
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    if paths is None:
        replicas, current = spec.get("replicas"), status.get("replicas", 0)
        selector: str | None = _format_selector(spec.get("selector"))
    else:
        replicas, found = _at(obj, paths[0])
        if not found:
            raise StatusError.internal(f'the spec replicas field "{paths[0]}" does not exist')
        current = _at(obj, paths[1])[0] or 0
        selector = _at(obj, paths[2])[0] if paths[2] else None
    scale_status: Obj = {"replicas": current}
    if selector is not None:
        scale_status["selector"] = selector
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: meta[k] for k in _META if k in meta},
            "spec": {"replicas": replicas} if replicas else {},
            "status": scale_status}


def _stored(path: WritePath, req: ResourceRequest) -> Obj:
    assert req.name is not None
    r = req.rtype.resource
    try:
        return path.storage.get(req.rtype, req.namespace or "", req.name)
    except StatusError as err:
        if err.code != 404:
            raise
        if not path.strategy(req).scale_names_subresource:
            raise
        raise StatusError.not_found(f"{r.plural}/scale{'.' + r.group if r.group else ''}",
                                    req.name, r.group) from None


def get_scale(path: WritePath, req: ResourceRequest) -> Obj:
    return scale_of(_stored(path, req), req.rtype.scale_paths)


async def update_scale(path: WritePath, req: ResourceRequest, body: Obj, manager: str,
                       options: WriteOptions | None = None, *,
                       user: RequestUser = ADMIN) -> Obj:
    """A PUT of a Scale: the object's ``spec.replicas`` becomes the Scale's."""
    assert req.name is not None
    options = options or WriteOptions()
    if body.get("kind", "Scale") != "Scale" or body.get("apiVersion", "autoscaling/v1") not in (
            "autoscaling/v1",):
        raise StatusError.bad_request(
            f'{body.get("kind")} in version "{body.get("apiVersion")}" cannot be handled as a '
            "Scale: the body must be an autoscaling/v1 Scale")
    meta = body.get("metadata") if isinstance(body.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    replicas = (body.get("spec") or {}).get("replicas", 0) if isinstance(
        body.get("spec"), dict) else 0
    if not isinstance(replicas, int) or isinstance(replicas, bool):
        raise StatusError.bad_request(
            'Scale in version "v1" cannot be handled as a Scale: json: cannot unmarshal '
            f"{orjson.dumps(replicas).decode()} into Go struct field ScaleSpec.spec.replicas "
            "of type int32")
    if replicas < 0:
        raise StatusError.invalid("Scale.autoscaling", req.name, [invalid(
            "spec.replicas", replicas, "must be greater than or equal to 0")], "autoscaling")
    _stored(path, req)
    wanted_rv = meta.get("resourceVersion")

    def change(old: Obj) -> tuple[Obj, None]:
        r = req.rtype.resource
        if wanted_rv and wanted_rv != old["metadata"]["resourceVersion"]:
            raise StatusError.stale(f"{r.plural}.{r.group}" if r.group else r.plural,
                                    req.name or "", r.group)
        new = copy.deepcopy(old)
        _set_at(new, req.rtype.scale_paths[0] if req.rtype.scale_paths else ".spec.replicas",
                replicas)
        return new, None

    stored = await path.guaranteed_update(req, change, manager, options, user, check_rv=False)
    return scale_of(stored, req.rtype.scale_paths)


async def patch_scale(path: WritePath, req: ResourceRequest, content_type: str, raw: bytes,
                      manager: str, options: WriteOptions | None = None, *,
                      user: RequestUser = ADMIN) -> Obj:
    """A PATCH of a Scale (JSON, merge or strategic merge patch), applied as a PUT."""
    current = get_scale(path, req)
    try:
        document = orjson.loads(raw)
        if content_type == "application/json-patch+json":
            patched = json_patch(current, document)
        elif content_type in ("application/merge-patch+json",
                              "application/strategic-merge-patch+json"):
            patched = merge_patch(current, document)
        else:
            raise StatusError(415, "UnsupportedMediaType",
                              "the body of the request was in an unknown format - accepted "
                              "media types include: application/json-patch+json, "
                              "application/merge-patch+json, "
                              "application/strategic-merge-patch+json", {})
    except orjson.JSONDecodeError as err:
        raise StatusError.bad_request(f"error decoding patch: {err}") from None
    except PatchError as err:
        raise StatusError(err.status, err.reason, err.api_message,
                          {} if err.status == 422 else None) from None
    if not isinstance(patched, dict):
        raise StatusError.bad_request("the patched object is not a JSON object")
    return await update_scale(path, req, patched, manager, options, user=user)
