"""Finalizer helpers against the test API server (or a real cluster).

The clusterctl move incident (a finalizer re-added between "remove finalizers"
and "delete") and the finalizer-on-deleting-object incident ("no new finalizers
can be added if the object is being deleted"), described in docs/reliability.md,
each have a regression test here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from reconcilekit import Resource
from reconcilekit.finalizers import (
    CleanupDone,
    CleanupNotDone,
    CleanupResult,
    FinalizeAction,
    FinalizerResult,
    add_finalizer,
    delete_then_release,
    finalize,
    remove_finalizer,
)
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster

OURS = "example.com/cleanup"
OTHER = "other.example/hold"

_CONTENT_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


class APIStatusError(Exception):
    """A failed request, with the code and reason of the API server's Status body."""

    def __init__(self, status: int, body: Any) -> None:
        body = body if isinstance(body, dict) else {}
        self.status = status
        self.reason = str(body.get("reason", ""))
        super().__init__(f"{status} {self.reason}: {body.get('message', body)}")


Hook = Callable[[str], Awaitable[None]]


class RawRequestClient:
    """Test stand-in for reconcilekit's ``Client``: :class:`FinalizerClient` over raw HTTP.

    Sends each call with ``Cluster.request`` and raises :class:`APIStatusError`
    (``.status``, ``.reason``) for an error answer, as the real client's typed
    errors do. Every request is recorded in ``calls`` as ``(verb, status)``.
    ``before_write`` / ``after_write`` run around each PATCH and DELETE: that
    is where a test lets "another controller" act between two steps.
    """

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.calls: list[tuple[str, int]] = []
        self.before_write: Hook | None = None
        self.after_write: Hook | None = None

    async def _send(self, verb: str, path: str, **kwargs: Any) -> dict[str, Any]:
        if verb != "GET" and self.before_write is not None:
            await self.before_write(verb)
        got = await self.cluster.request(verb, path, **kwargs)
        self.calls.append((verb, got.status))
        if got.status >= 400:
            raise APIStatusError(got.status, got.body)
        if verb != "GET" and self.after_write is not None:
            await self.after_write(verb)
        return dict(got.body)

    def verbs(self) -> list[str]:
        return [verb for verb, _ in self.calls]

    async def get(self, resource: Resource, name: str,
                  namespace: str | None = None) -> dict[str, Any]:
        return await self._send("GET", resource.path(namespace, name))

    async def patch(self, resource: Resource, name: str, patch: Any,
                    namespace: str | None = None, *, type: str = "merge") -> dict[str, Any]:
        return await self._send("PATCH", resource.path(namespace, name), json=patch,
                                content_type=_CONTENT_TYPES[type])

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     uid: str | None = None,
                     resource_version: str | None = None) -> dict[str, Any]:
        preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version))
                         if v is not None}
        return await self._send("DELETE", resource.path(namespace, name), json={
            "apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions})


@pytest.fixture
def client(apiserver: Cluster) -> RawRequestClient:
    return RawRequestClient(apiserver)


# -- raw helpers: what "someone else" does, outside the code under test --------------------


def _path(cluster: Cluster, name: str) -> str:
    return CONFIG_MAPS.path(cluster.namespace, name)


async def create(cluster: Cluster, name: str, finalizers: list[str]) -> dict[str, Any]:
    made = await cluster.request("POST", CONFIG_MAPS.path(cluster.namespace), json={
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}})
    assert made.status == 201, made
    return dict(made.body)


async def read(cluster: Cluster, name: str) -> dict[str, Any] | None:
    got = await cluster.request("GET", _path(cluster, name))
    if got.status == 404:
        return None
    assert got.status == 200, got
    return dict(got.body)


async def set_finalizers(cluster: Cluster, name: str, finalizers: list[str]) -> int:
    """Another writer replaces the finalizers list; returns the HTTP status."""
    got = await cluster.request("PATCH", _path(cluster, name),
                                json={"metadata": {"finalizers": finalizers}},
                                content_type=_CONTENT_TYPES["merge"])
    return got.status


async def start_deletion(cluster: Cluster, name: str) -> None:
    got = await cluster.request("DELETE", _path(cluster, name))
    assert got.status in (200, 202), got


def finalizers_of(obj: dict[str, Any] | None) -> list[str]:
    assert obj is not None
    return list(obj["metadata"].get("finalizers") or [])


async def release_all(cluster: Cluster, name: str) -> None:
    """Let a test's leftover object go (a real cluster's namespace must be deletable)."""
    if await read(cluster, name) is not None:
        await set_finalizers(cluster, name, [])


# -- add_finalizer ----------------------------------------------------------------------------


async def test_add_finalizer_to_object_being_deleted_returns_being_deleted_and_sends_nothing(
        apiserver: Cluster, client: RawRequestClient) -> None:
    """Incident #4: ensuring a finalizer on an object being deleted is cleanup, not a 422.

    Checked against the bug: with the deletionTimestamp case taken out of
    add_finalizer's match, it PATCHes, gets 422 "no new finalizers can be added
    if the object is being deleted" on every attempt and raises it; this test
    then fails with that 422.
    """
    await create(apiserver, "cm", [OTHER])
    await start_deletion(apiserver, "cm")
    deleting = await read(apiserver, "cm")

    assert await add_finalizer(client, CONFIG_MAPS, deleting or {}, OURS) is (
        FinalizerResult.BEING_DELETED)
    assert client.verbs() == []
    assert finalizers_of(await read(apiserver, "cm")) == [OTHER]
    await release_all(apiserver, "cm")


async def test_add_finalizer_when_deletion_starts_after_the_read_returns_being_deleted(
        apiserver: Cluster, client: RawRequestClient) -> None:
    """Incident #4, the race: deletion starts between the read and the PATCH.

    The API server still answers 422; add_finalizer re-reads and reports
    BEING_DELETED. Checked against the bug: with 422 taken out of the codes
    add_finalizer re-reads on (only 404/409 retried), the 422 propagates and
    this test fails with it.
    """
    stale = await create(apiserver, "cm", [OTHER])

    async def deletion_starts(verb: str) -> None:
        client.before_write = None
        await start_deletion(apiserver, "cm")

    client.before_write = deletion_starts
    assert await add_finalizer(client, CONFIG_MAPS, stale, OURS) is FinalizerResult.BEING_DELETED
    assert client.calls == [("PATCH", 422), ("GET", 200)]
    assert finalizers_of(await read(apiserver, "cm")) == [OTHER]
    await release_all(apiserver, "cm")


async def test_add_finalizer_adds_once_then_reports_already_present(
        apiserver: Cluster, client: RawRequestClient) -> None:
    made = await create(apiserver, "cm", [])
    assert await add_finalizer(client, CONFIG_MAPS, made, OURS) is FinalizerResult.ADDED
    fresh = await read(apiserver, "cm")
    assert finalizers_of(fresh) == [OURS]
    assert fresh is not None
    assert await add_finalizer(client, CONFIG_MAPS, fresh, OURS) is (
        FinalizerResult.ALREADY_PRESENT)
    # A stale read without it: the guarded PATCH fails, the re-read shows it.
    assert await add_finalizer(client, CONFIG_MAPS, made, OURS) is (
        FinalizerResult.ALREADY_PRESENT)
    assert finalizers_of(await read(apiserver, "cm")) == [OURS]
    await release_all(apiserver, "cm")


async def test_add_finalizer_keeps_a_finalizer_another_controller_added_meanwhile(
        apiserver: Cluster, client: RawRequestClient) -> None:
    stale = await create(apiserver, "cm", [])
    assert await set_finalizers(apiserver, "cm", [OTHER]) == 200
    assert await add_finalizer(client, CONFIG_MAPS, stale, OURS) is FinalizerResult.ADDED
    assert finalizers_of(await read(apiserver, "cm")) == [OTHER, OURS]
    await release_all(apiserver, "cm")


async def test_add_finalizer_never_touches_a_new_object_that_took_the_name(
        apiserver: Cluster, client: RawRequestClient) -> None:
    old = await create(apiserver, "cm", [])
    await start_deletion(apiserver, "cm")
    assert await add_finalizer(client, CONFIG_MAPS, old, OURS) is FinalizerResult.GONE
    await create(apiserver, "cm", [])
    assert await add_finalizer(client, CONFIG_MAPS, old, OURS) is FinalizerResult.GONE
    assert finalizers_of(await read(apiserver, "cm")) == []


# -- remove_finalizer -------------------------------------------------------------------------


async def test_remove_finalizer_never_removes_an_entry_that_moved_into_its_index(
        apiserver: Cluster, client: RawRequestClient) -> None:
    stale = await create(apiserver, "cm", ["a.example/x", OURS])
    # Meanwhile one controller released "a", another added OTHER: OTHER now sits
    # at index 1, where OURS was in the stale read.
    assert await set_finalizers(apiserver, "cm", [OURS, OTHER]) == 200
    released = await remove_finalizer(client, CONFIG_MAPS, stale, OURS)
    assert finalizers_of(released) == [OTHER]
    assert finalizers_of(await read(apiserver, "cm")) == [OTHER]
    assert client.calls == [("PATCH", 422), ("GET", 200), ("PATCH", 200)]
    await release_all(apiserver, "cm")


async def test_remove_finalizer_never_brings_back_an_entry_removed_meanwhile(
        apiserver: Cluster, client: RawRequestClient) -> None:
    stale = await create(apiserver, "cm", [OTHER, OURS])
    assert await set_finalizers(apiserver, "cm", [OURS]) == 200
    released = await remove_finalizer(client, CONFIG_MAPS, stale, OURS)
    assert finalizers_of(released) == []
    assert finalizers_of(await read(apiserver, "cm")) == []


async def test_remove_finalizer_without_it_writes_nothing(
        apiserver: Cluster, client: RawRequestClient) -> None:
    made = await create(apiserver, "cm", [OTHER])
    assert await remove_finalizer(client, CONFIG_MAPS, made, OURS) == made
    assert client.calls == []
    await release_all(apiserver, "cm")


async def test_remove_finalizer_of_a_gone_object_is_done(
        apiserver: Cluster, client: RawRequestClient) -> None:
    stale = await create(apiserver, "cm", [OURS])
    await set_finalizers(apiserver, "cm", [])
    await start_deletion(apiserver, "cm")
    assert await remove_finalizer(client, CONFIG_MAPS, stale, OURS) is None
    assert client.verbs() == ["PATCH", "GET"]


async def test_remove_finalizer_never_touches_a_new_object_that_took_the_name(
        apiserver: Cluster, client: RawRequestClient) -> None:
    stale = await create(apiserver, "cm", [OURS])
    await set_finalizers(apiserver, "cm", [])
    await start_deletion(apiserver, "cm")
    await create(apiserver, "cm", [OURS])
    assert await remove_finalizer(client, CONFIG_MAPS, stale, OURS) is None
    assert finalizers_of(await read(apiserver, "cm")) == [OURS]
    await release_all(apiserver, "cm")


# -- delete_then_release ----------------------------------------------------------------------


async def test_delete_then_release_deletes_first_so_no_finalizer_can_slip_in_between(
        apiserver: Cluster, client: RawRequestClient) -> None:
    """Incident #3: another controller acting between the two steps cannot hold the object.

    After delete_then_release's first write, a controller that unconditionally
    ensures its finalizer tries to add it. The first write must be the DELETE:
    the object already has a deletionTimestamp, the API server refuses the new
    finalizer with 422, and once ours is stripped the object is gone.

    Checked against the bug: with the two steps swapped (remove_finalizer,
    then the DELETE), the first write is the PATCH, the competing controller
    sees no deletionTimestamp and its finalizer is accepted (``seen`` is
    ``[("PATCH", False, 200)]``), and the DELETE then leaves the object
    Terminating, held by that finalizer: this test fails on ``seen``.
    """
    made = await create(apiserver, "cm", [OURS])
    seen: list[tuple[str, bool, int]] = []

    async def other_controller_ensures_its_finalizer(verb: str) -> None:
        client.after_write = None
        now = await read(apiserver, "cm")
        assert now is not None
        answer = await set_finalizers(apiserver, "cm", [*finalizers_of(now), OTHER])
        seen.append((verb, bool(now["metadata"].get("deletionTimestamp")), answer))

    client.after_write = other_controller_ensures_its_finalizer
    released = await delete_then_release(client, CONFIG_MAPS, made, OURS)
    assert seen == [("DELETE", True, 422)]
    assert released is None
    assert client.verbs() == ["DELETE", "PATCH"]
    assert await read(apiserver, "cm") is None


async def test_delete_then_release_leaves_the_object_to_other_finalizers(
        apiserver: Cluster, client: RawRequestClient) -> None:
    made = await create(apiserver, "cm", [OTHER, OURS])
    left = await delete_then_release(client, CONFIG_MAPS, made, OURS)
    assert finalizers_of(left) == [OTHER]
    now = await read(apiserver, "cm")
    assert now is not None and now["metadata"]["deletionTimestamp"]
    assert finalizers_of(now) == [OTHER]
    await release_all(apiserver, "cm")
    assert await read(apiserver, "cm") is None


async def test_delete_then_release_of_an_object_without_finalizers_deletes_it(
        apiserver: Cluster, client: RawRequestClient) -> None:
    made = await create(apiserver, "cm", [])
    assert await delete_then_release(client, CONFIG_MAPS, made, OURS) is None
    assert client.verbs() == ["DELETE"]
    assert await read(apiserver, "cm") is None


async def test_delete_then_release_never_deletes_a_new_object_that_took_the_name(
        apiserver: Cluster, client: RawRequestClient) -> None:
    old = await create(apiserver, "cm", [])
    await start_deletion(apiserver, "cm")
    assert await delete_then_release(client, CONFIG_MAPS, old, OURS) is None
    await create(apiserver, "cm", [OURS])
    assert await delete_then_release(client, CONFIG_MAPS, old, OURS) is None
    assert client.calls == [("DELETE", 404), ("DELETE", 409), ("GET", 200)]
    now = await read(apiserver, "cm")
    assert now is not None and not now["metadata"].get("deletionTimestamp")
    assert finalizers_of(now) == [OURS]
    await release_all(apiserver, "cm")


# -- finalize ---------------------------------------------------------------------------------


class Runner:
    """apply/cleanup callbacks that record their calls; cleanup says done when told."""

    def __init__(self) -> None:
        self.applied: list[str] = []
        self.cleaned: list[str] = []
        self.done = False

    async def apply(self, obj: dict[str, Any]) -> str:
        self.applied.append(obj["metadata"]["resourceVersion"])
        return "applied"

    async def cleanup(self, obj: dict[str, Any]) -> CleanupResult[str]:
        self.cleaned.append(obj["metadata"]["resourceVersion"])
        if self.done:
            return CleanupDone("released")
        return CleanupNotDone("requeue in 5s")


async def test_finalize_walks_the_object_through_its_lifecycle(
        apiserver: Cluster, client: RawRequestClient) -> None:
    runner = Runner()

    async def reconcile() -> str | FinalizeAction:
        obj = await read(apiserver, "cm")
        assert obj is not None
        return await finalize(client, CONFIG_MAPS, obj, OURS,
                              apply=runner.apply, cleanup=runner.cleanup)

    await create(apiserver, "cm", [])
    assert await reconcile() is FinalizeAction.FINALIZER_ADDED
    assert runner.applied == [] and finalizers_of(await read(apiserver, "cm")) == [OURS]

    assert await reconcile() == "applied"
    assert len(runner.applied) == 1 and runner.cleaned == []

    await start_deletion(apiserver, "cm")
    assert await reconcile() == "requeue in 5s"
    assert len(runner.cleaned) == 1
    assert finalizers_of(await read(apiserver, "cm")) == [OURS]

    runner.done = True
    assert await reconcile() == "released"
    assert len(runner.cleaned) == 2 and len(runner.applied) == 1
    assert await read(apiserver, "cm") is None


async def test_finalize_leaves_an_object_deleted_without_its_finalizer_alone(
        apiserver: Cluster, client: RawRequestClient) -> None:
    runner = Runner()
    await create(apiserver, "cm", [OTHER])
    await start_deletion(apiserver, "cm")
    obj = await read(apiserver, "cm")
    assert obj is not None
    assert await finalize(client, CONFIG_MAPS, obj, OURS, apply=runner.apply,
                          cleanup=runner.cleanup) is FinalizeAction.NOT_OURS
    assert runner.applied == runner.cleaned == [] and client.calls == []
    assert finalizers_of(await read(apiserver, "cm")) == [OTHER]
    await release_all(apiserver, "cm")


async def test_finalize_keeps_the_finalizer_when_cleanup_raises(
        apiserver: Cluster, client: RawRequestClient) -> None:
    await create(apiserver, "cm", [OURS])
    await start_deletion(apiserver, "cm")
    obj = await read(apiserver, "cm")
    assert obj is not None

    async def cleanup(obj: dict[str, Any]) -> CleanupResult[str]:
        raise RuntimeError("the cloud API is down")

    async def apply(obj: dict[str, Any]) -> str:
        raise AssertionError("apply must not run on an object being deleted")

    with pytest.raises(RuntimeError, match="cloud API"):
        await finalize(client, CONFIG_MAPS, obj, OURS, apply=apply, cleanup=cleanup)
    assert client.calls == []
    assert finalizers_of(await read(apiserver, "cm")) == [OURS]
    await release_all(apiserver, "cm")


async def test_finalize_retries_a_conflict_on_a_fresh_read(
        apiserver: Cluster, client: RawRequestClient) -> None:
    runner = Runner()
    made = await create(apiserver, "cm", [])
    apiserver.faults.fail_next(1, status=409, verb="patch")
    assert await finalize(client, CONFIG_MAPS, made, OURS, apply=runner.apply,
                          cleanup=runner.cleanup) is FinalizeAction.FINALIZER_ADDED
    assert client.calls == [("PATCH", 409), ("GET", 200), ("PATCH", 200)]

    await start_deletion(apiserver, "cm")
    deleting = await read(apiserver, "cm")
    assert deleting is not None
    runner.done = True
    apiserver.faults.fail_next(1, status=409, verb="patch")
    assert await finalize(client, CONFIG_MAPS, deleting, OURS, apply=runner.apply,
                          cleanup=runner.cleanup) == "released"
    assert client.calls[3:] == [("PATCH", 409), ("GET", 200), ("PATCH", 200)]
    assert await read(apiserver, "cm") is None


async def test_conflicts_that_persist_are_raised_after_five_writes(
        apiserver: Cluster, client: RawRequestClient) -> None:
    made = await create(apiserver, "cm", [])
    apiserver.faults.fail_next(5, status=409, verb="patch")
    with pytest.raises(APIStatusError) as raised:
        await add_finalizer(client, CONFIG_MAPS, made, OURS)
    assert raised.value.status == 409
    assert client.verbs() == ["PATCH", "GET"] * 4 + ["PATCH"]
    assert finalizers_of(await read(apiserver, "cm")) == []
