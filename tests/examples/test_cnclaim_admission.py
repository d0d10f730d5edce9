"""The CNClaim webhook refuses malformed claims at admission; the Bound condition follows the
phase. On both backends: the operator's manager installs its webhook configuration, the API
server calls it."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import anyio
import pytest

from examples.cnclaim.admission import WEBHOOK_NAME, add_claim_webhook, own_username
from examples.cnclaim.operator import MANIFESTS
from examples.cnclaim.resources import CNCLAIMS, status_of
from reconcilekit import APIError, Client, NotFound
from reconcilekit.conditions import find_status_condition
from reconcilekit.kinds import PODS, VALIDATING_WEBHOOK_CONFIGURATIONS
from reconcilekit.testing import Cluster, installed_webhooks
from reconcilekit.webhook import AdmissionRequest, WebhookServer

from cnclaim_env import (
    eventually,
    get_or_none,
    idle_pod,
    new_claim,
    running_operator,
    until_admission_refuses,
)


def claim_webhook_server(cluster: Cluster, users: frozenset[str] = frozenset()) -> WebhookServer:
    server = WebhookServer(name=f"cnclaim-{cluster.namespace}", host="127.0.0.1", port=0,
                           install_configurations=True, remove_configurations_on_exit=True)
    add_claim_webhook(server, operator_users=users, namespace=cluster.namespace)
    return server


@pytest.mark.parametrize(("selector", "message"), [
    ({"matchLabels": {"bad key!": "x"}},
     "spec.selector.matchLabels.bad key!: "),
    ({"matchExpressions": [{"key": "zone", "operator": "In"}]},
     "spec.selector.matchExpressions[0].values: must be specified when operator is In"),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists", "values": ["a"]}]},
     "spec.selector.matchExpressions[0].values: may not be specified when operator is Exists"),
])
async def test_a_malformed_claim_is_refused_at_admission_naming_the_field(
        apiserver: Cluster, client: Client, selector: dict[str, Any], message: str) -> None:
    async with running_operator(apiserver, client,
                                webhook_server=claim_webhook_server(apiserver)):
        await until_admission_refuses(apiserver, "bad", "p", selector=selector)
        with pytest.raises(APIError) as refused:
            await new_claim(apiserver, client, "bad", "p", selector=selector)
        fine = await new_claim(apiserver, client, "fine", "p")
    assert f'admission webhook "{WEBHOOK_NAME}" denied the request: {message}' in str(
        refused.value)
    assert await get_or_none(client, CNCLAIMS, "bad", apiserver.namespace) is None
    assert fine["metadata"]["name"] == "fine"


def update_review(user: str, old_pod: str, new_pod: str) -> AdmissionRequest:
    def claim(pod: str) -> dict[str, Any]:
        return {"apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
                "metadata": {"name": "c", "namespace": "ns"},
                "spec": {"poolName": "p", "podName": pod}}
    return AdmissionRequest.from_review({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": str(uuid.uuid4()), "operation": "UPDATE",
                    "userInfo": {"username": user},
                    "object": claim(new_pod), "oldObject": claim(old_pod)}})


async def test_only_the_operators_user_changes_a_binding() -> None:
    server = WebhookServer(port=0)
    add_claim_webhook(server, operator_users={"system:serviceaccount:ops:cnclaim-operator"})
    [hook] = server.hooks.values()
    validate: Any = hook.handler
    operator = await validate(update_review("system:serviceaccount:ops:cnclaim-operator",
                                            "p-1", "p-2"))
    someone = await validate(update_review("alice", "p-1", "p-2"))
    unchanged = await validate(update_review("alice", "p-1", "p-1"))
    assert operator.allowed and unchanged.allowed
    assert not someone.allowed
    assert someone.message == ("spec.podName: only the CNClaim operator records a binding; "
                               "alice may not change it")


async def test_the_operators_own_updates_are_not_sent_to_its_webhook(
        apiserver: Cluster, client: Client) -> None:
    """The configuration's match condition leaves the operator's binding write unreviewed:
    a claim's create is sent, its binding (an update by the operator's user) is not."""
    me = await own_username(client)
    assert me is not None
    server = claim_webhook_server(apiserver, users=frozenset({me}))
    [hook] = server.hooks.values()
    sent: list[tuple[str, str]] = []
    validate: Any = hook.handler

    async def recording(request: AdmissionRequest) -> Any:
        sent.append((request.operation, request.name))
        return await validate(request)

    server.hooks[hook.path] = dataclasses.replace(hook, handler=recording)
    async with running_operator(apiserver, client, webhook_server=server):
        await until_admission_refuses(apiserver, "bad", "p", selector={
            "matchExpressions": [{"key": "zone", "operator": "In"}]})
        await idle_pod(apiserver, client, "p")
        await new_claim(apiserver, client, "c", "p")
        await eventually(lambda: _is(_phase(client, "c", apiserver.namespace), "Bound"))
    bound = await client.get(CNCLAIMS, "c", apiserver.namespace)
    assert bound["spec"]["podName"]
    assert [op for op, name in sent if name == "c"] == ["CREATE"]


async def _phase(client: Client, name: str, ns: str) -> str | None:
    claim = await get_or_none(client, CNCLAIMS, name, ns)
    return status_of(claim or {}).get("phase")


async def test_the_operator_knows_its_own_user_where_the_server_says(
        apiserver: Cluster, client: Client) -> None:
    assert await own_username(client)


async def test_the_bound_condition_follows_the_phase(apiserver: Cluster,
                                                     client: Client) -> None:
    ns = apiserver.namespace

    async def bound_condition() -> tuple[str, str, bool] | None:
        claim = await get_or_none(client, CNCLAIMS, "c", ns)
        found = find_status_condition(status_of(claim or {}).get("conditions"), "Bound")
        if claim is None or found is None:
            return None
        current = found.get("observedGeneration") == claim["metadata"]["generation"]
        return found["status"], found["reason"], current

    async with running_operator(apiserver, client):
        await new_claim(apiserver, client, "c", "p")
        await eventually(lambda: _is(bound_condition(), ("False", "Pending", True)))
        pod = await idle_pod(apiserver, client, "p")
        await eventually(lambda: _is(bound_condition(), ("True", "Bound", True)))
        claim = await client.get(CNCLAIMS, "c", ns)
        found = find_status_condition(status_of(claim)["conditions"], "Bound")
        assert found is not None and found["message"] == f"bound to Pod {pod['metadata']['name']}"
        await client.delete(PODS, pod["metadata"]["name"], ns, grace_period_seconds=0)
        await eventually(lambda: _is(bound_condition(), ("False", "Lost", True)))


async def _is(value: Any, expected: Any) -> bool:
    return bool(await value == expected)


async def test_the_manifests_webhook_installed_for_a_test_refuses_a_malformed_claim(
        apiserver: Cluster, client: Client) -> None:
    """manifests/webhook.yaml, pointed at this test's server as envtest would point it:
    the path and rules it declares reach the operator's validator."""
    server = WebhookServer(host="127.0.0.1", port=0)
    add_claim_webhook(server, operator_users=None)
    async with anyio.create_task_group() as tg:
        await tg.start(server.run)
        async with installed_webhooks(client, MANIFESTS / "webhook.yaml", server,
                                      name_suffix=f"-{apiserver.namespace}",
                                      namespace=apiserver.namespace) as [config]:
            assert config["webhooks"][0]["clientConfig"]["url"].startswith(server.base_url)
            bad = {"matchLabels": {"zone": "not a value"}}
            await until_admission_refuses(apiserver, "bad", "p", selector=bad)
            with pytest.raises(APIError) as refused:
                await new_claim(apiserver, client, "bad", "p", selector=bad)
        tg.cancel_scope.cancel()
    assert "denied the request: spec.selector.matchLabels.zone: " in str(refused.value)
    with pytest.raises(NotFound):
        await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, config["metadata"]["name"])
