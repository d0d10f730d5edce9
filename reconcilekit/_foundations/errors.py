"""Errors of the Kubernetes API, typed by the ``kind: Status`` body the server answers.

kube-apiserver answers every failed request with a Status object::

    {"kind": "Status", "status": "Failure", "code": 404, "reason": "NotFound",
     "message": "pods \\"x\\" not found", "details": {"name": "x", "kind": "pods"}}

:func:`error_from_response` turns such an answer into one exception class per
reason, so callers write ``except NotFound:`` instead of comparing codes.
Classes follow k8s.io/apimachinery/pkg/api/errors: the reason decides where
one code has several meanings (409 AlreadyExists or Conflict, 410 Expired or
Gone), the code decides otherwise.

Failures without an HTTP answer (refused or reset connections, timeouts) are
:class:`APIConnectionError` and :class:`APITimeoutError`; they carry no Status.
"""

from __future__ import annotations

import http
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

import aiohttp
import orjson

__all__ = [
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AlreadyExists",
    "BadRequest",
    "Conflict",
    "Expired",
    "Forbidden",
    "Gone",
    "Invalid",
    "MethodNotAllowed",
    "NotFound",
    "ServerError",
    "TooManyRequests",
    "Unauthorized",
    "UnsupportedMediaType",
    "describe_error",
    "error_from_response",
    "error_from_status",
]

_SNIPPET_CHARS = 300

# apimachinery's StatusReason for a bare code, used when a body names none.
_REASONS: dict[int, str] = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 406: "NotAcceptable", 409: "Conflict", 410: "Gone",
    413: "RequestEntityTooLarge", 415: "UnsupportedMediaType", 422: "Invalid",
    429: "TooManyRequests", 500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}

# client-go's NewGenericServerResponse wording for an answer that explains nothing.
_MESSAGES: dict[int, str] = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    403: "the server does not allow access to the requested resource",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    409: "the server reported a conflict",
    410: "the server could not find the requested resource, and it is gone",
    415: "the server does not support the media type of the request",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    500: "an error on the server has prevented the request from succeeding",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, "
         "but may still be processing the request",
}


class APIError(Exception):
    """The API server answered a request with a failure.

    Attributes:
      * ``status``: the HTTP status code (``404``);
      * ``reason``: the Status reason (``"NotFound"``), or a reason derived
        from the code when the answer had none;
      * ``message``: the server's explanation, never empty;
      * ``details``: the Status ``details`` (name, group, kind, causes,
        retryAfterSeconds), ``{}`` when absent;
      * ``body``: the whole Status dict; for an answer that was not a Status
        (an HTML page from a proxy), one made up from the fields above;
      * ``retry_after``: seconds the server asked the client to wait
        (``Retry-After`` header, else ``details.retryAfterSeconds``), or None.

    ``str(err)`` reads ``404 NotFound: pods "x" not found``.

    Subclasses fix ``status`` and ``reason`` by default, so a test double can
    raise ``NotFound('pods "x" not found')``.
    """

    code: ClassVar[int | None] = None
    default_reason: ClassVar[str | None] = None

    def __init__(self, message: str = "", *, status: int | None = None,
                 reason: str | None = None, details: Mapping[str, Any] | None = None,
                 body: Mapping[str, Any] | None = None,
                 retry_after: float | None = None) -> None:
        code = status if status is not None else self.code
        if code is None:
            raise TypeError("APIError needs a status code")
        self.status: int = code
        self.reason: str = reason or self.default_reason or _REASONS.get(code) or _phrase(code)
        self.message: str = message or _MESSAGES.get(code) or (
            f"the server responded with the status code {code} but did not return more "
            "information")
        self.details: dict[str, Any] = dict(details or {})
        self.body: dict[str, Any] = (dict(body) if body is not None else _status_body(
            code, self.reason, self.message, self.details))
        self.retry_after: float | None = retry_after
        super().__init__(self.message)

    @property
    def causes(self) -> list[dict[str, Any]]:
        """``details.causes``: for Invalid, one entry per rejected field."""
        causes = self.details.get("causes")
        return [c for c in causes if isinstance(c, dict)] if isinstance(causes, list) else []

    def __str__(self) -> str:
        return f"{self.status} {self.reason}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.status}, {self.reason!r}, {self.message!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.status, self.reason, self.details,
                           self.body, self.retry_after))


def _rebuild(cls: type[APIError], message: str, status: int, reason: str,
             details: dict[str, Any], body: dict[str, Any],
             retry_after: float | None) -> APIError:
    return cls(message, status=status, reason=reason, details=details, body=body,
               retry_after=retry_after)


class BadRequest(APIError):
    """400: the request is malformed (bad JSON, bad selector, bad parameter)."""

    code = 400


class Unauthorized(APIError):
    """401: no valid credentials (wrong or expired token)."""

    code = 401


class Forbidden(APIError):
    """403: authenticated (or anonymous) but not allowed by RBAC, or refused by admission."""

    code = 403


class NotFound(APIError):
    """404: the object, or the resource type itself, does not exist."""

    code = 404


class MethodNotAllowed(APIError):
    """405: the resource does not support this verb."""

    code = 405


class AlreadyExists(APIError):
    """409 AlreadyExists: a create named an object that exists."""

    code = 409
    default_reason = "AlreadyExists"


class Conflict(APIError):
    """409 Conflict: the write was based on a stale resourceVersion (or a precondition failed).

    The usual answer is to read the object again and retry: in a controller,
    let the reconcile fail and be requeued.
    """

    code = 409


class Gone(APIError):
    """410: the resource version or continue token asked for is no longer available."""

    code = 410


class Expired(Gone):
    """410 Expired: a watch or a continued list asked for a compacted resourceVersion.

    Start over with a fresh list.
    """

    default_reason = "Expired"


class UnsupportedMediaType(APIError):
    """415: e.g. a strategic-merge patch sent to a custom resource."""

    code = 415


class Invalid(APIError):
    """422: the object failed validation; :attr:`causes` names each rejected field."""

    code = 422


class TooManyRequests(APIError):
    """429: throttled by API Priority and Fairness; :attr:`retry_after` says how long to wait."""

    code = 429


class ServerError(APIError):
    """5xx: InternalError (500), ServiceUnavailable (503), Timeout (504), a proxy's 502, ..."""

    code = 500


class APIConnectionError(Exception):
    """The request got no HTTP answer: the connection was refused, reset or cut short.

    ``sent`` is False when the connection could not be opened at all, so the
    server cannot have acted on the request; True when it may have.
    """

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class APITimeoutError(APIConnectionError, TimeoutError):
    """The request got no complete answer within its timeout (``sent`` is True)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, sent=True)


def describe_error(err: BaseException) -> str:
    """``err`` in plain words for a log line: what went wrong, with no private class names.

    reconcilekit's errors describe themselves; aiohttp's and the operating
    system's, which a watch body can raise while it is read, are put in words.
    """
    if type(err).__module__.startswith("reconcilekit.") and str(err):
        return str(err)  # reconcilekit's errors describe themselves
    if isinstance(err, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(err, aiohttp.ClientPayloadError):
        return "the connection closed in the middle of the answer"
    if isinstance(err, TimeoutError):
        return "no data within the read timeout"
    if isinstance(err, ConnectionError | aiohttp.ClientConnectionError):
        return f"connection lost ({err or type(err).__name__})"
    if isinstance(err, ValueError):
        return f"malformed data from the server ({err})"
    text = str(err)
    name = type(err).__name__.lstrip("_")
    return f"{name}: {text}" if text else name


_BY_CODE: dict[int, type[APIError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    409: Conflict, 410: Gone, 415: UnsupportedMediaType, 422: Invalid, 429: TooManyRequests,
}
_BY_REASON: dict[str, type[APIError]] = {
    "AlreadyExists": AlreadyExists, "Conflict": Conflict, "Expired": Expired, "Gone": Gone,
    "NotFound": NotFound, "Invalid": Invalid, "Forbidden": Forbidden,
    "Unauthorized": Unauthorized, "BadRequest": BadRequest, "MethodNotAllowed": MethodNotAllowed,
    "UnsupportedMediaType": UnsupportedMediaType, "TooManyRequests": TooManyRequests,
    "InternalError": ServerError, "ServiceUnavailable": ServerError, "Timeout": ServerError,
    "ServerTimeout": ServerError,
}


def _error_class(status: int, reason: str) -> type[APIError]:
    if status in (409, 410):
        by_reason = _BY_REASON.get(reason)
        if by_reason is not None and by_reason.code == status:
            return by_reason
        return _BY_CODE[status]
    if status >= 500:
        return ServerError
    by_code = _BY_CODE.get(status)
    if by_code is not None:
        return by_code
    if status < 400:  # no usable code (e.g. a Status inside a watch stream without one)
        return _BY_REASON.get(reason, APIError)
    return APIError


def error_from_response(status: int, body: bytes | str | Mapping[str, Any] | None,
                        headers: Mapping[str, str] | None = None) -> APIError:
    """The typed error for an HTTP answer with ``status`` and ``body``.

    ``body`` may be the raw bytes, text, or an already decoded dict. Never
    raises: a body that is not a Status (an HTML page from a proxy, plain
    text, JSON of another shape) gives the class of ``status`` with a message
    quoting the start of the body.
    """
    status_dict: Mapping[str, Any] | None = None
    text = ""
    if isinstance(body, Mapping):
        status_dict = body
    elif body:
        raw = body if isinstance(body, bytes) else body.encode(errors="replace")
        try:
            decoded = orjson.loads(raw)
        except orjson.JSONDecodeError:
            decoded = None
        if isinstance(decoded, dict):
            status_dict = decoded
        else:
            text = raw.decode(errors="replace")
    if status_dict is not None and not _is_status(status_dict):
        try:
            text = orjson.dumps(status_dict).decode()
        except TypeError:  # a decoded dict handed in by a caller: not necessarily JSON-able
            text = repr(status_dict)
        status_dict = None
    retry_after = _retry_after_header(headers)
    if status_dict is None:
        reason = _REASONS.get(status) or _phrase(status)
        content_type = _header(headers, "Content-Type") or ""
        message = (f"unexpected answer ({content_type or 'no content type'}): "
                   f"{_snippet(text, content_type)}" if text.strip() else "")
        return _error_class(status, reason)(message, status=status, reason=reason,
                                            retry_after=retry_after)
    return _from_status(status, status_dict, retry_after)


def _is_status(body: Mapping[str, Any]) -> bool:
    return body.get("kind") == "Status" or (
        "kind" not in body and isinstance(body.get("message"), str) and "code" in body)


def error_from_status(status: Mapping[str, Any]) -> APIError:
    """The typed error for a Status object received in-band (a watch ``ERROR`` event)."""
    code = status.get("code")
    return _from_status(code if isinstance(code, int) else 0, status, None)


def _from_status(status: int, body: Mapping[str, Any], retry_after: float | None) -> APIError:
    raw_reason = body.get("reason")
    reason = raw_reason if isinstance(raw_reason, str) and raw_reason else ""
    if not status:
        body_code = body.get("code")
        status = body_code if isinstance(body_code, int) else 0
    reason = reason or _REASONS.get(status) or _phrase(status)
    raw_details = body.get("details")
    details: dict[str, Any] = dict(raw_details) if isinstance(raw_details, Mapping) else {}
    if retry_after is None:
        seconds = details.get("retryAfterSeconds")
        if isinstance(seconds, int | float) and not isinstance(seconds, bool) and seconds >= 0:
            retry_after = float(seconds)
    raw_message = body.get("message")
    message = raw_message if isinstance(raw_message, str) else ""
    return _error_class(status, reason)(message, status=status, reason=reason, details=details,
                                        body=body, retry_after=retry_after)


def _header(headers: Mapping[str, str] | None, name: str) -> str | None:
    if not headers:
        return None
    value = headers.get(name)
    if value is None:
        lowered = name.lower()
        value = next((v for k, v in headers.items() if k.lower() == lowered), None)
    return value


def _retry_after_header(headers: Mapping[str, str] | None) -> float | None:
    """``Retry-After`` in seconds; an HTTP-date or garbage counts as absent (as in client-go)."""
    value = _header(headers, "Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)
_SPACE = re.compile(r"\s+")


def _snippet(text: str, content_type: str) -> str:
    if "html" in content_type.lower() or text.lstrip().startswith("<"):
        text = _TAG.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    return text if len(text) <= _SNIPPET_CHARS else text[:_SNIPPET_CHARS] + "..."


def _phrase(status: int) -> str:
    """``BadGateway`` for 502: the HTTP reason phrase in apimachinery's CamelCase style."""
    try:
        return http.HTTPStatus(status).phrase.title().replace(" ", "").replace("-", "")
    except ValueError:
        return "Unknown"


def _status_body(status: int, reason: str, message: str,
                 details: Mapping[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "reason": reason}
    if details:
        body["details"] = dict(details)
    body["code"] = status
    return body
