"""Typed API errors: from Status bodies, from answers that are not Status, and by hand."""

from __future__ import annotations

import pickle
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from reconcilekit import (
    AlreadyExists,
    APIConnectionError,
    APIError,
    APITimeoutError,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    ServerError,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
)
from reconcilekit.lowlevel import error_from_response, error_from_status


def status(code: int, reason: str, message: str = "m", **extra: Any) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code, **extra}


@pytest.mark.parametrize(("code", "reason", "cls"), [
    (400, "BadRequest", BadRequest),
    (401, "Unauthorized", Unauthorized),
    (403, "Forbidden", Forbidden),
    (404, "NotFound", NotFound),
    (405, "MethodNotAllowed", MethodNotAllowed),
    (409, "AlreadyExists", AlreadyExists),
    (409, "Conflict", Conflict),
    (409, "", Conflict),
    (410, "Expired", Expired),
    (410, "Gone", Gone),
    (415, "UnsupportedMediaType", UnsupportedMediaType),
    (422, "Invalid", Invalid),
    (429, "TooManyRequests", TooManyRequests),
    (500, "InternalError", ServerError),
    (500, "ServerTimeout", ServerError),
    (502, "", ServerError),
    (503, "ServiceUnavailable", ServerError),
    (504, "Timeout", ServerError),
    (408, "", APIError),
])
def test_status_code_and_reason_pick_the_class(code: int, reason: str,
                                               cls: type[APIError]) -> None:
    err = error_from_response(code, orjson.dumps(status(code, reason)), {})
    assert type(err) is cls
    assert err.status == code and isinstance(err, APIError)
    assert err.reason == (reason or err.reason) and err.reason


def test_the_message_names_code_reason_and_problem() -> None:
    body = status(404, "NotFound", 'pods "x" not found', details={"name": "x", "kind": "pods"})
    err = error_from_response(404, orjson.dumps(body), {"Content-Type": "application/json"})
    assert str(err) == '404 NotFound: pods "x" not found'
    assert err.message == 'pods "x" not found'
    assert err.details == {"name": "x", "kind": "pods"} and err.body == body
    assert repr(err) == "NotFound(404, 'NotFound', 'pods \"x\" not found')"


def test_the_http_status_wins_over_the_body_code() -> None:
    err = error_from_response(503, status(500, "InternalError"), None)
    assert err.status == 503 and isinstance(err, ServerError)


def test_already_exists_and_expired_are_told_apart_from_their_codes_siblings() -> None:
    exists = error_from_response(409, status(409, "AlreadyExists"), None)
    assert isinstance(exists, AlreadyExists) and not isinstance(exists, Conflict)
    expired = error_from_response(410, status(410, "Expired"), None)
    assert isinstance(expired, Gone)  # ``except Gone`` catches both 410 reasons


def test_invalid_lists_its_causes() -> None:
    causes = [{"reason": "FieldValueRequired", "message": "Required value",
               "field": "spec.size"}]
    err = error_from_response(422, status(422, "Invalid", details={"causes": causes}), None)
    assert isinstance(err, Invalid) and err.causes == causes
    assert NotFound().causes == []


@pytest.mark.parametrize(("headers", "details", "expected"), [
    ({"Retry-After": "7"}, {}, 7.0),
    ({"retry-after": "2.5"}, {}, 2.5),
    ({}, {"retryAfterSeconds": 3}, 3.0),
    ({"Retry-After": "1"}, {"retryAfterSeconds": 9}, 1.0),
    ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, {}, None),
    ({"Retry-After": "-1"}, {}, None),
    ({"Retry-After": "nan"}, {"retryAfterSeconds": 4}, 4.0),
    ({}, {"retryAfterSeconds": "soon"}, None),
    ({}, {}, None),
])
def test_retry_after_comes_from_the_header_or_the_details(
        headers: dict[str, str], details: dict[str, Any], expected: float | None) -> None:
    err = error_from_response(429, status(429, "TooManyRequests", details=details), headers)
    assert isinstance(err, TooManyRequests) and err.retry_after == expected


def test_an_html_page_from_a_proxy_is_a_server_error_quoting_its_text() -> None:
    page = ("<html><head><title>502 Bad Gateway</title><style>body {color: red}</style></head>"
            "<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>"
            + "<p>padding</p>" * 200 + "</body></html>")
    err = error_from_response(502, page.encode(), {"Content-Type": "text/html"})
    assert isinstance(err, ServerError) and err.status == 502 and err.reason == "BadGateway"
    assert err.message.startswith(
        "unexpected answer (text/html): 502 Bad Gateway 502 Bad Gateway nginx padding")
    assert "<" not in err.message and "color" not in err.message
    assert len(err.message) < 400 and err.message.endswith("...")
    assert err.body["kind"] == "Status" and err.body["code"] == 502
    assert str(err).startswith("502 BadGateway: unexpected answer")


def test_plain_text_empty_and_foreign_json_bodies() -> None:
    text = error_from_response(503, b"upstream connect error", {"content-type": "text/plain"})
    assert isinstance(text, ServerError)
    assert text.message == "unexpected answer (text/plain): upstream connect error"
    empty = error_from_response(404, b"", None)
    assert isinstance(empty, NotFound)
    assert str(empty) == "404 NotFound: the server could not find the requested resource"
    foreign = error_from_response(400, b'{"error": "bad"}', None)
    assert isinstance(foreign, BadRequest) and '{"error":"bad"}' in foreign.message
    not_utf8 = error_from_response(500, b"\xff\xfe broken", None)
    assert isinstance(not_utf8, ServerError) and "broken" in not_utf8.message
    odd = error_from_response(599, None, None)
    assert isinstance(odd, ServerError) and odd.reason == "Unknown" and "599" in odd.message


def test_a_status_without_kind_is_still_read() -> None:
    err = error_from_response(409, {"message": "stale", "code": 409, "reason": "Conflict"}, None)
    assert isinstance(err, Conflict) and err.message == "stale"


def test_an_in_band_status_from_a_watch() -> None:
    err = error_from_status(status(410, "Expired", "too old resource version: 1 (5)"))
    assert isinstance(err, Expired) and err.status == 410
    assert str(err) == "410 Expired: too old resource version: 1 (5)"
    no_code = error_from_status({"kind": "Status", "reason": "NotFound", "message": "gone"})
    assert isinstance(no_code, NotFound)


def test_errors_made_by_hand_are_complete() -> None:
    err = NotFound('pods "x" not found')
    assert (err.status, err.reason) == (404, "NotFound")
    assert err.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure", "message": 'pods "x" not found',
                        "reason": "NotFound", "code": 404}
    assert AlreadyExists().reason == "AlreadyExists" and Expired().reason == "Expired"
    assert ServerError(status=504).reason == "Timeout"
    assert TooManyRequests(retry_after=3).retry_after == 3
    with pytest.raises(TypeError, match="status code"):
        APIError("no code")


def test_errors_survive_pickling() -> None:
    err = error_from_response(422, status(422, "Invalid", details={"causes": [{"field": "a"}]}),
                              {"Retry-After": "2"})
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is Invalid
    assert (again.status, again.reason, again.message, again.details, again.body,
            again.retry_after) == (err.status, err.reason, err.message, err.details, err.body,
                                   err.retry_after)


def test_connection_errors() -> None:
    timeout = APITimeoutError("GET /x: no answer")
    assert isinstance(timeout, TimeoutError) and isinstance(timeout, APIConnectionError)
    assert timeout.sent
    assert not APIConnectionError("refused", sent=False).sent


@given(code=st.integers(min_value=0, max_value=999),
       body=st.one_of(st.none(), st.binary(max_size=300), st.text(max_size=300),
                      st.dictionaries(st.text(max_size=10),
                                      st.one_of(st.none(), st.integers(), st.text(max_size=20),
                                                st.lists(st.integers(), max_size=3)),
                                      max_size=6)),
       headers=st.dictionaries(st.sampled_from(["Retry-After", "Content-Type", "X"]),
                               st.text(max_size=30), max_size=3))
@example(code=0, body={"": -2**64}, headers={})  # a dict orjson cannot encode
@example(code=429, body={"kind": "Status", "details": {"retryAfterSeconds": float("inf")}},
         headers={"Retry-After": "inf"})
@settings(max_examples=300)
def test_error_from_response_never_raises(code: int, body: Any, headers: dict[str, str]) -> None:
    err = error_from_response(code, body, headers)
    assert isinstance(err, APIError) and err.message and err.reason
    assert str(err).startswith(f"{code} ")
    assert err.retry_after is None or err.retry_after >= 0
