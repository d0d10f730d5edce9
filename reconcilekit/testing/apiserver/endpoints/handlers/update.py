"""The ``update`` verb (a PUT of the whole object) and ``pods/binding``, the scheduler's write."""

from __future__ import annotations

import copy

from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import ADMIN, RequestUser
from ...machinery.status import StatusError
from ...machinery.unstructured import Obj, timestamp
from ...registry.registry_store import dedup_owner_references
from .write_options import WriteOptions
from .write_path import WritePath

__all__ = ["bind", "update"]


async def update(path: WritePath, req: ResourceRequest, body: Obj, manager: str,
                 options: WriteOptions | None = None, *, user: RequestUser = ADMIN) -> Obj:
    assert req.name is not None
    options = options or WriteOptions()
    body = path.check_body(req, body, options=options)
    body_name = body["metadata"].get("name", "")
    if body_name != req.name:
        raise StatusError.bad_request(f"the name of the object ({body_name}) does not match "
                                      f"the name on the URL ({req.name})")
    dedup_owner_references(body["metadata"])
    return await path.guaranteed_update(req, lambda old: (copy.deepcopy(body), None), manager,
                              options, user, check_rv=True)


def bind(path: WritePath, req: ResourceRequest, body: Obj, manager: str) -> Obj:
    """``POST pods/NAME/binding``: what the scheduler writes, as kube-apiserver does it.

    Sets ``spec.nodeName`` (once: a bound Pod answers 409), adds the
    binding's annotations and a PodScheduled=True condition, in one write.
    """
    assert req.name is not None
    ns, name = req.namespace or "", req.name
    target = body.get("target") if isinstance(body, dict) else None
    node = target.get("name") if isinstance(target, dict) else None
    if not node or not isinstance(node, str):
        raise StatusError(500, "", "target.name: Required value")
    pod = path.storage.get(req.rtype, ns, name)
    meta: Obj = body.get("metadata") or {} if isinstance(body, dict) else {}
    if not isinstance(meta, dict):
        raise StatusError.bad_request("metadata must be an object")
    uid = meta.get("uid")
    if uid and uid != pod["metadata"]["uid"]:
        raise StatusError.conflict("pods", name, "Precondition failed: UID in precondition: "
                                   f"{uid}, UID in object meta: {pod['metadata']['uid']}")
    assigned = (pod.get("spec") or {}).get("nodeName")
    if assigned:
        raise StatusError.conflict("pods/binding", name,
                                   f'pod {name} is already assigned to node "{assigned}"')
    bound = copy.deepcopy(pod)
    bound.setdefault("spec", {})["nodeName"] = node
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and annotations:
        bound["metadata"]["annotations"] = {
            **(bound["metadata"].get("annotations") or {}), **annotations}
    status = bound.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": timestamp(path.storage.now())})
    status["conditions"] = conditions
    return path.storage.update(req.rtype, ns, name, bound, subresource="binding",
                               manager=manager, check_rv=False)
