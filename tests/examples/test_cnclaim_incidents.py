"""The CNClaim incident (docs/reliability.md): the operator's four bugs, each reproduced
and shown fixed.

Each docstring says how the test was checked against the buggy behaviour:
the bug was put back into examples/cnclaim temporarily, the test was run
and failed as described, and the fix was restored.
"""

from __future__ import annotations

import anyio

from examples.cnclaim.claimset import scale_in_order
from examples.cnclaim.resources import (
    CLAIM_FINALIZER,
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    CNCLAIMS,
    CNCLAIMSETS,
    CNPOOLS,
    CONNECTIONS_ANNOTATION,
    PHASE_LABEL,
    claim_phase,
    creation_order,
    deleting,
    labels,
    name_of,
    source_pod,
    spec_of,
    status_of,
)
from reconcilekit import Client
from reconcilekit.kinds import PODS
from reconcilekit.testing import Cluster

from cnclaim_env import (
    Watchdog,
    bound_to,
    eventually,
    get_or_none,
    idle_pod,
    new_claim,
    running_operator,
)


async def test_bug1_deleting_a_claim_whose_pod_another_claim_holds_completes(
        apiserver: Cluster, client: Client) -> None:
    """Bug 1: the Pod still labelled as the deleted claim's is named by another claim.

    The release must drop the stale label and report done, so the finalizer
    goes; the Pod stays with the claim that names it.

    Checked: with ``cleanup`` returning ``CleanupNotDone(Result.requeue_after(0.016))``
    for such a Pod (skipping it, as the original did), claim ``a`` stayed
    with its finalizer, reconciled ~60 times a second, and this test failed
    at "claim a gone"; restored, it passes.
    """
    ns = apiserver.namespace
    pod = await idle_pod(apiserver, client, "pool-1")
    pod = await client.patch(PODS, name_of(pod), {"metadata": {"labels": {
        CLAIMED_BY_LABEL: "a", PHASE_LABEL: "Bound"}}}, ns)
    # What a migration left behind: b holds the Pod, its label still names a.
    await client.create(CNCLAIMS, {
        "apiVersion": CNCLAIMS.api_version, "kind": CNCLAIMS.kind,
        "metadata": {"name": "a", "finalizers": [CLAIM_FINALIZER]},
        "spec": {"poolName": "pool-1"}}, ns)
    await new_claim(apiserver, client, "b", "pool-1", podName=name_of(pod))
    await client.delete(CNCLAIMS, "a", ns)  # held by the finalizer

    async with running_operator(apiserver, client):
        async def a_gone() -> bool:
            return await get_or_none(client, CNCLAIMS, "a", ns) is None

        await eventually(a_gone, within=5, what="claim a gone")
        b = await eventually(lambda: _bound_claim(client, ns, "b"), what="b Bound")
    assert spec_of(b)["podName"] == name_of(pod)
    now = await client.get(PODS, name_of(pod), ns)
    assert CLAIMED_BY_LABEL not in labels(now)
    assert labels(now)[PHASE_LABEL] == "Bound"  # still b's: never back to the pool


async def _bound_claim(client: Client, ns: str, name: str) -> dict[str, object] | None:
    claim = await get_or_none(client, CNCLAIMS, name, ns)
    return claim if claim is not None and claim_phase(claim) == "Bound" else None


def test_bug2_scale_in_order_never_offers_a_migrating_claim() -> None:
    """Bug 2, the rule alone: migrating claims are not candidates; Lost, Pending, newest.

    Checked: without the ``migrating`` filter, ``m`` was offered as the
    first Bound claim and the assertion failed.
    """
    def claim(name: str, created: str, phase: str, migrating: bool = False) -> dict[str, object]:
        spec: dict[str, object] = {"poolName": "p"}
        if migrating:
            spec["sourcePod"] = {"podName": "old"}
        return {"metadata": {"name": name, "creationTimestamp": created},
                "spec": spec, "status": {"phase": phase} if phase else {}}

    claims = [claim("old-bound", "2026-01-01T00:00:01Z", "Bound"),
              claim("new-bound", "2026-01-01T00:00:03Z", "Bound"),
              claim("m", "2026-01-01T00:00:09Z", "Bound", migrating=True),
              claim("pending", "2026-01-01T00:00:02Z", "Pending"),
              claim("fresh", "2026-01-01T00:00:04Z", ""),
              claim("lost", "2026-01-01T00:00:00Z", "Lost")]
    assert [name_of(c) for c in scale_in_order(claims)] == [
        "lost", "fresh", "pending", "new-bound", "old-bound"]


async def test_bug2_scale_in_keeps_the_claim_that_is_migrating(apiserver: Cluster,
                                                              client: Client) -> None:
    """Bug 2: scale-in from 5 to 1 while the newest claim migrates keeps that claim.

    The newest Bound claim is the first the old order deleted; its migration
    is held open by sessions on the source Pod, the set is scaled in, and
    the migrating claim must be the one left; then its migration finishes.

    Checked: with ``scale_in_order`` not filtering migrating claims, the set
    deleted ``mover`` (its finalizer released both its Pods) and this test
    failed at "only the mover left"; restored, it passes.
    """
    ns = apiserver.namespace
    async with running_operator(apiserver, client):
        await client.create(CNPOOLS, {
            "apiVersion": CNPOOLS.api_version, "kind": CNPOOLS.kind,
            "metadata": {"name": "pool-2"},
            "spec": {"replicas": 2, "podTemplate": {"spec": {"containers": [
                {"name": "cn", "image": "registry.k8s.io/pause:3.9"}]}}}}, ns)
        await client.create(CNCLAIMSETS, {
            "apiVersion": CNCLAIMSETS.api_version, "kind": CNCLAIMSETS.kind,
            "metadata": {"name": "set"},
            "spec": {"replicas": 5, "template": {"spec": {"poolName": "pool-2"}}}}, ns)

        async def five_bound() -> list[dict[str, object]] | None:
            claims = await _set_claims(client, ns)
            ok = len(claims) == 5 and all(claim_phase(c) == "Bound" for c in claims)
            return claims if ok else None

        claims = await eventually(five_bound, within=30, what="5 claims Bound")
        mover = max(claims, key=creation_order)
        mover_name, source = name_of(mover), str(spec_of(mover)["podName"])
        await client.patch(PODS, source, {"metadata": {"annotations": {
            CONNECTIONS_ANNOTATION: "2"}}}, ns)
        await client.patch(CNCLAIMS, mover_name, {"spec": {"sourcePod": {"podName": source}}},
                           ns)

        async def moving() -> bool:
            claim = await get_or_none(client, CNCLAIMS, mover_name, ns) or {}
            return source_pod(claim) == source and spec_of(claim).get("podName") not in (
                None, source)

        await eventually(moving, what="mover bound a new Pod")
        await client.patch(CNCLAIMSETS, "set", {"spec": {"replicas": 1}}, ns)

        async def only_mover() -> bool:
            return [name_of(c) for c in await _set_claims(client, ns, all_=True)] == [mover_name]

        await eventually(only_mover, within=10, what="only the mover left")
        kept = await client.get(CNCLAIMS, mover_name, ns)
        assert source_pod(kept) == source and not deleting(kept)
        await client.patch(PODS, source, {"metadata": {"annotations": {
            CONNECTIONS_ANNOTATION: "0"}}}, ns)

        async def migrated() -> bool:
            claim = await client.get(CNCLAIMS, mover_name, ns)
            return not source_pod(claim) and claim_phase(claim) == "Bound"

        await eventually(migrated, what="migration finished")
        released = await get_or_none(client, PODS, source, ns)  # the pool may have deleted it
        assert released is None or CLAIMED_BY_LABEL not in labels(released)


async def _set_claims(client: Client, ns: str, *, all_: bool = False
                      ) -> list[dict[str, object]]:
    listed = await client.list(CNCLAIMS, ns, label_selector=f"{CLAIMSET_LABEL}=set")
    items: list[dict[str, object]] = listed.get("items") or []
    return sorted((c for c in items if all_ or not deleting(c)), key=name_of)


async def test_bug3_a_lost_claim_never_keeps_naming_its_dead_pod(apiserver: Cluster,
                                                                  client: Client) -> None:
    """Bug 3: the bound Pod is deleted; the claim goes Lost with spec.podName and
    spec.nodeName cleared (the pool is exhausted, so it stays Lost), and binds
    the next Pod that appears.

    Checked: with ``lost`` writing ``phase: Lost`` without clearing the spec,
    the claim stayed Lost naming the dead Pod, never rebound, and this test
    failed at "Lost with the spec cleared"; restored, it passes.
    """
    ns = apiserver.namespace
    first = await idle_pod(apiserver, client, "pool-3")
    await new_claim(apiserver, client, "c", "pool-3")
    async with (running_operator(apiserver, client),
                Watchdog(client, ns).running() as watchdog):
        await eventually(lambda: bound_to(client, ns, "c"), what="c Bound")
        await client.delete(PODS, name_of(first), ns, grace_period_seconds=0)

        async def lost_and_cleared() -> bool:
            claim = await client.get(CNCLAIMS, "c", ns)
            spec = spec_of(claim)
            return claim_phase(claim) == "Lost" and "podName" not in spec and (
                "nodeName" not in spec) and not status_of(claim).get("boundTime")

        await eventually(lost_and_cleared, within=5, what="Lost with the spec cleared")
        second = await idle_pod(apiserver, client, "pool-3", node="node-1")
        assert await eventually(lambda: bound_to(client, ns, "c"),
                                what="c Bound again") == name_of(second)
        # The watchdog's own watch holds the claim's whole story once it saw the rebind.
        async def rebound_seen() -> bool:
            return watchdog.history["c"][-1][1] == name_of(second)

        await eventually(rebound_seen, what="the watchdog saw c Bound again")
    lost_states = [s for s in watchdog.history["c"] if s[0] == "Lost"]
    assert lost_states, watchdog.history["c"]
    assert all(pod != name_of(first) for _, pod, _ in lost_states), watchdog.history["c"]
    assert not watchdog.violations


async def test_bug4_a_pod_deletion_reaches_its_claim_after_the_label_is_gone(
        apiserver: Cluster, client: Client) -> None:
    """Bug 4: a bound Pod loses its claimed-by label, then is deleted. Its claim
    must hear of it through the spec.podName field index, go Lost and rebind.

    Checked: with ``Indexes.pod_to_claims`` mapping through the label alone
    (as the original did), the deletion reconciled nobody, the claim stayed
    Bound to the dead Pod, and this test failed at "c rebound"; restored, it
    passes.
    """
    ns = apiserver.namespace
    first = await idle_pod(apiserver, client, "pool-4")
    await new_claim(apiserver, client, "c", "pool-4")
    async with running_operator(apiserver, client):
        await eventually(lambda: bound_to(client, ns, "c"), what="c Bound")
        await client.patch(PODS, name_of(first), {"metadata": {"labels": {
            CLAIMED_BY_LABEL: None}}}, ns)
        spare = await idle_pod(apiserver, client, "pool-4", node="node-1")
        await anyio.sleep(0.2)  # the label's removal and the spare reach the operator first
        claim = await client.get(CNCLAIMS, "c", ns)
        assert spec_of(claim)["podName"] == name_of(first)  # nothing woke it to move
        await client.delete(PODS, name_of(first), ns, grace_period_seconds=0)

        async def rebound() -> bool:
            claim = await client.get(CNCLAIMS, "c", ns)
            return claim_phase(claim) == "Bound" and (
                spec_of(claim).get("podName") == name_of(spare))

        await eventually(rebound, within=5, what="c rebound")
