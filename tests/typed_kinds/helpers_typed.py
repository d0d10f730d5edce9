"""Type checking of the helpers on typed kinds: checked by ``test_typed_helpers.py``
with ``mypy --strict``. A line whose comment is ``E:`` and a text must get an error
containing the text; every other line must get none (no ``cast``, no ``type: ignore``)."""

from __future__ import annotations

from typing import Any

from reconcilekit import (
    Cache,
    Client,
    ControllerBuilder,
    Request,
    all_of,
    generation_changed,
    predicate,
)
from reconcilekit.conditions import (
    find_status_condition,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from reconcilekit.finalizers import (
    CleanupDone,
    CleanupResult,
    add_finalizer,
    delete_then_release,
    finalize,
    finalizer_ops,
    remove_finalizer,
)
from reconcilekit.kinds import CONFIG_MAPS, DEPLOYMENTS, Condition, ConfigMap, Deployment
from reconcilekit.ownership import (
    controller_reference,
    has_owner_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from reconcilekit.upsert import create_or_patch, create_or_update


async def reads(client: Client, cache: Cache) -> None:
    deployment: Deployment = await cache.get(DEPLOYMENTS, "web", "ns")
    listed: list[Deployment] = await cache.list(DEPLOYMENTS, "ns")
    looked: list[Deployment] = cache.lookup(DEPLOYMENTS, "ns")
    fresh: Deployment = await client.get(DEPLOYMENTS, "web", "ns")
    status: Deployment = await client.get_status(DEPLOYMENTS, "web", "ns")
    replicas: int = (await client.get_scale(DEPLOYMENTS, "web", "ns"))["spec"]["replicas"]
    page: list[Deployment] = (await client.list(DEPLOYMENTS, "ns"))["items"]
    every: list[Deployment] = (await client.list_all(DEPLOYMENTS))["items"]
    async for one in client.iter_list(DEPLOYMENTS, "ns"):
        one["spec"]["replicaz"]  # E: "replicaz"
    del page, every
    deployment["spec"]["replicaz"]  # E: "replicaz"
    wrong: ConfigMap = await cache.get(DEPLOYMENTS, "web", "ns")  # E: Incompatible types
    del listed, looked, fresh, status, replicas, wrong


async def maybe(client: Client) -> ConfigMap | None:  # a wider expected type: still typed
    return await client.get(CONFIG_MAPS, "c", "ns")


async def another_kind(client: Client) -> ConfigMap | None:
    return await client.get(DEPLOYMENTS, "web", "ns")  # E: Incompatible return value


async def writes(client: Client, deployment: Deployment) -> None:
    created: Deployment = await client.create(DEPLOYMENTS, deployment)
    updated: Deployment = await client.update(DEPLOYMENTS, deployment)
    status: Deployment = await client.update_status(DEPLOYMENTS, deployment)
    patched: Deployment = await client.patch(DEPLOYMENTS, "web", {"spec": {}}, "ns")
    applied: Deployment = await client.apply(DEPLOYMENTS, deployment, field_manager="me")
    again: Deployment = await client.patch_status(DEPLOYMENTS, "web", {}, "ns")
    del created, updated, status, patched, applied, again


async def upserts(client: Client, owner: Deployment) -> None:
    def config(obj: ConfigMap) -> None:
        set_controller_reference(owner, obj)
        obj["data"] = {"key": "value"}

    def plain(obj: dict[str, Any]) -> None:
        obj["data"] = {}

    def wrong(obj: Deployment) -> None:
        del obj

    _, made = await create_or_patch(client, CONFIG_MAPS, "c", "ns", config)
    data: dict[str, str] = made.get("data", {})
    _, still = await create_or_update(client, CONFIG_MAPS, "c", "ns", plain)
    untyped: dict[str, Any] = still
    await create_or_patch(client, CONFIG_MAPS, "c", "ns", wrong)  # E: incompatible type
    del data, untyped


def ownership(owner: Deployment, child: ConfigMap) -> None:
    set_controller_reference(owner, child)
    set_owner_reference(owner, child)
    removed: bool = remove_owner_reference(owner, child)
    named: bool = has_owner_reference(owner, child)
    ref = controller_reference(child)
    del removed, named, ref


def conditions(deployment: Deployment, custom: list[Condition]) -> None:
    status = deployment.setdefault("status", {})
    typed = status.setdefault("conditions", [])
    set_status_condition(typed, {"type": "Ready", "status": "True", "reason": "Up"})
    found = find_status_condition(typed, "Ready")
    if found is not None:
        reason: str = found["reason"]
        found["reasonn"]  # E: "reasonn"
        del reason
    remove_status_condition(typed, "Ready")
    set_status_condition(custom, {"type": "Ready", "status": "True", "reason": "Up"})
    mine: Condition | None = find_status_condition(custom, "Ready")
    plain: list[dict[str, Any]] = []
    set_status_condition(plain, {"type": "Ready", "status": "True", "reason": "Up"})
    truth: bool = is_status_condition_true(custom, "Ready") or is_status_condition_true(
        typed, "Ready")
    del mine, truth


async def finalizers(client: Client, deployment: Deployment) -> None:
    async def apply(obj: Deployment) -> int:
        return obj["spec"].get("replicas", 0)

    async def cleanup(obj: Deployment) -> CleanupResult[int]:
        return CleanupDone(len(obj["metadata"].get("finalizers", [])))

    async def wrong(obj: ConfigMap) -> int:
        return len(obj)

    outcome = await finalize(client, DEPLOYMENTS, deployment, "f", apply=apply,
                             cleanup=cleanup)
    await add_finalizer(client, DEPLOYMENTS, deployment, "f")
    left: Deployment | None = await remove_finalizer(client, DEPLOYMENTS, deployment, "f")
    gone: Deployment | None = await delete_then_release(client, DEPLOYMENTS, deployment, "f")
    ops = finalizer_ops(deployment, "f")
    await finalize(client, DEPLOYMENTS, deployment, "f", apply=wrong,  # E: incompatible type
                   cleanup=cleanup)
    del outcome, left, gone, ops


def builder(cache: Cache, manager_builder: ControllerBuilder) -> None:
    def scaled(old: Deployment, new: Deployment) -> bool:
        return old["spec"].get("replicas") != new["spec"].get("replicas")

    def by_owner(obj: ConfigMap) -> list[Request]:
        return [Request(obj["metadata"]["namespace"], obj["metadata"]["name"])]

    b: ControllerBuilder = manager_builder
    b.for_(DEPLOYMENTS, predicate(update=scaled), generation_changed())
    b.owns(CONFIG_MAPS, all_of(generation_changed(), predicate(create=lambda c: True)))
    b.watches(CONFIG_MAPS, by_owner, generation_changed())
    b.watches(DEPLOYMENTS, by_owner)  # E: incompatible type
    b.owns(CONFIG_MAPS, predicate(update=scaled))  # E: Cannot infer
    del cache
