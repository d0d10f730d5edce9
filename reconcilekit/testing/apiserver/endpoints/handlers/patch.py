"""The ``patch`` verb: JSON patch, merge patch, strategic merge patch, and server-side apply."""

from __future__ import annotations

from typing import Any, Final

import orjson
import yaml

from ...authorization.attributes import AuthorizerAttributes
from ...authorization.rbac_authorizer import RBACAuthorizer
from ...machinery.go_json import syntax_error
from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import ADMIN, RequestUser
from ...machinery.status import StatusError
from ...machinery.unstructured import Obj, json_type
from ...patching.json_patch import PatchError, json_patch, merge_patch
from ...patching.sent_managed_fields import check_applied
from ...patching.strategic_merge import patch_schema_for, strategic_merge_patch
from ...registry.registry_store import dedup_owner_references
from .write_options import WriteOptions
from .write_path import WritePath

__all__ = ["patch"]

_JSON_PATCH: Final = "application/json-patch+json"
_MERGE_PATCH: Final = "application/merge-patch+json"
_STRATEGIC_PATCH: Final = "application/strategic-merge-patch+json"
_APPLY_PATCH: Final = "application/apply-patch+yaml"
_PATCH_TYPES: Final = (_JSON_PATCH, _MERGE_PATCH, _STRATEGIC_PATCH, _APPLY_PATCH)


def is_apply(req: ResourceRequest, content_type: str) -> bool:
    """Whether a PATCH of ``content_type`` is a server-side apply; a 415 for a patch type
    the resource does not take (checked before anything else of the request)."""
    rtype = req.rtype
    if rtype.builtin and content_type not in _PATCH_TYPES:  # go-restful's route: no consumer
        raise StatusError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})
    if content_type not in _PATCH_TYPES or (
            content_type == _STRATEGIC_PATCH and not rtype.builtin):
        accepted = [t for t in _PATCH_TYPES if "strategic" not in t]
        raise StatusError(415, "UnsupportedMediaType",
                          f'the body of the request was in an unknown format - accepted media '
                          f'types include: {", ".join(accepted)}')
    return content_type == _APPLY_PATCH


async def patch(path: WritePath, req: ResourceRequest, content_type: str, raw: bytes,
                manager: str, options: WriteOptions | None = None, *,
                user: RequestUser = ADMIN) -> tuple[int, Obj]:
    """A PATCH of any type; ``options`` were checked as ``PatchOptions`` of it (an apply
    has its field manager)."""
    assert req.name is not None
    options = options or WriteOptions()
    rtype = req.rtype
    if is_apply(req, content_type):
        return await _apply(path, req, raw, manager, options, user)
    document = _decode_patch(content_type, raw)

    def change(old: Obj) -> tuple[Obj, None]:
        try:
            if content_type == _JSON_PATCH:
                patched = json_patch(old, document)
            elif content_type == _MERGE_PATCH:
                patched = merge_patch(old, document)
            else:  # decoded into the kind, which keeps its kind and apiVersion
                patched = strategic_merge_patch(old, document,
                                                patch_schema_for(rtype.resource.group,
                                                                 rtype.resource.version,
                                                                 rtype.resource.kind))
                patched.update(apiVersion=old["apiVersion"], kind=old["kind"])
        except PatchError as err:
            raise StatusError(err.status, err.reason, err.api_message,
                              {} if err.status == 422 else None) from None
        if not isinstance(patched, dict):
            raise StatusError.bad_request("the patched object is not a JSON object")
        patched = path.check_body(req, patched, patched=True, options=options)
        name = patched["metadata"].get("name", "")
        if name != req.name:
            raise StatusError.bad_request(f"the name of the object ({name}) does not match "
                                          f"the name on the URL ({req.name})")
        dedup_owner_references(patched["metadata"])
        return patched, None

    return 200, await path.guaranteed_update(req, change, manager, options, user, check_rv=False)


async def _apply(path: WritePath, req: ResourceRequest, raw: bytes, manager: str,
                 options: WriteOptions, user: RequestUser) -> tuple[int, Obj]:
    """Server-side apply: create the object, or merge the configuration into it,
    with field ownership and conflicts (see :mod:`...patching.field_ownership`)."""
    assert req.name is not None
    try:
        applied = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise StatusError.bad_request(f"error decoding YAML: {err}") from None
    if not isinstance(applied, dict):
        raise StatusError.bad_request("the applied configuration is not an object")
    applied = path.check_body(req, applied, options=options, default=False, applied=True)
    check_applied(applied)
    if applied["metadata"].get("name", req.name) != req.name:
        raise StatusError.bad_request("the name of the object does not match the URL")
    applied["metadata"]["name"] = req.name
    dedup_owner_references(applied["metadata"])
    ns = req.namespace or ""
    if (ns, req.name) not in path.storage.table(req.rtype).objects:
        _authorize_create(path, req, user)
        path.check_namespace(req)
        managed = path.storage.ownership(req.rtype).created_by_apply(
            applied, manager, path.storage.now())
        path.default(req, applied)
        path.admit(req, applied)
        return 201, await path.create_new(req, applied, manager, options, user,
                                          managed_fields=managed)

    def change(live: Obj) -> tuple[Obj, list[Obj] | None]:
        merged, managed = path.storage.ownership(req.rtype).applied(
            live, applied, manager, "status" if req.subresource == "status" else None,
            options.force, path.storage.now())
        path.default(req, merged)
        return merged, managed

    return 200, await path.guaranteed_update(req, change, manager, options, user, check_rv=False)


def _authorize_create(path: WritePath, req: ResourceRequest, user: RequestUser) -> None:
    """An apply that creates the object needs ``create`` as well as the ``patch`` the
    request was authorized for: kube-apiserver's ``withAuthorization`` of a create on
    update, whose 403 gives RBAC's reason (none: the message ends at the colon)."""
    r = req.rtype.resource
    attrs = AuthorizerAttributes(user, "create", True, req.namespace or "", r.group,
                                 r.version, r.plural, "", req.name or "")
    decision = RBACAuthorizer(path.storage.tables).authorize(attrs)
    if not decision.allowed:
        group_resource = f"{r.plural}.{r.group}" if r.group else r.plural
        raise StatusError.forbidden_because(group_resource, req.name or "", r.group,
                                            decision.reason)


def _decode_patch(content_type: str, raw: bytes) -> Any:
    """The patch document, with the decoder's errors (400) kube-apiserver gives for it."""
    prefix = "" if content_type == _STRATEGIC_PATCH else "error decoding patch: "
    problem = syntax_error(raw)
    if problem is not None:
        raise StatusError.bad_request(f"{prefix}{problem}")
    try:
        patch = orjson.loads(raw)
    except orjson.JSONDecodeError as err:  # valid for Go, not for orjson (huge numbers)
        raise StatusError.bad_request(f"{prefix}{err}") from None
    if patch is None:  # JSON null is no patch at all, but for a merge patch
        if content_type == _MERGE_PATCH:
            raise StatusError.bad_request("Invalid JSON Patch")
        return [] if content_type == _JSON_PATCH else {}
    if content_type == _MERGE_PATCH and not isinstance(patch, dict):
        raise StatusError.bad_request(f"{prefix}json: cannot unmarshal {json_type(patch)} into Go "
                                      "value of type map[string]interface {}")
    return patch
