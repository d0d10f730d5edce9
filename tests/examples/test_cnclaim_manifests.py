"""The CNClaim example's manifests: CRDs, least-privilege RBAC, the Deployment.

No cluster was at hand to check the RBAC against a real authorizer, so the
test records every request the operator sends during a whole scenario
(leader election on) and checks each against the rules of rbac.yaml.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import yaml

from examples.cnclaim import OperatorOptions, build_operator
from examples.cnclaim.operator import MANIFESTS, load_crds
from examples.cnclaim.run import play_with_operator
from examples.cnclaim.scenario import Progress
from reconcilekit import Client, RequestRecord
from reconcilekit.testing import Cluster, NodeSimulator

from cnclaim_env import bound_to, cnclaim_client, eventually, idle_pod, new_claim, running_operator


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with cnclaim_client(apiserver) as c:
        yield c


def _docs(name: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]


def _allowed(rules: list[Mapping[str, Any]], verb: str, resource: str) -> bool:
    plural, _, rest = resource.partition("/")  # "pods/status" -> pods, status
    name, _, group = plural.partition(".")
    wanted = f"{name}/{rest}" if rest else name
    return any(group in rule["apiGroups"] and wanted in rule["resources"]
               and verb in rule["verbs"] for rule in rules)


def test_the_crds_declare_three_kinds_with_schemas_and_status() -> None:
    crds = {c["spec"]["names"]["kind"]: c for c in load_crds()}
    assert sorted(crds) == ["CNClaim", "CNClaimSet", "CNPool"]
    for crd in crds.values():
        assert crd["spec"]["group"] == "core.matrixorigin.io"
        (version,) = crd["spec"]["versions"]
        assert version["name"] == "v1alpha1" and "status" in version["subresources"]
        schema = version["schema"]["openAPIV3Schema"]
        assert {"spec", "status"} <= set(schema["properties"])


def test_the_deployment_probes_health_and_elects_a_leader_as_its_service_account() -> None:
    (deployment,) = _docs("deployment.yaml")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--leader-elect" in container["args"] and "--in-cluster" in container["args"]
    rbac = {(d["kind"], d["metadata"]["name"]): d for d in _docs("rbac.yaml")}
    account = rbac[("ServiceAccount", pod["serviceAccountName"])]
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        subjects = [d["subjects"] for (k, _), d in rbac.items() if k == binding]
        assert [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                 "namespace": deployment["metadata"]["namespace"]}] in subjects


async def test_rbac_grants_every_request_the_operator_makes(apiserver: Cluster,
                                                            client: Client) -> None:
    rbac = _docs("rbac.yaml")
    rules = [r for d in rbac if d["kind"] in ("ClusterRole", "Role") for r in d["rules"]]
    sent: set[tuple[str, str]] = set()

    def record(request: RequestRecord) -> None:
        sent.add((request.verb, request.resource))

    async with Client(apiserver.configuration) as operator_client:
        operator_client.add_request_observer(record)
        manager = build_operator(operator_client, OperatorOptions(
            namespace=apiserver.namespace, http_addr=None, leader_election=True))
        async with NodeSimulator(client, nodes=3, namespace=apiserver.namespace):
            await play_with_operator(client, manager, apiserver.namespace, step_timeout=30,
                                     progress=Progress(lambda _: None))
        await manager.events.flush()
    denied = sorted(r for r in sent if not _allowed(rules, *r))
    assert not denied, f"requests rbac.yaml does not allow: {denied}"
    for needed in (("update", "pods"), ("create", "events"),
                   ("update", "leases.coordination.k8s.io"),
                   ("patch", "cnclaims.core.matrixorigin.io/status")):
        assert needed in sent, needed  # the recording saw the operator at work


@pytest.mark.in_process_only
async def test_a_forbidden_write_is_logged_with_its_key_and_retried(
        apiserver: Cluster, client: Client, caplog: pytest.LogCaptureFixture) -> None:
    ns = apiserver.namespace
    await idle_pod(apiserver, client, "pool-f")
    apiserver.faults.fail_next(2, status=403, verb="update", resource="pods")
    await new_claim(apiserver, client, "c", "pool-f")
    with caplog.at_level(logging.ERROR, logger="reconcilekit.controller"):
        async with running_operator(apiserver, client):
            await eventually(lambda: bound_to(client, ns, "c"), what="c Bound after 403s")
            await anyio.lowlevel.checkpoint()
    failures = [r for r in caplog.records if getattr(r, "key", "") == f"{ns}/c"
                and r.exc_info and "Forbidden" in str(r.exc_info[1])]
    assert failures, [r.getMessage() for r in caplog.records]
    assert all(getattr(r, "controller", "") == "cnclaim" for r in failures)
