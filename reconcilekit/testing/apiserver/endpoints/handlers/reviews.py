"""The reviews: created, answered from the request and the server's state, never stored.

``authentication.k8s.io``'s SelfSubjectReview (who am I) and TokenReview
(whom does this token name), and ``authorization.k8s.io``'s access and rules
reviews (:mod:`...authorization.access_reviews`), as kube-apiserver 1.28
answers them: only ``POST`` on the collection (405 for another method, 404
below it); the body is decoded as any create's (400 for a body that does not
decode, unknown fields dropped with a warning); the answer is 201 with the
review, its ``status`` filled in. An access review or a TokenReview answers
with its own ``managedFields``, as kube-apiserver's create handler leaves
them; a rules review answers a fresh object, as kube-apiserver's does.
"""

from __future__ import annotations

from typing import Any

from ...authorization.access_reviews import (
    access_status,
    rules_status,
    subject,
    validate_access_review,
)
from ...authorization.rbac_authorizer import RBACAuthorizer
from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import RequestUser
from ...machinery.status import StatusError
from ...machinery.token_authenticator import TokenAuthenticator, UidLookup
from ...machinery.unstructured import Obj, timestamp
from .write_options import WriteOptions
from .write_path import WritePath

__all__ = ["API_AUDIENCE", "component_statuses", "review"]

API_AUDIENCE = "https://kubernetes.default.svc"


def _answered(path: WritePath, req: ResourceRequest, decoded: Obj, manager: str,
              status: dict[str, Any]) -> dict[str, Any]:
    """``decoded`` as kube-apiserver answers it: its managedFields, its status."""
    managed = path.storage.ownership(req.rtype).updated(None, decoded, manager, None,
                                                        path.storage.now())
    meta: dict[str, Any] = {}
    if req.namespace:
        meta["namespace"] = req.namespace
    meta["creationTimestamp"] = None
    if managed:
        meta["managedFields"] = managed
    return {**decoded, "metadata": meta, "status": status}


def review(path: WritePath, req: ResourceRequest, body: Obj, who: RequestUser, manager: str,
           opts: WriteOptions, tokens: TokenAuthenticator, uid_of: UidLookup
           ) -> dict[str, Any]:
    """The answered review ``body`` asks for (raises the 4xx kube-apiserver gives)."""
    r = req.rtype.resource
    if req.name is not None:
        raise StatusError.not_found_path()
    decoded = path.check_body(req, body, options=opts)
    authorizer = RBACAuthorizer(path.storage.tables)
    now = path.storage.now()
    match r.kind:
        case "SelfSubjectReview":
            return {"kind": r.kind, "apiVersion": r.api_version,
                    "metadata": {"creationTimestamp": timestamp(now)},
                    "status": {"userInfo": who.review()}}
        case "SelfSubjectRulesReview":
            namespace = str((decoded.get("spec") or {}).get("namespace", ""))
            return {"kind": r.kind, "apiVersion": r.api_version,
                    "metadata": {"creationTimestamp": None}, "spec": {},
                    "status": rules_status(who, namespace, authorizer)}
        case "TokenReview":
            return _answered(path, req, decoded, manager,
                             _token_status(decoded, tokens, now, uid_of))
    causes = validate_access_review(r.kind, decoded, req.namespace or "")
    if causes:
        raise StatusError.invalid(r.group_resource, "", causes, r.group)
    return _answered(path, req, decoded, manager,
                     access_status(decoded, subject(decoded, who), authorizer))


def _token_status(review: Obj, tokens: TokenAuthenticator, now: float,
                  uid_of: UidLookup) -> dict[str, Any]:
    spec = review.get("spec") or {}
    token = str(spec.get("token", ""))
    found = tokens.review(token, now, uid_of) if token else "invalid bearer token"
    wanted = list(spec.get("audiences") or ())
    if isinstance(found, str):
        return {"user": {}, "error": found}
    user, audiences = found
    good_for = list(audiences) or [API_AUDIENCE]
    if wanted and not set(wanted) & set(good_for):
        return {"user": {}, "error": "[invalid bearer token, token audiences "
                                     f"{good_for} is invalid for the target audiences "
                                     f"{wanted}]"}
    return {"authenticated": True, "user": user.review(),
            "audiences": [a for a in wanted if a in good_for] or good_for}


# kube-apiserver probes the scheduler's and kube-controller-manager's health ports and
# etcd; in-process there is no scheduler nor controller manager to answer, and the
# storage is always up: what kube-apiserver answers with neither running
_COMPONENTS = (("scheduler", 10259), ("controller-manager", 10257))


def component_statuses(name: str | None) -> dict[str, Any]:
    """``GET componentstatuses[/NAME]`` (deprecated), as kube-apiserver answers it with no
    scheduler or controller manager running (another name is its 500)."""
    items: list[dict[str, Any]] = [
        {"metadata": {"name": component, "creationTimestamp": None}, "conditions": [{
            "type": "Healthy", "status": "False",
            "message": f'Get "https://127.0.0.1:{port}/healthz": dial tcp '
                       f"127.0.0.1:{port}: connect: connection refused"}]}
        for component, port in _COMPONENTS]
    items.append({"metadata": {"name": "etcd-0", "creationTimestamp": None},
                  "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
    if name is None:
        return {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
                "items": items}
    for item in items:
        if item["metadata"]["name"] == name:
            return {"kind": "ComponentStatus", "apiVersion": "v1", **item}
    # kube-apiserver's plain error becomes a 500 with neither reason nor details
    raise StatusError(500, "", f"Component not found: {name}")
