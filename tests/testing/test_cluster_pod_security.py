"""PodSecurity admission on every backend: a namespace's enforce and warn levels, judged
by kube-apiserver's own messages."""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster, eventually

RESTRICTED_MESSAGE = (
    'pods "plain" is forbidden: violates PodSecurity "restricted:latest": '
    'allowPrivilegeEscalation != false (containers "app", "sidecar" must set '
    "securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (containers "
    '"app", "sidecar" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != '
    'true (pod or containers "app", "sidecar" must set securityContext.runAsNonRoot=true), '
    'seccompProfile (pod or containers "app", "sidecar" must set '
    'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")')
BASELINE_MESSAGE = (
    'pods "host" is forbidden: violates PodSecurity "baseline:latest": non-default '
    'capabilities (container "app" must not include "NET_ADMIN" in '
    "securityContext.capabilities.add), host namespaces (hostNetwork=true), hostPath volumes "
    '(volume "root"), hostPort (container "app" uses hostPort 8080)')


def _pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.9"}],
                     **spec}}


async def _label(apiserver: Cluster, **levels: str) -> None:
    """Label the test's namespace with Pod Security ``levels`` (an ``enforce`` among them),
    then wait until admission enforces it: kube-apiserver's PodSecurity plugin reads
    namespaces from an informer, so a Pod created right after the label may be judged
    by the namespace as it was. A dry run of a Pod every level but privileged refuses
    tells when it is enforced."""
    ns = apiserver.namespace
    got = await apiserver.request(
        "PATCH", f"/api/v1/namespaces/{ns}",
        json={"metadata": {"labels": {f"pod-security.kubernetes.io/{mode}": level
                                      for mode, level in levels.items()}}},
        content_type="application/merge-patch+json")
    assert got.status == 200, got

    async def enforced() -> bool:
        probe = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/pods?dryRun=All",
                                        json=_pod("probe", hostNetwork=True))
        return probe.status == 403

    await eventually(enforced, what=f"Pod Security enforcing {levels['enforce']} in {ns}")


async def test_a_restricted_namespace_refuses_what_the_standard_forbids(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    await _label(apiserver, enforce="restricted", warn="restricted")
    pods = f"/api/v1/namespaces/{ns}/pods"
    plain = _pod("plain")
    plain["spec"]["containers"].append({"name": "sidecar", "image": "registry.k8s.io/pause:3.9"})
    refused = await apiserver.request("POST", pods, json=plain)
    assert (refused.status, refused.body["reason"], refused.body["message"]) == (
        403, "Forbidden", RESTRICTED_MESSAGE)
    hardened = _pod("hardened", securityContext={
        "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}})
    hardened["spec"]["containers"][0]["securityContext"] = {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
    made = await apiserver.request("POST", pods, json=hardened)
    assert made.status == 201, made

    deployment = await apiserver.request(
        "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", json={
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": _pod("")["spec"]}}})
    assert deployment.status == 201, deployment  # a workload is only warned about
    warning = deployment.headers.get("Warning", "")
    assert warning.startswith('299 - "would violate PodSecurity \\"restricted:latest\\": '
                              "allowPrivilegeEscalation != false"), warning


async def test_without_a_warn_label_a_workload_is_warned_of_at_the_enforce_level(
        apiserver: Cluster) -> None:
    await _label(apiserver, enforce="baseline")
    deployment = await apiserver.request(
        "POST", f"/apis/apps/v1/namespaces/{apiserver.namespace}/deployments", json={
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "host"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "host"}},
                     "template": {"metadata": {"labels": {"app": "host"}},
                                  "spec": _pod("", hostNetwork=True)["spec"]}}})
    assert deployment.status == 201, deployment
    assert deployment.headers.get("Warning", "") == (
        '299 - "would violate PodSecurity \\"baseline:latest\\": host namespaces '
        '(hostNetwork=true)"'), deployment.headers


async def test_a_baseline_namespace_refuses_host_access_and_capabilities(
        apiserver: Cluster) -> None:
    await _label(apiserver, enforce="baseline")
    host = _pod("host", hostNetwork=True, volumes=[{"name": "root", "hostPath": {"path": "/"}}])
    host["spec"]["containers"][0].update(
        ports=[{"containerPort": 8080, "hostPort": 8080}],
        securityContext={"capabilities": {"add": ["NET_ADMIN"]}})
    refused = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/pods", json=host)
    assert (refused.status, refused.body["message"]) == (403, BASELINE_MESSAGE)
    made = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/pods", json=_pod("plain"))
    assert made.status == 201, made


async def test_a_privileged_pod_is_created_where_no_level_is_enforced(
        apiserver: Cluster) -> None:
    # kube-apiserver runs with --allow-privileged=true, as kind and kubeadm start it;
    # without it the Pod is refused as Invalid ("disallowed by cluster policy")
    privileged = _pod("privileged")
    privileged["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    made = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/pods", json=privileged)
    assert made.status == 201, made
    assert made.body["spec"]["containers"][0]["securityContext"] == {"privileged": True}
