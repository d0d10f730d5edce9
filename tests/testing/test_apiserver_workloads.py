"""Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs and Services:
what kube-apiserver 1.28 fills in, refuses and answers on ``/scale``.

Every expectation was first recorded on kube-apiserver v1.28.7; the tests run
on both backends (``dryRun=All`` where a controller of kube-controller-manager
would otherwise change the answer).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reconcilekit.testing import Cluster

CONTAINER = {"name": "c", "image": "nginx"}
POD_SPEC_DEFAULTED = {
    "containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "Always",
                    "resources": {}, "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File"}],
    "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
    "schedulerName": "default-scheduler", "securityContext": {},
    "terminationGracePeriodSeconds": 30}


def _template(app: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [CONTAINER], **spec}}


def _selected(app: str) -> dict[str, Any]:
    return {"selector": {"matchLabels": {"app": app}}, "template": _template(app)}


def _defaulted_template(app: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"creationTimestamp": None, "labels": {"app": app}},
            "spec": {**POD_SPEC_DEFAULTED, **spec}}


CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], Any]] = [
    ("apps/v1", "Deployment", _selected("d"), {
        "progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "d"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
                     "type": "RollingUpdate"},
        "template": _defaulted_template("d")}, {}),
    ("apps/v1", "StatefulSet", _selected("s"), {
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "s"}}, "serviceName": "",
        "template": _defaulted_template("s"),
        "updateStrategy": {"rollingUpdate": {"partition": 0}, "type": "RollingUpdate"}},
        {"availableReplicas": 0, "replicas": 0}),
    ("apps/v1", "DaemonSet", _selected("ds"), {
        "revisionHistoryLimit": 10, "selector": {"matchLabels": {"app": "ds"}},
        "template": _defaulted_template("ds"),
        "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
                           "type": "RollingUpdate"}},
        {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
         "numberReady": 0}),
    ("apps/v1", "ReplicaSet", _selected("rs"), {
        "replicas": 1, "selector": {"matchLabels": {"app": "rs"}},
        "template": _defaulted_template("rs")}, {"replicas": 0}),
    ("batch/v1", "CronJob", {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
        "template": {"spec": {"restartPolicy": "OnFailure", "containers": [CONTAINER]}}}}}, {
        "concurrencyPolicy": "Allow", "failedJobsHistoryLimit": 1, "schedule": "*/5 * * * *",
        "successfulJobsHistoryLimit": 3, "suspend": False,
        "jobTemplate": {"metadata": {"creationTimestamp": None}, "spec": {"template": {
            "metadata": {"creationTimestamp": None},
            "spec": {**POD_SPEC_DEFAULTED, "restartPolicy": "OnFailure"}}}}}, {}),
]


def _path(apiserver: Cluster, api_version: str, kind: str) -> str:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    return f"{prefix}/namespaces/{apiserver.namespace}/{kind.lower()}s"


@pytest.mark.parametrize(("api_version", "kind", "spec", "defaulted", "status"), CASES,
                         ids=[c[1] for c in CASES])
async def test_a_minimal_workload_is_defaulted_as_kube_apiserver_defaults_it(
        apiserver: Cluster, api_version: str, kind: str, spec: dict[str, Any],
        defaulted: dict[str, Any], status: Any) -> None:
    got = await apiserver.request(
        "POST", _path(apiserver, api_version, kind) + "?dryRun=All",
        json={"apiVersion": api_version, "kind": kind, "metadata": {"name": "w"}, "spec": spec})
    assert got.status == 201, got
    assert got.body["spec"] == defaulted
    assert got.body["status"] == status
    assert got.body["metadata"]["generation"] == 1


async def test_a_job_gets_a_selector_and_labels_from_its_uid(apiserver: Cluster) -> None:
    got = await apiserver.request("POST", _path(apiserver, "batch/v1", "Job") + "?dryRun=All",
                                  json={"apiVersion": "batch/v1", "kind": "Job",
                                        "metadata": {"name": "j"}, "spec": {"template": {
                                            "spec": {"restartPolicy": "Never",
                                                     "containers": [CONTAINER]}}}})
    assert got.status == 201, got
    uid, spec = got.body["metadata"]["uid"], got.body["spec"]
    labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j",
              "controller-uid": uid, "job-name": "j"}
    assert got.body["metadata"]["labels"] == labels
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == labels
    assert {k: spec[k] for k in ("backoffLimit", "completionMode", "completions", "parallelism",
                                 "suspend")} == {"backoffLimit": 6, "completionMode": "NonIndexed",
                                                 "completions": 1, "parallelism": 1,
                                                 "suspend": False}
    assert got.body["status"] == {}


async def test_a_service_gets_a_cluster_ip_and_its_defaults(apiserver: Cluster) -> None:
    path = _path(apiserver, "v1", "Service")
    got = await apiserver.request("POST", path, json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    assert got.status == 201, got
    spec = got.body["spec"]
    assert spec["clusterIPs"] == [spec["clusterIP"]] and spec["clusterIP"].count(".") == 3
    assert {k: v for k, v in spec.items() if k not in ("clusterIP", "clusterIPs")} == {
        "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack", "ports": [{"port": 80, "protocol": "TCP",
                                                    "targetPort": 80}],
        "selector": {"app": "web"}, "sessionAffinity": "None", "type": "ClusterIP"}
    assert got.body["status"] == {"loadBalancer": {}}
    # an update that leaves the cluster IP out keeps it; changing it is refused
    body = copy.deepcopy(got.body)
    del body["spec"]["clusterIP"], body["spec"]["clusterIPs"]
    kept = await apiserver.request("PUT", f"{path}/web", json=body)
    assert kept.status == 200 and kept.body["spec"]["clusterIP"] == spec["clusterIP"], kept
    moved = await apiserver.request("PATCH", f"{path}/web", json={"spec": {
        "clusterIP": "10.0.0.99", "clusterIPs": ["10.0.0.99"]}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert moved.status == 422
    assert moved.body["message"] == ('Service "web" is invalid: spec.clusterIPs[0]: Invalid value:'
                                     ' []string{"10.0.0.99"}: may not change once set')
    headless = await apiserver.request("POST", path + "?dryRun=All", json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "hl"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}}})
    assert headless.body["spec"]["clusterIPs"] == ["None"], headless
    deleted = await apiserver.request("DELETE", f"{path}/web")  # answered with the object
    assert deleted.status == 200 and deleted.body["kind"] == "Service", deleted


async def test_the_validation_controllers_trip_on(apiserver: Cluster) -> None:
    deployments = _path(apiserver, "apps/v1", "Deployment")
    mismatch = await apiserver.request("POST", deployments, json={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
        "spec": {"selector": {"matchLabels": {"app": "x"}}, "template": _template("y")}})
    assert mismatch.status == 422
    assert mismatch.body["message"] == (
        'Deployment.apps "bad" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"y"}: `selector` does not match template `labels`')
    job = await apiserver.request("POST", _path(apiserver, "batch/v1", "Job"), json={
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "bad"},
        "spec": {"template": {"spec": {"containers": [CONTAINER]}}}})
    assert job.status == 422
    assert job.body["message"] == ('Job.batch "bad" is invalid: spec.template.spec.restartPolicy: '
                                   'Required value: valid values: "OnFailure", "Never"')
    ports = await apiserver.request("POST", _path(apiserver, "v1", "Service"), json={
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "bad"},
        "spec": {"ports": [{"port": 80, "name": "a"}, {"port": 81}]}})
    assert ports.status == 422
    assert ports.body["message"] == 'Service "bad" is invalid: spec.ports[1].name: Required value'
    created = await apiserver.request("POST", deployments, json={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": _selected("d")})
    assert created.status == 201
    deleted = await apiserver.request("DELETE", f"{deployments}/d?dryRun=All")
    assert deleted.body["kind"] == "Status" and deleted.body["status"] == "Success", deleted
    moved = await apiserver.request("PATCH", f"{deployments}/d", json={"spec": {
        "selector": {"matchLabels": {"x": "y"}},
        "template": {"metadata": {"labels": {"x": "y"}}}}},
        headers={"Content-Type": "application/merge-patch+json"})
    assert moved.status == 422
    assert moved.body["message"] == (
        'Deployment.apps "d" is invalid: spec.selector: Invalid value: v1.LabelSelector{'
        'MatchLabels:map[string]string{"app":"d", "x":"y"}, '
        'MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable')


@pytest.mark.parametrize("kind", ["Deployment", "StatefulSet", "ReplicaSet"])
async def test_the_scale_subresource_reads_and_writes_replicas(apiserver: Cluster,
                                                               kind: str) -> None:
    path = _path(apiserver, "apps/v1", kind)
    created = await apiserver.request("POST", path, json={
        "apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"},
        "spec": {**_selected("web"), "replicas": 0}})
    assert created.status == 201, created
    scale = await apiserver.request("GET", f"{path}/web/scale")
    assert scale.status == 200, scale
    meta = created.body["metadata"]
    assert scale.body["kind"] == "Scale" and scale.body["apiVersion"] == "autoscaling/v1"
    assert scale.body["metadata"]["uid"] == meta["uid"]
    assert scale.body["spec"] == {}  # replicas 0 is left out (omitempty)
    assert scale.body["status"]["selector"] == "app=web"
    patched = await apiserver.request("PATCH", f"{path}/web/scale",
                                      json={"spec": {"replicas": 3}},
                                      headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status == 200 and patched.body["spec"] == {"replicas": 3}, patched
    # kube-controller-manager writes the object meanwhile: a PUT without a
    # resourceVersion is unconditional; the create's resourceVersion is surely stale
    unconditional = {**patched.body, "metadata": {"name": "web"}, "spec": {"replicas": 2}}
    put = await apiserver.request("PUT", f"{path}/web/scale", json=unconditional)
    assert put.status == 200 and put.body["spec"] == {"replicas": 2}, put
    stale = await apiserver.request("PUT", f"{path}/web/scale", json={
        **unconditional, "metadata": {"name": "web",
                                      "resourceVersion": meta["resourceVersion"]}})
    assert stale.status == 409, stale
    obj = await apiserver.request("GET", f"{path}/web")
    assert obj.body["spec"]["replicas"] == 2 and obj.body["metadata"]["generation"] == 3
    negative = await apiserver.request("PUT", f"{path}/web/scale",
                                       json=dict(unconditional, spec={"replicas": -1}))
    assert negative.status == 422
    assert negative.body["message"] == ('Scale.autoscaling "web" is invalid: spec.replicas: '
                                        "Invalid value: -1: must be greater than or equal to 0")
    missing = await apiserver.request("GET", f"{path}/nope/scale")
    assert missing.status == 404
    named = "statefulsets" if kind == "StatefulSet" else f"{kind.lower()}s/scale"
    assert missing.body["message"] == f'{named}.apps "nope" not found'


async def test_a_workload_template_needs_containers_but_not_their_image(apiserver: Cluster) -> None:
    empty = await apiserver.request("POST", _path(apiserver, "apps/v1", "Deployment"), json={
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "empty"},
        "spec": {"selector": {"matchLabels": {"app": "e"}},
                 "template": {"metadata": {"labels": {"app": "e"}}, "spec": {}}}})
    assert empty.status == 422, empty
    assert empty.body["message"] == ('Deployment.apps "empty" is invalid: '
                                     "spec.template.spec.containers: Required value")
    path = _path(apiserver, "apps/v1", "StatefulSet")
    imageless = await apiserver.request("POST", f"{path}?dryRun=All", json={
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "imageless"},
        "spec": {"selector": {"matchLabels": {"app": "i"}},
                 "template": {"metadata": {"labels": {"app": "i"}},
                              "spec": {"containers": [{"name": "c"}]}}}})
    assert imageless.status == 201, imageless


async def test_a_controller_revision_needs_data(apiserver: Cluster) -> None:
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/controllerrevisions"
    revision = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": "rev"}, "revision": 1}
    refused = await apiserver.request("POST", path, json=revision)
    assert refused.status == 422, refused
    assert refused.body["message"] == ('ControllerRevision.apps "rev" is invalid: data: '
                                       "Required value: data is mandatory")
    created = await apiserver.request("POST", path, json={**revision, "data": {"a": 1}})
    assert created.status == 201, created


_CRON_POD = {"containers": [{"name": "c", "image": "nginx"}], "restartPolicy": "Never"}


@pytest.mark.parametrize(("schedule", "zone", "causes"), [
    ("not a schedule", None, [("spec.schedule", 'Invalid value: "not a schedule": expected '
                               "exactly 5 fields, found 3: [not a schedule]")]),
    ("61 * * * *", None, [("spec.schedule", 'Invalid value: "61 * * * *": end of range (61) '
                           "above maximum (59): 61")]),
    ("*/0 x 1-40 foo 7", None, [("spec.schedule", 'Invalid value: "*/0 x 1-40 foo 7": step of '
                                 "range should be a positive number: */0")]),
    ("5-1 * * * *", None, [("spec.schedule", 'Invalid value: "5-1 * * * *": beginning of range'
                            " (5) beyond end of range (1): 5-1")]),
    ("1-2-3 * * * */2/3", None, [("spec.schedule", 'Invalid value: "1-2-3 * * * */2/3": too '
                                  "many hyphens: 1-2-3")]),
    ("@every 5x", "Bad Zone/..", [
        ("spec.schedule", 'Invalid value: "@every 5x": failed to parse duration @every 5x: '
         'time: unknown unit "x" in duration "5x"'),
        ("spec.timeZone", 'Invalid value: "Bad Zone/..": unknown time zone Bad Zone/..')]),
    ("@fortnightly", "Local", [
        ("spec.schedule", 'Invalid value: "@fortnightly": unrecognized descriptor: '
         "@fortnightly"),
        ("spec.timeZone", 'Invalid value: "Local": timeZone must be an explicit time zone as '
         "defined in https://www.iana.org/time-zones")]),
    ("CRON_TZ=UTC 5 4 * * *", "UTC", [
        ("spec.schedule", 'Invalid value: "CRON_TZ=UTC 5 4 * * *": cannot use both timeZone '
         "field and TZ or CRON_TZ in schedule")]),
    ("@weekly", "Nowhere/Land", [("spec.timeZone", 'Invalid value: "Nowhere/Land": unknown '
                                  "time zone Nowhere/Land")]),
    ("", None, [("spec.schedule", "Required value")]),
    ("*/5 1-3 * JAN-MAR MON,FRI", "Europe/Paris", []),
    ("TZ=UTC */5 * * * *", None, []),
    ("@every 1h30m", None, []),
])
async def test_a_cronjob_schedule_is_read_as_kube_apiserver_reads_it(
        apiserver: Cluster, schedule: str, zone: str | None,
        causes: list[tuple[str, str]]) -> None:
    spec: dict[str, Any] = {"schedule": schedule,
                            "jobTemplate": {"spec": {"template": {"spec": _CRON_POD}}}}
    if zone is not None:
        spec["timeZone"] = zone
    got = await apiserver.request(
        "POST", f"/apis/batch/v1/namespaces/{apiserver.namespace}/cronjobs?dryRun=All",
        json={"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cron"},
              "spec": spec})
    if not causes:
        assert got.status == 201, got
        return
    assert got.status == 422, got
    assert [(c["field"], c["message"]) for c in got.body["details"]["causes"]] == causes


async def test_a_statefulset_spec_changes_only_where_kube_apiserver_lets_it(
        apiserver: Cluster) -> None:
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/statefulsets"
    created = await apiserver.request("POST", path, json={
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 0, "serviceName": "db", **_selected("db")}})
    assert created.status == 201, created
    forbidden = ("Forbidden: updates to statefulset spec for fields other than 'replicas', "
                 "'ordinals', 'template', 'updateStrategy', "
                 "'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden")
    for patch, causes in (
            ({"serviceName": "other", "podManagementPolicy": "Parallel"},
             [("spec", forbidden)]),
            ({"selector": {"matchLabels": {"app": "other"}}},
             [("spec.template.metadata.labels", 'Invalid value: map[string]string{"app":"db"}: '
               "`selector` does not match template `labels`"), ("spec", forbidden)])):
        refused = await apiserver.request("PATCH", f"{path}/db", json={"spec": patch},
                                          content_type="application/merge-patch+json")
        assert refused.status == 422, refused
        assert [(c["field"], c["message"]) for c in refused.body["details"]["causes"]] \
            == causes
    # a merge patch keeps the defaulted rollingUpdate, which only RollingUpdate may have;
    # maxUnavailable is dropped (its feature gate is off in 1.28)
    kept = await apiserver.request(
        "PATCH", f"{path}/db", json={"spec": {"updateStrategy": {
            "type": "OnDelete", "rollingUpdate": {"partition": 2, "maxUnavailable": "50%"}}}},
        content_type="application/merge-patch+json")
    assert kept.status == 422, kept
    assert kept.body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.updateStrategy.rollingUpdate",
        "message": "Invalid value: apps.RollingUpdateStatefulSetStrategy{Partition:2, "
                   "MaxUnavailable:(*intstr.IntOrString)(nil)}: only allowed for "
                   "updateStrategy 'RollingUpdate'"}]
    allowed = await apiserver.request(
        "PATCH", f"{path}/db", json={"spec": {"replicas": 0, "minReadySeconds": 5,
                                              "updateStrategy": {"type": "OnDelete",
                                                                 "rollingUpdate": None}}},
        content_type="application/merge-patch+json")
    assert allowed.status == 200, allowed
    assert allowed.body["spec"]["updateStrategy"] == {"type": "OnDelete"}


async def test_a_daemonset_s_template_generation_is_its_creator_s_and_kept(
        apiserver: Cluster) -> None:
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/daemonsets"
    made = await apiserver.request("POST", f"{path}?fieldManager=creator", json={
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
        "spec": _selected("agent")})
    assert made.status == 201, made
    key = "deprecated.daemonset.template.generation"
    assert made.body["metadata"]["annotations"] == {key: "1"}
    owned = made.body["metadata"]["managedFields"][0]
    assert owned["manager"] == "creator"
    assert owned["fieldsV1"]["f:metadata"] == {"f:annotations": {".": {}, f"f:{key}": {}}}
    dropped = await apiserver.request(
        "PATCH", f"{path}/agent", json={"metadata": {"annotations": {key: None}}},
        content_type="application/merge-patch+json")
    assert dropped.status == 200, dropped
    assert dropped.body["metadata"]["annotations"] == {key: "1"}  # the stored one, back
    changed = await apiserver.request(
        "PATCH", f"{path}/agent", json={"spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "busybox"}]}}}},
        content_type="application/merge-patch+json")
    assert changed.status == 200, changed
    assert changed.body["metadata"]["annotations"] == {key: "2"}


async def test_a_job_s_template_and_completions_are_fixed(apiserver: Cluster) -> None:
    path = f"/apis/batch/v1/namespaces/{apiserver.namespace}/jobs"
    pod = {"containers": [CONTAINER], "restartPolicy": "Never"}
    for name, suspend in (("running", False), ("waiting", True)):
        made = await apiserver.request("POST", path, json={
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"suspend": suspend, "template": {"spec": pod}}})
        assert made.status == 201, made

    async def patched(name: str, spec: dict[str, Any]) -> Any:
        return await apiserver.request("PATCH", f"{path}/{name}", json={"spec": spec},
                                       content_type="application/merge-patch+json")
    image = {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}
    scheduling = {"template": {"metadata": {"labels": {"x": "y"}},
                               "spec": {"nodeSelector": {"disk": "ssd"}}}}
    for name, spec in (("running", image), ("running", scheduling), ("waiting", image)):
        refused = await patched(name, spec)
        assert refused.status == 422, refused
        cause = refused.body["details"]["causes"][0]
        assert cause["field"] == "spec.template"
        assert cause["message"].startswith("Invalid value: core.PodTemplateSpec{")
        assert cause["message"].endswith("}: field is immutable")
    allowed = await patched("waiting", scheduling)  # suspended, never started
    assert allowed.status == 200, allowed
    completions = await patched("running", {"completions": 2})
    assert completions.status == 422, completions
    assert completions.body["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "message": "Invalid value: 2: field is immutable",
        "field": "spec.completions"}]
    others = await patched("running", {"backoffLimit": 3, "parallelism": 2,
                                       "activeDeadlineSeconds": 100})
    assert others.status == 200, others
