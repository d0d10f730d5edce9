"""Admission webhooks called by the API server, as kube-apiserver 1.28 calls them.

Each test points Validating- and MutatingWebhookConfigurations at a
:class:`RecordingWebhook` and checks what the server sends it and how it
treats each answer. Configurations are cluster-scoped: on a real cluster each
test names its own after its namespace, scopes every webhook to that
namespace (or to its own objects), and removes them afterwards. A
configuration takes effect a moment after it is created on a real cluster:
:meth:`Hooks.create` waits until a probe webhook placed first in it is
called (probe objects are excluded from the other webhooks).

The expected messages are kube-apiserver's answers.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
from aiohttp import web
from apiserver_helpers import (
    CONVERSION_GROUP,
    RecordingWebhook,
    installed,
    two_version_crd,
)

from reconcilekit.testing import Cluster, eventually
from reconcilekit.testing._tls import ServingCertificate
from reconcilekit.webhook import exclude_users

from k8s_objects import configmap, widget

API = "/apis/admissionregistration.k8s.io/v1"
VALIDATING = f"{API}/validatingwebhookconfigurations"
MUTATING = f"{API}/mutatingwebhookconfigurations"
NOT_A_PROBE = {"matchExpressions": [{"key": "rk-probe", "operator": "DoesNotExist"}]}


def rule(resources: list[str], operations: list[str] | None = None, *, groups: str = "",
         versions: str = "*", **fields: Any) -> dict[str, Any]:
    return {"apiGroups": [groups], "apiVersions": [versions], "resources": resources,
            "operations": operations or ["*"], **fields}


def patch(*operations: dict[str, Any]) -> str:
    """A JSONPatch as an AdmissionResponse carries it (base64)."""
    return base64.b64encode(orjson.dumps(list(operations))).decode()


def patched(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True, "patchType": "JSONPatch", "patch": patch(*operations)}


def warnings(result: Any) -> list[str]:
    return list(result.headers.getall("Warning", []))


async def caught_up(apiserver: Cluster, path: str, written: dict[str, Any]) -> None:
    """Wait until kube-apiserver's watch cache holds ``written``: it admits the next update
    or delete against its cached copy first, and a stale copy (a write behind) makes it
    call webhooks for a state the object is no longer in before it retries. A GET at the
    write's resourceVersion is answered by the cache once it has caught up."""
    got = await apiserver.request("GET", path, params={
        "resourceVersion": written["metadata"]["resourceVersion"]})
    assert got.status == 200, got


class Hooks:
    """The webhook configurations of one test: named after its namespace, every webhook
    scoped to it, removed when the test ends."""

    def __init__(self, apiserver: Cluster, webhook: RecordingWebhook) -> None:
        self.apiserver = apiserver
        self.webhook = webhook
        self.made: list[str] = []

    @property
    def namespace(self) -> str:
        return self.apiserver.namespace

    def in_namespace(self) -> dict[str, Any]:
        return {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}}

    def hook(self, name: str, path: str, **fields: Any) -> dict[str, Any]:
        """A webhook on this test's ConfigMaps (all operations) unless ``fields`` say else."""
        return {"name": f"{name}.hooks.reconcilekit.dev",
                "clientConfig": self.webhook.client_config(path),
                "rules": [rule(["configmaps"])], "namespaceSelector": self.in_namespace(),
                "objectSelector": NOT_A_PROBE, "sideEffects": "None",
                "admissionReviewVersions": ["v1"], **fields}

    async def create(self, collection: str, *hooks: dict[str, Any], suffix: str = "") -> str:
        """Create a configuration holding ``hooks`` and wait until it takes effect."""
        name = f"rk-{self.namespace}{suffix}"
        kind = ("Mutating" if collection == MUTATING else "Validating") + \
            "WebhookConfiguration"
        probe = {"name": "probe.hooks.reconcilekit.dev",
                 "clientConfig": self.webhook.client_config("/probe"),
                 "rules": [rule(["configmaps"], ["CREATE"])],
                 "namespaceSelector": self.in_namespace(),
                 "objectSelector": {"matchLabels": {"rk-probe": name}},
                 "sideEffects": "None", "admissionReviewVersions": ["v1"]}
        made = await self.apiserver.request("POST", collection, json={
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": [probe, *hooks]})
        assert made.status == 201, made
        self.made.append(f"{collection}/{name}")

        async def probed() -> bool:
            await self.apiserver.request(
                "POST", self.configmaps, params={"dryRun": "All"}, json={
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"generateName": "probe-", "labels": {"rk-probe": name}}})
            return any(((c.request.get("object") or {}).get("metadata") or {}).get(
                "labels", {}).get("rk-probe") == name for c in self.webhook.calls_to("/probe"))

        await eventually(probed, within=30, interval=0.05, what=f"{name} in effect")
        return name

    async def remove(self) -> None:
        for path in self.made:
            await self.apiserver.request("DELETE", path)

    @property
    def configmaps(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/configmaps"


@pytest.fixture
async def hooks(apiserver: Cluster, webhook: RecordingWebhook) -> AsyncIterator[Hooks]:
    made = Hooks(apiserver, webhook)
    # kube-controller-manager writes the namespace's root CA ConfigMap soon after the
    # namespace: a webhook on ConfigMaps installed before it would review that write too.
    root_ca = f"{made.configmaps}/kube-root-ca.crt"

    async def written() -> bool:
        return (await apiserver.request("GET", root_ca)).status == 200

    await eventually(written, within=30, interval=0.05, what="the root CA ConfigMap")
    yield made
    await made.remove()


# -- the configurations --------------------------------------------------------------------


async def test_configurations_are_served_with_their_defaults(apiserver: Cluster,
                                                              hooks: Hooks) -> None:
    name = f"rk-{apiserver.namespace}-defaults"
    for collection, kind in ((VALIDATING, "ValidatingWebhookConfiguration"),
                             (MUTATING, "MutatingWebhookConfiguration")):
        made = await apiserver.request("POST", collection, json={
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "webhooks": [{
                "name": "a.hooks.reconcilekit.dev",
                "clientConfig": {"service": {"name": "hooks", "namespace": "x"}},
                "rules": [rule(["configmaps"], ["CREATE"])],
                "objectSelector": {"matchLabels": {"never": apiserver.namespace}},
                "sideEffects": "None", "admissionReviewVersions": ["v1"]}]})
        assert made.status == 201, made
        hooks.made.append(f"{collection}/{name}")
        assert made.body["metadata"]["generation"] == 1
        hook = made.body["webhooks"][0]
        assert hook["failurePolicy"] == "Fail" and hook["matchPolicy"] == "Equivalent"
        assert hook["namespaceSelector"] == {} and hook["timeoutSeconds"] == 10
        assert hook["rules"][0]["scope"] == "*"
        assert hook["clientConfig"]["service"]["port"] == 443
        assert hook.get("reinvocationPolicy") == (
            "Never" if collection == MUTATING else None)
    discovery = await apiserver.request("GET", API)
    assert {r["name"]: r["kind"] for r in discovery.body["resources"]} == {
        "mutatingwebhookconfigurations": "MutatingWebhookConfiguration",
        "validatingwebhookconfigurations": "ValidatingWebhookConfiguration"}


def _mistake(**fields: Any) -> list[dict[str, Any]]:
    hook = {"name": "a.hooks.reconcilekit.dev", "clientConfig": {"url": "https://127.0.0.1/x"},
            "rules": [rule(["configmaps"])], "sideEffects": "None",
            "admissionReviewVersions": ["v1"], **fields}
    return [{k: v for k, v in hook.items() if v is not None}]


MISTAKES = {
    "unnamed": (_mistake(name=None), [("webhooks[0].name", "Required value")]),
    "short name": (_mistake(name="short"), [(
        "webhooks[0].name", 'Invalid value: "short": should be a domain with at least three '
                            "segments separated by dots")]),
    "no sideEffects": (_mistake(sideEffects=None), [(
        "webhooks[0].sideEffects", "Required value: must specify one of None, NoneOnDryRun")]),
    "side effects": (_mistake(sideEffects="Some"), [(
        "webhooks[0].sideEffects", 'Unsupported value: "Some": supported values: "None", '
                                   '"NoneOnDryRun"')]),
    "no review versions": (_mistake(admissionReviewVersions=None), [(
        "webhooks[0].admissionReviewVersions", "Required value: must specify one of v1, "
                                               "v1beta1")]),
    "unknown review version": (_mistake(admissionReviewVersions=["v2"]), [(
        "webhooks[0].admissionReviewVersions", 'Invalid value: []string{"v2"}: must include '
                                               "at least one of v1, v1beta1")]),
    "timeout": (_mistake(timeoutSeconds=31), [(
        "webhooks[0].timeoutSeconds", "Invalid value: 31: the timeout value must be between "
                                      "1 and 30 seconds")]),
    "http": (_mistake(clientConfig={"url": "http://127.0.0.1/x"}), [(
        "webhooks[0].clientConfig.url", "Invalid value: \"http\": 'https' is the only allowed "
                                        "URL scheme; desired format: https://host[/path]")]),
    "query": (_mistake(clientConfig={"url": "https://127.0.0.1/x?a=b"}), [(
        "webhooks[0].clientConfig.url", 'Invalid value: "a=b": query parameters are not '
                                        "permitted in the URL")]),
    "url and service": (_mistake(clientConfig={"url": "https://127.0.0.1/x", "service": {
        "name": "s", "namespace": "n"}}), [(
            "webhooks[0].clientConfig", "Required value: exactly one of url or service is "
                                        "required")]),
    "service path": (_mistake(clientConfig={"service": {"name": "s", "namespace": "n",
                                                        "path": "x"}}), [
        ("webhooks[0].clientConfig.service.path", "Invalid value: \"x\": must start with a '/'"),
        ("webhooks[0].clientConfig.service.path", 'Invalid value: "x": segment[0] may not be '
                                                  "empty")]),
    "operation": (_mistake(rules=[rule(["configmaps"], ["READ"])]), [(
        "webhooks[0].rules[0].operations[0]", 'Unsupported value: "READ": supported values: '
                                              '"*", "CONNECT", "CREATE", "DELETE", "UPDATE"')]),
    "wildcards": (_mistake(rules=[{"apiGroups": ["*", "apps"], "apiVersions": ["v1"],
                                   "resources": ["*", "pods"],
                                   "operations": ["*", "CREATE"]}]), [
        ("webhooks[0].rules[0].operations", 'Invalid value: []admissionregistration.'
         'OperationType{"*", "CREATE"}: if \'*\' is present, must not specify other operations'),
        ("webhooks[0].rules[0].apiGroups", 'Invalid value: []string{"*", "apps"}: if \'*\' is '
                                           "present, must not specify other API groups"),
        ("webhooks[0].rules[0].resources", 'Invalid value: []string{"*", "pods"}: if \'*\' is '
         "present, must not specify other resources without subresources")]),
    "scope": (_mistake(rules=[rule(["pods"], scope="Global")]), [(
        "webhooks[0].rules[0].scope", 'Unsupported value: "Global": supported values: "*", '
                                      '"Cluster", "Namespaced"')]),
    "failure policy": (_mistake(failurePolicy="Never"), [(
        "webhooks[0].failurePolicy", 'Unsupported value: "Never": supported values: "Fail", '
                                     '"Ignore"')]),
    "selector": (_mistake(namespaceSelector={"matchExpressions": [
        {"key": "a", "operator": "Bogus"}]}), [(
            "webhooks[0].namespaceSelector.matchExpressions[0].operator",
            'Invalid value: "Bogus": not a valid selector operator')]),
    "reinvocation": (_mistake(reinvocationPolicy="Always"), [(
        "webhooks[0].reinvocationPolicy", 'Unsupported value: "Always": supported values: '
                                          '"IfNeeded", "Never"')]),
    "match conditions": (_mistake(matchConditions=[
        {"name": "-bad-", "expression": "true"}, {"name": "a", "expression": " "},
        {"expression": "true"}, {"name": "a", "expression": "a =="},
        {"name": "typo", "expression": "reqeust.name == 'x'"}]), [
        ("webhooks[0].matchConditions[0].name", 'Invalid value: "-bad-": name part must '
         "consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
         "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used "
         "for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
        ("webhooks[0].matchConditions[1].expression", "Required value"),
        ("webhooks[0].matchConditions[2].name", "Required value"),
        ("webhooks[0].matchConditions[3].expression", 'Invalid value: "a ==": compilation '
         "failed: ERROR: <input>:1:5: Syntax error: mismatched input '<EOF>' expecting {'[', "
         "'{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, "
         "STRING, BYTES, IDENTIFIER}\n | a ==\n | ....^"),
        ("webhooks[0].matchConditions[3].name", 'Duplicate value: "a"'),
        ("webhooks[0].matchConditions[4].expression", "Invalid value: \"reqeust.name == 'x'\""
         ": compilation failed: ERROR: <input>:1:1: undeclared reference to 'reqeust' (in "
         "container '')\n | reqeust.name == 'x'\n | ^")]),
    "too many match conditions": (_mistake(matchConditions=[
        {"name": f"c{i}", "expression": "true"} for i in range(65)]), [(
            "webhooks[0].matchConditions", "Too many: 65: must have at most 64 items")]),
    "same name twice": (_mistake() * 2, [(
        "webhooks[1].name", 'Duplicate value: "a.hooks.reconcilekit.dev"')]),
}


@pytest.mark.parametrize("case", list(MISTAKES))
async def test_a_configuration_users_get_wrong_is_refused(apiserver: Cluster, case: str) -> None:
    webhooks, expected = MISTAKES[case]
    got = await apiserver.request("POST", MUTATING, params={"dryRun": "All"}, json={
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "rk-mistake"}, "webhooks": webhooks})
    assert got.status == 422, got
    assert [(c["field"], c["message"]) for c in got.body["details"]["causes"]] == expected
    assert got.body["details"]["kind"] == "MutatingWebhookConfiguration"
    assert got.body["message"].startswith('MutatingWebhookConfiguration.admissionregistration.'
                                          'k8s.io "rk-mistake" is invalid: ')


async def test_a_ca_bundle_that_is_not_base64_is_a_bad_request(apiserver: Cluster) -> None:
    got = await apiserver.request("POST", VALIDATING, params={"dryRun": "All"}, json={
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "rk-ca"},
        "webhooks": _mistake(clientConfig={"url": "https://127.0.0.1/x", "caBundle": "!!"})})
    assert got.status == 400
    assert got.body["message"] == ('ValidatingWebhookConfiguration in version "v1" cannot be '
                                   "handled as a ValidatingWebhookConfiguration: illegal "
                                   "base64 data at input byte 0")


# -- what a webhook is sent ---------------------------------------------------------------


async def test_a_create_is_reviewed_before_and_after_the_server_fills_the_object(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(MUTATING, hooks.hook("m", "/m"))
    await hooks.create(VALIDATING, hooks.hook("v", "/v"))
    body = configmap("", {"k": "v"}, generateName="made-", labels={"app": "x"})
    del body["metadata"]["name"]
    made = await apiserver.request("POST", hooks.configmaps, json=body,
                                   params={"fieldManager": "me"})
    assert made.status == 201, made
    [mutating], [validating] = webhook.calls_to("/m"), webhook.calls_to("/v")
    for call in (mutating, validating):
        assert call.query == {"timeout": "10s"}
        assert (call.review["apiVersion"], call.review["kind"]) == (
            "admission.k8s.io/v1", "AdmissionReview")
        request = call.request
        assert request["kind"] == request["requestKind"] == {
            "group": "", "version": "v1", "kind": "ConfigMap"}
        assert request["resource"] == request["requestResource"] == {
            "group": "", "version": "v1", "resource": "configmaps"}
        assert request["namespace"] == apiserver.namespace
        assert request["operation"] == "CREATE" and request["dryRun"] is False
        assert request["userInfo"]["username"] == "admin"
        assert "system:authenticated" in request["userInfo"]["groups"]
        assert request["oldObject"] is None and "subResource" not in request
        assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                      "fieldManager": "me"}
        assert request["object"]["data"] == {"k": "v"}
    assert mutating.request["uid"] != validating.request["uid"]
    # mutating webhooks see the object as sent: no name yet, nothing the server sets
    assert "name" not in mutating.request
    assert "name" not in mutating.request["object"]["metadata"]
    assert not mutating.request["object"]["metadata"].get("uid")
    # validating webhooks see it as stored, but for its resourceVersion
    meta = validating.request["object"]["metadata"]
    assert validating.request["name"] == meta["name"] == made.body["metadata"]["name"]
    assert meta["uid"] == made.body["metadata"]["uid"]
    assert meta["creationTimestamp"] == made.body["metadata"]["creationTimestamp"]
    assert "resourceVersion" not in meta


async def test_update_patch_and_delete_are_reviewed_with_the_old_object(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(VALIDATING, hooks.hook("v", "/v"))
    made = await apiserver.request("POST", hooks.configmaps, json=configmap("c", {"k": "1"}))
    path = f"{hooks.configmaps}/c"
    await caught_up(apiserver, path, made.body)
    replaced = await apiserver.request("PUT", path, json=dict(made.body, data={"k": "2"}))
    assert replaced.status == 200
    await caught_up(apiserver, path, replaced.body)
    patched_ = await apiserver.request("PATCH", path, json={"data": {"k": "3"}},
                                       content_type="application/merge-patch+json")
    assert patched_.status == 200
    await caught_up(apiserver, path, patched_.body)
    gone = await apiserver.request("DELETE", path, json={"gracePeriodSeconds": 0,
                                                          "propagationPolicy": "Background"})
    assert gone.status == 200
    create, put, merge, delete = webhook.requests_to("/v")
    assert [r["operation"] for r in (create, put, merge, delete)] == [
        "CREATE", "UPDATE", "UPDATE", "DELETE"]
    assert (put["oldObject"]["data"], put["object"]["data"]) == ({"k": "1"}, {"k": "2"})
    assert (merge["oldObject"]["data"], merge["object"]["data"]) == ({"k": "2"}, {"k": "3"})
    assert put["name"] == merge["name"] == delete["name"] == "c"
    assert put["options"] == merge["options"] == {"kind": "UpdateOptions",
                                                  "apiVersion": "meta.k8s.io/v1"}
    assert delete["object"] is None and delete["oldObject"]["data"] == {"k": "3"}
    assert delete["options"] == {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                                 "gracePeriodSeconds": 0, "propagationPolicy": "Background"}


async def test_server_side_apply_is_reviewed_as_a_create_then_an_update(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(VALIDATING, hooks.hook("v", "/v"))
    path = f"{hooks.configmaps}/applied"
    for data in ("a", "b"):
        got = await apiserver.request(
            "PATCH", path, body=f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n"
                                f"data:\n  k: {data}\n",
            content_type="application/apply-patch+yaml", params={"fieldManager": "applier"})
        assert got.status in (200, 201), got
    create, update = webhook.requests_to("/v")
    assert (create["operation"], create["options"]) == ("CREATE", {
        "kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "applier"})
    assert (update["operation"], update["options"]) == ("UPDATE", {
        "kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "applier"})
    assert update["object"]["data"] == {"k": "b"} and update["oldObject"]["data"] == {"k": "a"}


async def test_a_dry_run_is_reviewed_as_one_and_stores_nothing(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    # v1 accepts only sideEffects None or NoneOnDryRun, so every webhook takes dry runs
    await hooks.create(VALIDATING, hooks.hook("v", "/v", sideEffects="NoneOnDryRun"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("dry"),
                                  params={"dryRun": "All"})
    assert got.status == 201
    [request] = webhook.requests_to("/v")
    assert request["dryRun"] is True
    assert request["options"] == {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                                  "dryRun": ["All"]}
    assert (await apiserver.request("GET", f"{hooks.configmaps}/dry")).status == 404


# -- which requests a webhook is sent -------------------------------------------------------


async def test_rules_name_operations_resources_and_subresources(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks, widgets: str) -> None:
    group = "test.reconcilekit.dev"
    await hooks.create(VALIDATING, *(
        hooks.hook(name, f"/{name}", rules=[rule(resources, operations, groups=group)])
        for name, resources, operations in (
            ("all", ["*"], None), ("subresources", ["widgets/*"], None),
            ("status", ["widgets/status"], None), ("deletes", ["widgets"], ["DELETE"]))))
    made = await apiserver.request("POST", widgets, json=widget("w"))
    status = await apiserver.request("PUT", f"{widgets}/w/status",
                                     json=dict(made.body, status={"phase": "up"}))
    assert status.status == 200, status
    assert [r["operation"] for r in webhook.requests_to("/all")] == ["CREATE"]
    assert [(r["operation"], r.get("subResource")) for r in webhook.requests_to(
        "/subresources")] == [("CREATE", None), ("UPDATE", "status")]
    [on_status] = webhook.requests_to("/status")
    assert on_status["subResource"] == on_status["requestSubResource"] == "status"
    assert on_status["kind"]["kind"] == "Widget"
    assert on_status["object"]["status"] == {"phase": "up"}
    assert webhook.requests_to("/deletes") == []
    await apiserver.request("DELETE", f"{widgets}/w")
    assert [r["operation"] for r in webhook.requests_to("/deletes")] == ["DELETE"]


async def test_scope_namespaced_or_cluster(apiserver: Cluster, webhook: RecordingWebhook,
                                           hooks: Hooks, gadgets: str) -> None:
    group = "test.reconcilekit.dev"
    mine = {"matchLabels": {"test": apiserver.namespace}}
    await hooks.create(VALIDATING, *(
        hooks.hook(scope.lower(), f"/{scope}", objectSelector=mine,
                   rules=[rule(["*"], ["CREATE"], groups="*", scope=scope)])
        for scope in ("Namespaced", "Cluster")))
    labels = {"test": apiserver.namespace}
    await apiserver.request("POST", hooks.configmaps, json=configmap("c", labels=labels))
    gadget = {"apiVersion": f"{group}/v1", "kind": "Gadget",
              "metadata": {"name": f"g-{apiserver.namespace}", "labels": labels}}
    made = await apiserver.request("POST", gadgets, json=gadget)
    assert made.status == 201, made
    await apiserver.request("DELETE", f"{gadgets}/g-{apiserver.namespace}")
    assert [r["resource"]["resource"] for r in webhook.requests_to("/Namespaced")] == [
        "configmaps"]
    # a cluster-scoped object is never kept from a webhook by its namespaceSelector
    assert [r["resource"]["resource"] for r in webhook.requests_to("/Cluster")] == ["gadgets"]


async def test_namespace_selector_reads_the_namespace_or_the_namespace_itself(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    ns = apiserver.namespace
    chosen = {"matchLabels": {"chosen": ns}}
    await hooks.create(VALIDATING, hooks.hook(
        "namespaces", "/namespaces", rules=[rule(["namespaces"])], namespaceSelector=chosen,
        objectSelector={}), hooks.hook("elsewhere", "/elsewhere", namespaceSelector=chosen))
    names = (f"{ns}-chosen", f"{ns}-other")
    try:
        for name, labels in zip(names, ({"chosen": ns}, {}), strict=True):
            made = await apiserver.request("POST", "/api/v1/namespaces", json={
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "labels": labels}})
            assert made.status == 201, made
        await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    finally:
        for name in names:
            await apiserver.request("DELETE", f"/api/v1/namespaces/{name}")
    reviewed = webhook.requests_to("/namespaces")
    assert [(r["operation"], r["name"], r["namespace"]) for r in reviewed] == [
        ("CREATE", names[0], names[0]), ("DELETE", names[0], names[0])]
    # (kube-controller-manager's kube-root-ca.crt ConfigMap in the chosen namespace does go
    # to a real cluster's webhook; the in-process server makes it without admission)
    assert [r for r in webhook.requests_to("/elsewhere") if r["namespace"] == ns] == []


async def test_object_selector_matches_the_old_or_the_new_object(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(VALIDATING, hooks.hook("v", "/v", objectSelector={
        "matchLabels": {"watched": "yes"}}))
    path = f"{hooks.configmaps}/c"
    made = await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    await caught_up(apiserver, path, made.body)
    for labels in ({"watched": "yes"}, {"watched": None}, {"other": "x"}):
        got = await apiserver.request("PATCH", path, json={"metadata": {"labels": labels}},
                                      content_type="application/merge-patch+json")
        assert got.status == 200
        await caught_up(apiserver, path, got.body)
    labels_seen = [((r["oldObject"] or {}).get("metadata", {}).get("labels") or None,
                    r["object"]["metadata"].get("labels") or None)
                   for r in webhook.requests_to("/v")]
    assert labels_seen == [(None, {"watched": "yes"}), ({"watched": "yes"}, None)]


def conditions(named: dict[str, str]) -> list[dict[str, str]]:
    """``matchConditions`` from ``{name: expression}``."""
    return [{"name": name, "expression": expression} for name, expression in named.items()]


async def test_match_conditions_decide_whether_a_webhook_is_called(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    """Any condition false: not called, even if another fails to evaluate; all true:
    called; true and errors: Fail refuses the request (403, naming the error, without a
    call), Ignore skips the webhook. Conditions see request, object and oldObject."""
    unreachable = {"url": "https://127.0.0.1:1/x"}
    ns = hooks.namespace
    broken = "object.data.missing == 'x'"
    await hooks.create(VALIDATING, hooks.hook("only-c", "/only-c", matchConditions=conditions(
        {"is-c": "object.metadata.name == 'c'"})), hooks.hook("sees", "/sees", matchConditions=(
            conditions({"create": "request.operation == 'CREATE'", "request": (
                "request.kind.kind == 'ConfigMap' && request.resource.resource == "
                f"'configmaps' && request.namespace == '{ns}' && request.name == "
                "object.metadata.name && request.userInfo.username != ''"),
                "new": "oldObject == null && object.data.k == 'v'",
                "macros": "request.userInfo.groups.all(g, g != '') && "
                          "object.data.exists(k, k == 'k')"}))),
        hooks.hook("fails-closed", "/x", clientConfig=unreachable, matchConditions=conditions(
            {"is-fail": "object.metadata.name == 'fail'", "broken": broken})),
        hooks.hook("fails-open", "/x", clientConfig=unreachable, failurePolicy="Ignore",
                   matchConditions=conditions({"is-ignore": "object.metadata.name == 'ignore'",
                                               "broken": broken})))
    for name in ("c", "d", "ignore"):
        got = await apiserver.request("POST", hooks.configmaps,
                                      json=configmap(name, {"k": "v"}))
        assert got.status == 201, got
    got = await apiserver.request("PATCH", f"{hooks.configmaps}/c", json={"data": {"k": "w"}},
                                  content_type="application/merge-patch+json")
    assert got.status == 200, got
    refused = await apiserver.request("POST", hooks.configmaps,
                                      json=configmap("fail", {"k": "v"}))
    assert (refused.status, refused.body["reason"], refused.body["message"]) == (
        403, "Forbidden", 'configmaps "fail" is forbidden: expression '
                          "'object.data.missing == 'x'' resulted in error: no such key: missing")
    assert [r["name"] for r in webhook.requests_to("/only-c")] == ["c", "c"]
    assert [r["name"] for r in webhook.requests_to("/sees")] == ["c", "d", "ignore"]


async def test_a_webhook_can_leave_one_users_writes_unreviewed(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    """``exclude_users``'s condition, as kube-apiserver evaluates it: the excluded user's
    updates are not sent, its creates are (and anyone else's updates would be)."""
    await hooks.create(VALIDATING, hooks.hook("who", "/who", rules=[rule(["configmaps"],
                                                                         ["CREATE"])]))
    assert (await apiserver.request("POST", hooks.configmaps, json=configmap("a"))).status \
        == 201
    [seen] = webhook.requests_to("/who")
    me = seen["userInfo"]["username"]
    not_mine = exclude_users("someone-else", 'with "quotes"', "\U0001f600-ü")
    mine = exclude_users(me, operations=("UPDATE",), name="not-my-updates")
    await hooks.create(VALIDATING, hooks.hook("others", "/others",
                                              matchConditions=conditions(not_mine)),
                       hooks.hook("mine", "/mine", matchConditions=conditions(mine)),
                       suffix="-2")
    assert (await apiserver.request("POST", hooks.configmaps, json=configmap("b"))).status \
        == 201
    got = await apiserver.request("PATCH", f"{hooks.configmaps}/b", json={"data": {"k": "w"}},
                                  content_type="application/merge-patch+json")
    assert got.status == 200, got
    assert [r["operation"] for r in webhook.requests_to("/others")] == ["CREATE", "UPDATE"]
    assert [r["operation"] for r in webhook.requests_to("/mine")] == ["CREATE"]


async def test_exact_match_policy_leaves_other_versions_alone_equivalent_converts(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    async with installed(apiserver, two_version_crd()) as crd:
        plural, kind = crd["spec"]["names"]["plural"], crd["spec"]["names"]["kind"]
        await hooks.create(VALIDATING, *(
            hooks.hook(policy.lower(), f"/{policy}", matchPolicy=policy,
                       rules=[rule([plural], ["CREATE"], groups=CONVERSION_GROUP,
                                   versions="v2")])
            for policy in ("Exact", "Equivalent")))
        got = await apiserver.request(
            "POST", f"/apis/{CONVERSION_GROUP}/v1/namespaces/{apiserver.namespace}/{plural}",
            json={"apiVersion": f"{CONVERSION_GROUP}/v1", "kind": kind,
                  "metadata": {"name": "t"}, "spec": {"a": 1}})
        assert got.status == 201, got
        assert got.body["apiVersion"] == f"{CONVERSION_GROUP}/v1"
    assert webhook.requests_to("/Exact") == []
    [request] = webhook.requests_to("/Equivalent")
    assert request["kind"] == {"group": CONVERSION_GROUP, "version": "v2", "kind": kind}
    assert request["requestKind"] == {"group": CONVERSION_GROUP, "version": "v1", "kind": kind}
    assert request["resource"]["version"] == "v2"
    assert request["requestResource"]["version"] == "v1"
    assert request["object"]["apiVersion"] == f"{CONVERSION_GROUP}/v2"
    assert request["object"]["spec"] == {"a": 1}


async def test_webhook_configurations_are_never_sent_to_webhooks(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    webhook.answer("/configs", lambda r: {"allowed": False})
    await hooks.create(VALIDATING, hooks.hook(
        "configs", "/configs", objectSelector={},
        rules=[rule(["*"], groups="admissionregistration.k8s.io")]))
    await hooks.create(MUTATING, hooks.hook("m", "/m"), suffix="-second")
    assert webhook.requests_to("/configs") == []


# -- how the answer is taken ---------------------------------------------------------------


REFUSALS = {
    "message": ({"message": "no way"}, 400, "", "no way"),
    "code and reason": ({"code": 422, "reason": "Invalid", "message": "bad"}, 422, "Invalid",
                        "bad"),
    "reason only": ({"reason": "NotToday"}, 400, "NotToday", "NotToday"),
    "code only": ({"code": 500, "message": "oops"}, 500, "", "oops"),
}


async def test_a_refusal_answers_with_the_webhooks_status(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(VALIDATING, *(
        hooks.hook(f"r{i}", f"/r{i}", objectSelector={"matchLabels": {"case": str(i)}})
        for i in range(len(REFUSALS) + 1)))
    for i, status in enumerate([*(s for s, *_ in REFUSALS.values()), None]):
        webhook.answer(f"/r{i}", lambda r, status=status: {"allowed": False, "status": status}
                       if status else {"allowed": False})
    for i, (_, code, reason, message) in enumerate(REFUSALS.values()):
        got = await apiserver.request("POST", hooks.configmaps,
                                      json=configmap(f"c{i}", labels={"case": str(i)}))
        assert (got.status, got.body.get("reason", "")) == (code, reason), got
        assert got.body["message"] == (f'admission webhook "r{i}.hooks.reconcilekit.dev" '
                                       f"denied the request: {message}")
        assert "details" not in got.body
    i = len(REFUSALS)
    got = await apiserver.request("POST", hooks.configmaps,
                                  json=configmap("bare", labels={"case": str(i)}))
    assert got.status == 400
    assert got.body["message"] == (f'admission webhook "r{i}.hooks.reconcilekit.dev" denied '
                                   "the request without explanation")
    assert (await apiserver.request("GET", f"{hooks.configmaps}/bare")).status == 404


async def test_warnings_become_warning_headers(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    webhook.answer("/v", lambda r: {"allowed": True, "warnings": ["careful", 'a "quote"']})
    await hooks.create(VALIDATING, hooks.hook("v", "/v"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    assert got.status == 201
    assert warnings(got) == ['299 - "careful"', '299 - "a \\"quote\\""']
    gone = await apiserver.request("DELETE", f"{hooks.configmaps}/c")
    assert gone.status == 200 and warnings(gone) == warnings(got)


def _failed(name: str, why: str) -> str:
    return f'failed calling webhook "{name}.hooks.reconcilekit.dev": {why}'


async def test_a_webhook_that_fails_fails_the_request_under_fail_policy(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    other_ca = base64.b64encode(ServingCertificate.generate().ca_pem).decode()
    answers: dict[str, Any] = {
        "http500": lambda r: web.Response(status=500, text="boom"),
        "status": lambda r: web.json_response({"kind": "Status", "apiVersion": "v1",
                                               "status": "Failure", "message": "nope",
                                               "code": 403}, status=403),
        "uid": lambda r: {"uid": "nope", "allowed": True},
        "kind": lambda r: web.json_response({"apiVersion": "admission.k8s.io/v1",
                                             "kind": "Other", "response": {}}),
        "absent": lambda r: web.json_response({"apiVersion": "admission.k8s.io/v1",
                                               "kind": "AdmissionReview"}),
        "patch": lambda r: {"allowed": True, "patchType": "JSONPatch", "patch": patch()},
    }
    for path, answer in answers.items():
        webhook.answer(f"/{path}", answer)
    cases = [*answers, "refused", "ca", "service"]
    configs: dict[str, dict[str, Any]] = {
        "refused": {"url": "https://127.0.0.1:1/x", "caBundle": webhook.ca_bundle},
        "ca": {"url": webhook.url("/ca"), "caBundle": other_ca},
        "service": {"service": {"name": "hooks", "namespace": apiserver.namespace,
                                "path": "/x"}}}
    await hooks.create(VALIDATING, *(
        hooks.hook(case, f"/{case}", objectSelector={"matchLabels": {"case": case}},
                   **({"clientConfig": configs[case]} if case in configs else {}))
        for case in cases))
    expected = {
        "http500": "failed to call webhook: an error on the server (\"boom\") has prevented "
                   "the request from succeeding",
        "status": "failed to call webhook: nope",
        "uid": "received invalid webhook response: expected response.uid=\"{uid}\", got "
               "\"nope\"",
        "kind": 'failed to call webhook: no kind "Other" is registered for version '
                '"admission.k8s.io/v1" in scheme "pkg/runtime/scheme.go:100"',
        "absent": "received invalid webhook response: webhook response was absent",
        "patch": "received invalid webhook response: validating webhook may not return "
                 "response.patch",
        "refused": 'failed to call webhook: Post "https://127.0.0.1:1/x?timeout=10s": dial '
                   "tcp 127.0.0.1:1: connect: connection refused",
        "ca": f'failed to call webhook: Post "{webhook.url("/ca")}?timeout=10s": tls: failed '
              "to verify certificate: x509: certificate signed by unknown authority",
        "service": f'failed to call webhook: Post "https://hooks.{apiserver.namespace}.svc:443'
                   f'/x?timeout=10s": service "hooks" not found',
    }
    for case in cases:
        got = await apiserver.request("POST", hooks.configmaps,
                                      json=configmap(case, labels={"case": case}))
        uid = next((r["uid"] for r in webhook.requests_to(f"/{case}")), "")
        message = _failed(case, expected[case].format(uid=uid))
        assert got.status == 500, (case, got)
        assert got.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": f"Internal error occurred: {message}",
                            "reason": "InternalError",
                            "details": {"causes": [{"message": message}]}, "code": 500}, case


async def test_ignore_policy_passes_over_a_failing_webhook(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    webhook.answer("/broken", lambda r: web.Response(status=500, text="boom"))
    await hooks.create(VALIDATING, hooks.hook(
        "unreachable", "/x", failurePolicy="Ignore",
        clientConfig={"url": "https://127.0.0.1:1/x"}), hooks.hook(
        "broken", "/broken", failurePolicy="Ignore"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    assert got.status == 201, got
    assert len(webhook.requests_to("/broken")) == 1


async def test_a_webhook_that_does_not_answer_in_time(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    # timeoutSeconds is the server's own timer (1 s, the least it takes): the webhook hangs
    webhook.hang("/slow")
    await hooks.create(VALIDATING, hooks.hook("slow", "/slow", timeoutSeconds=1,
                                              objectSelector={"matchLabels": {"p": "Fail"}}),
                       hooks.hook("lenient", "/slow", timeoutSeconds=1, failurePolicy="Ignore",
                                  objectSelector={"matchLabels": {"p": "Ignore"}}))
    failed = await apiserver.request("POST", hooks.configmaps,
                                     json=configmap("a", labels={"p": "Fail"}))
    assert failed.status == 500
    assert failed.body["message"] == "Internal error occurred: " + _failed(
        "slow", f'failed to call webhook: Post "{webhook.url("/slow")}?timeout=1s": '
                "context deadline exceeded")
    passed = await apiserver.request("POST", hooks.configmaps,
                                     json=configmap("b", labels={"p": "Ignore"}))
    assert passed.status == 201
    assert [c.query for c in webhook.calls_to("/slow")] == [{"timeout": "1s"}] * 2


async def test_validating_webhooks_are_called_concurrently(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    second_called = asyncio.Event()

    async def first(request: dict[str, Any]) -> dict[str, Any]:
        try:  # called one after the other, the second would never come
            await asyncio.wait_for(second_called.wait(), 5)
        except TimeoutError:
            return {"allowed": False, "status": {"message": "called one at a time"}}
        return {"allowed": True}

    def second(request: dict[str, Any]) -> dict[str, Any]:
        second_called.set()
        return {"allowed": True}

    webhook.answer("/first", first)
    webhook.answer("/second", second)
    await hooks.create(VALIDATING, hooks.hook("first", "/first"),
                       hooks.hook("second", "/second"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    assert got.status == 201, got


# -- mutation ----------------------------------------------------------------------------


async def test_mutating_webhooks_run_in_name_order_before_validating_ones(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    def add(key: str) -> Any:
        return lambda r: patched({"op": "add", "path": f"/data/{key}", "value": "yes"})

    webhook.answer("/a1", add("a1"))
    webhook.answer("/a2", add("a2"))
    webhook.answer("/b", add("b"))
    await hooks.create(MUTATING, hooks.hook("b", "/b"), suffix="-b")
    await hooks.create(MUTATING, hooks.hook("a1", "/a1"), hooks.hook("a2", "/a2"), suffix="-a")
    await hooks.create(VALIDATING, hooks.hook("v", "/v"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("c", {"k": "v"}))
    assert got.status == 201
    assert got.body["data"] == {"k": "v", "a1": "yes", "a2": "yes", "b": "yes"}
    seen = [sorted(webhook.requests_to(p)[0]["object"]["data"]) for p in ("/a1", "/a2", "/b")]
    assert seen == [["k"], ["a1", "k"], ["a1", "a2", "k"]]
    assert sorted(webhook.requests_to("/v")[0]["object"]["data"]) == ["a1", "a2", "b", "k"]


async def test_a_patched_custom_resource_is_defaulted_validated_and_pruned(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks, probes: str) -> None:
    group = "test.reconcilekit.dev"
    answers = {"big": {"op": "replace", "path": "/spec/size", "value": 1000},
               "unknown": {"op": "add", "path": "/spec/zzz", "value": 1},
               "undefault": {"op": "remove", "path": "/spec/maxSize"}}
    for case, operation in answers.items():
        webhook.answer(f"/{case}", lambda r, op=operation: patched(op))
    await hooks.create(MUTATING, *(
        hooks.hook(case, f"/{case}", rules=[rule(["probes"], ["CREATE"], groups=group)],
                   objectSelector={"matchLabels": {"case": case}}) for case in answers))
    await hooks.create(VALIDATING, hooks.hook(
        "v", "/v", rules=[rule(["probes"], ["CREATE"], groups=group)]))

    def probe(case: str) -> dict[str, Any]:
        return {"apiVersion": f"{group}/v1", "kind": "Probe",
                "metadata": {"name": case, "labels": {"case": case}}, "spec": {"size": 1}}

    big = await apiserver.request("POST", probes, json=probe("big"))
    assert big.status == 422
    assert ("spec.size", "Invalid value: 1000: spec.size in body should be less than or "
                         "equal to 100") in {(c["field"], c["message"])
                                             for c in big.body["details"]["causes"]}
    unknown = await apiserver.request("POST", probes, json=probe("unknown"))
    assert unknown.status == 201 and "zzz" not in unknown.body["spec"]
    undefault = await apiserver.request("POST", probes, json=probe("undefault"))
    assert undefault.status == 201 and undefault.body["spec"]["maxSize"] == 50
    validated = [r["object"]["spec"] for r in webhook.requests_to("/v")]
    assert validated[0]["zzz"] == 1  # validating webhooks see it; the stored object does not
    assert validated[1]["maxSize"] == 50


async def test_a_patch_kube_apiserver_cannot_take(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    add = {"op": "add", "path": "/data/x", "value": "1"}
    answers = {"untyped": {"allowed": True, "patch": patch(add)},
               "merge": {"allowed": True, "patchType": "MergePatch", "patch": patch(add)},
               "missing": patched({"op": "remove", "path": "/nothere"}),
               "mistyped": patched({"op": "add", "path": "/data", "value": {"n": 5}}),
               "not-base64": {"allowed": True, "patchType": "JSONPatch", "patch": "!!!"}}
    for case, answer in answers.items():
        webhook.answer(f"/{case}", lambda r, a=answer: a)
    await hooks.create(MUTATING, *(
        hooks.hook(case, f"/{case}", objectSelector={"matchLabels": {"case": case}})
        for case in answers))
    results = {}
    for case in answers:
        got = await apiserver.request("POST", hooks.configmaps,
                                      json=configmap(case, labels={"case": case}))
        assert (got.status, got.body["reason"]) == (500, "InternalError"), got
        results[case] = got.body["message"]
    assert results["untyped"] == "Internal error occurred: " + _failed(
        "untyped", "received invalid webhook response: webhook returned response.patch but "
                   "not response.patchType")
    assert results["merge"] == "Internal error occurred: " + _failed(
        "merge", 'unsupported patch type "MergePatch"')
    assert results["not-base64"] == "Internal error occurred: " + _failed(
        "not-base64", "failed to call webhook: illegal base64 data at input byte 0")
    # a patch that does not apply, or does not decode into the kind, is the server's error
    assert "failed calling webhook" not in results["missing"]
    assert results["mistyped"] == ("Internal error occurred: json: cannot unmarshal number "
                                   "into Go struct field ConfigMap.data of type string")


async def test_reinvocation_calls_an_earlier_webhook_again_after_a_later_one_changed_it(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    def annotate(request: dict[str, Any]) -> dict[str, Any]:
        if "changed" in (request["object"]["metadata"].get("annotations") or {}):
            return {"allowed": True}
        return patched({"op": "add", "path": "/metadata/annotations",
                        "value": {"changed": "yes"}})

    webhook.answer("/changes", annotate)
    await hooks.create(MUTATING, hooks.hook("again", "/again", reinvocationPolicy="IfNeeded"),
                       hooks.hook("once", "/once"), hooks.hook("changes", "/changes"))
    got = await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    assert got.status == 201
    assert got.body["metadata"]["annotations"] == {"changed": "yes"}
    assert [r["object"]["metadata"].get("annotations") for r in webhook.requests_to(
        "/again")] == [None, {"changed": "yes"}]
    assert len(webhook.requests_to("/once")) == len(webhook.requests_to("/changes")) == 1


async def test_a_mutating_webhook_cannot_patch_a_deletion(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    webhook.answer("/m", lambda r: patched({"op": "add", "path": "/data/x", "value": "1"})
                   if r["operation"] == "DELETE" else {"allowed": True})
    await hooks.create(MUTATING, hooks.hook("m", "/m"))
    await apiserver.request("POST", hooks.configmaps, json=configmap("c"))
    got = await apiserver.request("DELETE", f"{hooks.configmaps}/c")
    assert got.status == 500, got
    assert got.body["message"] == ('Internal error occurred: admission webhook '
                                   '"m.hooks.reconcilekit.dev" attempted to modify the object, '
                                   "which is not supported for this operation")
    assert (await apiserver.request("GET", f"{hooks.configmaps}/c")).status == 200


async def test_each_object_of_a_deletecollection_is_reviewed_without_a_name(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    await hooks.create(VALIDATING, hooks.hook("v", "/v", rules=[rule(["configmaps"],
                                                                     ["DELETE"])]))
    for name in ("a", "b"):
        await apiserver.request("POST", hooks.configmaps,
                                json=configmap(name, labels={"sweep": "yes"}))
    swept = await apiserver.request("DELETE", hooks.configmaps,
                                    params={"labelSelector": "sweep=yes"})
    assert swept.status == 200
    reviewed = webhook.requests_to("/v")
    assert sorted(r["oldObject"]["metadata"]["name"] for r in reviewed) == ["a", "b"]
    assert all("name" not in r and r["operation"] == "DELETE" for r in reviewed)


@pytest.mark.in_process_only
async def test_a_dry_run_never_reaches_a_webhook_with_side_effects(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    # v1 refuses sideEffects Some or Unknown (see MISTAKES), but kube-apiserver still keeps
    # configurations stored before v1 with them: one is put straight into storage here.
    server = apiserver.require_server()
    rtype = server.registry.lookup("admissionregistration.k8s.io", "v1",
                                   "validatingwebhookconfigurations")
    assert rtype is not None
    server.storage.create(rtype, "", {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "legacy"},
        "webhooks": [hooks.hook("legacy", "/legacy", sideEffects="Some")]}, manager="test")
    dry = await apiserver.request("POST", hooks.configmaps, json=configmap("c"),
                                  params={"dryRun": "All"})
    assert dry.status == 400
    assert dry.body["message"] == ('admission webhook "legacy.hooks.reconcilekit.dev" does '
                                   "not support dry run")
    assert webhook.requests_to("/legacy") == []
    assert (await apiserver.request("POST", hooks.configmaps, json=configmap("c"))).status == 201
    assert len(webhook.requests_to("/legacy")) == 1


async def test_a_crd_a_mutating_webhook_changed_is_defaulted_again(
        apiserver: Cluster, webhook: RecordingWebhook, hooks: Hooks) -> None:
    webhook.answer("/strip", lambda r: patched({"op": "remove", "path": "/spec/conversion"}))
    label = {"rk-strip": hooks.namespace}
    await hooks.create(MUTATING, hooks.hook(
        "strip", "/strip", objectSelector={"matchLabels": label},
        rules=[rule(["customresourcedefinitions"], ["CREATE"],
                    groups="apiextensions.k8s.io")]))
    group = f"{hooks.namespace}.strip.reconcilekit.dev"
    schema = {"openAPIV3Schema": {"type": "object"}}
    made = await apiserver.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        params={"dryRun": "All"}, json={
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"strips.{group}", "labels": label},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "strips", "kind": "Strip"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": schema}]}})
    assert made.status == 201, made
    seen = webhook.requests_to("/strip")
    assert seen and seen[0]["object"]["spec"]["conversion"] == {"strategy": "None"}
    assert made.body["spec"]["conversion"] == {"strategy": "None"}  # defaulted again
    assert made.body["spec"]["names"] == {"plural": "strips", "kind": "Strip",
                                          "singular": "strip", "listKind": "StripList"}
