"""Webhooks called by an API server: a Manager's WebhookServer installs its configurations and
kube-apiserver (or the in-process server) calls them, on both backends.

Configurations are cluster-scoped: each test names its own after its
namespace and scopes it to that namespace, so a real cluster's other tests
never meet it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from reconcilekit import Client, Forbidden, Manager, NotFound, Resource
from reconcilekit.kinds import (
    CONFIG_MAPS,
    MUTATING_WEBHOOK_CONFIGURATIONS,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from reconcilekit.testing import Cluster, HTTPResult
from reconcilekit.webhook import (
    AdmissionRequest,
    Verdict,
    WebhookServer,
    WebhookSetupError,
)

GROUP = "webhooks.reconcilekit.dev"
GADGETS_V1 = Resource(GROUP, "v1", "Gadget", "gadgets")
GADGETS_V2 = Resource(GROUP, "v2", "Gadget", "gadgets")
ANY_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": False,
                           "schema": {"openAPIV3Schema": ANY_OBJECT}},
                          {"name": "v2", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": ANY_OBJECT}}]}}


def webhook_server(apiserver: Cluster, **options: Any) -> WebhookServer:
    """A server whose configurations the manager installs and removes, named for the test."""
    return WebhookServer(name=f"rk-{apiserver.namespace}", host="127.0.0.1", port=0,
                         install_configurations=True, remove_configurations_on_exit=True,
                         **options)


async def reviewed(apiserver: Cluster, path: str, body: dict[str, Any],
                   done: Callable[[HTTPResult], bool], within: float = 15.0) -> HTTPResult:
    """Dry-run ``body`` until ``done(answer)``: kube-apiserver loads webhook configurations
    through an informer, so a request right after one is written may not be reviewed yet
    (the in-process server reads them at each request)."""
    with anyio.fail_after(within):
        while True:
            got = await apiserver.request("POST", f"{path}?dryRun=All", json=body)
            if done(got):
                return got
            await anyio.sleep(0.1)


def in_namespace(ns: str) -> dict[str, Any]:
    return {"matchLabels": {"kubernetes.io/metadata.name": ns}}


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


async def test_a_validating_webhook_refuses_at_admission_with_its_message(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    server = webhook_server(apiserver)
    seen: list[AdmissionRequest] = []

    @server.validator(CONFIG_MAPS, name="validate.configmaps.reconcilekit.dev",
                      namespace_selector=in_namespace(ns))
    async def validate(request: AdmissionRequest) -> Verdict:
        seen.append(request)
        assert request.object is not None
        if "color" in (request.object.get("data") or {}) and \
                request.object["data"]["color"] not in ("red", "blue"):
            return Verdict.deny(f"data.color: {request.object['data']['color']!r} is not "
                                f"red or blue")
        return Verdict.allow("colors are checked")

    caplog.set_level(logging.INFO, "reconcilekit")
    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server):
        stored = await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, server.name)
        assert stored["webhooks"][0]["clientConfig"]["url"] == (
            f"{server.base_url}/validate--v1-configmap".replace("--", "-core-"))
        await reviewed(apiserver, CONFIG_MAPS.path(ns), configmap("paint", color="green"),
                       lambda got: got.status == 403)
        seen.clear()  # the dry runs that waited for the configuration to apply
        with pytest.raises(Forbidden) as refused:
            await client.create(CONFIG_MAPS, configmap("paint", color="green"), ns)
        assert str(refused.value).endswith(
            'admission webhook "validate.configmaps.reconcilekit.dev" denied the request: '
            "data.color: 'green' is not red or blue")
        created = await apiserver.request(
            "POST", CONFIG_MAPS.path(ns), json=configmap("paint", color="red"))
        assert created.status == 201
        assert created.headers.get("Warning") == '299 - "colors are checked"'
        await client.patch(CONFIG_MAPS, "paint", {"data": {"color": "blue"}}, ns)
        with pytest.raises(Forbidden):
            await client.patch(CONFIG_MAPS, "paint", {"data": {"color": "pink"}}, ns)
        # a dry run is sent too (sideEffects None), and marked as one
        dry = await apiserver.request("POST", CONFIG_MAPS.path(ns) + "?dryRun=All",
                                      json=configmap("dry", color="grey"))
        assert dry.status == 403
    with pytest.raises(NotFound):
        await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, server.name)  # removed at shutdown
    # A real server may review more than the test's writes: kube-controller-manager's own
    # (the namespace's root CA ConfigMap), and a write it retried internally, reviewed again
    # with the same object. What the test sent is reviewed in order, each at least once.
    ours = [r for r in seen if r.name in ("paint", "dry")]
    operations: list[tuple[str, str, bool, str]] = []
    for r in ours:
        review = (r.operation, r.name, r.dry_run, (r.object or {}).get("data", {})["color"])
        if not operations or operations[-1] != review:
            operations.append(review)
    assert operations == [("CREATE", "paint", False, "green"), ("CREATE", "paint", False, "red"),
                          ("UPDATE", "paint", False, "blue"), ("UPDATE", "paint", False, "pink"),
                          ("CREATE", "dry", True, "grey")]
    update = next(r for r in ours if r.operation == "UPDATE")
    assert update.old_object is not None and update.old_object["data"] == {"color": "red"}
    assert ours[0].user.username  # who asked reaches the validator
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_defaulting_webhook_changes_the_object_before_it_is_stored(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    server = webhook_server(apiserver)

    @server.defaulter(CONFIG_MAPS, name="default.configmaps.reconcilekit.dev",
                      namespace_selector=in_namespace(ns), operations=("CREATE",))
    async def default(request: AdmissionRequest) -> dict[str, Any] | None:
        obj = request.object
        assert obj is not None
        obj.setdefault("data", {}).setdefault("color", "red")
        obj["metadata"].setdefault("labels", {})["painted"] = "true"
        return obj

    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server):
        assert (await client.get(MUTATING_WEBHOOK_CONFIGURATIONS, server.name))["webhooks"]
        await reviewed(apiserver, CONFIG_MAPS.path(ns), configmap("probe"),
                       lambda got: "painted" in (got.body["metadata"].get("labels") or {}))
        created = await client.create(CONFIG_MAPS, configmap("plain"), ns)
        kept = await client.create(CONFIG_MAPS, configmap("blue", color="blue"), ns)
    assert created["data"] == {"color": "red"}
    assert created["metadata"]["labels"] == {"painted": "true"}
    assert kept["data"] == {"color": "blue"}
    with pytest.raises(NotFound):
        await client.get(MUTATING_WEBHOOK_CONFIGURATIONS, server.name)


async def test_a_failing_handler_refuses_with_a_message_not_a_server_error(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    server = webhook_server(apiserver)

    @server.validator(CONFIG_MAPS, name="broken.configmaps.reconcilekit.dev",
                      namespace_selector=in_namespace(ns))
    async def validate(request: AdmissionRequest) -> Verdict:
        return request.object["data"]["missing"]  # type: ignore[index,no-any-return]

    caplog.set_level(logging.INFO, "reconcilekit")
    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server):
        await reviewed(apiserver, CONFIG_MAPS.path(ns), configmap("x", a="b"),
                       lambda got: got.status >= 400)
        with pytest.raises(Exception) as failed:
            await client.create(CONFIG_MAPS, configmap("x", a="b"), ns)
    assert "webhook broken.configmaps.reconcilekit.dev failed: KeyError: 'missing'" in str(
        failed.value)
    levels = [r.levelname for r in caplog.records if r.levelno >= logging.WARNING]
    assert levels[0] == "ERROR" and set(levels[1:]) <= {"WARNING"}  # a traceback once


def gadget_v1_to_v2(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"] = {"replicas": obj.get("spec", {}).get("size", 1)}
    return obj


def gadget_v2_to_v1(obj: dict[str, Any]) -> dict[str, Any]:
    obj["spec"] = {"size": obj.get("spec", {}).get("replicas", 1)}
    return obj


async def test_a_conversion_webhook_serves_every_version_of_one_stored_object(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await apiserver.install_crd(GADGET_CRD)
    server = webhook_server(apiserver)
    server.conversion(GADGETS_V2, hub="v2", spokes={"v1": (gadget_v1_to_v2, gadget_v2_to_v1)})
    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server):
        crd = await client.get(Resource("apiextensions.k8s.io", "v1",
                                        "CustomResourceDefinition",
                                        "customresourcedefinitions", namespaced=False),
                               f"gadgets.{GROUP}")
        assert crd["spec"]["conversion"]["strategy"] == "Webhook"
        await client.create(GADGETS_V1, {"apiVersion": f"{GROUP}/v1", "kind": "Gadget",
                                         "metadata": {"name": "g"}, "spec": {"size": 3}}, ns)
        as_v2 = await client.get(GADGETS_V2, "g", ns)
        as_v1 = await client.get(GADGETS_V1, "g", ns)
        listed = await client.list(GADGETS_V1, ns)
    assert as_v2["apiVersion"] == f"{GROUP}/v2" and as_v2["spec"] == {"replicas": 3}
    assert as_v1["apiVersion"] == f"{GROUP}/v1" and as_v1["spec"] == {"size": 3}
    assert [item["spec"] for item in listed["items"]] == [{"size": 3}]


async def test_a_conversion_for_a_crd_not_installed_fails_the_start_in_one_line(
        apiserver: Cluster, client: Client) -> None:
    server = webhook_server(apiserver)
    server.conversion(Resource("nowhere.reconcilekit.dev", "v2", "Thing", "things"), hub="v2",
                      spokes={"v1": (gadget_v1_to_v2, gadget_v2_to_v1)})
    manager = Manager(client, namespace=apiserver.namespace, http_addr=None,
                      webhook_server=server)
    assert manager.ready() == (False, "webhook server not serving")
    with pytest.raises(WebhookSetupError) as failed:
        await manager.run()
    assert str(failed.value) == (
        "CustomResourceDefinition things.nowhere.reconcilekit.dev is not installed: install "
        "it before its conversion webhook is configured")
    assert await manager.serve() == 1
    assert not server.serving
