"""The test fixtures leave a cluster as they found it (docs/testing.md, "Cleanup").

A namespace a test's operator left held by finalizers (a custom resource, a
ConfigMap, a Pod bound to a node no kubelet runs) is released and removed;
one that cannot be released fails its test naming the object and its
finalizer; a cluster-scoped object a test leaves fails the session naming
the test. The namespaces here are opened inside the ``apiserver`` fixture's
cluster: the in-process server (its namespace lifecycle plays
kube-controller-manager's part) or kube-apiserver with kube-controller-manager.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from apiserver_helpers import ANYTHING, crd

from reconcilekit.testing import Cluster, eventually
from reconcilekit.testing._cluster import open_cluster
from reconcilekit.testing._leftovers import RunWindow, Snapshot, leftovers
from reconcilekit.testing._namespace_release import TIMEOUT_ENV, RemovalTiming

HOLDER_CRD = crd("Holder", ANYTHING)
HOLDERS = "/apis/test.reconcilekit.dev/v1/namespaces/{}/holders"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/holders.test.reconcilekit.dev"
QUICK = RemovalTiming(timeout=60.0, release_after=0.5, release_every=2.0)
OPERATOR_GONE = "example.com/operator-gone"

pytest_plugins = ["pytester"]


async def test_a_namespace_held_by_what_a_stopped_operator_left_is_released_and_goes(
        apiserver: Cluster) -> None:
    async with open_cluster(configuration=apiserver.configuration, timing=QUICK,
                            test="held-by-finalizers") as inner:
        ns = inner.namespace
        await inner.install_crd(HOLDER_CRD)  # made here: deleted when the block ends
        made = [
            await inner.request("POST", HOLDERS.format(ns), json={
                "apiVersion": "test.reconcilekit.dev/v1", "kind": "Holder",
                "metadata": {"name": "claim", "finalizers": [OPERATOR_GONE]}}),
            await inner.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json={
                "metadata": {"name": "state", "finalizers": [OPERATOR_GONE]}}),
            # bound to a node no kubelet runs: a graceful delete never finishes by itself
            await inner.request("POST", f"/api/v1/namespaces/{ns}/pods", json={
                "metadata": {"name": "bound"}, "spec": {
                    "nodeName": "sim-node-0",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}),
        ]
        assert [m.status for m in made] == [201, 201, 201], made
    # the block returned: the namespace is gone, and the CRD it installed too
    assert (await apiserver.request("GET", f"/api/v1/namespaces/{ns}")).status == 404
    assert (await apiserver.request("GET", CRD_PATH)).status == 404


async def test_a_kind_only_another_version_of_its_group_serves_is_released_too(
        apiserver: Cluster) -> None:
    """Another CRD of the group served at v2 makes v2 the group's preferred version; a
    Holder, served at v1 alone, is still found (as kube-controller-manager finds it, in
    the first version that serves it) and released."""
    newer = crd("Newer", ANYTHING)
    newer["spec"]["versions"][0]["name"] = "v2"
    await apiserver.install_crd(newer)
    group = (await apiserver.request("GET", "/apis/test.reconcilekit.dev")).body
    assert group["preferredVersion"]["version"] == "v2"
    async with open_cluster(configuration=apiserver.configuration, timing=QUICK,
                            test="held-in-another-version") as inner:
        ns = inner.namespace
        await inner.install_crd(HOLDER_CRD)
        made = await inner.request("POST", HOLDERS.format(ns), json={
            "apiVersion": "test.reconcilekit.dev/v1", "kind": "Holder",
            "metadata": {"name": "claim", "finalizers": [OPERATOR_GONE]}})
        assert made.status == 201, made
    assert (await apiserver.request("GET", f"/api/v1/namespaces/{ns}")).status == 404


def test_leftovers_name_each_object_and_the_tests_running_when_it_was_made() -> None:
    crds = "customresourcedefinitions.apiextensions.k8s.io|CustomResourceDefinition"
    before = Snapshot({(crds, "kept.example.com"): "2026-01-01T00:00:00Z"})
    after = Snapshot({(crds, "kept.example.com"): "2026-01-01T00:00:00Z",
                      (crds, "left.example.com"): "2026-01-01T00:00:10Z",
                      (crds, "orphan.example.com"): "2026-01-01T00:01:00Z"})
    start = 1767225600.0  # 2026-01-01T00:00:00Z
    windows = [RunWindow("t.py::early", start + 1.5, start + 10.2),
               RunWindow("t.py::late", start + 10.4, start + 12.0),
               RunWindow("t.py::other", start + 20.0, start + 30.0)]
    found = leftovers(before, after, windows)
    assert [(f.name, f.tests) for f in found] == [
        ("left.example.com", ("t.py::early", "t.py::late")),  # whole seconds: both ran then
        ("orphan.example.com", ())]
    assert str(found[0]) == (
        "CustomResourceDefinition left.example.com (customresourcedefinitions."
        "apiextensions.k8s.io; created 2026-01-01T00:00:10Z, made by t.py::early or "
        "t.py::late)")
    assert "made while no test ran" in str(found[1])


def test_the_namespace_timeout_from_the_environment_is_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TIMEOUT_ENV, "9")
    assert RemovalTiming.from_env() == RemovalTiming(9.0, 3.0, 3.0)
    monkeypatch.setenv(TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match=f"{TIMEOUT_ENV}='soon' is not a number of seconds"):
        RemovalTiming.from_env()


HELD_TEST = '''
from reconcilekit.testing import Cluster

async def test_leaves_its_namespace_held(apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/configmaps", json={
        "metadata": {"name": "held", "finalizers": ["example.com/unknown"]}})
    assert made.status == 201, made
    # a webhook nobody serves refuses every update of a ConfigMap here: nothing can
    # take the finalizer off, and the configuration is left behind in the cluster
    made = await apiserver.request(
        "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        json={"metadata": {"name": f"refuse-{ns}"}, "webhooks": [{
            "name": "refuse.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None", "failurePolicy": "Fail", "timeoutSeconds": 2,
            "clientConfig": {"url": "https://127.0.0.1:1/refuse"},
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"],
                       "resources": ["configmaps"]}]}]})
    assert made.status == 201, made
    while (await apiserver.request(  # until kube-apiserver's informer has it
            "PATCH", f"/api/v1/namespaces/{ns}/configmaps/held?dryRun=All",
            json={"metadata": {"labels": {"probe": "yes"}}},
            content_type="application/merge-patch+json")).status < 400:
        pass
'''


async def test_a_namespace_nothing_can_release_fails_its_test_naming_what_holds_it(
        apiserver: Cluster, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    kubeconfig = apiserver.kubeconfig_path
    if apiserver.server is not None:
        kubeconfig = apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")
    assert kubeconfig is not None
    pytester.makepyfile(test_held=HELD_TEST)
    monkeypatch.setenv("RECONCILEKIT_TEST_KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv(TIMEOUT_ENV, "3")
    # in a thread: the in-process server answers on this test's event loop meanwhile
    result = await anyio.to_thread.run_sync(lambda: pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-o", "asyncio_mode=auto",
        "-o", "asyncio_default_fixture_loop_scope=function", timeout=170))
    out = result.stdout.str()
    found = re.search(r"namespace (rk-test-[0-9a-f]+) \(made for test_held\.py::"
                      r"test_leaves_its_namespace_held\) is still there 3s after its "
                      r"deletion", out)
    try:
        assert found, out
        assert result.ret == pytest.ExitCode.TESTS_FAILED, out
        assert "ERROR at teardown of test_leaves_its_namespace_held" in out, out
        assert "ConfigMap held (finalizers: example.com/unknown): removing its " \
               "finalizers answered" in out, out
        assert re.search(r"ValidatingWebhookConfiguration refuse-rk-test-[0-9a-f]+ "
                         r"\(validatingwebhookconfigurations\.admissionregistration\.k8s\.io; "
                         r"created \S+, made by test_held\.py::"
                         r"test_leaves_its_namespace_held\)", out), out
        assert "1 passed, 2 errors" in out, out
    finally:
        await _clean_up_after(apiserver, found.group(1) if found else None)


async def _clean_up_after(apiserver: Cluster, ns: str | None) -> None:
    """Remove what the inner session was made to leave."""
    if ns is None:
        return
    await apiserver.request(
        "DELETE", f"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/"
                  f"refuse-{ns}")

    async def released() -> bool:
        got = await apiserver.request(
            "PATCH", f"/api/v1/namespaces/{ns}/configmaps/held",
            json={"metadata": {"finalizers": None}},
            content_type="application/merge-patch+json")
        return got.status in (200, 404)

    await eventually(released, within=30, what="the held ConfigMap released")

    async def gone() -> Any:
        return (await apiserver.request("GET", f"/api/v1/namespaces/{ns}")).status == 404

    await eventually(gone, within=60, what=f"namespace {ns} gone")

