"""A workload's ``status`` subresource refuses counts kube-apiserver 1.28 refuses.

Controllers write their workload's status; kube-apiserver validates the
counts (none negative, none above the one bounding it). Every expectation was
recorded on kube-apiserver v1.28.7; the tests run on both backends.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconcilekit.testing import Cluster

MERGE = {"Content-Type": "application/merge-patch+json"}


def _workload(api_version: str, kind: str) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "w"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}],
                         "restartPolicy": "Never" if kind == "Job" else "Always"}}
    spec: dict[str, Any] = {"template": template}
    if kind == "Job":
        spec["suspend"] = True
    else:
        spec["selector"] = {"matchLabels": {"app": "w"}}
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        spec["replicas"] = 0
    if kind == "ReplicationController":
        spec = {"replicas": 0, "selector": {"app": "w"}, "template": template}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "w"}, "spec": spec}


CASES: list[tuple[str, str, dict[str, Any], str]] = [
    ("apps/v1", "StatefulSet", {"replicas": 1, "readyReplicas": 3},
     "status.readyReplicas: Invalid value: 3: cannot be greater than status.replicas"),
    ("apps/v1", "StatefulSet", {"replicas": -1},
     "[status.replicas: Invalid value: -1: must be greater than or equal to 0, "
     + ", ".join(f"status.{n}: Invalid value: 0: cannot be greater than status.replicas"
                 for n in ("readyReplicas", "currentReplicas", "updatedReplicas",
                           "availableReplicas")) + "]"),
    ("apps/v1", "StatefulSet", {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2},
     "status.availableReplicas: Invalid value: 2: cannot be greater than "
     "status.readyReplicas"),
    ("apps/v1", "Deployment", {"replicas": 1, "updatedReplicas": 2},
     "status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas"),
    ("apps/v1", "Deployment", {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2},
     "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"),
    ("apps/v1", "Deployment", {"unavailableReplicas": -2},
     "status.unavailableReplicas: Invalid value: -2: must be greater than or equal to 0"),
    ("apps/v1", "ReplicaSet", {"replicas": 1, "fullyLabeledReplicas": 2},
     "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than "
     "status.replicas"),
    ("v1", "ReplicationController", {"replicas": 1, "readyReplicas": 2},
     "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"),
    ("apps/v1", "DaemonSet", {"numberReady": -1},
     "status.numberReady: Invalid value: -1: must be greater than or equal to 0"),
    ("batch/v1", "Job", {"failed": -1},
     "status.failed: Invalid value: -1: must be greater than or equal to 0"),
]


@pytest.mark.parametrize(("api_version", "kind", "status", "message"), CASES,
                         ids=[f"{c[1]}-{'-'.join(c[2])}" for c in CASES])
async def test_a_status_write_with_counts_out_of_bounds_is_refused(
        apiserver: Cluster, api_version: str, kind: str, status: dict[str, Any],
        message: str) -> None:
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{prefix}/namespaces/{apiserver.namespace}/{kind.lower()}s"
    created = await apiserver.request("POST", path, json=_workload(api_version, kind))
    assert created.status == 201, created
    written = await apiserver.request("PATCH", f"{path}/w/status",
                                      json={"status": status}, headers=MERGE)
    assert written.status == 422, written
    group = api_version.rpartition("/")[0]
    shown = f"{kind}.{group}" if group else kind
    assert written.body["message"] == f'{shown} "w" is invalid: {message}'


async def test_a_status_write_within_bounds_is_stored(apiserver: Cluster) -> None:
    path = f"/apis/apps/v1/namespaces/{apiserver.namespace}/statefulsets"
    created = await apiserver.request("POST", path, json=_workload("apps/v1", "StatefulSet"))
    assert created.status == 201, created
    status = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 1}
    written = await apiserver.request("PATCH", f"{path}/w/status",
                                      json={"status": status}, headers=MERGE)
    assert written.status == 200, written
    assert written.body["status"]["readyReplicas"] == 2
