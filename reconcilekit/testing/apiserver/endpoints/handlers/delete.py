"""The ``delete`` and ``deletecollection`` verbs: graceful deletion, finalizers, propagation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import ADMIN, RequestUser
from ...machinery.unstructured import Obj
from .write_options import DeleteOptions
from .write_path import WritePath

__all__ = ["delete", "delete_collection"]


async def delete(path: WritePath, req: ResourceRequest, options: DeleteOptions, *,
                 user: RequestUser = ADMIN, warnings: list[str] | None = None,
                 in_collection: bool = False) -> tuple[Obj, bool]:
    """Delete (or start deleting); returns the answer's object and whether it is gone.

    Admission sees the stored object as ``oldObject``, unless the deletion
    changes nothing (an object already waiting on its finalizers); an
    item of a deletecollection is reviewed without a name, as
    kube-apiserver does.
    """
    assert req.name is not None

    async def admit(old: Obj) -> None:
        attrs = path.attributes(req, "DELETE", None, old, options.dry_run,
                                options.review_options(), user,
                                [] if warnings is None else warnings)
        if in_collection:
            attrs = replace(attrs, name="")
        await path.admission.mutate(attrs)
        await path.admission.validate(attrs)

    return await path.store.delete(
        req.rtype, req.namespace or "", req.name, uid=options.uid,
        resource_version=options.resource_version, propagation_finalizer=options.finalizer,
        grace_period=options.grace_period, dry_run=options.dry_run, admission=admit,
        versions=path.versions(req))


async def delete_collection(path: WritePath, req: ResourceRequest,
                            matches: Callable[[Mapping[str, Any]], bool],
                            options: DeleteOptions, *, user: RequestUser = ADMIN,
                            warnings: list[str] | None = None) -> list[Obj]:
    table = path.storage.table(req.rtype)
    ns = req.namespace
    item_options = DeleteOptions(None, None, options.grace_period, options.propagation,
                                 options.orphan_dependents, options.dry_run)
    deleted = []
    for key in sorted(k for k in table.objects if ns is None or k[0] == ns):
        obj = table.objects.get(key)
        if obj is None or not matches(obj):
            continue
        item_req = ResourceRequest(req.rtype, key[0] or None, key[1], None)
        deleted.append((await delete(path, item_req, item_options, user=user,
                                     warnings=warnings, in_collection=True))[0])
    return deleted
