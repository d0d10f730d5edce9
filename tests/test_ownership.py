"""Owner references: one controller, no cross-namespace owner, and the garbage collector."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconcilekit import Client, NotFound
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.ownership import (
    AlreadyOwnedError,
    controller_reference,
    has_owner_reference,
    remove_owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from reconcilekit.testing import Cluster, eventually


def owner(name: str, ns: str | None = "ns", kind: str = "CNPool",
          api_version: str = "core.matrixorigin.io/v1alpha1") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def pod(ns: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p"}
    if ns:
        meta["namespace"] = ns
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def test_one_controller_and_no_duplicate_references() -> None:
    obj = pod()
    set_controller_reference(owner("a"), obj)
    set_controller_reference(owner("a"), obj)  # again: updated in place, not added
    assert obj["metadata"]["ownerReferences"] == [{
        "apiVersion": "core.matrixorigin.io/v1alpha1", "kind": "CNPool", "name": "a",
        "uid": "uid-a", "controller": True, "blockOwnerDeletion": True}]
    with pytest.raises(AlreadyOwnedError, match="already controlled by CNPool 'a'"):
        set_controller_reference(owner("b"), obj)
    set_owner_reference(owner("b"), obj)  # a plain owner beside the controller is fine
    set_owner_reference(owner("a"), obj)  # keeps a's controller flag
    assert [(r["name"], r.get("controller")) for r in obj["metadata"]["ownerReferences"]] == [
        ("a", True), ("b", None)]
    assert controller_reference(obj) == obj["metadata"]["ownerReferences"][0]
    assert has_owner_reference(owner("b"), obj)
    assert remove_owner_reference(owner("a"), obj) and not remove_owner_reference(owner("a"),
                                                                                  obj)
    assert controller_reference(obj) is None
    assert remove_owner_reference(owner("b"), obj)
    assert "ownerReferences" not in obj["metadata"]
    # The same name and kind in another API version is the same owner.
    moved = owner("c", api_version="core.matrixorigin.io/v1")
    set_controller_reference(owner("c"), obj)
    set_controller_reference(moved, obj)
    assert [r["apiVersion"] for r in obj["metadata"]["ownerReferences"]] == [
        "core.matrixorigin.io/v1"]


def test_owners_that_cannot_own_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="cross-namespace owner references are not allowed"):
        set_controller_reference(owner("a", ns="other"), pod())
    with pytest.raises(ValueError, match="cluster-scoped Node n cannot have a namespaced"):
        set_controller_reference(owner("a"), {"kind": "Node", "metadata": {"name": "n"}})
    with pytest.raises(ValueError, match=r"an owner needs metadata\.uid"):
        set_owner_reference({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "x", "namespace": "ns"}}, pod())
    cluster_owner = owner("n", ns=None, kind="Node", api_version="v1")
    obj = pod()
    set_controller_reference(cluster_owner, obj)  # a cluster-scoped owner may own anything
    assert obj["metadata"]["ownerReferences"][0]["kind"] == "Node"


async def test_the_garbage_collector_follows_the_reference(apiserver: Cluster,
                                                           client: Client) -> None:
    """kube-controller-manager (in-process: the server's collector) deletes the dependent
    once its controller owner is deleted."""
    ns = apiserver.namespace
    cm = await client.create(CONFIG_MAPS, {"metadata": {"name": "owner"}}, ns)
    secret: dict[str, Any] = {"apiVersion": "v1", "kind": "Secret",
                              "metadata": {"name": "dependent", "namespace": ns}}
    set_controller_reference(cm, copy.deepcopy(secret))  # leaves the owner alone
    set_controller_reference(cm, secret)
    made = await client.create(SECRETS, secret, ns)
    assert controller_reference(made) == secret["metadata"]["ownerReferences"][0]
    await client.delete(CONFIG_MAPS, "owner", ns)

    async def gone() -> bool:
        try:
            await client.get(SECRETS, "dependent", ns)
        except NotFound:
            return True
        return False

    await eventually(gone, within=60, what="the dependent Secret garbage-collected")
