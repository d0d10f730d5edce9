"""The grants a server-side apply and owner references need, as the generator writes them.

A reconciler that applies Secrets and adopts them under a ConfigMap declares
``applies(SECRETS)`` (create and patch), ``changes_owner_references(SECRETS)``
(delete) and ``blocks_owner_deletion(CONFIG_MAPS)`` (update of
``configmaps/finalizers``). The Role generated from the three declarations,
and from each of them left out (the apply declared as a bare ``patch``), is
bound to a ServiceAccount, and requests are sent as it (impersonated) on both
backends (the suite's kube-apiserver and the in-process server run
OwnerReferencesPermissionEnforcement):

1. an apply that creates a Secret: ``create`` as well as ``patch``;
2. an apply that adds a blocking owner reference to that Secret: ``delete`` of
   the Secret (the references of an object that exists change) and ``update``
   of the owner's finalizers (``blockOwnerDeletion: true``);
3. a create with a blocking owner reference: the owner's finalizers, not
   ``delete`` (a creator may set owner references).
"""

from __future__ import annotations

from typing import Any, Final

import pytest
from kubernetes_asyncio.client import Configuration

from reconcilekit import Client, Manager, Reconciler, Request, Result
from reconcilekit._manifests.roles import rules
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.rbac import (
    Permission,
    applies,
    blocks_owner_deletion,
    changes_owner_references,
    required_permissions,
)
from reconcilekit.testing import Cluster

MANAGER: Final = "rules-proof"
APPLIES: Final = applies(SECRETS)
ADOPTS: Final = changes_owner_references(SECRETS)
BLOCKS: Final = blocks_owner_deletion(CONFIG_MAPS)


class AdoptingReconciler(Reconciler):
    def __init__(self, permissions: tuple[Permission, ...]) -> None:
        self.permissions = permissions

    async def reconcile(self, request: Request) -> Result:
        return Result.done()


async def _generated_rules(namespace: str, *declared: Permission) -> list[dict[str, Any]]:
    """The rules the generator writes for a manager whose reconciler declares ``declared``."""
    client = Client(Configuration(host="https://unconnected.invalid"))
    try:
        manager = Manager(client, name=MANAGER, namespace=namespace, http_addr=None)
        (manager.controller().for_(CONFIG_MAPS).owns(SECRETS)
            .complete(AdoptingReconciler(declared)))
        return rules(required_permissions(manager))
    finally:
        await client.close()


def test_the_declarations_are_the_grants_kube_apiserver_asks_for() -> None:
    assert applies(SECRETS) == Permission(SECRETS, "create", "patch")
    assert applies(SECRETS, subresource="status") == Permission(SECRETS, "patch",
                                                               subresource="status")
    assert changes_owner_references(SECRETS) == Permission(SECRETS, "delete")
    assert blocks_owner_deletion(CONFIG_MAPS) == Permission(CONFIG_MAPS, "update",
                                                            subresource="finalizers")


class Account:
    """A ServiceAccount of the test's namespace bound to a Role; requests as it."""

    def __init__(self, apiserver: Cluster, name: str) -> None:
        self.apiserver, self.ns, self.name = apiserver, apiserver.namespace, name
        self.user = f"system:serviceaccount:{self.ns}:{name}"

    async def bind(self, rules_: list[dict[str, Any]]) -> None:
        rbac = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{self.ns}"
        for path, body in (
                (f"/api/v1/namespaces/{self.ns}/serviceaccounts",
                 {"apiVersion": "v1", "kind": "ServiceAccount",
                  "metadata": {"name": self.name}}),
                (f"{rbac}/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                   "metadata": {"name": self.name}, "rules": rules_}),
                (f"{rbac}/rolebindings", {
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": self.name},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                "name": self.name},
                    "subjects": [{"kind": "ServiceAccount", "name": self.name,
                                  "namespace": self.ns}]})):
            made = await self.apiserver.request("POST", path, json=body)
            assert made.status == 201, made
        await self.apiserver.until_allowed(self.user, "patch", "secrets", namespace=self.ns,
                                           groups=["system:serviceaccounts"])

    async def send(self, method: str, path: str, body: dict[str, Any],
                   content_type: str = "application/json") -> tuple[int, str]:
        answer = await self.apiserver.request(
            method, path, json=body, content_type=content_type,
            params={"fieldManager": MANAGER} if method == "PATCH" else None,
            headers={"Impersonate-User": self.user,
                     "Impersonate-Group": "system:serviceaccounts"})
        message = answer.body.get("message", "") if isinstance(answer.body, dict) else ""
        return answer.status, message


def _secret(name: str, owner: dict[str, Any] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if owner is not None:
        meta["ownerReferences"] = [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {}}


APPLY: Final = "application/apply-patch+yaml"


ENFORCED: Final = pytest.mark.admission_plugin("OwnerReferencesPermissionEnforcement")


@pytest.mark.parametrize(("declared", "refused"), [
    pytest.param((APPLIES, ADOPTS, BLOCKS), (), id="all-three"),
    pytest.param((Permission(SECRETS, "patch"), ADOPTS, BLOCKS),
                 ("apply-create", "create-owned"), id="apply-as-patch"),
    pytest.param((APPLIES, BLOCKS), ("apply-adopt",), id="no-adoption", marks=ENFORCED),
    pytest.param((APPLIES, ADOPTS), ("apply-adopt", "create-owned"), id="no-blocking",
                 marks=ENFORCED),
])
async def test_apply_and_owner_references_need_exactly_the_declared_grants(
        apiserver: Cluster, declared: tuple[Permission, ...], refused: tuple[str, ...]) -> None:
    ns = apiserver.namespace
    owner = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/configmaps",
                                    json={"apiVersion": "v1", "kind": "ConfigMap",
                                          "metadata": {"name": "owner"}})
    assert owner.status == 201, owner
    account = Account(apiserver, "proof")
    await account.bind(await _generated_rules(ns, *declared))
    secrets = f"/api/v1/namespaces/{ns}/secrets"
    steps = {
        "apply-create": ("PATCH", f"{secrets}/child", _secret("child"), APPLY),
        "apply-adopt": ("PATCH", f"{secrets}/child", _secret("child", owner.body), APPLY),
        "create-owned": ("POST", secrets, _secret("born-owned", owner.body),
                         "application/json"),
    }
    for step, (method, path, body, content_type) in steps.items():
        if step == "apply-adopt" and "apply-create" in refused:  # nothing to adopt: make it
            made = await apiserver.request("POST", secrets, json=_secret("child"))
            assert made.status == 201, made
        status, message = await account.send(method, path, body, content_type)
        if step not in refused:
            assert status in (200, 201), (step, status, message)
            continue
        assert status == 403, (step, status, message)
        if APPLIES not in declared:  # kube-apiserver gives an apply's create no reason
            assert message == 'secrets "child" is forbidden: ' if step == "apply-create" \
                else 'cannot create resource "secrets"' in message, message
        elif ADOPTS not in declared:
            assert "cannot set an ownerRef on a resource you can't delete" in message
        else:
            assert "cannot set blockOwnerDeletion if an ownerReference refers to a resource " \
                   "you can't set finalizers on" in message
