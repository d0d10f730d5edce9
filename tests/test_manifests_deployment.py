"""``python -m reconcilekit manifests``: the Deployment, the webhook wiring, the kustomization.

What the manager says (its endpoints, shutdown, coordination, webhook server)
and what the command line says (image, replicas, resources, certificates,
arguments) become deployment.yaml, webhook.yaml and kustomization.yaml; what
cannot be deployed as asked is refused in one line. No API server here:
tests/test_manifests_apiserver.py dry-runs the files on both backends.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_manifests import PODS, WIDGETS

from reconcilekit import Client, LeaderElection, Manager, Reconciler, Request, Result
from reconcilekit.__main__ import generate_manifests, main
from reconcilekit._manifests.deploy_options import (
    DeploymentOptions,
    ManifestError,
    parse_resources,
    quantity_value,
)
from reconcilekit._manifests.webhook_wiring import CERT_DIR
from reconcilekit.sharding import Sharding
from reconcilekit.testing._control_plane import assets_from_env
from reconcilekit.webhook import (
    CertificateFiles,
    ServiceReference,
    ServingCertificate,
    Verdict,
    WebhookServer,
)

CNCLAIM_MANIFESTS = Path(__file__).resolve().parents[1] / "examples" / "cnclaim" / "manifests"
CERTS = Path("/nowhere")  # where from_files' server reads its certificate (set by a test)


class WidgetReconciler(Reconciler):
    async def reconcile(self, request: Request) -> Result:
        return Result.done()


def _manager(client: Client, server: WebhookServer | None = None, **options: Any) -> Manager:
    options.setdefault("coordination", LeaderElection(name="widgets", namespace="ops"))
    manager = Manager(client, name="widget-operator", webhook_server=server, **options)
    manager.controller().for_(WIDGETS).owns(PODS).complete(WidgetReconciler())
    return manager


def _server(*, hooks: bool = True, service: ServiceReference | None = None,
            **options: Any) -> WebhookServer:
    server = WebhookServer(name="widget-operator", service=service, **options)
    if hooks:
        @server.validator(WIDGETS)
        async def validate(_: Any) -> Verdict:
            return Verdict.allow()
    return server


SERVICE = ServiceReference("ops", "widget-webhook")


def deployed(client: Client) -> Manager:
    return _manager(client, _server(service=SERVICE, port=9444), http_addr=":8081",
                    graceful_shutdown_timeout=12)


def unserved(client: Client) -> Manager:
    return _manager(client, http_addr=None)


def loopback(client: Client) -> Manager:
    return _manager(client, http_addr="127.0.0.1:8080")


def alone(client: Client) -> Manager:
    return _manager(client, coordination=None, namespace="ops")


def sharded(client: Client) -> Manager:
    return _manager(client, coordination=Sharding(name="ring", namespace="ops"))


def self_signing(client: Client) -> Manager:
    return _manager(client, _server(service=SERVICE, install_configurations=True))


def cert_managed(client: Client) -> Manager:
    return _manager(client, _server(service=SERVICE))


def unreachable(client: Client) -> Manager:
    return _manager(client, _server())


def elsewhere(client: Client) -> Manager:
    return _manager(client, _server(service=ServiceReference("other", "widget-webhook")))


def from_files(client: Client) -> Manager:
    return _manager(client, _server(service=SERVICE, certificate=CertificateFiles(CERTS)))


def converting(client: Client, **options: Any) -> Manager:
    server = _server(hooks=False, service=SERVICE, **options)
    server.conversion(WIDGETS, hub="v1", spokes={"v2": (dict, dict)})
    return _manager(client, server)


def converting_itself(client: Client) -> Manager:
    return converting(client, install_configurations=True)


def watching_a_team(client: Client) -> Manager:
    return _manager(client, namespace="team-a")


def _docs(target: str, **options: Any) -> dict[str, list[dict[str, Any]]]:
    files = generate_manifests(f"{__name__}:{target}", command="test", **options)
    return {name: [d for d in yaml.safe_load_all(text) if d] for name, text in files.items()}


def _exit(argv: list[str]) -> int:
    """main's exit status, whether it returns it or argparse exits with it."""
    try:
        return main(argv)
    except SystemExit as exit:
        return int(exit.code or 0)


def test_the_deployment_runs_the_manager_as_it_is_built() -> None:
    options = DeploymentOptions(image="registry.example.com/widgets:v1", replicas=3,
                                args=("--in-cluster", "--zone=a"))
    docs = _docs("deployed", options=options)
    deployment, metrics = docs["deployment.yaml"]
    labels = {"app.kubernetes.io/name": "widget-operator"}
    assert deployment["metadata"] == {"name": "widget-operator", "namespace": "ops",
                                      "labels": labels}
    spec = deployment["spec"]
    assert (spec["replicas"], spec["selector"]) == (3, {"matchLabels": labels})
    assert "strategy" not in spec  # rolling: cert-manager's one certificate for every replica
    assert spec["template"]["metadata"] == {"labels": labels}
    pod = spec["template"]["spec"]
    assert pod["serviceAccountName"] == "widget-operator"
    # the manager's 12 s for reconciles and 5 s to release, and 5 s to exit
    assert pod["terminationGracePeriodSeconds"] == 22
    assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 65532,
                                      "seccompProfile": {"type": "RuntimeDefault"}}
    [container] = pod["containers"]
    assert container["image"] == "registry.example.com/widgets:v1"
    assert container["args"] == ["--in-cluster", "--zone=a"]
    assert container["env"] == [{"name": "POD_NAMESPACE", "valueFrom": {
        "fieldRef": {"fieldPath": "metadata.namespace"}}}]
    assert container["ports"] == [
        {"name": "http", "containerPort": 8081, "protocol": "TCP"},
        {"name": "webhook", "containerPort": 9444, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["resources"] == {"requests": {"cpu": "50m", "memory": "96Mi"},
                                      "limits": {"memory": "512Mi"}}
    assert container["securityContext"] == {"allowPrivilegeEscalation": False,
                                            "readOnlyRootFilesystem": True,
                                            "capabilities": {"drop": ["ALL"]}}
    [certificate] = [d for d in docs["webhook.yaml"] if d["kind"] == "Certificate"]
    assert pod["volumes"] == [
        {"name": "tmp", "emptyDir": {"medium": "Memory"}},
        {"name": "webhook-certs", "secret": {"secretName": certificate["spec"]["secretName"]}}]
    assert container["volumeMounts"] == [
        {"name": "tmp", "mountPath": "/tmp"},
        {"name": "webhook-certs", "mountPath": CERT_DIR, "readOnly": True}]
    [service] = [d for d in docs["webhook.yaml"] if d["kind"] == "Service"]
    assert service["spec"]["selector"] == labels
    assert metrics["metadata"]["name"] == "widget-operator-metrics"
    assert metrics["spec"] == {"selector": labels, "ports": [
        {"name": "metrics", "port": 8081, "targetPort": "http", "protocol": "TCP"}]}


def test_the_defaults_are_one_replica_of_the_operators_image_with_the_images_command() -> None:
    [deployment, _] = _docs("deployed")["deployment.yaml"]
    assert deployment["spec"]["replicas"] == 1
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "widget-operator:latest"
    assert "args" not in container


def test_a_manager_without_endpoints_gets_no_probes_and_no_metrics_service() -> None:
    [deployment] = _docs("unserved")["deployment.yaml"]
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert not {"ports", "livenessProbe", "readinessProbe", "volumeMounts"} & set(container)
    assert "volumes" not in pod  # no webhook server: nothing writes to /tmp
    assert pod["terminationGracePeriodSeconds"] == 40  # 30 s of reconciles, 5, 5


def test_a_resource_option_left_empty_leaves_it_out() -> None:
    options = DeploymentOptions(requests={}, limits={"cpu": "1", "memory": "1Gi"})
    [deployment, _] = _docs("deployed", options=options)["deployment.yaml"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize(("target", "replicas", "message"), [
    ("alone", "2", "--replicas 2: the manager widget-operator has no leader election or "
                   "sharding"),
    ("self_signing", "2", "--replicas 2 with --certificates self-signed: each replica would "
                          "make a CA of its own"),
])
def test_replicas_that_would_work_against_each_other_are_refused(
        target: str, replicas: str, message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["manifests", f"{__name__}:{target}", "--out", str(tmp_path), "--namespace", "ops",
            "--replicas", replicas,
            "--certificates", "self-signed" if target == "self_signing" else "cert-manager"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("target", ["deployed", "sharded"])
def test_leader_election_and_sharding_run_any_number_of_replicas(target: str) -> None:
    [deployment, *_] = _docs(target, options=DeploymentOptions(replicas=5))["deployment.yaml"]
    assert deployment["spec"]["replicas"] == 5


def test_self_signed_certificates_leave_the_configurations_and_their_ca_to_the_manager() -> None:
    docs = _docs("self_signing", options=DeploymentOptions(certificates="self-signed"))
    [service] = docs["webhook.yaml"]
    assert service["kind"] == "Service"
    [deployment, _] = docs["deployment.yaml"]
    spec = deployment["spec"]
    assert spec["strategy"] == {"type": "Recreate"}  # never two servers, two CAs
    pod = spec["template"]["spec"]
    assert pod["volumes"] == [{"name": "tmp", "emptyDir": {"medium": "Memory"}}]
    rules = [r for d in docs["rbac.yaml"] if d["kind"] == "ClusterRole" for r in d["rules"]]
    assert {"apiGroups": ["admissionregistration.k8s.io"],
            "resources": ["validatingwebhookconfigurations"], "verbs": ["get", "patch"],
            "resourceNames": ["widget-operator"]} in rules


def test_a_converted_kind_gets_the_webhook_service_and_its_crd_the_ca() -> None:
    docs = _docs("converting")
    assert [d["kind"] for d in docs["webhook.yaml"]] == ["Service", "Issuer", "Certificate"]
    [crd] = docs["crds.yaml"]
    assert crd["metadata"]["annotations"] == {
        "cert-manager.io/inject-ca-from": "ops/widget-webhook"}
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"] == {"service": {
        "namespace": "ops", "name": "widget-webhook", "path": "/convert", "port": 443}}
    [crd] = _docs("converting_itself",
                  options=DeploymentOptions(certificates="self-signed"))["crds.yaml"]
    assert "annotations" not in crd["metadata"]  # the manager writes caBundle itself
    assert "caBundle" not in crd["spec"]["conversion"]["webhook"]["clientConfig"]


def test_the_secret_is_mounted_where_the_server_reads_its_certificate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ServingCertificate.generate().write(tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "CERTS", tmp_path)
    [deployment, _] = _docs("from_files")["deployment.yaml"]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert {"name": "webhook-certs", "mountPath": str(tmp_path),
            "readOnly": True} in container["volumeMounts"]


def reading_other_names(client: Client) -> Manager:
    files = CertificateFiles(cert_file=CERTS / "tls.crt", key_file=CERTS / "key.pem")
    return _manager(client, _server(service=SERVICE, certificate=files))


@pytest.mark.parametrize(("target", "options", "message"), [
    ("unreachable", [], "the webhook server widget-operator names no Service"),
    ("elsewhere", ["--namespace", "ops"], "the webhook Service other/widget-webhook must be in "
                                          "the operator's namespace ops"),
    ("loopback", [], "the manager serves /healthz, /readyz and /metrics on 127.0.0.1:8080, "
                     "which the kubelet's probes"),
    ("cert_managed", ["--certificates", "self-signed"], "build it with "
                                                        "install_configurations=True"),
    ("self_signing", [], "would overwrite with its own CA: build it without "
                         "install_configurations"),
    ("reading_other_names", [], "cert-manager's Secret holds tls.crt, tls.key and ca.crt"),
])
def test_a_manager_that_cannot_be_deployed_as_asked_is_one_line(
        target: str, options: list[str], message: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    ServingCertificate.generate().write(tmp_path)
    (tmp_path / "tls.key").rename(tmp_path / "key.pem")
    monkeypatch.setattr(sys.modules[__name__], "CERTS", tmp_path)
    out = tmp_path / "out"
    assert main(["manifests", f"{__name__}:{target}", "--out", str(out), *options]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


@pytest.mark.parametrize(("options", "message"), [
    (["--replicas", "-1"], "replicas must be a whole number, at least 1; got -1"),
    (["--replicas", "0"], "replicas must be a whole number, at least 1; got 0"),
    (["--replicas", "two"], "--replicas: 'two' is not a whole number"),
    (["--certificates", "vault"], "argument --certificates: invalid choice: 'vault'"),
    (["--requests", "cpu=lots"], "--requests: resources: cpu: 'lots' is not a quantity"),
    (["--requests", "gpu=1"], "--requests: resources: 'gpu' is not one of cpu, memory"),
    (["--limits", "memory"], "--limits: 'memory' is not RESOURCE=QUANTITY"),
    (["--requests", "cpu=2", "--limits", "cpu=1500m"], "the cpu request 2 is over its limit "
                                                       "1500m"),
    (["--image", ""], "image '' is not an image reference"),
    (["--image", "my operator"], "image 'my operator' is not an image reference"),
])
def test_a_bad_option_is_one_line_and_exit_2(options: list[str], message: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert _exit(["manifests", f"{__name__}:deployed", "--out", str(tmp_path), *options]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert err.startswith("usage: python -m reconcilekit manifests")
    assert list(tmp_path.iterdir()) == []


def test_the_containers_arguments_follow_a_double_dash_and_the_header_repeats_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["manifests", f"{__name__}:deployed", "--out", str(tmp_path), "--image", "w:1",
            "--requests", "", "--", "--in-cluster", "--zone", "a b"]
    assert main(argv) == 0
    text = (tmp_path / "deployment.yaml").read_text()
    assert text.startswith(f"# Generated by: python -m reconcilekit manifests {__name__}:"
                           f"deployed --out {tmp_path} --image w:1 --requests '' -- "
                           "--in-cluster --zone 'a b'\n")
    [deployment, _] = [d for d in yaml.safe_load_all(text) if d]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["args"] == ["--in-cluster", "--zone", "a b"]
    assert "requests" not in container["resources"]
    assert main([*argv[:8], "--check", *argv[8:]]) == 0
    assert main([*argv[:8], "--check", "--", "--in-cluster"]) == 1
    assert "deployment.yaml" in capsys.readouterr().err


def test_the_kustomization_names_the_namespace_only_when_it_moves_nothing() -> None:
    [kustomization] = _docs("cert_managed")["kustomization.yaml"]
    assert kustomization == {
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "namespace": "ops",
        "resources": ["crds.yaml", "rbac.yaml", "webhook.yaml", "deployment.yaml"]}
    [kustomization] = _docs("watching_a_team")["kustomization.yaml"]
    assert "namespace" not in kustomization  # it would move team-a's Role into ops


def _kubectl() -> str:
    assets = assets_from_env()
    found = (str(assets / "kubectl") if assets is not None and (assets / "kubectl").exists()
             else shutil.which("kubectl"))
    if found is None:
        pytest.skip("kubectl is not installed: nothing to build the kustomization with")
    return found


def _objects(docs: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return sorted((d["kind"], d["metadata"]["name"], d["metadata"].get("namespace", ""))
                  for d in docs if d and d["kind"] != "Kustomization")


@pytest.mark.parametrize("target", ["watching_a_team", "cnclaim"])
def test_kubectl_kustomize_builds_the_files_as_they_are(target: str, tmp_path: Path) -> None:
    if target == "cnclaim":
        out = CNCLAIM_MANIFESTS
    else:
        out = tmp_path
        assert main(["manifests", f"{__name__}:{target}", "--out", str(out)]) == 0
    built = subprocess.run([_kubectl(), "kustomize", str(out)], capture_output=True,
                           text=True, check=False)
    assert built.returncode == 0, built.stderr
    written = [d for p in sorted(out.glob("*.yaml")) for d in yaml.safe_load_all(p.read_text())]
    assert _objects(list(yaml.safe_load_all(built.stdout))) == _objects(written)


def test_quantities_are_read_as_kube_apiserver_reads_them() -> None:
    assert quantity_value("96Mi") == 96 * 2**20
    assert quantity_value("50m") == Decimal("0.05")
    assert quantity_value("1.5") == Decimal("1.5")
    assert quantity_value("2k") == quantity_value("2e3") == 2000
    assert quantity_value("1E") == 10**18
    assert parse_resources("") == {}
    assert parse_resources(" cpu=1 , memory=2Gi ") == {"cpu": "1", "memory": "2Gi"}
    for bad in ("-1", "1Mb", "1.2.3", "m"):
        with pytest.raises(ManifestError, match="is not a quantity"):
            quantity_value(bad)
    with pytest.raises(ManifestError, match="cpu is given twice"):
        parse_resources("cpu=1,cpu=2")
