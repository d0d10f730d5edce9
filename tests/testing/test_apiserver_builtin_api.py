"""Every built-in resource of kube-apiserver v1.28, as its captured discovery lists it.

The capture (``reconcilekit/testing/apiserver/data/kube-apiserver-1.28-discovery.json``,
written by ``tools/capture_builtin_api.py``) is kube-apiserver's own answer; on
both backends the live discovery must be that answer, but for the resources the
in-process server leaves out (``LEFT_OUT``, docs/testing.md says why).
"""

from __future__ import annotations

import importlib.resources
import json
import subprocess
import sys
from typing import Any

import pytest

from reconcilekit.testing import Cluster
from reconcilekit.testing.apiserver.machinery.builtin_kinds import DATA_FILE, LEFT_OUT

CAPTURE: dict[str, Any] = json.loads(
    (importlib.resources.files("reconcilekit.testing.apiserver") / "data" / DATA_FILE)
    .read_text())


def _served(gv: str, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    group = gv.rpartition("/")[0]
    return [e for e in entries if (group, e["name"]) not in LEFT_OUT]


@pytest.mark.parametrize("gv", sorted(CAPTURE["resources"]))
async def test_every_group_version_is_discovered_as_kube_apiserver_lists_it(
        apiserver: Cluster, gv: str) -> None:
    path = "/api/v1" if gv == "v1" else f"/apis/{gv}"
    got = await apiserver.request("GET", path)
    expected = _served(gv, CAPTURE["resources"][gv])
    if not expected:  # authorization.k8s.io: only reviews, all left out in-process
        assert got.status == (404 if apiserver.in_process else 200), got
        return
    assert got.status == 200, got
    assert got.body["groupVersion"] == gv
    assert _served(gv, got.body["resources"]) == expected


def _served_groups() -> list[dict[str, Any]]:
    return [g for g in CAPTURE["groups"] if any(
        _served(v["groupVersion"], CAPTURE["resources"][v["groupVersion"]])
        for v in g["versions"])]


async def test_groups_are_listed_in_kube_apiserver_order_with_their_preferred_version(
        apiserver: Cluster) -> None:
    got = await apiserver.request("GET", "/apis")
    expected = _served_groups()
    names = {g["name"] for g in expected}
    live = [g for g in got.body["groups"] if g["name"] in names]
    assert live == expected
    builtin = [g for g in got.body["groups"] if g in CAPTURE["groups"]]
    assert got.body["groups"][:len(builtin)] == builtin  # custom resources' groups follow
    apps = await apiserver.request("GET", "/apis/autoscaling")
    assert apps.body["preferredVersion"] == {"groupVersion": "autoscaling/v2", "version": "v2"}


async def test_a_deployment_a_service_and_a_job_are_served(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for path in (f"/apis/apps/v1/namespaces/{ns}/deployments", f"/api/v1/namespaces/{ns}/services",
                 f"/apis/batch/v1/namespaces/{ns}/jobs", "/apis/rbac.authorization.k8s.io/v1/"
                 "clusterroles", f"/apis/networking.k8s.io/v1/namespaces/{ns}/ingresses"):
        listed = await apiserver.request("GET", path)
        assert listed.status == 200, (path, listed)
        assert listed.body["kind"].endswith("List")


async def test_subresources_kube_apiserver_does_not_have_are_404(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for path in (f"/api/v1/namespaces/{ns}/configmaps/x/scale",  # no scale
                 f"/apis/apps/v1/namespaces/{ns}/daemonsets/x/scale",
                 f"/apis/apps/v1/namespaces/{ns}/controllerrevisions/x/status"):  # no status
        got = await apiserver.request("GET", path)
        assert got.status == 404, (path, got)


def test_the_capture_is_read_when_a_server_is_made_not_at_import() -> None:
    script = (
        "import reconcilekit, reconcilekit.testing\n"
        "from reconcilekit.testing.apiserver.machinery.builtin_kinds import builtin_api\n"
        "assert builtin_api.cache_info().currsize == 0, 'read at import'\n"
        "reconcilekit.testing.APIServer()\n"
        "assert builtin_api.cache_info().currsize == 1, 'not read by the server'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
