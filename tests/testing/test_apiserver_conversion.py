"""Custom resources in several versions: one storage, objects converted between versions.

A CRD's versions share their objects, stored at the storage version; a
request through another version is answered (and writes) through conversion:
``strategy: None`` rewrites ``apiVersion``, ``Webhook`` asks the CRD's
conversion webhook (here a :class:`RecordingWebhook` that renames
``spec.size`` in v1 to ``spec.replicas`` in v2). Each test installs a CRD of
its own (removed afterwards on a real cluster). The expected messages are
kube-apiserver's answers.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from apiserver_helpers import CONVERSION_GROUP, RecordingWebhook, installed, two_version_crd

from reconcilekit.testing import Cluster

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def renamed(request: dict[str, Any]) -> dict[str, Any]:
    """A conversion webhook's answer: v1 ``spec.size`` is v2 ``spec.replicas``."""
    desired = request["desiredAPIVersion"]
    objects = []
    for obj in request["objects"]:
        spec = dict(obj.get("spec") or {})
        if desired.endswith("/v2") and "size" in spec:
            spec["replicas"] = spec.pop("size")
        if desired.endswith("/v1") and "replicas" in spec:
            spec["size"] = spec.pop("replicas")
        objects.append(dict(obj, apiVersion=desired, spec=spec))
    return {"result": {"status": "Success"}, "convertedObjects": objects}


class Things:
    """Paths and objects of one two-version CRD in the test's namespace."""

    def __init__(self, apiserver: Cluster, crd: dict[str, Any]) -> None:
        self.apiserver = apiserver
        self.kind = crd["spec"]["names"]["kind"]
        self.plural = crd["spec"]["names"]["plural"]

    def path(self, version: str, name: str | None = None) -> str:
        base = (f"/apis/{CONVERSION_GROUP}/{version}/namespaces/{self.apiserver.namespace}/"
                f"{self.plural}")
        return f"{base}/{name}" if name else base

    def obj(self, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return {"apiVersion": f"{CONVERSION_GROUP}/{version}", "kind": self.kind,
                "metadata": {"name": name}, "spec": spec}

    async def create(self, version: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        made = await self.apiserver.request("POST", self.path(version),
                                            json=self.obj(version, name, spec))
        assert made.status == 201, made
        return dict(made.body)

    def source(self, version: str) -> str:
        """How kube-apiserver names what it converts from in its messages."""
        return f"{CONVERSION_GROUP}/{version}, Kind={self.kind}"


@asynccontextmanager
async def things(apiserver: Cluster, conversion: dict[str, Any] | None = None
                 ) -> AsyncIterator[Things]:
    async with installed(apiserver, two_version_crd(conversion)) as crd:
        yield Things(apiserver, crd)


def by_webhook(webhook: RecordingWebhook, url: str | None = None, **config: Any
               ) -> dict[str, Any]:
    client = {"url": url, "caBundle": webhook.ca_bundle} if url else (
        config or webhook.client_config("/convert"))
    return {"strategy": "Webhook", "webhook": {"clientConfig": client,
                                               "conversionReviewVersions": ["v1"]}}


# -- the CRD's conversion ------------------------------------------------------------------


async def test_a_crd_converts_with_strategy_none_unless_told_otherwise(
        apiserver: Cluster) -> None:
    async with installed(apiserver, two_version_crd()) as crd:
        assert crd["spec"]["conversion"] == {"strategy": "None"}


_WEBHOOK = {"clientConfig": {"url": "https://127.0.0.1/convert"},
            "conversionReviewVersions": ["v1"]}
CONVERSION_MISTAKES = {
    "no webhook": ({"strategy": "Webhook"}, [
        ("spec.conversion.webhookClientConfig", "Required value: required when strategy is "
                                                "set to Webhook"),
        ("spec.conversion.conversionReviewVersions", "Required value")]),
    "unknown review version": ({"strategy": "Webhook", "webhook": dict(
        _WEBHOOK, conversionReviewVersions=["v2"])}, [(
            "spec.conversion.conversionReviewVersions",
            'Invalid value: []string{"v2"}: must include at least one of v1, v1beta1')]),
    "http": ({"strategy": "Webhook", "webhook": dict(
        _WEBHOOK, clientConfig={"url": "http://127.0.0.1/convert"})}, [(
            "spec.conversion.webhookClientConfig.url",
            "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
            "https://host[/path]")]),
    "unknown strategy": ({"strategy": "Bogus"}, [(
        "spec.conversion.strategy", 'Unsupported value: "Bogus": supported values: "None", '
                                    '"Webhook"')]),
    "webhook without the strategy": ({"strategy": "None", "webhook": _WEBHOOK}, [
        ("spec.conversion.webhookClientConfig", "Forbidden: should not be set when strategy "
                                                "is not set to Webhook"),
        ("spec.conversion.conversionReviewVersions", "Forbidden: should not be set when "
                                                     "strategy is not set to Webhook")]),
}


@pytest.mark.parametrize("case", list(CONVERSION_MISTAKES))
async def test_a_conversion_users_get_wrong_is_refused(apiserver: Cluster, case: str) -> None:
    conversion, expected = CONVERSION_MISTAKES[case]
    got = await apiserver.request("POST", CRDS, json=two_version_crd(conversion),
                                  params={"dryRun": "All"})
    assert got.status == 422, got
    assert [(c["field"], c["message"]) for c in got.body["details"]["causes"]] == expected


# -- strategy None ------------------------------------------------------------------------


async def test_every_version_serves_the_same_objects_with_strategy_none(
        apiserver: Cluster) -> None:
    async with things(apiserver) as t:
        made = await t.create("v1", "a", {"size": 1})
        assert made["apiVersion"] == f"{CONVERSION_GROUP}/v1"
        got = await apiserver.request("GET", t.path("v2", "a"))
        assert got.body["apiVersion"] == f"{CONVERSION_GROUP}/v2"
        assert got.body["spec"] == {"size": 1}
        assert got.body["metadata"]["uid"] == made["metadata"]["uid"]
        assert got.body["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        changed = await apiserver.request("PATCH", t.path("v2", "a"), json={"spec": {"size": 2}},
                                          content_type="application/merge-patch+json")
        assert changed.status == 200 and changed.body["apiVersion"] == f"{CONVERSION_GROUP}/v2"
        listed = await apiserver.request("GET", t.path("v1"))
        assert [(i["apiVersion"], i["spec"]) for i in listed.body["items"]] == [
            (f"{CONVERSION_GROUP}/v1", {"size": 2})]
        async with apiserver.watch(t.path("v1"), params={"resourceVersion": "0",
                                                         "timeoutSeconds": "5"}) as events:
            event = await anext(events)
        assert event["type"] == "ADDED"
        assert event["object"]["apiVersion"] == f"{CONVERSION_GROUP}/v1"


# -- strategy Webhook --------------------------------------------------------------------


async def test_the_conversion_webhook_is_sent_a_conversion_review(
        apiserver: Cluster, webhook: RecordingWebhook) -> None:
    webhook.answer("/convert", renamed)
    async with things(apiserver, by_webhook(webhook)) as t:
        made = await t.create("v1", "a", {"size": 3})
        assert made["apiVersion"] == f"{CONVERSION_GROUP}/v1" and made["spec"] == {"size": 3}
        first = webhook.calls_to("/convert")[0]
        assert first.query == {"timeout": "30s"}
        assert (first.review["apiVersion"], first.review["kind"]) == (
            "apiextensions.k8s.io/v1", "ConversionReview")
        request = first.request
        assert request["uid"] and request["desiredAPIVersion"] == f"{CONVERSION_GROUP}/v2"
        [sent] = request["objects"]
        assert sent["apiVersion"] == f"{CONVERSION_GROUP}/v1" and sent["kind"] == t.kind
        assert sent["spec"] == {"size": 3} and sent["metadata"]["name"] == "a"
        assert "resourceVersion" not in sent["metadata"]
        stored = await apiserver.request("GET", t.path("v2", "a"))
        assert stored.body["spec"] == {"replicas": 3}


async def test_reads_and_writes_through_another_version_are_converted(
        apiserver: Cluster, webhook: RecordingWebhook) -> None:
    webhook.answer("/convert", renamed)
    async with things(apiserver, by_webhook(webhook)) as t:
        made = await t.create("v2", "a", {"replicas": 2})
        got = await apiserver.request("GET", t.path("v1", "a"))
        assert (got.body["apiVersion"], got.body["spec"]) == (f"{CONVERSION_GROUP}/v1",
                                                               {"size": 2})
        assert got.body["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]
        listed = await apiserver.request("GET", t.path("v1"))
        assert [i["spec"] for i in listed.body["items"]] == [{"size": 2}]
        async with apiserver.watch(t.path("v1"), params={"resourceVersion": "0",
                                                         "timeoutSeconds": "5"}) as events:
            event = await anext(events)
        assert (event["type"], event["object"]["spec"]) == ("ADDED", {"size": 2})
        patched = await apiserver.request("PATCH", t.path("v1", "a"), json={"spec": {"size": 5}},
                                          content_type="application/merge-patch+json")
        assert patched.status == 200 and patched.body["spec"] == {"size": 5}
        replaced = await apiserver.request("PUT", t.path("v1", "a"), json=dict(
            patched.body, spec={"size": 6}))
        assert replaced.status == 200 and replaced.body["spec"] == {"size": 6}
        stored = await apiserver.request("GET", t.path("v2", "a"))
        assert stored.body["spec"] == {"replicas": 6}
        gone = await apiserver.request("DELETE", t.path("v1", "a"))
        assert gone.status == 200


FAILURES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "refusal": (lambda r: {"result": {"status": "Failure", "message": "cannot do it"}},
                "failed: cannot do it"),
    "bare refusal": (lambda r: {"result": {"status": "Failure"}},
                     "failed: response.result.status was 'Failure', not 'Success'"),
    "uid": (lambda r: {"uid": "x", "result": {"status": "Success"},
                       "convertedObjects": r["objects"]},
            'failed: expected response.uid="UID", got "x"'),
    "unconverted": (lambda r: {"result": {"status": "Success"},
                               "convertedObjects": r["objects"]},
                    "returned invalid object at index 0: invalid groupVersion (expected "
                    "{g}/v1, received {g}/v2)"),
    "none": (lambda r: {"result": {"status": "Success"}, "convertedObjects": []},
             "returned 0 objects, expected 1"),
    "renamed": (lambda r: {"result": {"status": "Success"}, "convertedObjects": [
        dict(o, apiVersion=r["desiredAPIVersion"], metadata=dict(o["metadata"], name="zz"))
        for o in r["objects"]]}, "returned invalid object: must have the same name: a != zz"),
    "http 500": (lambda r: web.Response(status=500, text="boom"),
                 'failed: an error on the server ("boom") has prevented the request from '
                 "succeeding"),
}


@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_conversion_webhook_that_fails_fails_the_request(
        apiserver: Cluster, webhook: RecordingWebhook, case: str) -> None:
    answer, why = FAILURES[case]
    async with things(apiserver, by_webhook(webhook)) as t:
        await t.create("v2", "a", {"replicas": 1})
        webhook.answer("/convert", answer)
        expected = f"conversion webhook for {t.source('v2')} {why.format(g=CONVERSION_GROUP)}"
        for path in (t.path("v1", "a"), t.path("v1")):
            got = await apiserver.request("GET", path)
            assert got.status == 500, got
            message = re.sub(r'uid="[^"]+"', 'uid="UID"', got.body["message"])
            assert message == expected
            assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                "status": "Failure", "message": got.body["message"],
                                "code": 500}
        created = await apiserver.request("POST", t.path("v1"), json=t.obj("v1", "b", {}))
        assert created.status == 500
        assert created.body["message"].startswith(f"conversion webhook for {t.source('v1')} ")
        assert (await apiserver.request("GET", t.path("v2", "b"))).status == 404


async def test_a_conversion_webhook_that_cannot_be_reached(
        apiserver: Cluster, webhook: RecordingWebhook) -> None:
    ns = apiserver.namespace
    for config, where in (
            ({"url": "https://127.0.0.1:1/convert"},
             'Post "https://127.0.0.1:1/convert?timeout=30s": dial tcp 127.0.0.1:1: connect: '
             "connection refused"),
            ({"service": {"name": "converter", "namespace": ns, "path": "/convert"}},
             f'Post "https://converter.{ns}.svc:443/convert?timeout=30s": service "converter" '
             "not found")):
        async with things(apiserver, by_webhook(webhook, **config)) as t:
            got = await apiserver.request("POST", t.path("v1"), json=t.obj("v1", "a", {}))
            assert got.status == 500
            assert got.body["message"] == f"conversion webhook for {t.source('v1')} failed: " \
                                          f"{where}"


async def test_only_labels_and_annotations_of_the_converted_metadata_are_kept(
        apiserver: Cluster, webhook: RecordingWebhook) -> None:
    def relabel(request: dict[str, Any]) -> dict[str, Any]:
        answer = renamed(request)
        for obj in answer["convertedObjects"]:
            obj["metadata"] = dict(obj["metadata"], labels={"converted": "yes"},
                                   annotations={"by": "webhook"}, generation=99,
                                   finalizers=["example.com/added"])
        return answer

    webhook.answer("/convert", renamed)
    async with things(apiserver, by_webhook(webhook)) as t:
        made = await t.create("v2", "a", {"replicas": 1})
        webhook.answer("/convert", relabel)
        got = await apiserver.request("GET", t.path("v1", "a"))
        meta = got.body["metadata"]
        assert meta["labels"] == {"converted": "yes"} and meta["annotations"] == {"by": "webhook"}
        assert meta["generation"] == made["metadata"]["generation"]
        assert "finalizers" not in meta


async def test_a_watch_delivers_no_event_it_cannot_convert(
        apiserver: Cluster, webhook: RecordingWebhook) -> None:
    webhook.answer("/convert", renamed)
    async with things(apiserver, by_webhook(webhook)) as t:
        made = await t.create("v2", "a", {"replicas": 1})
        webhook.answer("/convert", lambda r: {"result": {"status": "Failure", "message": "no"}})
        # The watch's own timeout bounds it: kube-apiserver keeps it open, silent; the
        # in-process server ends it at the event it cannot convert.
        async with apiserver.watch(t.path("v1"), params={
                "resourceVersion": made["metadata"]["resourceVersion"],
                "timeoutSeconds": "2"}) as events:
            await t.create("v2", "b", {"replicas": 2})
            seen = [event async for event in events]
        assert [e for e in seen if e["type"] != "BOOKMARK"] == []
