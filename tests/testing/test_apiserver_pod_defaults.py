"""Pods as kube-apiserver v1.28 stores them: defaults and the default admission plugins.

The expected specs are kube-apiserver's answers to the same Pods; the token
volume's name ends in five random characters, so it is compared by prefix.
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster

TOKEN_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
TOLERATIONS = [{"key": f"node.kubernetes.io/{taint}", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300}
               for taint in ("not-ready", "unreachable")]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {
        "containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}],
        **spec}}


async def test_a_pod_is_defaulted_and_admitted_as_on_a_cluster(apiserver: Cluster,
                                                                pods: str) -> None:
    got = await apiserver.request("POST", pods, json=pod(
        "p", initContainers=[{"name": "init", "image": "busybox:1.36"}]))
    assert got.status == 201, got
    spec = got.body["spec"]
    [volume] = spec.pop("volumes")
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert volume["projected"] == {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt",
                       "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}
    mount = {"name": volume["name"], "readOnly": True, "mountPath": TOKEN_MOUNT}
    assert spec.pop("containers") == [{
        "name": "app", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
        "resources": {}, "volumeMounts": [mount],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}]
    assert spec.pop("initContainers")[0]["imagePullPolicy"] == "IfNotPresent"
    assert spec == {
        "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
        "serviceAccount": "default", "securityContext": {},
        "schedulerName": "default-scheduler", "tolerations": TOLERATIONS, "priority": 0,
        "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority"}
    assert got.body["status"] == {"phase": "Pending", "qosClass": "BestEffort"}


async def test_qos_class_follows_the_resources(apiserver: Cluster, pods: str) -> None:
    exact = {"cpu": "100m", "memory": "64Mi"}
    for name, resources, qos in (("g", {"limits": exact}, "Guaranteed"),
                                 ("b", {"requests": {"cpu": "100m"}}, "Burstable")):
        body = pod(name)
        body["spec"]["containers"][0]["resources"] = resources
        got = await apiserver.request("POST", pods, json=body)
        assert got.status == 201, got
        assert got.body["status"]["qosClass"] == qos
    guaranteed = await apiserver.request("GET", f"{pods}/g")
    assert guaranteed.body["spec"]["containers"][0]["resources"] == {
        "limits": exact, "requests": exact}  # requests default to the limits


async def test_only_a_pod_gets_requests_from_its_limits_not_a_template(
        apiserver: Cluster) -> None:
    limits = {"cpu": "100m"}
    template = {"metadata": {"labels": {"app": "t"}}, "spec": {
        "containers": [{"name": "app", "image": "nginx", "resources": {"limits": limits}}],
        "initContainers": [{"name": "init", "image": "nginx",
                            "resources": {"limits": limits}}]}}
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/deployments"
    got = await apiserver.request("POST", path, json={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "t"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "t"}},
                 "template": template}})
    assert got.status == 201, got
    spec = got.body["spec"]["template"]["spec"]
    assert [c["resources"] for c in spec["containers"] + spec["initContainers"]] == [
        {"limits": limits}, {"limits": limits}]  # SetDefaults_Pod's rule, not a template's


async def test_a_pod_needs_its_service_account(apiserver: Cluster, pods: str) -> None:
    got = await apiserver.request("POST", pods, json=pod("p", serviceAccountName="missing"))
    assert got.status == 403 and got.body["reason"] == "Forbidden", got
    assert got.body["message"] == (
        f'pods "p" is forbidden: error looking up service account {apiserver.namespace}/'
        'missing: serviceaccount "missing" not found')
    off = await apiserver.request("POST", pods, json=pod(
        "q", automountServiceAccountToken=False))
    assert off.status == 201, off
    assert "volumes" not in off.body["spec"]
    assert "volumeMounts" not in off.body["spec"]["containers"][0]


async def test_every_namespace_holds_its_service_account_and_root_ca(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace

    async def made(path: str) -> dict[str, Any] | None:
        got = await apiserver.request("GET", f"/api/v1/namespaces/{ns}/{path}")
        return dict(got.body) if got.status == 200 else None

    # Both there when the test starts (on a real server kube-controller-manager makes
    # them; the fixture waits for them), so neither shows up in a test's watch later.
    assert await made("serviceaccounts/default") is not None
    root_ca = await made("configmaps/kube-root-ca.crt")
    assert root_ca is not None
    assert root_ca["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
