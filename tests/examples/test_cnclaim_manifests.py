"""The CNClaim example's manifests: CRDs, least-privilege RBAC, the Deployment.

The files are generated from the operator's code (test_cnclaim_rbac.py
checks they are up to date, and proves the rules minimal;
test_manifests_dry_run.py has the API server check them). In-process a test
records every request the operator sends during a whole scenario (leader
election on) and checks each against the rules of rbac.yaml; on both
backends the operator runs as its own ServiceAccount under those rules.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import yaml

from examples.cnclaim import OperatorOptions, build_operator
from examples.cnclaim.admission import add_claim_webhook
from examples.cnclaim.demo.cli import parse_args
from examples.cnclaim.demo.run import play_with_operator
from examples.cnclaim.demo.scenario import Progress
from examples.cnclaim.operator import MANIFESTS, load_crds
from examples.cnclaim.resources import CNPOOLS
from reconcilekit import Client, RequestRecord
from reconcilekit.testing import Cluster, NodeSimulator, OperatorProcess
from reconcilekit.testing._control_plane import assets_from_env
from reconcilekit.webhook import ServiceReference, WebhookServer

from cnclaim_env import (
    bound_to,
    eventually,
    idle_pod,
    new_claim,
    running_operator,
    service_account_kubeconfig,
)

ROOT = Path(__file__).resolve().parents[2]


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


def _deployment() -> dict[str, Any]:
    [deployment] = [d for d in _docs("deployment.yaml") if d["kind"] == "Deployment"]
    return deployment


def test_the_deployment_runs_the_operators_command_line_as_its_service_account() -> None:
    """deployment.yaml (generated) runs ``--in-cluster --leader-elect``: the command line
    that builds the manager the manifests were generated from, its endpoints on the
    probed port, its Lease in the Pod's namespace ($POD_NAMESPACE), more than its grace
    period to shut down."""
    deployment = _deployment()
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = parse_args(container["args"])
    assert args.in_cluster and args.leader_elect and not args.no_webhooks
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"http": 8080, "webhook": int(args.webhook_addr.rpartition(":")[2])}
    assert args.metrics_addr is None  # ":8080" on a cluster
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.namespace"}}} in container["env"]
    assert pod["terminationGracePeriodSeconds"] > OperatorOptions().graceful_shutdown_timeout
    assert deployment["spec"]["replicas"] == 2  # one reconciling, one warm standby
    rbac = {(d["kind"], d["metadata"]["name"]): d for d in _docs("rbac.yaml")}
    account = rbac[("ServiceAccount", pod["serviceAccountName"])]
    [leases] = [d for (k, _), d in rbac.items() if k == "Role"]
    assert leases["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    for binding in ("ClusterRoleBinding", "RoleBinding"):
        subjects = [d["subjects"] for (k, _), d in rbac.items() if k == binding]
        assert [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                 "namespace": deployment["metadata"]["namespace"]}] in subjects


def test_the_webhook_manifests_match_what_the_operator_serves() -> None:
    """webhook.yaml (generated) names the path, rules and policies of the operator's
    CNClaim validator, through the Service to the port the Deployment's operator serves
    it on, with cert-manager's certificate mounted where the operator reads it."""
    docs = {d["kind"]: d for d in _docs("webhook.yaml")}
    deployment = _deployment()
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    server = WebhookServer(port=0, service=ServiceReference("cnclaim-system",
                                                            "cnclaim-operator-webhook"))
    account = (f"system:serviceaccount:{deployment['metadata']['namespace']}:"
               f"{pod['serviceAccountName']}")
    add_claim_webhook(server, operator_users={account})
    [(_, served)] = server.configurations()
    [wanted] = served["webhooks"]
    [declared] = docs["ValidatingWebhookConfiguration"]["webhooks"]
    wanted["clientConfig"].pop("caBundle")  # cert-manager injects it on the cluster
    assert declared == wanted
    service = docs["Service"]
    assert service["spec"]["selector"] == deployment["spec"]["selector"]["matchLabels"]
    [port] = service["spec"]["ports"]
    in_cluster = parse_args(container["args"])
    webhook_port = int(in_cluster.webhook_addr.rpartition(":")[2])
    assert port["targetPort"] == webhook_port  # where the in-cluster operator serves it
    assert webhook_port in {p["containerPort"] for p in container["ports"]}
    certificate = docs["Certificate"]["spec"]
    assert set(certificate["dnsNames"]) == set(server.service.hosts)  # type: ignore[union-attr]
    [volume] = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == certificate["secretName"]
    [mount] = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["mountPath"] == in_cluster.webhook_cert_dir
    annotation = docs["ValidatingWebhookConfiguration"]["metadata"]["annotations"]
    assert annotation["cert-manager.io/inject-ca-from"] == (
        f"{docs['Certificate']['metadata']['namespace']}/"
        f"{docs['Certificate']['metadata']['name']}")


async def test_the_webhook_configuration_is_valid_for_the_api_server(
        apiserver: Cluster) -> None:
    config = {d["kind"]: d for d in _docs("webhook.yaml")}["ValidatingWebhookConfiguration"]
    answer = await apiserver.request(
        "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
                "?dryRun=All", json=config)
    assert answer.status == 201, answer


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
    with caplog.at_level(logging.WARNING, logger="reconcilekit.controller"):
        async with running_operator(apiserver, client):
            await eventually(lambda: bound_to(client, ns, "c"), what="c Bound after 403s")
            await anyio.lowlevel.checkpoint()
    failures = [r for r in caplog.records if getattr(r, "key", "") == f"{ns}/c"]
    # An API error is one line naming the error and the retry, not a traceback.
    assert failures, [r.getMessage() for r in caplog.records]
    assert all(r.levelno == logging.WARNING and not r.exc_info for r in failures)
    assert "(attempt 1): 403 Forbidden" in failures[0].getMessage()
    assert "retrying in" in failures[0].getMessage()
    assert all(getattr(r, "controller", "") == "cnclaim" for r in failures)


async def _apply_manifests(apiserver: Cluster, client: Client, *names: str) -> None:
    """``kubectl apply`` them when kubectl is at hand (the assets hold one), else create them."""
    assets = assets_from_env()
    kubectl = assets / "kubectl" if assets is not None else None
    if kubectl is not None and os.access(kubectl, os.X_OK):
        assert apiserver.kubeconfig_path is not None
        files = [arg for name in names for arg in ("-f", str(MANIFESTS / name))]
        done = await anyio.run_process([str(kubectl), "--kubeconfig",
                                        str(apiserver.kubeconfig_path), "apply", *files],
                                       check=False)
        assert done.returncode == 0, done.stderr.decode()
        return
    for name in names:
        for doc in _docs(name):
            group, _, version = doc["apiVersion"].rpartition("/")
            plural = doc["kind"].lower() + ("es" if doc["kind"].endswith("s") else "s")
            ns = doc["metadata"].get("namespace")
            base = f"/apis/{group}/{version}" if group else f"/api/{version}"
            path = f"{base}/namespaces/{ns}/{plural}" if ns else f"{base}/{plural}"
            made = await apiserver.request("POST", path, json=doc)
            assert made.status in (201, 409), made


async def _service_account_kubeconfig(apiserver: Cluster, path: Path) -> Path:
    """A kubeconfig for the operator's own ServiceAccount, as in its Pod."""
    return await service_account_kubeconfig(apiserver, "cnclaim-system", "cnclaim-operator",
                                            path)


async def test_the_operator_runs_under_its_manifests_rbac(
        apiserver: Cluster, client: Client, tmp_path: Path) -> None:
    """The manifests apply with kubectl, and the operator, authenticated as its own
    ServiceAccount (no right to create CRDs), binds a claim with leader election on."""
    try:
        await _apply_manifests(apiserver, client, "crds.yaml", "rbac.yaml")
        await _run_the_operator_as_its_account(apiserver, client, tmp_path)
    finally:
        await _delete_cluster_scoped(apiserver, "rbac.yaml")


async def _delete_cluster_scoped(apiserver: Cluster, name: str) -> None:
    """Delete what the manifests made outside the test's namespace (their ``cnclaim-system``
    namespace and what is in it, the ClusterRole and its binding), waiting until it is gone
    so that the next run can apply them again."""
    paths = {"Namespace": "/api/v1/namespaces",
             "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
             "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"}
    made = [f"{paths[d['kind']]}/{d['metadata']['name']}" for d in _docs(name)
            if d["kind"] in paths]
    assert len(made) == 3, made
    for path in made:
        await apiserver.request("DELETE", path)

    async def gone() -> bool:
        return all([(await apiserver.request("GET", p)).status == 404 for p in made])

    await eventually(gone, within=60, what=f"what {name} made outside the test's namespace gone")


async def _run_the_operator_as_its_account(apiserver: Cluster, client: Client,
                                           tmp_path: Path) -> None:
    ns = apiserver.namespace
    kubeconfig = await _service_account_kubeconfig(apiserver, tmp_path / "kubeconfig")
    # each kind of role reaches RBAC through an informer of its own: one grant of each
    for namespace, verb, group, resource in (
            (ns, "list", CNPOOLS.group, "cnclaims"),
            ("cnclaim-system", "create", "coordination.k8s.io", "leases")):
        await apiserver.until_allowed(
            "system:serviceaccount:cnclaim-system:cnclaim-operator", verb, resource,
            namespace=namespace, group=group, groups=["system:serviceaccounts"])
    async with OperatorProcess(
            sys.executable, "-m", "examples.cnclaim", "--kubeconfig", str(kubeconfig),
            "--namespace", ns, "--leader-elect", "--leader-elect-namespace", "cnclaim-system",
            "--metrics-addr", "127.0.0.1:0", "--no-webhooks", cwd=ROOT,
            name="the operator") as proc:
        async with NodeSimulator(client, nodes=2, namespace=ns):
            await client.create(CNPOOLS, {
                "apiVersion": CNPOOLS.api_version, "kind": CNPOOLS.kind,
                "metadata": {"name": "rbac"}, "spec": {"replicas": 2, "podTemplate": {
                    "spec": {"containers": [{"name": "cn", "image": "pause"}]}}}}, ns)
            await new_claim(apiserver, client, "c", "rbac")
            await eventually(lambda: bound_to(client, ns, "c"), within=60,
                             what="claim c Bound by the operator as its ServiceAccount")
        code = await proc.stop(grace=60)
    log = "\n".join(proc.lines)
    assert code == 0, log
    assert "Forbidden" not in log and "Traceback" not in log, log
