"""WebhookServer: AdmissionReview and ConversionReview v1 over HTTPS, as an API server sends them.

These tests post reviews to the server directly, to pin the wire format and
the failure answers; tests/test_webhook_apiserver.py has kube-apiserver (and
the in-process server) call it.
"""

from __future__ import annotations

import base64
import io
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anyio
import anyio.lowlevel
import cel
import orjson
import pytest
import pytest_asyncio

from reconcilekit import Resource
from reconcilekit.testing import FakeClock, eventually
from reconcilekit.webhook import (
    AdmissionDenied,
    AdmissionRequest,
    MalformedReview,
    ServingCertificate,
    Verdict,
    WebhookServer,
    exclude_users,
    json_patch,
)
from reconcilekit.webhook import _hooks as webhook_hooks

WIDGETS = Resource("example.com", "v1", "Widget", "widgets")
WIDGETS_V2 = Resource("example.com", "v2", "Widget", "widgets")


def review(obj: dict[str, Any] | None, *, operation: str = "CREATE",
           old: dict[str, Any] | None = None, dry_run: bool = False) -> dict[str, Any]:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": str(uuid.uuid4()), "operation": operation,
                        "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
                        "resource": {"group": "example.com", "version": "v1",
                                     "resource": "widgets"},
                        "name": "w", "namespace": "ns", "dryRun": dry_run,
                        "userInfo": {"username": "alice", "groups": ["devs"]},
                        "object": obj, "oldObject": old}}


def widget(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "ns"}, "spec": spec}


class Running:
    def __init__(self, server: WebhookServer, session: aiohttp.ClientSession) -> None:
        self.server, self.session = server, session

    async def post(self, path: str, body: Any, *, query: str = "") -> tuple[int, Any]:
        raw = body if isinstance(body, bytes) else orjson.dumps(body)
        async with self.session.post(f"{self.server.base_url}{path}{query}", data=raw,
                                     headers={"Content-Type": "application/json"}) as r:
            text = await r.read()
            return r.status, (orjson.loads(text) if r.content_type == "application/json"
                              else text.decode())


async def serve(server: WebhookServer) -> AsyncIterator[Running]:
    """The server running, and a session that trusts its generated CA."""
    assert isinstance(server.certificate, ServingCertificate)
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        connector = aiohttp.TCPConnector(ssl=server.certificate.client_context())
        async with aiohttp.ClientSession(connector=connector) as session:
            yield Running(server, session)
        tg.cancel_scope.cancel()


@pytest_asyncio.fixture
async def server_and_clock() -> AsyncIterator[tuple[WebhookServer, FakeClock]]:
    clock = FakeClock()
    yield WebhookServer(host="127.0.0.1", port=0, clock=clock), clock


async def test_a_validator_allows_and_denies_and_the_answer_echoes_the_uid(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock
    seen: list[AdmissionRequest] = []

    @server.validator(WIDGETS)
    async def validate(request: AdmissionRequest) -> Verdict:
        seen.append(request)
        assert request.object is not None
        if request.object["spec"].get("size", 0) > 10:
            return Verdict.deny("spec.size: must be at most 10")
        return Verdict.allow("size is fine")

    async for api in serve(server):
        good, bad = review(widget(size=3)), review(widget(size=11))
        status, answer = await api.post("/validate-example-com-v1-widget", good)
        assert status == 200
        assert answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                          "response": {"uid": good["request"]["uid"], "allowed": True,
                                       "warnings": ["size is fine"]}}
        status, answer = await api.post("/validate-example-com-v1-widget", bad)
        assert answer["response"] == {
            "uid": bad["request"]["uid"], "allowed": False,
            "status": {"code": 403, "message": "spec.size: must be at most 10",
                       "reason": "Forbidden"}}
    assert seen[0].user.username == "alice" and seen[0].user.groups == ("devs",)
    assert seen[0].operation == "CREATE" and seen[0].old_object is None
    assert seen[0].namespace == "ns" and seen[0].name == "w"


async def test_a_defaulter_is_answered_with_the_json_patch_to_its_object(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock

    @server.defaulter(WIDGETS)
    async def default(request: AdmissionRequest) -> dict[str, Any] | None:
        obj = request.object
        assert obj is not None
        obj["spec"].setdefault("size", 1)
        obj["metadata"].setdefault("labels", {})["app/tier"] = "web"
        del obj["spec"]["drop"]
        return obj

    async for api in serve(server):
        sent = widget(drop=True, keep="x")
        _, answer = await api.post("/default-example-com-v1-widget", review(sent))
    response = answer["response"]
    assert response["allowed"] is True and response["patchType"] == "JSONPatch"
    patch = orjson.loads(base64.b64decode(response["patch"]))
    assert patch == [{"op": "add", "path": "/metadata/labels", "value": {"app/tier": "web"}},
                     {"op": "remove", "path": "/spec/drop"},
                     {"op": "add", "path": "/spec/size", "value": 1}]


async def test_a_defaulter_that_changes_nothing_sends_no_patch(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock

    @server.defaulter(WIDGETS)
    async def default(request: AdmissionRequest) -> dict[str, Any] | None:
        return request.object

    async for api in serve(server):
        _, answer = await api.post("/default-example-com-v1-widget", review(widget(size=1)))
    assert "patch" not in answer["response"] and answer["response"]["allowed"] is True


def test_json_patch_escapes_keys_and_replaces_changed_lists_whole() -> None:
    old = {"a/b": 1, "c~d": [1, 2], "n": 1, "t": True}
    new = {"a/b": 2, "c~d": [1], "n": 1.0, "t": True}
    assert json_patch(old, new) == [
        {"op": "replace", "path": "/a~1b", "value": 2},
        {"op": "replace", "path": "/c~0d", "value": [1]},
        {"op": "replace", "path": "/n", "value": 1.0}]
    assert json_patch(new, new) == []


async def test_a_handler_that_raises_is_a_denial_with_its_reason_and_one_traceback(
        server_and_clock: tuple[WebhookServer, FakeClock],
        caplog: pytest.LogCaptureFixture) -> None:
    server, _ = server_and_clock

    @server.validator(WIDGETS)
    async def validate(request: AdmissionRequest) -> Verdict:
        raise KeyError("spec")

    caplog.set_level(logging.INFO, "reconcilekit.webhook")
    async for api in serve(server):
        answers = [await api.post("/validate-example-com-v1-widget", review(widget()))
                   for _ in range(3)]
    for status, answer in answers:
        assert status == 200
        assert answer["response"]["allowed"] is False
        assert answer["response"]["status"]["code"] == 500
        assert answer["response"]["status"]["message"] == (
            "webhook validate.widgets.example.com failed: KeyError: 'spec'")
    failures = [r for r in caplog.records if "failed" in r.getMessage()]
    assert [r.levelname for r in failures] == ["ERROR", "WARNING", "WARNING"]
    assert failures[0].exc_info is not None and failures[1].exc_info is None


async def test_a_handler_may_refuse_by_raising_admission_denied(
        server_and_clock: tuple[WebhookServer, FakeClock],
        caplog: pytest.LogCaptureFixture) -> None:
    server, _ = server_and_clock

    @server.defaulter(WIDGETS)
    async def default(request: AdmissionRequest) -> dict[str, Any] | None:
        raise AdmissionDenied("spec.mode: unknown mode 'x'", code=422)

    caplog.set_level(logging.DEBUG, "reconcilekit.webhook")
    async for api in serve(server):
        _, answer = await api.post("/default-example-com-v1-widget", review(widget()))
    assert answer["response"]["status"] == {"code": 422, "message": "spec.mode: unknown mode 'x'",
                                            "reason": "Invalid"}
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_slow_handler_is_denied_inside_the_api_servers_timeout(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, clock = server_and_clock
    cancelled = anyio.Event()

    @server.validator(WIDGETS, timeout_seconds=10)
    async def validate(request: AdmissionRequest) -> Verdict:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    answers: list[Any] = []

    async def call(api: Running) -> None:
        # kube-apiserver adds the configuration's timeout to the URL
        answers.append(await api.post("/validate-example-com-v1-widget", review(widget()),
                                      query="?timeout=4s"))

    async for api in serve(server):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, api)
            await eventually(lambda: clock.sleepers == 1)
            clock.advance(2.9)
            await anyio.lowlevel.checkpoint()
            assert not answers  # 3 s of the 4 the API server waits
            clock.advance(0.1)
    assert cancelled.is_set()
    assert answers[0][1]["response"]["status"] == {
        "code": 504, "reason": "Timeout",
        "message": "webhook validate.widgets.example.com did not answer within 3.0s"}


async def test_on_the_system_clock_a_handler_past_its_deadline_is_cancelled() -> None:
    # The real clock's deadline is the loop's own (no timer task per review); one already
    # passed cancels the handler at its first wait, so nothing waits in real time here.
    server = WebhookServer(port=0)
    cancelled = anyio.Event()

    async def slow() -> str:
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "unreachable"

    async def fast() -> str:
        return "answered"

    async def failing() -> str:
        raise ValueError("bad spec")

    done, outcome = await server._within(0, slow())
    assert (done, type(outcome), cancelled.is_set()) == (False, TimeoutError, True)
    assert await server._within(10, fast()) == (True, "answered")
    done, outcome = await server._within(10, failing())
    assert done and isinstance(outcome, ValueError) and str(outcome) == "bad spec"


@pytest.mark.parametrize("depth", [10, 246, 247, 400])
@pytest.mark.parametrize("padding", [0, 300])
def test_the_depth_check_counts_brackets_only_to_skip_a_walk_that_could_not_fail(
        depth: int, padding: int) -> None:
    # The nested lists start at level 5 of the review: 246 of them reach the limit of 250.
    # Brackets inside strings (padding) push the count over the limit without nesting;
    # depth 10 without padding is a body of few brackets, whose walk is skipped.
    nested: Any = "leaf"
    for _ in range(depth):
        nested = [nested]
    obj = widget(deep=nested, note="[{" * padding)
    data = review(obj)
    body = json.dumps(data).encode()  # orjson writes no more than 254 levels
    if depth > 246:
        with pytest.raises(MalformedReview, match="deeper than 250 levels"):
            AdmissionRequest.from_review(data, body=body)
        with pytest.raises(MalformedReview, match="deeper than 250 levels"):
            AdmissionRequest.from_review(data)
    else:
        assert AdmissionRequest.from_review(data, body=body).object == obj
        assert AdmissionRequest.from_review(data).object == obj


async def test_a_body_that_is_not_a_review_gets_400_naming_the_problem(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock
    server.validator(WIDGETS)(_allow)

    path = "/validate-example-com-v1-widget"
    async for api in serve(server):
        status, text = await api.post(path, b"{nope")
        assert status == 400 and text.startswith("the body is not JSON")
        v1beta1 = {**review(widget()), "apiVersion": "admission.k8s.io/v1beta1"}
        status, text = await api.post(path, v1beta1)
        assert status == 400
        assert "expected kind AdmissionReview of admission.k8s.io/v1, got kind" in text
        assert "admissionReviewVersions" in text
        no_uid = review(widget())
        del no_uid["request"]["uid"]
        assert await api.post(path, no_uid) == (400, "the AdmissionReview's request has no "
                                                     "uid\n")


async def test_a_review_of_two_3_mib_objects_is_read_whole(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    """kube-apiserver sends an object and its old version, up to 3 MiB each: far over
    aiohttp's default 1 MiB body limit, within the server's own."""
    server, _ = server_and_clock
    sizes: list[int] = []

    @server.validator(WIDGETS)
    async def validate(request: AdmissionRequest) -> Verdict:
        assert request.object is not None and request.old_object is not None
        sizes.append(len(request.object["spec"]["blob"]) + len(request.old_object["spec"]["blob"]))
        return Verdict.allow()

    blob = "x" * (3 * 1024 * 1024)
    body = orjson.dumps(review(widget(blob=blob), operation="UPDATE", old=widget(blob=blob)))
    async for api in serve(server):
        async with api.session.post(f"{server.base_url}/validate-example-com-v1-widget",
                                    data=io.BytesIO(body)) as r:
            status, answer = r.status, orjson.loads(await r.read())
    assert status == 200 and answer["response"]["allowed"] is True
    assert sizes == [6 * 1024 * 1024]


async def test_a_path_no_webhook_serves_is_404_and_a_method_other_than_post_405(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock
    server.validator(WIDGETS)(_allow)

    async for api in serve(server):
        assert await api.post("/validate-example-com-v1-gadget", review(widget())) == (
            404, "no webhook is served at '/validate-example-com-v1-gadget'\n")
        async with api.session.get(f"{server.base_url}/validate-example-com-v1-widget") as r:
            assert (r.status, r.headers["Allow"], await r.text()) == (
                405, "POST", "a webhook takes POST, not GET\n")
        assert (await api.post("/validate-example-com-v1-widget", review(widget())))[0] == 200


def v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.pop("spec")
    obj["spec"] = {"replicas": spec["size"]}
    return obj


def v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    spec = obj.pop("spec")
    if spec["replicas"] > 100:
        raise ValueError("replicas above 100 have no v1 form")
    obj["spec"] = {"size": spec["replicas"]}
    return obj


def conversion_review(desired: str, *objects: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": list(objects)}}


async def test_conversion_goes_through_the_hub_and_keeps_metadata(
        server_and_clock: tuple[WebhookServer, FakeClock]) -> None:
    server, _ = server_and_clock
    server.conversion(WIDGETS, hub="v2", spokes={"v1": (v1_to_v2, v2_to_v1)})
    w1 = widget(size=3)
    w2 = {"apiVersion": "example.com/v2", "kind": "Widget",
          "metadata": {"name": "x", "namespace": "ns"}, "spec": {"replicas": 5}}
    async for api in serve(server):
        _, to_v2 = await api.post("/convert", conversion_review("example.com/v2", w1, w2))
        _, to_v1 = await api.post("/convert", conversion_review("example.com/v1", w2))
        _, refused = await api.post("/convert", conversion_review(
            "example.com/v1", {**w2, "spec": {"replicas": 101}}))
        _, unknown = await api.post("/convert", conversion_review("example.com/v3", w1))
    assert to_v2["response"] == {
        "uid": "u-1", "result": {"status": "Success"},
        "convertedObjects": [{**w1, "apiVersion": "example.com/v2", "spec": {"replicas": 3}},
                             w2]}
    assert to_v1["response"]["convertedObjects"] == [
        {**w2, "apiVersion": "example.com/v1", "spec": {"size": 5}}]
    assert refused["response"] == {"uid": "u-1", "result": {
        "status": "Failure",
        "message": "converting Widget 'x' from v2 to v1 failed: ValueError: replicas above 100 "
                   "have no v1 form"}}
    assert refused["response"]["result"]["status"] == "Failure"
    assert "no conversion for version 'v3'" in unknown["response"]["result"]["message"]


def test_registration_refuses_what_the_api_server_would() -> None:
    server = WebhookServer(port=0)
    with pytest.raises(ValueError, match=r"needs name=.*three or more segments"):
        server.validator(Resource("", "v1", "ConfigMap", "configmaps"))(_allow)
    with pytest.raises(ValueError, match="side_effects must be None or NoneOnDryRun"):
        server.validator(WIDGETS, side_effects="Some")(_allow)
    with pytest.raises(ValueError, match="timeout_seconds must be 1 to 30"):
        server.validator(WIDGETS, timeout_seconds=31)(_allow)
    with pytest.raises(ValueError, match="operations must be among"):
        server.validator(WIDGETS, operations=("PATCH",))(_allow)
    server.validator(WIDGETS)(_allow)
    with pytest.raises(ValueError, match="already taken"):
        server.validator(WIDGETS_V2, path="/validate-example-com-v1-widget",
                         name="other.widgets.example.com")(_allow)
    with pytest.raises(ValueError, match="without a path"):
        WebhookServer(url="https://example.com:9443/hooks")
    with pytest.raises(ValueError, match="hub version v1 cannot also be a spoke"):
        server.conversion(WIDGETS, hub="v1", spokes={"v1": (v1_to_v2, v2_to_v1)})


@pytest.mark.parametrize(("conditions", "message"), [
    ({"-x-": "true"}, "match condition name '-x-' must be a qualified name"),
    ({"a" * 64: "true"}, "must be a qualified name"),
    ({"ok": " "}, "match condition 'ok' has no expression"),
    ({"ok": "a =="}, "match condition 'ok' is not a CEL expression: ERROR: <input>:1:5: "
                     "Syntax error"),
    ({f"c{i}": "true" for i in range(65)}, "at most 64 match_conditions, not 65"),
    ([{"name": "a", "expression": "true"}], "match_conditions must map each condition's "
                                            "name to its CEL expression, both strings"),
    ({"a": True}, "match_conditions must map each condition's name"),
])
def test_match_conditions_the_api_server_would_refuse_are_refused_at_registration(
        conditions: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        WebhookServer(port=0).validator(WIDGETS, match_conditions=conditions)(_allow)


def test_without_cel_match_condition_syntax_is_left_to_the_api_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_hooks, "cel_compile", lambda: None)  # a plain install
    server = WebhookServer(port=0)
    server.validator(WIDGETS, match_conditions={"ok": "a =="})(_allow)  # not checked here
    with pytest.raises(ValueError, match="must be a qualified name"):  # still checked
        server.validator(WIDGETS_V2, match_conditions={"-x-": "true"})(_allow)


def test_exclude_users_quotes_names_and_checks_its_arguments() -> None:
    [(name, expression)] = exclude_users("a", 'b"c', "\U0001f600-ü", operations=("UPDATE",)
                                         ).items()
    assert name == "exclude-users"
    program = cel.compile(expression)

    def sent(user: str, operation: str) -> bool:
        context = cel.Context(variables={"request": {
            "operation": operation, "userInfo": {"username": user}}})
        return bool(program.execute(context))

    assert [sent('b"c', "UPDATE"), sent("a", "UPDATE"), sent("\U0001f600-ü", "UPDATE"),
            sent("a", "CREATE"), sent("d", "UPDATE")] == [False, False, False, True, True]
    with pytest.raises(ValueError, match="at least one user"):
        exclude_users()
    with pytest.raises(ValueError, match="operations must be among"):
        exclude_users("a", operations=("PATCH",))


async def _allow(request: AdmissionRequest) -> Verdict:
    return Verdict.allow()


def test_configurations_point_at_the_server_with_its_ca() -> None:
    server = WebhookServer(name="widgets", host="127.0.0.1", port=9443,
                           url="https://webhooks.example.com:8443")
    server.validator(WIDGETS, namespace_selector={"matchLabels": {"team": "a"}},
                     sub_resources=("status",),
                     match_conditions=exclude_users("system:serviceaccount:ops:widgets"))(_allow)
    server.conversion(WIDGETS, hub="v2", spokes={"v1": (v1_to_v2, v2_to_v1)})
    [(resource, config)] = server.configurations()
    assert resource.kind == "ValidatingWebhookConfiguration"
    [entry] = config["webhooks"]
    ca = base64.b64decode(entry["clientConfig"].pop("caBundle"))
    assert ca == server.certificate.ca_bundle()
    assert entry == {
        "name": "validate.widgets.example.com", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://webhooks.example.com:8443/validate-example-com-v1-widget"},
        "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                   "resources": ["widgets", "widgets/status"],
                   "operations": ["CREATE", "UPDATE"], "scope": "Namespaced"}],
        "failurePolicy": "Fail", "sideEffects": "None", "timeoutSeconds": 10,
        "matchPolicy": "Equivalent", "namespaceSelector": {"matchLabels": {"team": "a"}},
        "matchConditions": [{"name": "exclude-users", "expression": (
            '!(request.userInfo.username in ["system:serviceaccount:ops:widgets"])')}]}
    conversion = server.crd_conversions()["widgets.example.com"]
    assert conversion["webhook"]["clientConfig"]["url"] == (
        "https://webhooks.example.com:8443/convert")
    assert conversion["webhook"]["conversionReviewVersions"] == ["v1"]
