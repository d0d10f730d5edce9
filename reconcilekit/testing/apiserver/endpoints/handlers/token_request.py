"""``POST .../serviceaccounts/NAME/token``: a TokenRequest, answered with a new token.

As kube-apiserver 1.28 answers it: the ServiceAccount must exist (404
otherwise); ``spec.audiences`` defaults to the API server's own audience and
``spec.expirationSeconds`` to 3600 (at least 600, at most 2^32); the answer
is 201 with the TokenRequest named after the account, its ``status.token``
and ``status.expirationTimestamp`` (on the server's clock), and the
``managedFields`` of the ``token`` subresource. A ``boundObjectRef`` names a
Pod or a Secret of the namespace (404 if there is none, 409 if its uid is
another, 400 for another kind). The token authenticates as the account
(:mod:`...machinery.token_authenticator`, a JWT with kube-apiserver's claims)
until it expires or the account, or the object it is bound to, is deleted.
"""

from __future__ import annotations

from typing import Any

from ....._foundations.objects import Resource
from ...machinery.request_info import ResourceRequest
from ...machinery.resources import ResourceType
from ...machinery.status import Cause, StatusError
from ...machinery.token_authenticator import TokenAuthenticator
from ...machinery.unstructured import Obj, timestamp
from ...machinery.validation import invalid
from .reviews import API_AUDIENCE
from .write_path import WritePath

__all__ = ["request_token"]

_TOKEN_REQUEST = ResourceType(Resource("authentication.k8s.io", "v1", "TokenRequest",
                                       "tokenrequests", True), "tokenrequest")
_MIN_SECONDS, _MAX_SECONDS = 600, 2 ** 32


def _validate(spec: Obj) -> list[Cause]:
    seconds = spec.get("expirationSeconds")
    if isinstance(seconds, int) and seconds < _MIN_SECONDS:
        return [invalid("spec.expirationSeconds", seconds,
                        "may not specify a duration less than 10 minutes")]
    if isinstance(seconds, int) and seconds > _MAX_SECONDS:
        return [invalid("spec.expirationSeconds", seconds,
                        "may not specify a duration larger than 2^32 seconds")]
    return []


_BINDABLE = {"Pod": "pods", "Secret": "secrets"}


def _bound(path: WritePath, req: ResourceRequest, ref: Any) -> tuple[str, str, str] | None:
    """(resource, name, uid) of the object a token is bound to, checked as kube-apiserver
    checks it."""
    if not isinstance(ref, dict):
        return None
    assert req.namespace is not None
    api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
    plural = _BINDABLE.get(kind) if api_version == "v1" else None
    if plural is None:
        group = api_version.rpartition("/")[0]
        shown = f"{api_version}, Kind={kind}" if group else f"/{api_version}, Kind={kind}"
        raise StatusError.bad_request(f'cannot bind token for serviceaccount "{req.name}" to '
                                      f"object of type {shown}")
    name = str(ref.get("name", ""))
    table = path.storage.tables.get(("", plural))
    found = table.objects.get((req.namespace, name)) if table is not None else None
    if found is None:
        raise StatusError.not_found(plural, name)
    uid = str(found["metadata"].get("uid", ""))
    if ref.get("uid") and ref["uid"] != uid:
        raise StatusError(409, "Conflict", f'Operation cannot be fulfilled on {kind}.'
                          f'"{name}": the UID in the bound object reference ({ref["uid"]}) '
                          "does not match the UID in record. The object might have been "
                          "deleted and then recreated", {"name": name, "kind": kind})
    return plural, name, uid


def request_token(path: WritePath, req: ResourceRequest, body: Obj, manager: str,
                  tokens: TokenAuthenticator) -> dict[str, Any]:
    """The answered TokenRequest for the ServiceAccount ``req`` names."""
    assert req.name is not None and req.namespace is not None
    account = path.storage.get(req.rtype, req.namespace, req.name)
    if body.get("apiVersion", _TOKEN_REQUEST.group_version) != _TOKEN_REQUEST.group_version \
            or body.get("kind", "TokenRequest") != "TokenRequest":
        raise StatusError.bad_request(f"the body of the request was in an unknown format: "
                                      f"{body.get('apiVersion')}, Kind="
                                      f"{body.get('kind')} is not TokenRequest")
    given = body.get("spec") if isinstance(body.get("spec"), dict) else {}
    assert isinstance(given, dict)
    causes = _validate(given)
    if causes:
        raise StatusError.invalid("TokenRequest.authentication.k8s.io", req.name, causes,
                                  "authentication.k8s.io")
    audiences = [str(a) for a in given.get("audiences") or [API_AUDIENCE]]
    seconds = int(given.get("expirationSeconds") or 3600)
    spec = {"audiences": audiences, "expirationSeconds": seconds,
            "boundObjectRef": given.get("boundObjectRef")}
    now = path.storage.now()
    expires = now + seconds
    bound = _bound(path, req, spec["boundObjectRef"])
    token = tokens.issue(req.namespace, req.name, str(account["metadata"].get("uid", "")),
                         now=now, expires=expires, audiences=tuple(audiences), bound=bound)
    managed = path.storage.ownership(_TOKEN_REQUEST).updated(
        None, {"apiVersion": _TOKEN_REQUEST.group_version, "kind": "TokenRequest",
               "metadata": {}, "spec": given}, manager, "token", now)
    meta: dict[str, Any] = {"name": req.name, "namespace": req.namespace,
                            "creationTimestamp": timestamp(now)}
    if managed:
        meta["managedFields"] = managed
    return {"kind": "TokenRequest", "apiVersion": _TOKEN_REQUEST.group_version,
            "metadata": meta, "spec": spec,
            "status": {"token": token, "expirationTimestamp": timestamp(expires)}}
