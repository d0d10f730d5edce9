"""``python -m reconcilekit manifests``: RBAC inferred and declared, webhooks, CRDs, errors.

The generator runs on a manager built with a client that never connects, so
these tests need no API server; the generated rules are proven on
kube-apiserver by tests/examples/test_cnclaim_rbac.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconcilekit import Client, LeaderElection, Manager, Reconciler, Request, Resource, Result
from reconcilekit.__main__ import generate_manifests, main
from reconcilekit._manifests.deploy_options import DeploymentOptions
from reconcilekit.rbac import RECORDS_EVENTS, InvalidPermission, Permission, blocks_owner_deletion
from reconcilekit.sharding import Sharding
from reconcilekit.webhook import ServiceReference, Verdict, WebhookServer

PODS = Resource("", "v1", "Pod", "pods")
NODES = Resource("", "v1", "Node", "nodes", namespaced=False)
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


class _Definition:
    """Stands for a kind defined in Python: what the generator asks of it is ``crd()``."""

    def crd(self) -> dict[str, Any]:
        return WIDGET_CRD


class DefinedResource(Resource):
    definition = _Definition()


WIDGETS = DefinedResource("example.com", "v1", "Widget", "widgets")


class WidgetReconciler(Reconciler):
    permissions = (
        Permission(PODS, "create", "delete"),
        blocks_owner_deletion(WIDGETS),
        Permission(WIDGETS, "patch", subresource="status"),
        RECORDS_EVENTS,
    )

    async def reconcile(self, request: Request) -> Result:
        return Result.done()


def widgets(client: Client, **options: Any) -> Manager:
    manager = Manager(client, name="widget-operator", http_addr=None, **options)
    (manager.controller().for_(WIDGETS).owns(PODS).watches(NODES, lambda _: [])
        .complete(WidgetReconciler()))
    return manager


def elected(client: Client) -> Manager:
    return widgets(client, coordination=LeaderElection(name="widgets", namespace="ops"))


def namespaced(client: Client) -> Manager:
    return widgets(client, namespace="team-a",
                   coordination=LeaderElection(name="widgets", namespace="ops"))


def sharded(client: Client) -> Manager:
    return widgets(client, coordination=Sharding(name="ring", namespace="ops"))


def _server(**options: Any) -> WebhookServer:
    server = WebhookServer(name="widget-operator", **options)

    @server.validator(WIDGETS)
    async def validate(_: Any) -> Verdict:
        return Verdict.allow()

    return server


def behind_a_service(client: Client) -> Manager:
    return widgets(client, coordination=LeaderElection(name="widgets", namespace="ops"),
                   webhook_server=_server(service=ServiceReference("ops", "widget-webhook")))


def installing(client: Client) -> Manager:
    return widgets(client, coordination=LeaderElection(name="widgets", namespace="ops"),
                   webhook_server=_server(service=ServiceReference("ops", "widget-webhook"),
                                          install_configurations=True,
                                          remove_configurations_on_exit=True))


def _docs(target: str, **options: Any) -> dict[str, list[dict[str, Any]]]:
    files = generate_manifests(f"{__name__}:{target}", command="test", **options)
    return {name: [d for d in yaml.safe_load_all(text) if d] for name, text in files.items()}


def _grants(docs: list[dict[str, Any]]) -> dict[tuple[str, str, str | None], set[str]]:
    """(kind, namespace, "group/resource[:names]") -> verbs."""
    out: dict[tuple[str, str, str | None], set[str]] = {}
    for doc in docs:
        if doc["kind"] not in ("ClusterRole", "Role"):
            continue
        for rule in doc["rules"]:
            names = ",".join(rule.get("resourceNames", ()))
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    key = (doc["kind"], doc["metadata"].get("namespace", ""),
                           f"{group}/{resource}" + (f":{names}" if names else ""))
                    out.setdefault(key, set()).update(rule["verbs"])
    return out


def test_the_cache_gets_list_and_watch_the_reconciler_what_it_declares() -> None:
    docs = _docs("elected")
    grants = _grants(docs["rbac.yaml"])
    cluster = {k[2]: v for k, v in grants.items() if k[0] == "ClusterRole"}
    assert cluster == {
        "example.com/widgets": {"list", "watch"},  # for_: the cache only, never a GET
        "/pods": {"list", "watch", "create", "delete"},  # owns() gives the cache's verbs
        "/nodes": {"list", "watch"},
        "example.com/widgets/finalizers": {"update"},
        "example.com/widgets/status": {"patch"},
        "/events": {"create", "patch"},
    }
    leases = {k[2]: v for k, v in grants.items() if k[0] == "Role"}
    assert leases == {"coordination.k8s.io/leases": {"create"},
                      "coordination.k8s.io/leases:widgets": {"get", "update"}}
    kinds = [(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace"))
             for d in docs["rbac.yaml"]]
    assert kinds == [
        ("Namespace", "ops", None), ("ServiceAccount", "widget-operator", "ops"),
        ("ClusterRole", "widget-operator", None),
        ("ClusterRoleBinding", "widget-operator", None),
        ("Role", "widget-operator-leader-election", "ops"),
        ("RoleBinding", "widget-operator-leader-election", "ops")]
    binding = docs["rbac.yaml"][3]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "widget-operator",
                                    "namespace": "ops"}]


def test_a_namespaced_manager_gets_roles_in_its_namespace() -> None:
    grants = _grants(_docs("namespaced")["rbac.yaml"])
    assert {k[:2] for k in grants} == {("ClusterRole", ""), ("Role", "team-a"), ("Role", "ops")}
    cluster = {k[2] for k in grants if k[0] == "ClusterRole"}
    assert cluster == {"/nodes"}  # cluster-scoped: always a ClusterRole
    team = {k[2]: v for k, v in grants.items() if k[1] == "team-a"}
    assert team["/pods"] == {"list", "watch", "create", "delete"}
    assert team["/events"] == {"create", "patch"}


def test_sharding_needs_every_lease_of_its_namespace() -> None:
    grants = _grants(_docs("sharded")["rbac.yaml"])
    leases = {k: v for k, v in grants.items() if "leases" in k[2]}
    assert leases == {("Role", "ops", "coordination.k8s.io/leases"):
                      {"get", "list", "create", "update"}}


def test_a_webhook_server_that_installs_its_configuration_may_write_it_by_name() -> None:
    docs = _docs("installing", options=DeploymentOptions(certificates="self-signed"))
    grants = _grants(docs["rbac.yaml"])
    hooks = {k[2]: v for k, v in grants.items() if "admissionregistration" in k[2]}
    assert hooks == {
        "admissionregistration.k8s.io/validatingwebhookconfigurations": {"create"},
        "admissionregistration.k8s.io/validatingwebhookconfigurations:widget-operator":
            {"get", "patch", "delete"}}
    [service] = docs["webhook.yaml"]  # the manager writes the configuration, with its CA
    assert service["kind"] == "Service"


def test_webhooks_behind_a_service_come_with_it_and_cert_managers_certificate() -> None:
    docs = {d["kind"]: d for d in _docs("behind_a_service")["webhook.yaml"]}
    assert sorted(docs) == ["Certificate", "Issuer", "Service",
                            "ValidatingWebhookConfiguration"]
    assert docs["Service"]["spec"]["ports"] == [{"name": "webhook", "port": 443,
                                                 "targetPort": 9443}]
    assert docs["Certificate"]["spec"]["dnsNames"] == ["widget-webhook.ops.svc",
                                                       "widget-webhook.ops.svc.cluster.local"]
    configuration = docs["ValidatingWebhookConfiguration"]
    assert configuration["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "ops/widget-webhook"}
    [hook] = configuration["webhooks"]
    assert hook["clientConfig"]["service"]["name"] == "widget-webhook"
    assert "caBundle" not in hook["clientConfig"]
    self_signed = DeploymentOptions(certificates="self-signed")
    assert not _grants(_docs("behind_a_service")["rbac.yaml"]).keys() & {
        k for k in _grants(_docs("installing", options=self_signed)["rbac.yaml"])
        if "admission" in k[2]}


def test_a_resource_with_a_definition_gets_its_crd_written() -> None:
    assert _docs("elected")["crds.yaml"] == [WIDGET_CRD]


def test_output_is_deterministic_and_names_its_command() -> None:
    first = generate_manifests(f"{__name__}:elected", command="make it")
    assert first == generate_manifests(f"{__name__}:elected", command="make it")
    assert first["rbac.yaml"].startswith("# Generated by: make it\n")


def test_check_fails_naming_the_command_when_the_files_are_stale(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = f"{__name__}:elected"
    assert main(["manifests", target, "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "crds.yaml", "deployment.yaml", "kustomization.yaml", "rbac.yaml"]
    assert main(["manifests", target, "--out", str(tmp_path), "--check"]) == 0
    for name in ("rbac.yaml", "deployment.yaml", "kustomization.yaml"):
        text = (tmp_path / name).read_text()
        (tmp_path / name).write_text(text + "# edited by hand\n")
        assert main(["manifests", target, "--out", str(tmp_path), "--check"]) == 1
        err = capsys.readouterr().err
        assert name in err and f"python -m reconcilekit manifests {target} --out" in err
        (tmp_path / name).write_text(text)


def returns_nothing(client: Client) -> None:
    return None


def raises(client: Client) -> Manager:
    raise RuntimeError("no cluster config")


async def is_async(client: Client) -> Manager:
    raise AssertionError("never awaited")


NOT_CALLABLE = 42


@pytest.mark.parametrize(("target", "message"), [
    ("no-colon", "is not MODULE:CALLABLE"),
    ("no_such_module_here:build", "cannot import no_such_module_here"),
    (f"{__name__}:missing", f"{__name__} has no missing"),
    (f"{__name__}:NOT_CALLABLE", "is a int, not a callable"),
    (f"{__name__}:returns_nothing", "returned NoneType, not a reconcilekit.Manager"),
    (f"{__name__}:raises", "raised RuntimeError: no cluster config"),
    (f"{__name__}:is_async", "is a coroutine function"),
])
def test_a_bad_target_is_one_line_never_a_traceback(
        target: str, message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", target, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_no_namespace_to_be_found_is_asked_for(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", f"{__name__}:widgets", "--out", str(tmp_path)]) == 1
    assert "give --namespace" in capsys.readouterr().err
    assert main(["manifests", f"{__name__}:widgets", "--out", str(tmp_path),
                 "--namespace", "ops", "--service-account", "sa"]) == 0
    docs = list(yaml.safe_load_all((tmp_path / "rbac.yaml").read_text()))
    assert docs[1]["metadata"] == {"name": "sa", "namespace": "ops"}


def test_without_pyyaml_the_command_says_which_extra_to_install(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # an environment without PyYAML
    assert main(["manifests", f"{__name__}:elected", "--out", str(tmp_path)]) == 1
    assert "pip install 'reconcilekit[manifests]'" in capsys.readouterr().err


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Permission(PODS, "read"), "verbs must be among"),
    (lambda: Permission(PODS), "got none"),
    (lambda: Permission(PODS, "list", resource_names=["a"]), "cannot be limited"),
    (lambda: Permission(NODES, "get", namespace="a"), "takes no namespace"),
])
def test_a_permission_that_cannot_be_granted_is_refused(make: Any, message: str) -> None:
    with pytest.raises(InvalidPermission, match=message):
        make()


def test_a_reconciler_declaring_something_else_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifests", f"{__name__}:badly_declared", "--out", str(tmp_path),
                 "--namespace", "ops"]) == 1
    assert "BadReconciler.permissions holds 'pods: get'" in capsys.readouterr().err


class BadReconciler(Reconciler):
    permissions = ("pods: get",)

    async def reconcile(self, request: Request) -> Result:
        return Result.done()


def badly_declared(client: Client) -> Manager:
    manager = Manager(client, http_addr=None)
    manager.controller().for_(PODS).complete(BadReconciler())
    return manager
