"""Sessions of the official ``kubernetes`` Python client, run against both servers.

Each session is a function of a :class:`Steps` (which runs and records each
call) and the namespace's name; :data:`SESSIONS` names them. A step's record
is what the client returned, as the client itself serializes it
(``ApiClient.sanitize_for_serialization``), or the ``ApiException``'s status,
reason and message; :mod:`test_python_client` runs every session on both
servers and compares the records step by step after
:func:`differential_normalize.normalize`.

Kept out of a record, as the kubectl sessions keep it out (docs/testing.md,
"Different by design"): state that kube-controller-manager writes on the real
server while a session runs (the ``status`` of the kinds it controls and of their
Scale, its
``deployment.kubernetes.io/`` annotations, the managedFields entries of
managers other than the client's own). Nothing else is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

__all__ = ["SESSIONS", "Steps"]

CLIENT_MANAGER = "OpenAPI-Generator"  # the client's User-Agent, the default field manager
CONTROLLED = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                        "CronJob", "HorizontalPodAutoscaler", "PersistentVolumeClaim",
                        "PodDisruptionBudget", "Scale"})  # a Scale shows its target's status
TIMEOUT = 30  # seconds: a call that hangs fails its session instead of the run


class Steps:
    """Runs a session's calls on one server, recording each (see the module docstring)."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.records: list[tuple[str, str]] = []

    def __call__(self, label: str, call: Callable[[], Any]) -> Any:
        try:
            result = call()
        except ApiException as err:
            try:
                body = json.loads(err.body or "{}")
            except ValueError:
                body = {"message": err.body}
            self.records.append((label, f"{err.status} {body.get('reason', '')}: "
                                        f"{body.get('message', '')}"))
            return None
        self.records.append((label, self.render(result)))
        return result

    def render(self, result: Any) -> str:
        data = self.api.sanitize_for_serialization(result)
        if isinstance(data, dict):
            _drop_controller_state(data)
            # a List's items carry no kind of their own: the List's names it
            kind = str(data.get("kind", "")).removesuffix("List")
            for item in data.get("items") or []:
                _drop_controller_state(item, kind)
        return json.dumps(data, sort_keys=True, indent=1)


def _drop_controller_state(obj: Any, kind: str = "") -> None:
    if not isinstance(obj, dict):
        return
    if (obj.get("kind") or kind) in CONTROLLED:
        obj.pop("status", None)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        if isinstance(meta.get("annotations"), dict):
            meta["annotations"] = {k: v for k, v in meta["annotations"].items()
                                   if not k.startswith("deployment.kubernetes.io/")}
            if not meta["annotations"]:
                del meta["annotations"]
        if isinstance(meta.get("managedFields"), list):
            meta["managedFields"] = [e for e in meta["managedFields"]
                                     if e.get("manager") == CLIENT_MANAGER]


def _meta(name: str, **labels: str) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name, labels=labels or {"app": "web"})


_CONTAINER = {"name": "main", "image": "nginx:1.25",
              "ports": [{"containerPort": 80, "name": "http"}]}
_TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [_CONTAINER]}}
_MERGE = "application/merge-patch+json"
_JSON_PATCH = "application/json-patch+json"


def configmaps(step: Steps, ns: str) -> None:
    core = client.CoreV1Api(step.api)
    step("create", lambda: core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=_meta("a"), data={"k": "v", "n": "1"})))
    step("create again", lambda: core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=_meta("a"))))
    step("create invalid", lambda: core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=_meta("Not_Valid"))))
    got = step("read", lambda: core.read_namespaced_config_map("a", ns))
    step("read missing", lambda: core.read_namespaced_config_map("missing", ns))
    step("list by label", lambda: core.list_namespaced_config_map(ns, label_selector="app=web"))
    got.data["k"] = "changed"
    step("replace", lambda: core.replace_namespaced_config_map("a", ns, got))
    step("replace stale", lambda: core.replace_namespaced_config_map("a", ns, got))
    step("merge patch", lambda: core.patch_namespaced_config_map(
        "a", ns, {"data": {"m": "merged", "n": None}}, _content_type=_MERGE))
    step("strategic patch", lambda: core.patch_namespaced_config_map(
        "a", ns, {"metadata": {"labels": {"tier": "x"}}}))
    step("json patch", lambda: core.patch_namespaced_config_map(
        "a", ns, [{"op": "add", "path": "/data/j", "value": "json"},
                  {"op": "remove", "path": "/data/m"}]))
    step("json patch failing test", lambda: core.patch_namespaced_config_map(
        "a", ns, [{"op": "test", "path": "/data/k", "value": "other"}]))
    step("delete", lambda: core.delete_namespaced_config_map("a", ns))
    step("read deleted", lambda: core.read_namespaced_config_map("a", ns))


def secrets_and_accounts(step: Steps, ns: str) -> None:
    core = client.CoreV1Api(step.api)
    step("create secret", lambda: core.create_namespaced_secret(ns, client.V1Secret(
        metadata=_meta("s"), string_data={"password": "p"}, type="Opaque")))
    step("patch secret", lambda: core.patch_namespaced_secret(
        "s", ns, {"stringData": {"user": "u"}}))
    step("create account", lambda: core.create_namespaced_service_account(
        ns, client.V1ServiceAccount(metadata=_meta("robot"))))
    step("patch account", lambda: core.patch_namespaced_service_account(
        "robot", ns, {"imagePullSecrets": [{"name": "s"}]}))
    step("list accounts", lambda: core.list_namespaced_service_account(
        ns, label_selector="app=web"))
    step("delete secret", lambda: core.delete_namespaced_secret("s", ns))
    step("delete account", lambda: core.delete_namespaced_service_account("robot", ns))


def services(step: Steps, ns: str) -> None:
    core = client.CoreV1Api(step.api)
    step("create", lambda: core.create_namespaced_service(ns, client.V1Service(
        metadata=_meta("web"), spec=client.V1ServiceSpec(
            selector={"app": "web"},
            ports=[client.V1ServicePort(name="http", port=80, target_port=8080),
                   client.V1ServicePort(name="metrics", port=9090)]))))
    step("strategic patch of a port", lambda: core.patch_namespaced_service(
        "web", ns, {"spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8081}]}}))
    step("merge patch of the selector", lambda: core.patch_namespaced_service(
        "web", ns, {"spec": {"selector": {"app": "web", "tier": "front"}}},
        _content_type=_MERGE))
    step("delete", lambda: core.delete_namespaced_service("web", ns))


def deployments(step: Steps, ns: str) -> None:
    apps = client.AppsV1Api(step.api)
    body = {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": _TEMPLATE}}
    step("create", lambda: apps.create_namespaced_deployment(ns, body))
    step("strategic patch adding a container", lambda: apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"template": {"spec": {"containers": [
            {"name": "sidecar", "image": "busybox:1.36"}]}}}}))
    step("json patch of the replicas", lambda: apps.patch_namespaced_deployment(
        "web", ns, [{"op": "replace", "path": "/spec/replicas", "value": 3}]))
    step("merge patch of the strategy", lambda: apps.patch_namespaced_deployment(
        "web", ns, {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}},
        _content_type=_MERGE))
    step("read scale", lambda: apps.read_namespaced_deployment_scale("web", ns))
    step("patch scale", lambda: apps.patch_namespaced_deployment_scale(
        "web", ns, {"spec": {"replicas": 1}}))
    step("replace without a selector", lambda: apps.replace_namespaced_deployment(
        "web", ns, {**body, "spec": {**body["spec"], "selector": None}}))
    step("delete orphaning", lambda: apps.delete_namespaced_deployment(
        "web", ns, propagation_policy="Orphan"))


def workloads(step: Steps, ns: str) -> None:
    apps, batch = client.AppsV1Api(step.api), client.BatchV1Api(step.api)
    selector = {"matchLabels": {"app": "web"}}
    step("create statefulset", lambda: apps.create_namespaced_stateful_set(ns, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"serviceName": "db", "selector": selector, "template": _TEMPLATE}}))
    step("create daemonset", lambda: apps.create_namespaced_daemon_set(ns, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": {"selector": selector, "template": _TEMPLATE}}))
    step("create job", lambda: batch.create_namespaced_job(ns, {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "main", "image": "busybox:1.36"}]}}}}))
    step("create cronjob", lambda: batch.create_namespaced_cron_job(ns, {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"},
        "spec": {"schedule": "0 3 * * *", "suspend": True, "jobTemplate": {"spec": {
            "template": {"spec": {"restartPolicy": "OnFailure", "containers": [
                {"name": "main", "image": "busybox:1.36"}]}}}}}}))
    step("patch cronjob schedule", lambda: batch.patch_namespaced_cron_job(
        "nightly", ns, {"spec": {"schedule": "0 4 * * *"}}))
    step("list statefulsets", lambda: apps.list_namespaced_stateful_set(ns))
    step("delete daemonset", lambda: apps.delete_namespaced_daemon_set("agent", ns))
    step("delete job orphaning", lambda: batch.delete_namespaced_job(
        "once", ns, propagation_policy="Orphan"))


def policy_and_networking(step: Steps, ns: str) -> None:
    core, net = client.CoreV1Api(step.api), client.NetworkingV1Api(step.api)
    policy, autoscaling = client.PolicyV1Api(step.api), client.AutoscalingV2Api(step.api)
    coordination = client.CoordinationV1Api(step.api)
    step("create pvc", lambda: core.create_namespaced_persistent_volume_claim(ns, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}}))
    step("create ingress", lambda: net.create_namespaced_ingress(ns, {
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
        "spec": {"rules": [{"host": "web.example", "http": {"paths": [
            {"path": "/", "pathType": "Prefix", "backend": {
                "service": {"name": "web", "port": {"number": 80}}}}]}}]}}))
    step("create pdb", lambda: policy.create_namespaced_pod_disruption_budget(ns, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
    step("create hpa", lambda: autoscaling.create_namespaced_horizontal_pod_autoscaler(ns, {
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                                    "name": "web"}, "maxReplicas": 5}}))
    step("create lease", lambda: coordination.create_namespaced_lease(ns, {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"},
        "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}}))
    step("json patch of the lease", lambda: coordination.patch_namespaced_lease(
        "lock", ns, [{"op": "replace", "path": "/spec/holderIdentity", "value": "you"}]))
    step("list ingresses", lambda: net.list_namespaced_ingress(ns))
    step("delete pdb", lambda: policy.delete_namespaced_pod_disruption_budget("web", ns))


def rbac(step: Steps, ns: str) -> None:
    api = client.RbacAuthorizationV1Api(step.api)
    step("create role", lambda: api.create_namespaced_role(ns, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]}))
    step("create binding", lambda: api.create_namespaced_role_binding(ns, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": ns}]}))
    step("change the role ref", lambda: api.patch_namespaced_role_binding(
        "reader", ns, {"roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                   "kind": "Role", "name": "other"}}))
    step("merge patch of the rules", lambda: api.patch_namespaced_role(
        "reader", ns, {"rules": [{"apiGroups": [""], "resources": ["configmaps"],
                                  "verbs": ["get"]}]}, _content_type=_MERGE))
    step("delete role", lambda: api.delete_namespaced_role("reader", ns))


def watching(step: Steps, ns: str) -> None:
    """A list, then a watch from its resourceVersion that sees four changes in order."""
    core = client.CoreV1Api(step.api)
    listed = step("list", lambda: core.list_namespaced_config_map(ns, label_selector="w=1"))
    step("create one", lambda: core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=_meta("w1", w="1"))))
    step("create two", lambda: core.create_namespaced_config_map(
        ns, client.V1ConfigMap(metadata=_meta("w2", w="1"))))
    step("change one", lambda: core.patch_namespaced_config_map(
        "w1", ns, {"data": {"x": "y"}}))
    step("delete two", lambda: core.delete_namespaced_config_map("w2", ns))

    def events() -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        stream = watch.Watch()
        for event in stream.stream(core.list_namespaced_config_map, ns, label_selector="w=1",
                                   resource_version=listed.metadata.resource_version,
                                   timeout_seconds=TIMEOUT, _request_timeout=TIMEOUT):
            seen.append({"type": event["type"], "name": event["object"].metadata.name,
                         "data": event["object"].data})
            if len(seen) == 4:
                stream.stop()
        return seen

    step("watch from the list", events)


SESSIONS: dict[str, Callable[[Steps, str], None]] = {
    "python-configmaps": configmaps,
    "python-secrets-and-accounts": secrets_and_accounts,
    "python-services": services,
    "python-deployments": deployments,
    "python-workloads": workloads,
    "python-policy-and-networking": policy_and_networking,
    "python-rbac": rbac,
    "python-watch": watching,
}
"""Every Python client session, by name."""
