"""The examples' generated manifests are what the API server accepts, Pod Security included.

On both backends every object of the files a kustomization lists is created
with ``dryRun=All`` (nothing is stored) in the test's namespace, labelled
``pod-security.kubernetes.io/enforce: restricted`` (with no ``warn`` label, a
workload's template is warned of at the enforce level): the Deployment with no
PodSecurity warning, and a Pod made from its template, which Pod Security
enforces (a Pod without the generated securityContext is refused there, so
the check cannot pass for want of a policy). The files are:

* the CNClaim example's committed manifests (cert-manager certificates), moved
  from ``cnclaim-system`` to the test's namespace;
* the CNClaim operator with a self-signing webhook server (``--certificates
  self-signed``);
* the Website and ConfigMap-to-Secret operators', generated for the test's
  namespace.

cert-manager's Issuer and Certificate are left out: the test clusters do not
serve cert-manager's kinds. An object another test made already (a CRD, the
test's own Namespace) is dry-run updated instead: the same validation.
"""

from __future__ import annotations

import functools
from typing import Any, Final

import anyio.to_thread
import pytest
import yaml
from kubernetes_asyncio.client import Configuration

from examples.cnclaim.admission import add_claim_webhook
from examples.cnclaim.operator import MANIFESTS, OPERATOR_NAMESPACE, OperatorOptions, build_operator
from reconcilekit import Client
from reconcilekit.__main__ import generate_manifests
from reconcilekit._manifests.deploy_options import DeploymentOptions
from reconcilekit._manifests.manifests import KUSTOMIZATION, manifest_names, manifests
from reconcilekit.testing import Cluster
from reconcilekit.webhook import ServiceReference, WebhookServer

Obj = dict[str, Any]
RESTRICTED: Final = {"pod-security.kubernetes.io/enforce": "restricted",
                     "pod-security.kubernetes.io/enforce-version": "latest"}
PATHS: Final = {  # kind -> (API prefix, plural, namespaced)
    "Namespace": ("/api/v1", "namespaces", False),
    "ServiceAccount": ("/api/v1", "serviceaccounts", True),
    "Service": ("/api/v1", "services", True),
    "Deployment": ("/apis/apps/v1", "deployments", True),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", False),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "ValidatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1",
                                       "validatingwebhookconfigurations", False),
    "MutatingWebhookConfiguration": ("/apis/admissionregistration.k8s.io/v1",
                                     "mutatingwebhookconfigurations", False),
    "CustomResourceDefinition": ("/apis/apiextensions.k8s.io/v1",
                                 "customresourcedefinitions", False),
}
CERT_MANAGER: Final = ("Issuer", "Certificate")


def _path(doc: Obj) -> str:
    prefix, plural, namespaced = PATHS[doc["kind"]]
    ns = doc["metadata"].get("namespace")
    assert bool(ns) == namespaced, doc["metadata"]
    return f"{prefix}/namespaces/{ns}/{plural}" if ns else f"{prefix}/{plural}"


def _listed(files: dict[str, list[Obj]]) -> list[Obj]:
    """The documents of the files the kustomization lists, in its order."""
    [kustomization] = files[KUSTOMIZATION]
    return [doc for name in kustomization["resources"] for doc in files[name]]


async def _warnings_free_create(apiserver: Cluster, path: str, doc: Obj) -> None:
    made = await apiserver.request("POST", path, json=doc, params={"dryRun": "All"})
    if made.status == 409:  # made by another test (a CRD), or the test's own namespace
        current = await apiserver.request("GET", f"{path}/{doc['metadata']['name']}")
        assert current.status == 200, current
        doc = {**doc, "metadata": {**doc["metadata"],
                                   "resourceVersion": current.body["metadata"]["resourceVersion"]}}
        made = await apiserver.request("PUT", f"{path}/{doc['metadata']['name']}", json=doc,
                                       params={"dryRun": "All"})
    assert made.status in (200, 201), (doc["kind"], doc["metadata"], made)
    assert not made.headers.getall("Warning", []), (doc["kind"], made.headers)


async def _dry_run(apiserver: Cluster, files: dict[str, list[Obj]]) -> list[str]:
    """Dry-run every listed document in the test's namespace; the kinds left out."""
    ns = apiserver.namespace
    labelled = await apiserver.request(
        "PATCH", f"/api/v1/namespaces/{ns}", json={"metadata": {"labels": RESTRICTED}},
        content_type="application/merge-patch+json")
    assert labelled.status == 200, labelled
    docs = _listed(files)
    for doc in docs:  # the Pods need their ServiceAccount: made for real
        if doc["kind"] == "ServiceAccount":
            made = await apiserver.request("POST", _path(doc), json=doc)
            assert made.status == 201, made
    skipped = []
    for doc in docs:
        if doc["kind"] in CERT_MANAGER:
            skipped.append(doc["kind"])
        elif doc["kind"] != "ServiceAccount":
            await _warnings_free_create(apiserver, _path(doc), doc)
    [deployment] = [d for d in docs if d["kind"] == "Deployment"]
    await _pod_security_admits(apiserver, deployment)
    return skipped


async def _pod_security_admits(apiserver: Cluster, deployment: Obj) -> None:
    """A Pod of the Deployment's template passes the namespace's enforced level; the same
    Pod without its container's securityContext does not."""
    template = deployment["spec"]["template"]
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"generateName": f"{deployment['metadata']['name']}-",
                        "labels": template["metadata"]["labels"]},
           "spec": template["spec"]}
    path = f"/api/v1/namespaces/{apiserver.namespace}/pods"
    await _warnings_free_create(apiserver, path, pod)
    bare = {**pod, "spec": {**pod["spec"], "containers": [
        {k: v for k, v in c.items() if k != "securityContext"}
        for c in pod["spec"]["containers"]]}}
    refused = await apiserver.request("POST", path, json=bare, params={"dryRun": "All"})
    assert refused.status == 403, refused
    assert 'violates PodSecurity "restricted:latest"' in refused.body["message"], refused


def _yaml(texts: dict[str, str]) -> dict[str, list[Obj]]:
    return {name: [d for d in yaml.safe_load_all(text) if d] for name, text in texts.items()}


async def test_the_cnclaim_manifests_pass_a_dry_run_in_a_restricted_namespace(
        apiserver: Cluster) -> None:
    texts = {p.name: p.read_text().replace(OPERATOR_NAMESPACE, apiserver.namespace)
             for p in MANIFESTS.glob("*.yaml")}
    assert await _dry_run(apiserver, _yaml(texts)) == ["Issuer", "Certificate"]


async def test_the_cnclaim_operator_with_self_signed_certificates_passes_a_dry_run(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    client = Client(Configuration(host="https://unconnected.invalid"))
    try:
        server = WebhookServer(name=f"cnclaim-{ns}", install_configurations=True,
                               service=ServiceReference(ns, "cnclaim-operator-webhook"))
        add_claim_webhook(server, operator_users={f"system:serviceaccount:{ns}:cnclaim"})
        manager = build_operator(client, OperatorOptions(
            leader_election=True, leader_election_namespace=ns), webhook_server=server)
        files = manifests(manager, manifest_names(manager, name=None, namespace=None,
                                                  service_account="cnclaim"),
                          DeploymentOptions(certificates="self-signed"))
    finally:
        await client.close()
    assert [d["kind"] for d in files["webhook.yaml"]] == ["Service"]
    assert await _dry_run(apiserver, files) == []


@pytest.mark.parametrize("target", ["examples.website.operator:build",
                                    "examples.configmap_to_secret.operator:build"])
async def test_an_examples_generated_manifests_pass_a_dry_run(apiserver: Cluster,
                                                              target: str) -> None:
    texts = await anyio.to_thread.run_sync(functools.partial(
        generate_manifests, target, command="test", namespace=apiserver.namespace))
    assert await _dry_run(apiserver, _yaml(texts)) == []
