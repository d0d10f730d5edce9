"""kube-apiserver's error responses: ``kind: Status`` bodies and their codes.

Messages follow k8s.io/apimachinery/pkg/api/errors (NewNotFound,
NewAlreadyExists, NewConflict, NewInvalid, NewForbidden, NewBadRequest,
NewMethodNotSupported, NewResourceExpired, NewTooManyRequests) so that a
client matching on reason, code or details behaves as against a real cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["StatusError", "Cause", "DecodeError", "PageNotFound", "status_body"]


class DecodeError(Exception):
    """Why a body does not decode into the kind's Go type, in Go's words (``str(error)``).

    kube-apiserver answers it with 400 ("X in version "v1" cannot be handled
    as a X: ...") or, for a patched object, 422 on the field ``patch``.
    """


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``details.causes`` entry of an Invalid error (``reason`` e.g. FieldValueRequired)."""

    reason: str
    message: str
    field: str


@dataclass(slots=True)
class StatusError(Exception):
    """A request failure the server answers with a Status body."""

    code: int
    reason: str
    message: str
    details: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.code} {self.reason}: {self.message}"

    def body(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, self.details)

    # -- constructors named after apimachinery's ------------------------------

    @classmethod
    def not_found(cls, group_resource: str, name: str, group: str = "") -> StatusError:
        return cls(404, "NotFound", f'{group_resource} "{name}" not found',
                   _details(name, group, group_resource))

    @classmethod
    def already_exists(cls, group_resource: str, name: str, group: str = "") -> StatusError:
        return cls(409, "AlreadyExists", f'{group_resource} "{name}" already exists',
                   _details(name, group, group_resource))

    @classmethod
    def conflict(cls, group_resource: str, name: str, why: str, group: str = "") -> StatusError:
        return cls(409, "Conflict",
                   f'Operation cannot be fulfilled on {group_resource} "{name}": {why}',
                   _details(name, group, group_resource))

    @classmethod
    def stale(cls, group_resource: str, name: str, group: str = "") -> StatusError:
        return cls.conflict(
            group_resource, name,
            "the object has been modified; please apply your changes to the latest "
            "version and try again", group)

    @classmethod
    def invalid(cls, kind: str, name: str, causes: list[Cause], group: str = "") -> StatusError:
        # field.ErrorList.ToAggregate: a message repeated is shown once (the causes keep all)
        parts = list(dict.fromkeys(f"{c.field}: {c.message}" if c.field else c.message
                                   for c in causes))
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        details = _details(name, group, kind)
        details["causes"] = [
            {"reason": c.reason, "message": c.message, "field": c.field} for c in causes
        ]
        return cls(422, "Invalid", f'{kind} "{name}" is invalid: {joined}', details)

    @classmethod
    def invalid_options(cls, kind: str, causes: list[Cause]) -> StatusError:
        """A 422 on request options (``ListOptions``, ``DeleteOptions``, ``CreateOptions``...)."""
        return cls.invalid(f"{kind}.meta.k8s.io", "", causes, "meta.k8s.io")

    @classmethod
    def bad_request(cls, message: str) -> StatusError:
        return cls(400, "BadRequest", message)

    @classmethod
    def forbidden(cls, user: str, verb: str, plural: str, group: str,
                  namespace: str | None, name: str | None = None,
                  subresource: str = "") -> StatusError:
        """k8s.io/apiserver's ``ForbiddenStatusError`` of a resource request."""
        qualified = f"{plural}.{group}" if group else plural
        what = f'{qualified} "{name}"' if name else qualified
        where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
        shown = f"{plural}/{subresource}" if subresource else plural
        message = (f'{what} is forbidden: User "{user}" cannot {verb} resource "{shown}" '
                   f'in API group "{group}"{where}')
        details: dict[str, Any] = {"name": name} if name else {}
        if group:
            details["group"] = group
        details["kind"] = plural
        return cls(403, "Forbidden", message, details)

    @classmethod
    def forbidden_because(cls, group_resource: str, name: str, group: str,
                          reason: str) -> StatusError:
        """``NewForbidden``: an admission step refuses a request on ``name``."""
        what = f'{group_resource} "{name}"' if name else group_resource
        return cls(403, "Forbidden", f"{what} is forbidden: {reason}",
                   _details(name, group, group_resource))

    @classmethod
    def forbidden_path(cls, user: str, path: str, verb: str = "get") -> StatusError:
        return cls(403, "Forbidden",
                   f'forbidden: User "{user}" cannot {verb} path "{path}"', {})

    @classmethod
    def unauthorized(cls) -> StatusError:
        return cls(401, "Unauthorized", "Unauthorized")

    @classmethod
    def method_not_allowed(cls) -> StatusError:
        return cls(405, "MethodNotAllowed",
                   "the server does not allow this method on the requested resource", {})

    @classmethod
    def not_found_path(cls) -> StatusError:
        return cls(404, "NotFound", "the server could not find the requested resource", {})

    @classmethod
    def page_not_found(cls) -> StatusError:
        """Go's ``http.NotFound``: a path no API group serves (a custom resource's group,
        a group nobody serves, a path outside ``/api`` and ``/apis``), in text/plain."""
        return PageNotFound(404, "NotFound", "404 page not found")

    @classmethod
    def expired(cls, message: str) -> StatusError:
        return cls(410, "Expired", message)

    @classmethod
    def too_many_requests(cls, retry_after: int = 1) -> StatusError:
        return cls(429, "TooManyRequests", "Too many requests, please try again later.",
                   {"retryAfterSeconds": retry_after},
                   {"Retry-After": str(retry_after)})

    @classmethod
    def internal(cls, message: str = "an error on the server has prevented the request "
                 "from succeeding") -> StatusError:
        return cls(500, "InternalError", f"Internal error occurred: {message}",
                   {"causes": [{"message": message}]})

    @classmethod
    def timeout(cls, message: str = "the server was unable to return a response in the "
                "time allotted, but may still be processing the request") -> StatusError:
        return cls(504, "Timeout", message, {})

    @classmethod
    def unsupported_media_type(cls, content_type: str) -> StatusError:
        return cls(415, "UnsupportedMediaType",
                   f'the body of the request was in an unknown format - accepted media '
                   f'types include: application/json-patch+json, application/merge-patch+json, '
                   f'application/apply-patch+yaml (got "{content_type}")')

    @classmethod
    def for_status(cls, code: int, retry_after: int | None = None) -> StatusError:
        """The error kube-apiserver answers for a bare HTTP code (fault injection)."""
        if code == 429:
            return cls.too_many_requests(retry_after if retry_after is not None else 1)
        if code == 504:
            return cls.timeout()
        if code == 409:
            return cls(409, "Conflict", "Operation cannot be fulfilled: injected conflict", {})
        if code == 503:
            return cls(503, "ServiceUnavailable", "the server is currently unable to handle "
                       "the request", {})
        if code >= 500:
            return cls.internal("injected failure")
        reason = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
                  410: "Expired", 422: "Invalid"}.get(code, "Unknown")
        return cls(code, reason, f"injected {code}", {})


class PageNotFound(StatusError):
    """A 404 answered as Go's ``http.NotFound`` does: ``404 page not found`` in
    text/plain, no Status (see :meth:`StatusError.page_not_found`)."""


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    """StatusDetails; empty fields are left out, as Go's ``omitempty`` does."""
    details: dict[str, Any] = {"name": name} if name else {}
    if group:
        details["group"] = group
    # apimachinery puts the resource (plural) in details.kind for these errors.
    if kind:
        details["kind"] = kind.split(".", 1)[0] if group else kind
    return details


def status_body(code: int, reason: str, message: str,
                details: dict[str, Any] | None = None) -> dict[str, Any]:
    """A ``kind: Status`` failure body as kube-apiserver writes it (no empty reason)."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
    }
    if reason:
        body["reason"] = reason
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body
