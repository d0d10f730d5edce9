"""The KVStore operator (``kvstore_operator.py``) on whichever backend the suite runs on,
with no branch on it: its generated CRD and RBAC, its typing, and the operator at work
as its ServiceAccount, bound to exactly the generated rules: a StatefulSet, a headless
Service and a PodDisruptionBudget per KVStore, what the cluster's controllers and a
simulated kubelet make of them, scaling, and the claims deleted when the KVStore goes."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mypy import api

from reconcilekit import APIError, Client, NotFound, RequestRecord, Resource
from reconcilekit.__main__ import main
from reconcilekit.conditions import find_status_condition
from reconcilekit.kinds import (
    ENDPOINTS,
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    SELF_SUBJECT_ACCESS_REVIEWS,
    SERVICES,
    STATEFUL_SETS,
)
from reconcilekit.kinds.policy_v1 import PodDisruptionBudgetStatus
from reconcilekit.testing import Cluster, NodeSimulator, eventually

from cnclaim_env import service_account_kubeconfig
from kvstore_operator import COMMAND, KVSTORES, KVSTORES_KIND, KVStore, KVStoreStatus, build

HERE = Path(__file__).parent
MANIFESTS = HERE / "kvstore_manifests"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing
RBAC = "/apis/rbac.authorization.k8s.io/v1"
UNCHECKED = re.compile(r"\bcast\(|#\s*type:\s*ignore")
Grant = tuple[str, str, str]  # (verb, API group, resource[/subresource])
# Reads made only on a retry: create_or_patch reads the children through the manager's
# cache (a GET when a create meets AlreadyExists, or the cache has not seen the object);
# finalize reads the KVStore again after a conflict
RETRY_READS = {("get", "", "services"), ("get", "apps", "statefulsets"),
               ("get", "policy", "poddisruptionbudgets"), ("get", KVSTORES.group, "kvstores")}


def _documents(name: str) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = [
        doc for doc in yaml.safe_load_all((MANIFESTS / name).read_text()) if doc]
    return documents


def _rules(kind: str) -> list[dict[str, Any]]:
    [rules] = [doc["rules"] for doc in _documents("rbac.yaml") if doc["kind"] == kind]
    return list(rules)


def _grants(rules: list[dict[str, Any]]) -> set[Grant]:
    return {(verb, group, resource) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"]}


def test_the_committed_manifests_are_what_the_generator_writes(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """COMMAND with ``--check`` finds every file up to date; the CRD is the kind's, with its
    CEL rules, defaults, scale subresource and printer columns."""
    monkeypatch.chdir(HERE)
    assert main([*shlex.split(COMMAND)[3:], "--check"]) == 0, capsys.readouterr().err
    [crd] = _documents("crds.yaml")
    assert crd == KVSTORES_KIND.crd()
    [version] = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert spec["replicas"]["default"] == 3 and spec["storage"]["default"] == "1Gi"
    assert [r["rule"] for r in spec["replicas"]["x-kubernetes-validations"]] == [
        "self % 2 == 1"]
    assert version["subresources"]["scale"]["labelSelectorPath"] == ".status.selector"
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Replicas", "Ready", "Status", "Age"]


def test_the_operator_and_its_tests_are_typed_with_no_cast(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``mypy --strict`` on what the author writes (the modules it imports from
    elsewhere are read, not judged), no ``cast`` and no ``type: ignore`` in it."""
    written = [HERE / "kvstore_operator.py", Path(__file__)]
    assert not [p.name for p in written if UNCHECKED.search(p.read_text())]
    monkeypatch.setenv("MYPYPATH", str(HERE.parents[1]))
    out, err, status = api.run(["--strict", "--no-incremental", "--follow-imports=silent",
                                "--cache-dir", os.devnull, *map(str, written)])
    assert status == 0, out + err


async def _get(client: Client, resource: Resource, name: str, ns: str) -> dict[str, Any] | None:
    try:
        return await client.get(resource, name, ns)
    except NotFound:
        return None


async def _claims_released(client: Client, ns: str) -> tuple[str, ...] | None:
    """Once the KVStore is gone: the claims left, each of them being deleted."""
    if await _get(client, KVSTORES, "kv", ns) is not None:
        return None
    claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
    assert all(c["metadata"].get("deletionTimestamp") for c in claims), claims
    return ("released", *(c["metadata"]["name"] for c in claims))


async def _as_the_operator(apiserver: Cluster, client: Client, tmp_path: Path) -> Path:
    """A ServiceAccount bound to the generated ClusterRole and leader election Role (in the
    test's namespace, where its Lease lives); its kubeconfig once the rules apply."""
    ns, name = apiserver.namespace, f"kvstore-operator-{apiserver.namespace}"
    await apiserver.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", json={
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "kvstore"}})
    subjects = [{"kind": "ServiceAccount", "name": "kvstore", "namespace": ns}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "name": name}
    for kind, base in (("ClusterRole", RBAC), ("Role", f"{RBAC}/namespaces/{ns}")):
        for made_kind, body in ((kind, {"rules": _rules(kind)}), (f"{kind}Binding", {
                "subjects": subjects, "roleRef": {**ref, "kind": kind}})):
            path = f"{base}/{made_kind.lower()}s"
            made = await apiserver.request("POST", path, json={
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": made_kind,
                "metadata": {"name": name}, **body})
            assert made.status == 201, made
            if kind == "ClusterRole":  # cluster-scoped: the session deletes it
                apiserver.delete_at_end(f"{path}/{name}")
    kubeconfig = await service_account_kubeconfig(apiserver, ns, "kvstore", tmp_path / "kv")
    async with await Client.from_kubeconfig(kubeconfig) as probe:
        async def allowed() -> bool:  # each kind of role reaches RBAC through its informer
            for verb, group, resource in (("list", KVSTORES.group, "kvstores"),
                                          ("create", "coordination.k8s.io", "leases")):
                review = await probe.create(SELF_SUBJECT_ACCESS_REVIEWS, {"spec": {
                    "resourceAttributes": {"namespace": ns, "verb": verb, "group": group,
                                           "resource": resource}}})
                if not review["status"].get("allowed"):
                    return False
            return True
        await eventually(allowed, within=SETTLE, what="the generated rules in force")
    return kubeconfig


async def test_a_kvstore_runs_its_replicas_keeps_a_quorum_and_goes_with_its_owner(
        apiserver: Cluster, tmp_path: Path) -> None:
    ns = apiserver.namespace
    await apiserver.install_crd(KVSTORES_KIND.crd())
    sent: dict[tuple[str, str], set[int | None]] = {}

    def record(attempt: RequestRecord) -> None:
        sent.setdefault((attempt.verb, attempt.resource), set()).add(attempt.status)

    async with Client(apiserver.configuration) as client, \
            NodeSimulator(client, nodes=3, namespace=ns):
        kubeconfig = await _as_the_operator(apiserver, client, tmp_path)
        with pytest.raises(APIError, match="must be odd: a quorum is a majority"):
            await client.create(KVSTORES, {
                "apiVersion": KVSTORES.api_version, "kind": "KVStore",
                "metadata": {"name": "even"}, "spec": {"image": "kv", "replicas": 2}}, ns)
        async with await Client.from_kubeconfig(kubeconfig) as operator, \
                anyio.create_task_group() as tg:
            operator.add_request_observer(record)
            manager = build(operator, namespace=ns)
            await tg.start(manager.run)
            await client.create(KVSTORES, {
                "apiVersion": KVSTORES.api_version, "kind": "KVStore",
                "metadata": {"name": "kv"}, "spec": {"image": "registry.k8s.io/pause:3.9"}}, ns)
            with pytest.raises(APIError, match="cannot change: each replica's claim"):
                await client.patch(KVSTORES, "kv", {"spec": {"storage": "2Gi"}}, ns)

            async def ready(replicas: int) -> KVStore | None:
                got = await client.get(KVSTORES, "kv", ns)
                status: KVStoreStatus = got.get("status") or {}
                condition = find_status_condition(status.get("conditions"), "Ready")
                return got if status.get("readyReplicas") == replicas and condition and (
                    condition["status"], condition["reason"]) == (
                    "True", "AllReplicasReady") else None
            await eventually(lambda: ready(3), within=SETTLE, what="three replicas ready")

            service = await client.get(SERVICES, "kv", ns)
            assert service["spec"]["clusterIP"] == "None"  # headless: a name per replica
            endpoints = await client.get(ENDPOINTS, "kv", ns)
            assert sorted(a["hostname"] for s in endpoints["subsets"]
                          for a in s["addresses"]) == ["kv-0", "kv-1", "kv-2"]
            claims = (await client.list(PERSISTENT_VOLUME_CLAIMS, ns))["items"]
            assert sorted(c["metadata"]["name"] for c in claims) == [
                "data-kv-0", "data-kv-1", "data-kv-2"]

            async def budget(allowed: int, healthy: int) -> PodDisruptionBudgetStatus | None:
                got = await client.get(POD_DISRUPTION_BUDGETS, "kv", ns)
                status = got.get("status")
                return status if status and (status.get("disruptionsAllowed"), status.get(
                    "currentHealthy"), status.get("observedGeneration")) == (
                    allowed, healthy, got["metadata"]["generation"]) else None
            status = await eventually(lambda: budget(1, 3), within=SETTLE,
                                      what="one disruption allowed")
            assert (status["desiredHealthy"], status["expectedPods"]) == (2, 3)

            # --8<-- [start:scale]
            scale = await client.get_scale(KVSTORES, "kv", ns)
            assert (scale["spec"].get("replicas"), scale["status"]["replicas"]) == (3, 3)
            assert scale["status"]["selector"] == (
                "app.kubernetes.io/instance=kv,app.kubernetes.io/name=kvstore")
            await client.patch_scale(KVSTORES, "kv", {"spec": {"replicas": 1}}, ns)
            await eventually(lambda: ready(1), within=SETTLE, what="scaled to one")
            # --8<-- [end:scale]
            await eventually(lambda: budget(0, 1), within=SETTLE, what="none allowed")
            assert (await client.get(STATEFUL_SETS, "kv", ns))["spec"]["replicas"] == 1

            await client.delete(KVSTORES, "kv", ns)
            _, *left = await eventually(lambda: _claims_released(client, ns), within=SETTLE,
                                        what="the KVStore's finalizer deleting its claims")
            assert set(left) <= {"data-kv-0", "data-kv-1", "data-kv-2"}
            manager.stop()

        async def collected() -> bool:
            return all([await _get(client, kind, "kv", ns) is None
                        for kind in (STATEFUL_SETS, SERVICES, POD_DISRUPTION_BUDGETS)])
        await eventually(collected, within=SETTLE, what="the children garbage-collected")

    # the generated rules are what the operator needs: no request refused, each grant used
    # (the finalizers one is asked at admission, of a create with blockOwnerDeletion) but
    # the RETRY_READS
    assert not [key for key, statuses in sent.items() if 403 in statuses], sent
    used = {key for key, statuses in sent.items() if statuses - {401, 403, None}}
    unused = [grant for grant in _grants(_rules("ClusterRole")) | _grants(_rules("Role"))
              if not grant[2].endswith("/finalizers") and grant not in RETRY_READS
              and _as_recorded(grant) not in used]
    assert not unused, f"generated grants no request used: {unused}; sent: {sorted(sent)}"


def _as_recorded(grant: Grant) -> tuple[str, str]:
    """A grant as RequestRecord names it: ``("patch", "kvstores.test.reconcilekit.dev/status")``."""
    verb, group, resource = grant
    plural, slash, sub = resource.partition("/")
    return verb, f"{plural}.{group}{slash}{sub}" if group else resource
