"""Which Pod a CNClaim binds: selectors, and the Pod it held last before the oldest."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from examples.cnclaim.claim import record_binding, selector_matches
from examples.cnclaim.pods import take
from examples.cnclaim.resources import (
    CLAIM_FINALIZER,
    CLAIMED_BY_LABEL,
    CNCLAIMS,
    LAST_OWNER_ANNOTATION,
    PHASE_LABEL,
    labels,
    name_of,
)
from reconcilekit import Client, Request
from reconcilekit.kinds import EVENTS, PODS
from reconcilekit.testing import Cluster

from cnclaim_env import bound_to, eventually, idle_pod, new_claim, running_operator

OTHER_FINALIZER = "example.com/keep"  # another controller's, holding a deleted claim
SELECTOR = {"matchLabels": {"tier": "olap"},
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                 {"key": "cordoned", "operator": "DoesNotExist"}]}


@pytest.mark.parametrize(("pod_labels", "matches"), [
    ({"tier": "olap", "zone": "a"}, True),
    ({"tier": "olap", "zone": "c"}, False),
    ({"tier": "oltp", "zone": "a"}, False),
    ({"tier": "olap", "zone": "b", "cordoned": "yes"}, False),
])
def test_selector_matches_like_a_label_selector(pod_labels: dict[str, str],
                                                 matches: bool) -> None:
    assert selector_matches(SELECTOR, pod_labels) is matches


async def test_a_claim_with_a_selector_binds_only_a_matching_pod(apiserver: Cluster,
                                                                 client: Client) -> None:
    ns = apiserver.namespace
    other = await idle_pod(apiserver, client, "p", extra_labels={"tier": "olap", "zone": "c"})
    wanted = await idle_pod(apiserver, client, "p", extra_labels={"tier": "olap", "zone": "b"})
    await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": "picky"}, "spec": {"selector": SELECTOR}}, ns)
    await new_claim(apiserver, client, "pooled", "p", selector=SELECTOR)
    async with running_operator(apiserver, client):
        picked = await eventually(lambda: _first_bound(client, ns, ("picky", "pooled")),
                                  what="one claim Bound")
        await anyio.sleep(0.2)  # the other claim had its chance at the other Pod
        assert picked == name_of(wanted)
        assert CLAIMED_BY_LABEL not in labels(await client.get(PODS, name_of(other), ns))


async def _first_bound(client: Client, ns: str, claims: tuple[str, ...]) -> str:
    for claim in claims:
        pod = await bound_to(client, ns, claim)
        if pod:
            return pod
    return ""


async def test_a_claim_prefers_the_pod_it_held_last_over_the_oldest(apiserver: Cluster,
                                                                    client: Client) -> None:
    ns = apiserver.namespace
    await idle_pod(apiserver, client, "p")  # the oldest
    held = await idle_pod(apiserver, client, "p", node="node-1")
    await client.patch(PODS, name_of(held), {"metadata": {"annotations": {
        LAST_OWNER_ANNOTATION: "returning"}}}, ns)
    await new_claim(apiserver, client, "returning", "p")
    async with running_operator(apiserver, client):
        assert await eventually(lambda: bound_to(client, ns, "returning"),
                                what="Bound") == name_of(held)


@pytest.mark.parametrize(("selector", "message"), [
    ({"matchExpressions": [{"key": "zone", "operator": "In"}]},
     "spec.selector.matchExpressions[0].values: must be specified when operator is In"),
    ({"matchLabels": {"tier": "olap db"}},
     "spec.selector.matchLabels.tier: found 'db', expected: ',' or 'end of string'"),
])
async def test_a_spec_the_schema_lets_through_but_the_code_cannot_use_is_terminal(
        apiserver: Cluster, client: Client, selector: dict[str, Any], message: str) -> None:
    """Accepted by the CRD's schema on kube-apiserver too: a Warning Event names the
    field, and the claim is not retried (no traceback, no backoff loop)."""
    ns = apiserver.namespace
    await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": "bad"}, "spec": {"selector": selector}}, ns)

    async def warning() -> dict[str, Any] | None:
        listed = await client.list(EVENTS, ns, field_selector="involvedObject.name=bad")
        return next((e for e in listed["items"] if e["reason"] == "InvalidSpec"), None)

    async with running_operator(apiserver, client) as manager:
        event = await eventually(warning, what="an InvalidSpec Warning Event")
        (claims,) = [c for c in manager.controllers if c.name == "cnclaim"]
        assert claims.queue.num_requeues(Request(ns, "bad")) == 0
        assert claims.queue.statistics().waiting == 0
    assert event["type"] == "Warning" and event["message"] == message


@pytest.mark.parametrize(("spec", "cause"), [
    ("pool-a", ("spec", 'Invalid value: "string": spec in body must be of type object: '
                        '"string"')),
    ({"poolName": 7}, ("spec.poolName", 'Invalid value: "integer": spec.poolName in body '
                                        'must be of type string: "integer"')),
    ({"selector": {"matchExpressions": [{"key": "zone", "operator": "Near"}]}},
     ("spec.selector.matchExpressions[0].operator", 'Unsupported value: "Near": supported '
      'values: "In", "NotIn", "Exists", "DoesNotExist"')),
    ({}, ("spec", 'Invalid value: "object": spec.poolName or spec.selector is required')),
    ({"selector": [{"matchLabels": {}}]}, ("spec.selector", 'Invalid value: "array": '
                                           'spec.selector in body must be of type object: '
                                           '"array"')),
    ({"poolName": "p", "sourcePod": {"podName": 3}},
     ("spec.sourcePod.podName", 'Invalid value: "integer": spec.sourcePod.podName in body '
                                'must be of type string: "integer"')),
])
async def test_a_malformed_claim_is_refused_by_the_crd_schema(
        apiserver: Cluster, client: Client, spec: Any, cause: tuple[str, str]) -> None:
    """The API server refuses it with 422 naming the field: it never reaches the operator."""
    got = await apiserver.request(
        "POST", f"/apis/{CNCLAIMS.api_version}/namespaces/{apiserver.namespace}/cnclaims",
        json={"apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
              "metadata": {"name": "malformed"}, "spec": spec})
    assert got.status == 422, got
    assert cause in {(c["field"], c["message"]) for c in got.body["details"]["causes"]}


async def test_workers_of_one_operator_never_race_for_a_pod(apiserver: Cluster,
                                                            client: Client) -> None:
    """Eight workers binding twenty claims at once: no Pod update of this process ever
    loses to another of its own (a 409 could only come from outside the process)."""
    ns = apiserver.namespace
    conflicts: list[str] = []
    client.add_request_observer(lambda r: conflicts.append(r.resource) if (
        r.verb == "update" and r.resource == "pods" and r.status == 409) else None)
    for _ in range(20):
        await idle_pod(apiserver, client, "race")
    async with running_operator(apiserver, client, workers=8):
        async with anyio.create_task_group() as tg:
            for i in range(20):
                tg.start_soon(new_claim, apiserver, client, f"c{i}", "race")
        bound = [await eventually(lambda i=i: bound_to(client, ns, f"c{i}"), within=30.0,
                                  what=f"c{i} Bound") for i in range(20)]
    assert len(set(bound)) == 20
    assert conflicts == []


async def test_a_claim_deleted_while_binding_gets_its_pod_back_in_the_pool(
        apiserver: Cluster, client: Client) -> None:
    """The finalizer comes with the spec write, after the Pod is labelled: a claim
    deleted in between makes that write fail, and the Pod is released at once."""
    ns = apiserver.namespace
    pod = await idle_pod(apiserver, client, "going")
    claim = await new_claim(apiserver, client, "doomed", "going")  # no operator: no finalizer
    taken = await take(client, pod, "doomed")
    assert taken is not None and labels(taken)[CLAIMED_BY_LABEL] == "doomed"
    await client.delete(CNCLAIMS, "doomed", ns)  # gone at once: nothing holds it
    assert await record_binding(client, claim, taken) is False
    released = await client.get(PODS, name_of(pod), ns)
    assert CLAIMED_BY_LABEL not in labels(released)
    assert labels(released)[PHASE_LABEL] == "Draining"


async def test_binding_writes_the_finalizer_with_the_spec(apiserver: Cluster,
                                                         client: Client) -> None:
    ns = apiserver.namespace
    await idle_pod(apiserver, client, "one")
    async with running_operator(apiserver, client):
        await new_claim(apiserver, client, "c", "one")
        pod_name = await eventually(lambda: bound_to(client, ns, "c"), what="c Bound")
    claim = await client.get(CNCLAIMS, "c", ns)
    assert CLAIM_FINALIZER in claim["metadata"]["finalizers"]
    assert claim["spec"]["podName"] == pod_name
    writers = {(e["manager"], e["operation"], e.get("subresource", ""))
               for e in claim["metadata"]["managedFields"]}
    assert len([w for w in writers if w[2] == ""]) <= 2  # creator, and one binding write


async def test_a_deleted_claim_names_no_pod_once_it_gave_the_pod_back(
        apiserver: Cluster, client: Client) -> None:
    """A claim's cleanup clears ``spec.podName`` before it releases the Pod: the Pod
    can go to another claim as soon as it is released, and the deleted claim may
    outlive its cleanup (another finalizer here; in the chaos test, its leader
    killed between the release and the finalizer's removal while the pool
    recycled the Pod), so no two claims ever name one Pod.

    Checked: with the cleanup releasing the Pod first and leaving the spec, ``a``
    still named the Pod once ``b`` was bound to it, and this test failed at
    "Pod named by a and b"; restored, it passes.
    """
    ns = apiserver.namespace
    pod = await idle_pod(apiserver, client, "handed-on")
    await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": "a", "finalizers": [OTHER_FINALIZER]},
        "spec": {"poolName": "handed-on"}}, ns)
    try:
        async with running_operator(apiserver, client):
            assert await eventually(lambda: bound_to(client, ns, "a"),
                                    what="a Bound") == name_of(pod)
            await client.delete(CNCLAIMS, "a", ns)

            async def cleaned_up() -> bool:
                got = await client.get(CNCLAIMS, "a", ns)
                return CLAIM_FINALIZER not in got["metadata"]["finalizers"]

            await eventually(cleaned_up, what="a's cleanup done")  # the other holds it
            # What the pool does with a Draining Pod whose sessions are gone.
            now = await client.get(PODS, name_of(pod), ns)
            assert labels(now)[PHASE_LABEL] == "Draining"
            await client.patch(PODS, name_of(pod), {"metadata": {"labels": {
                PHASE_LABEL: "Idle"}}}, ns)
            await new_claim(apiserver, client, "b", "handed-on")
            assert await eventually(lambda: bound_to(client, ns, "b"),
                                    what="b Bound") == name_of(pod)
            naming = [name_of(c) for c in (await client.list(CNCLAIMS, ns))["items"]
                      if c["spec"].get("podName") == name_of(pod)]
        assert naming == ["b"], f"Pod named by {' and '.join(naming)}"
    finally:
        await client.patch(CNCLAIMS, "a", {"metadata": {"finalizers": None}}, ns)
