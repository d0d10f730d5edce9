"""Generated bad input for the webhook server: bytes, JSON and mutated reviews over HTTPS.

What must hold for every request: the answer is HTTP 200 with a review of
the right kind whose ``uid`` echoes the request's, or a 4xx whose body names
the problem; never a 500 or a hang. The log carries no traceback and
nothing above WARNING: a request answered 200 adds no line above DEBUG, a
refused one exactly one WARNING (the API server that sent it is
misconfigured, which an operator must hear about, once per request). A
mutated review that is still a valid review is answered 200.
"""

from __future__ import annotations

import copy
import io
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import anyio
import orjson
import pytest
from fuzz_support import JSON, Big, Deep, LogWindow, assert_quiet_failure, depth, dumps, explore
from hypothesis import strategies as st

from reconcilekit import Resource
from reconcilekit.webhook import AdmissionRequest, ServingCertificate, Verdict, WebhookServer

WIDGETS = Resource("example.com", "v1", "Widget", "widgets")
VALIDATE, DEFAULT, CONVERT = ("/validate-example-com-v1-widget",
                              "/default-example-com-v1-widget", "/convert")
JSON_TYPES = ("application/json", "application/json; charset=utf-8")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_DEPTH = 100  # deeper reviews may be refused (the server's documented bound is larger)


def widget(version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns", "labels": {"a": "b"}},
            "spec": {"size": 3, "items": [1, "two", {"three": 3}]}}


def admission_review() -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), "operation": "UPDATE",
                        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                        "resource": {"group": "example.com", "version": "v1",
                                     "resource": "widgets"},
                        "requestKind": {"group": "example.com", "version": "v1",
                                        "kind": "Widget"},
                        "name": "w", "namespace": "ns", "dryRun": False,
                        "userInfo": {"username": "alice", "uid": "1", "groups": ["devs"],
                                     "extra": {"scopes": ["a", "b"]}},
                        "object": widget(), "oldObject": widget(),
                        "options": {"apiVersion": "meta.k8s.io/v1", "kind": "UpdateOptions"}}}


def conversion_review() -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": str(uuid.uuid4()), "desiredAPIVersion": "example.com/v2",
                        "objects": [widget(), widget("v2")]}}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside ``value`` (object keys and list indexes)."""
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            out.extend(paths(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            out.extend(paths(inner, (*prefix, index)))
    return out


def replace_at(doc: Any, path: tuple[Any, ...], value: Any, *, drop: bool = False) -> None:
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if drop:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def replacements(draw: st.DrawFn) -> Any:
    """A value to put somewhere it does not belong."""
    kind = draw(st.sampled_from(["json", "huge", "deep", "wrong-version"]))
    if kind == "huge":
        return Big(draw(st.sampled_from([10_000, 300_000, 2_000_000])))
    if kind == "deep":
        return Deep(draw(st.sampled_from([50, 150, 300, 900, 1100])))
    if kind == "wrong-version":
        return draw(st.sampled_from(["admission.k8s.io/v1beta1", "v1", "", "AdmissionReview",
                                     "ConversionReview", "apiextensions.k8s.io/v1beta1"]))
    return draw(JSON)


@dataclass
class Sent:
    body: bytes = field(repr=False)  # shown by its first bytes in ``start``
    content_type: str | None
    review: Any  # the document before it was turned into bytes (None if it is not one)
    corrupted: bool  # bytes changed after serializing
    timeout: str | None
    start: bytes = b""

    def __post_init__(self) -> None:
        self.start = self.body[:120]

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """How hypothesis shows a failing example: without the (possibly huge) body."""
        printer.text(f"Sent(start={self.start!r}, content_type={self.content_type!r}, "
                     f"review={self.review!r:.2000}, corrupted={self.corrupted}, "
                     f"timeout={self.timeout!r})")


@st.composite
def requests(draw: st.DrawFn, make_review: Any) -> Sent:
    """Arbitrary bytes, arbitrary JSON, or a valid review mutated a few times."""
    content_type = draw(st.sampled_from([*JSON_TYPES, *JSON_TYPES, *JSON_TYPES, None,
                                         "text/plain", "application/yaml",
                                         "application/x-www-form-urlencoded"]))
    timeout = draw(st.none() | st.sampled_from(["10s", "1m30s", "bogus", "-5s", "0s", "1..2s"]))
    shape = draw(st.sampled_from(["bytes", "json", "review", "review", "review", "review"]))
    if shape == "bytes":
        return Sent(draw(st.binary(max_size=300)), content_type, None, True, timeout)
    review: Any = draw(JSON) if shape == "json" else make_review()
    if shape == "review":
        for _ in range(draw(st.integers(0, 3))):
            where = draw(st.sampled_from(paths(review)))
            action = draw(st.sampled_from(["drop", "replace"]))
            replace_at(review, where, draw(replacements()) if action == "replace" else None,
                       drop=action == "drop")
    body = dumps(review)
    corrupted = False
    cut = draw(st.sampled_from([None, None, None, "truncate", "invalid-utf8", "trailing"]))
    if cut == "truncate" and body:
        body, corrupted = body[:draw(st.integers(0, len(body) - 1))], True
    elif cut == "invalid-utf8" and body:
        at = draw(st.integers(0, len(body)))
        body, corrupted = body[:at] + b"\xff\xfe" + body[at:], True
    elif cut == "trailing":
        body, corrupted = body + b" {}", True
    return Sent(body, content_type, review, corrupted, timeout)


def still_valid_admission(sent: Sent) -> bool:
    """The request is an AdmissionReview v1 a server must answer (independent of the code)."""
    review = sent.review
    if sent.corrupted or sent.content_type not in JSON_TYPES or not isinstance(review, dict):
        return False
    request = review.get("request")
    if not (review.get("apiVersion") == "admission.k8s.io/v1"
            and review.get("kind") == "AdmissionReview" and isinstance(request, dict)
            and isinstance(request.get("uid"), str) and request["uid"] != ""
            and request.get("operation") in OPERATIONS and depth(review) <= MAX_DEPTH):
        return False
    user = request.get("userInfo")
    if not isinstance(user, dict):
        return True  # who asked is optional
    groups, extra = user.get("groups") or [], user.get("extra") or {}
    return (isinstance(groups, list) and all(isinstance(g, str) for g in groups)
            and isinstance(extra, dict)
            and all(isinstance(v, list) and all(isinstance(s, str) for s in v)
                    for v in extra.values()))


def still_valid_conversion(sent: Sent) -> bool:
    review = sent.review
    if sent.corrupted or sent.content_type not in JSON_TYPES or not isinstance(review, dict):
        return False
    request = review.get("request")
    if not (review.get("apiVersion") == "apiextensions.k8s.io/v1"
            and review.get("kind") == "ConversionReview" and isinstance(request, dict)):
        return False
    desired, objects = request.get("desiredAPIVersion"), request.get("objects")
    return (isinstance(request.get("uid"), str) and isinstance(desired, str)
            and "/" in desired and isinstance(objects, list)
            and all(isinstance(o, dict) and isinstance(o.get("metadata", {}), dict)
                    for o in objects) and depth(review) <= MAX_DEPTH)


def to_hub(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"] = dict(obj["spec"], hub=True)
    return obj


def from_hub(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"] = {k: v for k, v in obj["spec"].items() if k != "hub"}
    return obj


@asynccontextmanager
async def webhooks() -> AsyncIterator[tuple[WebhookServer, aiohttp.ClientSession]]:
    """A server with a validator, a defaulter and a conversion, and a session trusting it."""
    server = WebhookServer(host="127.0.0.1", port=0)

    @server.validator(WIDGETS, operations=OPERATIONS)
    async def validate(request: AdmissionRequest) -> Verdict:
        return Verdict.allow()

    @server.defaulter(WIDGETS, operations=OPERATIONS)
    async def default(request: AdmissionRequest) -> dict[str, Any] | None:
        obj = request.object
        if obj is None or not isinstance(obj.get("metadata"), dict):
            return None
        obj["metadata"]["annotations"] = {"defaulted": "yes"}
        return obj

    server.conversion(WIDGETS, hub="v1", spokes={"v2": (to_hub, from_hub)})
    assert isinstance(server.certificate, ServingCertificate)
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        connector = aiohttp.TCPConnector(ssl=server.certificate.client_context())
        async with aiohttp.ClientSession(connector=connector) as session:
            yield server, session
        tg.cancel_scope.cancel()


async def post(server: WebhookServer, session: aiohttp.ClientSession, path: str,
               sent: Sent) -> tuple[int, bytes, str]:
    headers = {} if sent.content_type is None else {"Content-Type": sent.content_type}
    query = {} if sent.timeout is None else {"timeout": sent.timeout}
    if sent.content_type is None:
        headers["Content-Type"] = ""  # aiohttp would add application/octet-stream
    with anyio.fail_after(60):  # a hang fails the test instead of blocking it
        async with session.post(f"{server.base_url}{path}", data=io.BytesIO(sent.body),
                                headers=headers, params=query) as response:
            return response.status, await response.read(), response.content_type


def check_answer(status: int, raw: bytes, content_type: str, sent: Sent, *, api_version: str,
                 kind: str, valid: bool) -> None:
    assert status in (200, 400, 413), (status, raw[:300])
    if status != 200:
        assert not valid, f"a valid review was refused: {raw[:300]!r}"
        assert content_type == "text/plain" and raw.strip(), raw[:300]
        assert len(raw) < 2000, f"the refusal repeats the input: {len(raw)} bytes"
        return
    answer = orjson.loads(raw)
    assert answer["apiVersion"] == api_version and answer["kind"] == kind
    assert answer["response"]["uid"] == orjson.loads(sent.body)["request"]["uid"]


@pytest.mark.parametrize("path", [VALIDATE, DEFAULT])
async def test_admission_reviews_of_any_shape_get_a_review_or_a_400(
        path: str, caplog: pytest.LogCaptureFixture) -> None:
    logs = LogWindow(caplog)  # from the first request on (started after the server)

    async def check(sent: Sent) -> None:
        logs.take()  # what a failed example before this one left
        status, raw, content_type = await post(server, session, path, sent)
        valid = still_valid_admission(sent)
        check_answer(status, raw, content_type, sent, api_version="admission.k8s.io/v1",
                     kind="AdmissionReview", valid=valid)
        if status == 200:
            response = orjson.loads(raw)["response"]
            assert response["allowed"] is True, response
        assert_quiet_failure(logs.take(), allowed=0 if status == 200 else 1)

    async with webhooks() as (server, session):
        logs.take()
        await explore(requests(admission_review), check, max_examples=120)


async def test_conversion_reviews_of_any_shape_get_a_review_or_a_400(
        caplog: pytest.LogCaptureFixture) -> None:
    logs = LogWindow(caplog)  # from the first request on (started after the server)

    async def check(sent: Sent) -> None:
        logs.take()  # what a failed example before this one left
        status, raw, content_type = await post(server, session, CONVERT, sent)
        check_answer(status, raw, content_type, sent, api_version="apiextensions.k8s.io/v1",
                     kind="ConversionReview", valid=still_valid_conversion(sent))
        if status == 200:
            result = orjson.loads(raw)["response"]["result"]
            assert result["status"] in ("Success", "Failure")
            if result["status"] == "Failure":
                assert result["message"] and len(result["message"]) < 2000
        # a conversion refused by its function is one WARNING too
        assert_quiet_failure(logs.take(), allowed=1)

    async with webhooks() as (server, session):
        logs.take()
        await explore(requests(conversion_review), check, max_examples=100)


async def test_an_unmutated_review_is_answered_with_its_uid() -> None:
    """The baseline the generated tests mutate is itself valid."""
    async with webhooks() as (server, session):
        for path, review in ((VALIDATE, admission_review()), (DEFAULT, admission_review()),
                             (CONVERT, conversion_review())):
            sent = Sent(dumps(review), "application/json", copy.deepcopy(review), False, None)
            status, raw, _ = await post(server, session, path, sent)
            assert status == 200, raw
            assert orjson.loads(raw)["response"]["uid"] == review["request"]["uid"]


# -- the defects the generated requests found, one example each ----------------------------------

async def test_a_refusal_does_not_repeat_a_huge_value(caplog: pytest.LogCaptureFixture) -> None:
    """A 2 MB ``kind`` used to be quoted whole, in the 400 and in the log line."""
    review = admission_review()
    review["kind"] = Big(2_000_000)
    async with webhooks() as (server, session):
        logs = LogWindow(caplog)
        status, raw, _ = await post(server, session, VALIDATE,
                                    Sent(dumps(review), "application/json", None, False, None))
        records = logs.take()
    assert status == 400
    assert raw.startswith(b"expected kind AdmissionReview of admission.k8s.io/v1, got kind 'xxx")
    assert b"(2000002 characters)" in raw and len(raw) < 500
    assert [len(r.getMessage()) < 500 for r in records if r.levelno >= logging.INFO] == [True]


@pytest.mark.parametrize(("user", "problem"), [
    ({"groups": 5}, b"request.userInfo.groups 5 is not a list of strings"),
    ({"groups": [1]}, b"request.userInfo.groups [1] is not a list of strings"),
    ({"extra": ["a"]}, b"request.userInfo.extra ['a'] is not a map of lists of strings"),
    ({"extra": {"k": "v"}}, b"request.userInfo.extra {'k': 'v'} is not a map of lists of strings"),
])
async def test_a_mistyped_user_info_is_a_400_not_a_500(
        user: dict[str, Any], problem: bytes, caplog: pytest.LogCaptureFixture) -> None:
    """``userInfo.groups``/``extra`` of the wrong type used to raise TypeError (HTTP 500 and
    aiohttp's traceback in the log)."""
    review = admission_review()
    review["request"]["userInfo"] = user
    async with webhooks() as (server, session):
        logs = LogWindow(caplog)
        status, raw, _ = await post(server, session, VALIDATE,
                                    Sent(dumps(review), "application/json", None, False, None))
        assert_quiet_failure(logs.take(), allowed=1)
    assert (status, raw) == (400, problem + b"\n")


@pytest.mark.parametrize("path", [DEFAULT, CONVERT])
async def test_a_review_nested_too_deep_is_a_400_not_a_500(
        path: str, caplog: pytest.LogCaptureFixture) -> None:
    """An object nested 900 levels (orjson reads up to 1024) used to exhaust the recursion
    limit while it was copied (HTTP 500); one nested 300 levels could not be written back
    into a ConversionReview (orjson writes up to 255)."""
    async with webhooks() as (server, session):
        logs = LogWindow(caplog)
        for levels in (300, 900):
            review = admission_review() if path == DEFAULT else conversion_review()
            obj = (review["request"]["object"] if path == DEFAULT
                   else review["request"]["objects"][0])
            obj["spec"]["deep"] = Deep(levels)
            status, raw, _ = await post(server, session, path,
                                        Sent(dumps(review), "application/json", None, False,
                                             None))
            assert (status, raw) == (400, b"the body nests objects and lists deeper than 250 "
                                          b"levels, more than this server decodes\n")
            assert_quiet_failure(logs.take(), allowed=1)
        review = conversion_review()
        review["request"]["objects"][0]["spec"]["deep"] = Deep(240)
        status, raw, _ = await post(server, session, CONVERT,
                                    Sent(dumps(review), "application/json", None, False, None))
        assert status == 200 and orjson.loads(raw)["response"]["result"] == {"status": "Success"}


async def test_a_conversion_of_an_object_whose_metadata_is_not_an_object_is_a_400(
        caplog: pytest.LogCaptureFixture) -> None:
    """It used to raise AttributeError while naming the object (HTTP 500, a traceback)."""
    review = conversion_review()
    review["request"]["objects"][1]["metadata"] = "x"
    async with webhooks() as (server, session):
        logs = LogWindow(caplog)
        status, raw, _ = await post(server, session, CONVERT,
                                    Sent(dumps(review), "application/json", None, False, None))
        assert_quiet_failure(logs.take(), allowed=1)
    assert (status, raw) == (400, b"request.objects[1].metadata 'x' is not an object\n")


async def test_a_body_over_the_size_limit_is_a_413(caplog: pytest.LogCaptureFixture) -> None:
    """Bodies are read up to 32 MiB (kube-apiserver sends at most an object and its old
    version, 3 MiB each); beyond that the answer is 413 naming the limit."""
    review = admission_review()
    review["request"]["object"]["spec"]["blob"] = Big(33 * 1024 * 1024)
    async with webhooks() as (server, session):
        logs = LogWindow(caplog)
        status, raw, _ = await post(server, session, VALIDATE,
                                    Sent(dumps(review), "application/json", None, False, None))
        records = logs.take()
        assert_quiet_failure(records, allowed=1)
    assert (status, raw) == (413, b"the body is larger than 33554432 bytes, the most this "
                                  b"server reads\n")
    assert [r.levelname for r in records if r.levelno >= logging.INFO] == ["WARNING"]
