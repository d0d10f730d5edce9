"""Every built-in kind's Table, as kube-apiserver v1.28's printers fill it.

Each case creates objects of one kind (and writes their status where the
printer reads it), lists them as ``kubectl get`` does and compares the
column definitions with the ones captured from kube-apiserver and each
row's cells with the cells kube-apiserver v1.28.7 gave for the same objects.
Cells that depend on the clock (ages) or on the server's allocations
(cluster IPs) are left out. The objects are chosen so that kube-controller-
manager, when it runs beside kube-apiserver, leaves their printed cells as
they are (no replicas, suspended Jobs, standalone Endpoints).
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from importlib.resources import files
from typing import Any

import pytest

from reconcilekit.testing import Cluster
from reconcilekit.testing.apiserver.kube_apiserver import served_strategies
from reconcilekit.testing.apiserver.machinery.builtin_kinds import builtin_api
from reconcilekit.testing.apiserver.registry.table_convertor import COLUMNS_FILE, default_table

KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                  "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
NS = "<namespace>"  # the test's namespace, filled in when an object is created
NS_UID = "<namespace uid>"  # and its uid
CLOCK_COLUMNS = frozenset({"Age", "Last Seen", "First Seen", "Duration", "Last Schedule",
                           "Created At"})
CAPTURED = json.loads(gzip.decompress((files("reconcilekit.testing.apiserver") / "data"
                                       / COLUMNS_FILE).read_bytes()))["columns"]
POD_SPEC: dict[str, Any] = {"containers": [{"name": "app", "image": "nginx:1.25"},
                                           {"name": "side", "image": "busybox"}]}
TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "web", "tier": "front"}},
                            "spec": POD_SPEC}
SELECTOR: dict[str, Any] = {"matchLabels": {"app": "web"}, "matchExpressions": [
    {"key": "tier", "operator": "In", "values": ["front", "back"]}]}


@dataclass(frozen=True)
class Case:
    """Objects of one resource (``api``: its group version path, ``plural``), the status
    written to each (by name), and the cells kube-apiserver printed for each."""

    api: str
    plural: str
    objects: list[dict[str, Any]]
    expected: dict[str, list[Any]]
    status: dict[str, dict[str, Any]] = field(default_factory=dict)
    namespaced: bool = True

    @property
    def key(self) -> str:
        group = self.api.removeprefix("/apis/").rpartition("/")[0] if "/apis/" in self.api \
            else ""
        return f"{self.plural}.{group}" if group else self.plural


def obj(api_version: str, kind: str, name: str, **fields: Any) -> dict[str, Any]:
    meta = fields.pop("metadata", {})
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **meta},
            **fields}


CASES = [
    Case("/api/v1", "services", [
        obj("v1", "Service", "plain", spec={"selector": {"app": "web", "tier": "front"},
                                            "ports": [{"name": "http", "port": 80},
                                                      {"name": "dns", "port": 53,
                                                       "protocol": "UDP"}]}),
        obj("v1", "Service", "headless", spec={"clusterIP": "None", "ports": [{"port": 9}]}),
        obj("v1", "Service", "balanced", spec={"type": "LoadBalancer", "ports": [
            {"port": 443, "nodePort": 30443}], "externalIPs": ["203.0.113.9"]}),
        obj("v1", "Service", "pending", spec={"type": "LoadBalancer", "ports": [
            {"port": 443, "nodePort": 30444}]}),
        obj("v1", "Service", "named", spec={"type": "ExternalName",
                                            "externalName": "db.example.com"}),
    ], {
        "plain": ["plain", "ClusterIP", "<none>", "80/TCP,53/UDP", "app=web,tier=front"],
        "headless": ["headless", "ClusterIP", "<none>", "9/TCP", "<none>"],
        "balanced": [
            "balanced", "LoadBalancer", "198.51.100.2,lb.example.com,203.0.113.9", "443:30443/TCP",
            "<none>"],
        "pending": ["pending", "LoadBalancer", "<pending>", "443:30444/TCP", "<none>"],
        "named": ["named", "ExternalName", "db.example.com", "<none>", "<none>"],
    }, status={"balanced": {"loadBalancer": {"ingress": [
        {"ip": "198.51.100.2"}, {"hostname": "lb.example.com"}, {"ip": "198.51.100.2"}]}}}),
    Case("/api/v1", "endpoints", [
        obj("v1", "Endpoints", "many", subsets=[
            {"addresses": [{"ip": "10.1.0.1"}, {"ip": "10.1.0.2"}],
             "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]},
            {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 8080}]}]),
        obj("v1", "Endpoints", "bare", subsets=[{"addresses": [{"ip": "10.1.0.3"}]}]),
        obj("v1", "Endpoints", "none"),
    ], {
        "many": ["many", "10.1.0.1:80,10.1.0.2:80,10.1.0.1:81 + 2 more..."],
        "bare": ["bare", "10.1.0.3"],
        "none": ["none", "<none>"],
    }),
    Case("/api/v1", "podtemplates", [
        obj("v1", "PodTemplate", "tmpl", template=TEMPLATE),
        obj("v1", "PodTemplate", "plain", template={"spec": {"containers": [
            {"name": "one", "image": "alpine"}]}}),
    ], {
        "tmpl": ["tmpl", "app,side", "nginx:1.25,busybox", "app=web,tier=front"],
        "plain": ["plain", "one", "alpine", "<none>"],
    }),
    Case("/api/v1", "replicationcontrollers", [
        obj("v1", "ReplicationController", "rc", spec={
            "replicas": 0, "selector": {"app": "web", "tier": "front"}, "template": TEMPLATE}),
    ], {"rc": ["rc", 0, 0, 0, "app,side", "nginx:1.25,busybox", "app=web,tier=front"]}),
    Case("/api/v1", "persistentvolumeclaims", [
        obj("v1", "PersistentVolumeClaim", "claim", spec={
            "accessModes": ["ReadWriteOnce"], "storageClassName": "none-such",
            "resources": {"requests": {"storage": "1Gi"}}}),
        obj("v1", "PersistentVolumeClaim", "block", spec={
            "accessModes": ["ReadWriteMany", "ReadOnlyMany"], "volumeMode": "Block",
            "storageClassName": "", "resources": {"requests": {"storage": "2Gi"}}},
            metadata={"annotations": {
                "volume.beta.kubernetes.io/storage-class": "annotated"}}),
    ], {
        "claim": ["claim", "Pending", "", "", "", "none-such", "Filesystem"],
        "block": ["block", "Pending", "", "", "", "annotated", "Block"],
    }),
    Case("/api/v1", "events", [
        obj("v1", "Event", "ev.1", involvedObject={"kind": "Pod", "name": "web-0", "namespace": NS,
                                                    "fieldPath": "spec.containers{app}"},
            reason="Pulled", message="  pulled the image  ", type="Normal", count=3,
            source={"component": "kubelet", "host": "node-1"},
            firstTimestamp="2026-01-01T00:00:00Z", lastTimestamp="2026-01-01T00:05:00Z"),
        obj("v1", "Event", "ev.2", involvedObject={"kind": "Node", "namespace": NS},
            reason="Rebooted", type="Warning", reportingComponent="ctl", reportingInstance="ctl-1",
            eventTime="2026-01-01T00:00:00.000000Z", action="Reboot"),
    ], {
        "ev.1": [
            "Normal", "Pulled", "pod/web-0", "spec.containers{app}", "kubelet, node-1",
            "pulled the image", 3, "ev.1"],
        "ev.2": ["Warning", "Rebooted", "node", "", "ctl, ctl-1", "", 1, "ev.2"],
    }),
    Case("/api/v1", "resourcequotas", [
        obj("v1", "ResourceQuota", "quota", spec={"hard": {"pods": "10", "limits.cpu": "2",
                                                           "requests.memory": "1Gi"}}),
    ], {"quota": ["quota", "pods: 0/10, requests.memory: 0/1Gi", "limits.cpu: 0/2"]},
        status={"quota": {"hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi"},
                          "used": {"pods": "0", "limits.cpu": "0", "requests.memory": "0"}}}),
    Case("/api/v1", "nodes", [
        obj("v1", "Node", "printed-node", metadata={"labels": {
            "node-role.kubernetes.io/control-plane": "",
            "kubernetes.io/role": "worker"}}, spec={"unschedulable": True}),
    ], {
        "printed-node": [
            "printed-node", "NotReady,SchedulingDisabled", "control-plane,worker", "v1.28.7",
            "10.0.0.7", "<none>", "Debian", "<unknown>", "containerd://1.7"],
    }, namespaced=False, status={"printed-node": {
        "conditions": [{"type": "Ready", "status": "False", "reason": "Down",
                        "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}],
        "addresses": [{"type": "InternalIP", "address": "10.0.0.7"},
                      {"type": "Hostname", "address": "printed-node"}],
        "nodeInfo": {"kubeletVersion": "v1.28.7", "osImage": "Debian",
                     "kernelVersion": "", "containerRuntimeVersion": "containerd://1.7",
                     "machineID": "", "systemUUID": "", "bootID": "", "kubeProxyVersion": "",
                     "operatingSystem": "linux", "architecture": "amd64"}}}),
    Case("/api/v1", "persistentvolumes", [
        obj("v1", "PersistentVolume", "printed-pv", spec={
            "capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOncePod"],
            "hostPath": {"path": "/tmp/pv"}, "storageClassName": "slow",
            "claimRef": {"namespace": "elsewhere", "name": "claim"}}),
    ], {
        "printed-pv": [
            "printed-pv", "5Gi", "RWOP", "Retain", "Available", "elsewhere/claim", "slow", "",
            "Filesystem"],
    }, namespaced=False, status={"printed-pv": {"phase": "Available"}}),
    Case("/apis/apps/v1", "deployments", [
        obj("apps/v1", "Deployment", "web", spec={"replicas": 0, "selector": SELECTOR,
                                                  "template": TEMPLATE}),
    ], {
        "web": [
            "web", "0/0", 0, 0, "app,side", "nginx:1.25,busybox", "app=web,tier in (back,front)"],
    }),
    Case("/apis/apps/v1", "replicasets", [
        obj("apps/v1", "ReplicaSet", "web", spec={"replicas": 0, "selector": SELECTOR,
                                                  "template": TEMPLATE}),
    ], {"web": ["web", 0, 0, 0, "app,side", "nginx:1.25,busybox", "app=web,tier in (back,front)"]}),
    Case("/apis/apps/v1", "statefulsets", [
        obj("apps/v1", "StatefulSet", "web", spec={"replicas": 0, "serviceName": "web",
                                                   "selector": SELECTOR,
                                                   "template": TEMPLATE}),
    ], {"web": ["web", "0/0", "app,side", "nginx:1.25,busybox"]}),
    Case("/apis/apps/v1", "daemonsets", [
        obj("apps/v1", "DaemonSet", "web", spec={"selector": SELECTOR, "template": {
            **TEMPLATE, "spec": {**POD_SPEC, "nodeSelector": {"disk": "ssd",
                                                              "zone": "a"}}}}),
    ], {
        "web": [
            "web", 0, 0, 0, 0, 0, "disk=ssd,zone=a", "app,side", "nginx:1.25,busybox",
            "app=web,tier in (back,front)"],
    }),
    Case("/apis/apps/v1", "controllerrevisions", [
        obj("apps/v1", "ControllerRevision", "rev", revision=3, data={"a": 1},
            metadata={"ownerReferences": [{"apiVersion": "v1", "kind": "Namespace",
                                           "name": NS, "controller": True, "uid": NS_UID}]}),
        obj("apps/v1", "ControllerRevision", "loose", revision=1, data={}),
    ], {"rev": ["rev", f"namespace/{NS}", 3], "loose": ["loose", "<none>", 1]}),
    Case("/apis/batch/v1", "jobs", [
        obj("batch/v1", "Job", "three", spec={"suspend": True, "completions": 3,
                                              "manualSelector": True, "selector": SELECTOR,
                                              "template": {**TEMPLATE, "spec": {
                                                  **POD_SPEC, "restartPolicy": "Never"}}}),
        obj("batch/v1", "Job", "wide", spec={"suspend": True, "parallelism": 4,
                                             "manualSelector": True, "selector": SELECTOR,
                                             "completions": None, "template": {
                                                 **TEMPLATE, "spec": {**POD_SPEC,
                                                          "restartPolicy": "Never"}}}),
    ], {
        "three": ["three", "0/3", "app,side", "nginx:1.25,busybox", "app=web,tier in (back,front)"],
        "wide": [
            "wide", "0/1 of 4", "app,side", "nginx:1.25,busybox", "app=web,tier in (back,front)"],
    }),
    Case("/apis/batch/v1", "cronjobs", [
        obj("batch/v1", "CronJob", "nightly", spec={
            "schedule": "0 3 * * *", "suspend": True, "jobTemplate": {"spec": {
                "template": {"spec": {**POD_SPEC, "restartPolicy": "Never"}}}}}),
    ], {"nightly": [
        "nightly", "0 3 * * *", "True", 0, "app,side", "nginx:1.25,busybox", "<none>"]}),
    Case("/apis/autoscaling/v2", "horizontalpodautoscalers", [
        obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                               "name": "missing"},
            "minReplicas": 2, "maxReplicas": 5, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {
                    "type": "Utilization", "averageUtilization": 80}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {
                    "type": "AverageValue", "averageValue": "500Mi"}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {
                    "type": "AverageValue", "averageValue": "10"}}}]}),
    ], {
        "hpa": [
            "hpa", "Deployment/missing", "<unknown>/80%, <unknown>/500Mi + 1 more...", "2", 5, 0],
    }),
    Case("/apis/autoscaling/v1", "horizontalpodautoscalers", [
        obj("autoscaling/v1", "HorizontalPodAutoscaler", "hpa1", spec={
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
                               "name": "missing"}, "maxReplicas": 3,
            "targetCPUUtilizationPercentage": 60}),
    ], {"hpa1": ["hpa1", "Deployment/missing", "<unknown>/60%", "1", 3, 0]}),
    Case("/apis/networking.k8s.io/v1", "ingresses", [
        obj("networking.k8s.io/v1", "Ingress", "ing", spec={
            "ingressClassName": "nginx", "tls": [{"hosts": ["a.example.com"]}],
            "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}, {},
                      {"host": "c.example.com"}, {"host": "d.example.com"}]}),
        obj("networking.k8s.io/v1", "Ingress", "catchall", spec={"defaultBackend": {
            "service": {"name": "web", "port": {"number": 80}}}}),
    ], {
        "ing": [
            "ing", "nginx", "a.example.com,b.example.com,c.example.com + 2 more...", "192.0.2.1",
            "80, 443"],
        "catchall": ["catchall", "<none>", "*", "", "80"],
    }, status={"ing": {"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}}}),
    Case("/apis/networking.k8s.io/v1", "ingressclasses", [
        obj("networking.k8s.io/v1", "IngressClass", "printed-class", spec={
            "controller": "example.com/ingress", "parameters": {
                "apiGroup": "example.com", "kind": "Params", "name": "p",
                "scope": "Cluster"}}),
    ], {"printed-class": ["printed-class", "example.com/ingress", "Params.example.com/p"]},
        namespaced=False),
    Case("/apis/networking.k8s.io/v1", "networkpolicies", [
        obj("networking.k8s.io/v1", "NetworkPolicy", "all", spec={"podSelector": {}}),
        obj("networking.k8s.io/v1", "NetworkPolicy", "some", spec={"podSelector": SELECTOR}),
    ], {"all": ["all", "<none>"], "some": ["some", "app=web,tier in (back,front)"]}),
    Case("/apis/policy/v1", "poddisruptionbudgets", [
        obj("policy/v1", "PodDisruptionBudget", "least", spec={"minAvailable": 2,
                                                               "selector": SELECTOR}),
        obj("policy/v1", "PodDisruptionBudget", "most", spec={"maxUnavailable": "50%",
                                                              "selector": SELECTOR}),
    ], {"least": ["least", "2", "N/A", 0], "most": ["most", "N/A", "50%", 0]}),
    Case("/apis/rbac.authorization.k8s.io/v1", "rolebindings", [
        obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", roleRef={
            "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            subjects=[{"kind": "User", "name": "ann", "apiGroup": "rbac.authorization.k8s.io"},
                      {"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"},
                      {"kind": "Group", "name": "devs",
                       "apiGroup": "rbac.authorization.k8s.io"},
                      {"kind": "ServiceAccount", "name": "robot", "namespace": "ops"}]),
    ], {"rb": ["rb", "ClusterRole/view", "ann, bob", "devs", "ops/robot"]}),
    Case("/apis/storage.k8s.io/v1", "storageclasses", [
        obj("storage.k8s.io/v1", "StorageClass", "printed-default", provisioner="example.com/p",
            allowVolumeExpansion=True, volumeBindingMode="WaitForFirstConsumer",
            metadata={"annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}),
        obj("storage.k8s.io/v1", "StorageClass", "printed-plain", provisioner="example.com/p"),
    ], {
        "printed-default": [
            "printed-default (default)", "example.com/p", "Delete", "WaitForFirstConsumer", True],
        "printed-plain": ["printed-plain", "example.com/p", "Delete", "Immediate", False],
    }, namespaced=False),
    Case("/apis/scheduling.k8s.io/v1", "priorityclasses", [
        obj("scheduling.k8s.io/v1", "PriorityClass", "printed-priority", value=1000),
    ], {"printed-priority": ["printed-priority", 1000, False]}, namespaced=False),
    Case("/apis/node.k8s.io/v1", "runtimeclasses", [
        obj("node.k8s.io/v1", "RuntimeClass", "printed-runtime", handler="runsc"),
    ], {"printed-runtime": ["printed-runtime", "runsc"]}, namespaced=False),
    Case("/apis/discovery.k8s.io/v1", "endpointslices", [
        obj("discovery.k8s.io/v1", "EndpointSlice", "slice", addressType="IPv4",
            ports=[{"name": "http", "port": 80}, {"name": "named"}, {}, {"name": "b", "port": 81}],
            endpoints=[{"addresses": ["10.2.0.1", "10.2.0.2"]},
                       {"addresses": ["10.2.0.3", "10.2.0.4"]}]),
        obj("discovery.k8s.io/v1", "EndpointSlice", "empty", addressType="FQDN"),
    ], {
        "slice": [
            "slice", "IPv4", "80,named, + 1 more...", "10.2.0.1,10.2.0.2,10.2.0.3 + 1 more..."],
        "empty": ["empty", "FQDN", "<unset>", "<unset>"],
    }),
    Case("/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", [
        obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
            "printed-hooks", webhooks=[{
                "name": f"h{i}.example.com", "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"url": "https://hooks.example.com/validate"},
                "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                           "operations": ["CREATE"], "resources": ["nothings"]}]}
                for i in (1, 2)]),
    ], {"printed-hooks": ["printed-hooks", 2]}, namespaced=False),
    Case("/apis/coordination.k8s.io/v1", "leases", [
        obj("coordination.k8s.io/v1", "Lease", "held", spec={"holderIdentity": "me"}),
        obj("coordination.k8s.io/v1", "Lease", "free"),
    ], {"held": ["held", "me"], "free": ["free", ""]}),
]


def _in_namespace(value: Any, namespace: str, uid: str) -> Any:
    if isinstance(value, dict):
        return {k: _in_namespace(v, namespace, uid) for k, v in value.items()}
    if isinstance(value, list):
        return [_in_namespace(v, namespace, uid) for v in value]
    if isinstance(value, str):
        return value.replace(NS_UID, uid).replace(NS, namespace)
    return value


async def _table(apiserver: Cluster, path: str) -> dict[str, Any]:
    got = await apiserver.request("GET", path, headers={"Accept": KUBECTL_ACCEPT})
    assert got.status == 200, got
    return dict(got.body)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.plural}.{c.api}")
async def test_built_in_kinds_print_as_kube_apiserver_does(apiserver: Cluster,
                                                          case: Case) -> None:
    where = f"{case.api}/namespaces/{apiserver.namespace}" if case.namespaced else case.api
    collection = f"{where}/{case.plural}"
    names = [o["metadata"]["name"] for o in case.objects]
    ns = await apiserver.request("GET", f"/api/v1/namespaces/{apiserver.namespace}")
    uid = ns.body["metadata"]["uid"]
    try:
        for sample in case.objects:
            made = await apiserver.request("POST", collection,
                                           json=_in_namespace(sample, apiserver.namespace, uid))
            assert made.status == 201, made
            if (status := case.status.get(sample["metadata"]["name"])) is not None:
                put = await apiserver.request(
                    "PATCH", f"{collection}/{sample['metadata']['name']}/status",
                    json={"status": status}, content_type="application/merge-patch+json")
                assert put.status == 200, put
        table = await _table(apiserver, collection)
        assert table["columnDefinitions"] == CAPTURED[case.key]
        clock = [i for i, c in enumerate(table["columnDefinitions"])
                 if c["name"] in CLOCK_COLUMNS or c["name"] == "Cluster-IP"]
        rows = {row["object"]["metadata"]["name"]: [
            c for i, c in enumerate(row["cells"]) if i not in clock] for row in table["rows"]}
        expected = _in_namespace(case.expected, apiserver.namespace, uid)
        assert {n: rows.get(n) for n in names} == expected
        for name in names:  # a get prints the one object as the list does
            one = await _table(apiserver, f"{collection}/{name}")
            assert [c for i, c in enumerate(one["rows"][0]["cells"]) if i not in clock] \
                == expected[name]
    finally:
        if not case.namespaced:
            for name in names:
                await apiserver.request("DELETE", f"{collection}/{name}")


# Kinds kube-apiserver prints with columns of their own that the in-process server
# prints with the default ones (Name, Created At): none an operator commonly owns.
NOT_PRINTED = frozenset({
    "apiservices.apiregistration.k8s.io",
    "certificatesigningrequests.certificates.k8s.io", "csidrivers.storage.k8s.io",
    "csinodes.storage.k8s.io", "volumeattachments.storage.k8s.io",
    "flowschemas.flowcontrol.apiserver.k8s.io",
    "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io"})


def test_every_built_in_kind_declares_kube_apiserver_s_columns() -> None:
    """Each served kind's convertor declares the columns kube-apiserver declared for it
    (the default Name and Created At included), but for the kinds left unprinted."""
    strategies = served_strategies()
    served = {f"{t.resource.plural}.{t.resource.group}".removesuffix("."): t
              for t in builtin_api().types}
    printed = {key: [dict(c) for c in strategies.of(served[key]).table_convertor(
        served[key]).columns] for key in CAPTURED if key in served}
    assert set(CAPTURED) - set(printed) <= NOT_PRINTED  # captured but not served
    differ = {key for key, columns in printed.items() if columns != CAPTURED[key]}
    assert differ == NOT_PRINTED & set(printed)
    assert len(printed) - len(differ) >= 40
    assert {key for key in CAPTURED if key not in differ
            and CAPTURED[key] == [dict(c) for c in default_table().columns]} == {
        "limitranges", "roles.rbac.authorization.k8s.io",
        "clusterroles.rbac.authorization.k8s.io", "csistoragecapacities.storage.k8s.io",
        "customresourcedefinitions.apiextensions.k8s.io"}
