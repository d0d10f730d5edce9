"""The ``create`` verb: a new object, named or with ``generateName``."""

from __future__ import annotations

from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import ADMIN, RequestUser
from ...machinery.status import Cause, StatusError
from ...machinery.unstructured import Obj
from ...registry.registry_store import dedup_owner_references
from .write_options import WriteOptions
from .write_path import WritePath

__all__ = ["create"]


async def create(path: WritePath, req: ResourceRequest, body: Obj, manager: str,
                 options: WriteOptions | None = None, *, user: RequestUser = ADMIN) -> Obj:
    options = options or WriteOptions()
    body = path.check_body(req, body, options=options)
    meta = body["metadata"]
    if not meta.get("name") and not meta.get("generateName"):
        r = req.rtype
        raise StatusError.invalid(r.qualified_kind(), "", [Cause(
            "FieldValueRequired", "Required value: name or generateName is required",
            "metadata.name")], r.resource.group)
    path.check_namespace(req, str(meta.get("name") or ""))
    dedup_owner_references(meta)
    # the field manager runs before admission (kube-apiserver's create handler): what an
    # admission plugin or a mutating webhook adds belongs to no manager
    managed = path.storage.ownership(req.rtype).updated(None, body, manager, None,
                                                        path.storage.now())
    path.admit(req, body)
    return await path.create_new(req, body, manager, options, user, managed_fields=managed)
