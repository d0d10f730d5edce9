"""AdmissionReview v1: what a validating or mutating webhook is asked, and what it answers.

A handler gets an :class:`AdmissionRequest`: the operation, the object as it
would be stored (``object``, None on DELETE) and as it was (``old_object``,
None on CREATE), the user who asked (:class:`UserInfo`), and whether the
request is a dry run. A validator returns a :class:`Verdict`
(``Verdict.allow(*warnings)`` or ``Verdict.deny(message)``); a defaulter
returns the object as it should be and the server answers with the JSON
patch from the request's object to it (:func:`json_patch`). Either may raise
:class:`AdmissionDenied` to refuse with a message.

Guarantees: the handler's ``object``/``old_object`` are its own copies
(a defaulter may change ``request.object`` in place and return it); the
answer always echoes the request's ``uid`` (kube-apiserver rejects any
other); the patch is computed from exactly the object the API server sent.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from .._foundations.objects import Obj

__all__ = ["AdmissionDenied", "AdmissionRequest", "MalformedReview", "UserInfo", "Verdict",
           "json_patch"]

ADMISSION_V1: Final = "admission.k8s.io/v1"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_DEPTH: Final = 250
"""Deepest nesting of a review body the server accepts: the answer, which carries the
objects as deep again, must stay within what orjson writes (255), and copying and
diffing them within Python's recursion limit."""


class MalformedReview(ValueError):
    """The request body is not an AdmissionReview (or ConversionReview) v1; says why."""


class AdmissionDenied(Exception):
    """Raise from a handler to refuse the request with ``message`` (``code``: 403)."""

    def __init__(self, message: str, *, code: int = 403) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who sent the request to the API server (``request.userInfo``)."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Verdict:
    """A validator's answer: allowed or not, with a message and warnings for the client."""

    allowed: bool
    message: str = ""
    code: int = 200
    warnings: tuple[str, ...] = ()

    @classmethod
    def allow(cls, *warnings: str) -> Verdict:
        """Allowed; ``warnings`` reach the client (kubectl prints them)."""
        return cls(True, warnings=warnings)

    @classmethod
    def deny(cls, message: str, *, code: int = 403, warnings: tuple[str, ...] = ()) -> Verdict:
        """Refused with ``message``; kube-apiserver answers the client
        ``admission webhook "NAME" denied the request: MESSAGE``."""
        if not message:
            raise ValueError("a denial needs a message saying what is wrong")
        return cls(False, message, code, warnings)


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """One ``AdmissionReview.request``, decoded.

    ``kind``/``resource`` are ``{group, version, kind|resource}`` of the
    object as the webhook matched it (``request_kind``/``request_resource``:
    as the client sent it, which differs under ``matchPolicy: Equivalent``).
    ``object``, ``old_object`` and ``options`` are the review's own dicts, not
    copies: the server decodes each review for one handler.
    """

    uid: str
    operation: str
    kind: Mapping[str, str]
    resource: Mapping[str, str]
    sub_resource: str
    name: str
    namespace: str
    user: UserInfo
    object: Obj | None
    old_object: Obj | None
    dry_run: bool
    options: Obj | None
    request_kind: Mapping[str, str]
    request_resource: Mapping[str, str]

    @classmethod
    def from_review(cls, review: Any, *, body: bytes | None = None) -> AdmissionRequest:
        """Decode an AdmissionReview v1; :class:`MalformedReview` says what is missing.

        ``body``, the JSON ``review`` was decoded from, spares the depth check's
        walk when it holds too few brackets to nest that deep."""
        req = review_request(review, ADMISSION_V1, "AdmissionReview",
                             "the webhook's admissionReviewVersions", body=body)
        if not isinstance(req, Mapping):
            raise MalformedReview("the AdmissionReview has no request")
        uid, operation = req.get("uid"), req.get("operation")
        if not isinstance(uid, str) or not uid:
            raise MalformedReview("the AdmissionReview's request has no uid")
        if operation not in OPERATIONS:
            raise MalformedReview(f"request.operation {shown(operation)} is not one of "
                                  f"{', '.join(OPERATIONS)}")
        given = req.get("userInfo")
        user: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        groups, extra = user.get("groups") or [], user.get("extra") or {}
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise MalformedReview(f"request.userInfo.groups {shown(groups)} is not a list of "
                                  f"strings")
        if not isinstance(extra, Mapping) or not all(
                isinstance(v, list) and all(isinstance(s, str) for s in v)
                for v in extra.values()):
            raise MalformedReview(f"request.userInfo.extra {shown(extra)} is not a map of "
                                  f"lists of strings")
        kind = _strings(req.get("kind"))
        resource = _strings(req.get("resource"))
        return cls(
            uid=uid, operation=operation, kind=kind, resource=resource,
            sub_resource=str(req.get("subResource") or ""),
            name=str(req.get("name") or ""), namespace=str(req.get("namespace") or ""),
            user=UserInfo(str(user.get("username") or ""), str(user.get("uid") or ""),
                          tuple(groups), {str(k): tuple(v) for k, v in extra.items()}),
            object=_object(req.get("object")), old_object=_object(req.get("oldObject")),
            dry_run=bool(req.get("dryRun")), options=_object(req.get("options")),
            request_kind=_strings(req.get("requestKind")) or kind,
            request_resource=_strings(req.get("requestResource")) or resource)


def review_request(review: Any, api_version: str, kind: str, setting: str, *,
                   body: bytes | None = None) -> Any:
    """The ``request`` of a review of ``kind`` at ``api_version``; :class:`MalformedReview`
    if the body is another kind or version (``setting`` names what to fix), or nests
    deeper than :data:`MAX_DEPTH`. ``review`` is walked for its depth unless ``body``, the
    JSON it was decoded from, has no more opening brackets than that (each level needs
    one: brackets inside strings only add to the count)."""
    if not isinstance(review, Mapping):
        raise MalformedReview("the body is not a JSON object")
    shallow = body is not None and body.count(b"{") + body.count(b"[") <= MAX_DEPTH
    if not shallow and nests_deeper(review, MAX_DEPTH):
        raise MalformedReview(f"the body nests objects and lists deeper than {MAX_DEPTH} "
                              f"levels, more than this server decodes")
    if review.get("apiVersion") != api_version or review.get("kind") != kind:
        raise MalformedReview(
            f"expected kind {kind} of {api_version}, got kind {shown(review.get('kind'))} of "
            f"apiVersion {shown(review.get('apiVersion'))} (set {setting} to [v1])")
    return review.get("request")


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether ``value`` has objects or lists nested more than ``limit`` levels (iterative:
    safe on any depth). Decoded JSON is dicts and lists: other mappings are not walked."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = (item.values() if isinstance(item, dict)
                    else item if isinstance(item, list) else None)
        if children is None:
            continue
        if level > limit:
            return True
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
    return False


def shown(value: Any, limit: int = 80) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters: a request's values
    may be megabytes long, and a refusal must not repeat them."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def review_response(uid: str, verdict: Verdict, patch: list[Obj] | None = None) -> Obj:
    """The AdmissionReview v1 to answer with."""
    response: Obj = {"uid": uid, "allowed": verdict.allowed}
    if not verdict.allowed:
        response["status"] = {"code": verdict.code, "message": verdict.message,
                              "reason": _reason(verdict.code)}
    if verdict.warnings:
        response["warnings"] = list(verdict.warnings)
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode()
    return {"apiVersion": ADMISSION_V1, "kind": "AdmissionReview", "response": response}


def json_patch(old: Any, new: Any, path: str = "") -> list[Obj]:
    """RFC 6902 operations that turn ``old`` into ``new``.

    Objects are compared key by key (``add``/``remove``/``replace`` of what
    differs); a list that differs is replaced whole, so the patch never
    depends on list positions the API server may have shifted. An empty list
    means equal.
    """
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        ops: list[Obj] = []
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": f"{path}/{_escape(key)}"})
        for key, value in new.items():
            sub = f"{path}/{_escape(key)}"
            if key not in old:
                ops.append({"op": "add", "path": sub, "value": copy.deepcopy(value)})
            else:
                ops.extend(json_patch(old[key], value, sub))
        return ops
    if old == new and type(old) is type(new):
        return []
    return [{"op": "replace", "path": path, "value": copy.deepcopy(new)}]


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _reason(code: int) -> str:
    return {400: "BadRequest", 403: "Forbidden", 409: "Conflict", 422: "Invalid",
            500: "InternalError", 504: "Timeout"}.get(code, "")


def _object(value: Any) -> Obj | None:
    # The review's own dict, not a copy: the server decodes each review afresh and hands
    # its objects to one handler (a defaulter's answer is diffed against a copy it keeps).
    if isinstance(value, dict):
        return value
    return dict(value) if isinstance(value, Mapping) else None


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, Mapping) else {}
