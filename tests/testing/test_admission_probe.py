"""Optional admission plugins, found by what a cluster admits (docs/testing.md, "Admission
plugins a cluster may not run").

The probe is checked against in-process servers with the plugin off and on
(the same probe finds it on kube-apiserver: ``test_control_plane.py``), and
the ``admission_plugin`` marker in a pytest session of its own whose cluster
(reached through a kubeconfig with ``insecure-skip-tls-verify``) runs
kube-apiserver's default plugins only.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import anyio
import pytest

from reconcilekit.testing import APIServer, Cluster
from reconcilekit.testing._admission_probe import (
    AdmissionPlugins,
    AdmissionProbeError,
    admission_plugin_enabled,
)
from reconcilekit.testing._control_plane import insecure_kubeconfig
from reconcilekit.testing.apiserver.kubeconfig import write_kubeconfig

pytest_plugins = ["pytester"]

PLUGIN = "OwnerReferencesPermissionEnforcement"
ROOT = Path(__file__).resolve().parents[2]
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"


@pytest.fixture(autouse=True)
def _this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest sessions import reconcilekit (and its pytest plugin) from this
    checkout, whatever the installed one is."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))


async def _probe(plugins: tuple[str, ...]) -> tuple[bool, APIServer, list[int]]:
    """The probe's answer on a server with ``plugins``; what the server then holds in
    ``default``: Roles, RoleBindings and ConfigMaps, counted."""
    async with APIServer(enable_admission_plugins=plugins) as server:
        cluster = Cluster(server.configuration(), server=server)
        try:
            found = await admission_plugin_enabled(cluster, PLUGIN, namespace="default")
            held = [len((await cluster.request("GET", path)).body["items"]) for path in (
                f"{RBAC}/roles", f"{RBAC}/rolebindings",
                "/api/v1/namespaces/default/configmaps")]
        finally:
            await cluster.close()
    return found, server, held


async def test_the_probe_finds_the_plugin_by_what_the_server_admits_and_leaves_nothing(
        ) -> None:
    off, server, held = await _probe(())
    assert off is False
    # its Role and RoleBinding deleted, the dry-run ConfigMap never stored (the root CA
    # publisher's kube-root-ca.crt is the namespace's only one)
    assert held == [0, 0, 1]
    assert server.request_count("create", "configmaps") == 1
    on, server, held = await _probe((PLUGIN,))
    assert on is True
    assert held == [0, 0, 1]


async def test_a_probe_is_made_once_and_an_unknown_plugin_is_refused() -> None:
    plugins = AdmissionPlugins()
    async with APIServer() as server:
        cluster = Cluster(server.configuration(), server=server)
        try:
            for _ in range(3):
                assert await plugins.enabled(cluster, PLUGIN, namespace="default") is False
            assert server.request_count("create", "roles") == 1
            assert plugins.known() == {PLUGIN: False}
            with pytest.raises(ValueError, match=rf"no probe for the admission plugin "
                                                 rf"'AlwaysDeny'; the plugins a probe can "
                                                 rf"find: {PLUGIN}"):
                await plugins.enabled(cluster, "AlwaysDeny", namespace="default")
            with pytest.raises(AdmissionProbeError, match=r"creating .*/namespaces/gone/roles/"
                                                          r"reconcilekit-admission-probe-\w+ "
                                                          r"answered 404"):
                await admission_plugin_enabled(cluster, PLUGIN, namespace="gone")
        finally:
            await cluster.close()


MARKED_TESTS = f'''
import pytest

@pytest.mark.admission_plugin("{PLUGIN}")
async def test_needs_the_plugin(apiserver):
    raise AssertionError("ran on a cluster without the plugin")

@pytest.mark.admission_plugin("{PLUGIN}", required=False)
async def test_either_way(apiserver, admission_plugin_enabled):
    assert await admission_plugin_enabled("{PLUGIN}") is False

async def test_the_insecure_kubeconfig_is_used_as_is(apiserver):
    assert apiserver.configuration.verify_ssl is False
    assert apiserver.configuration.ssl_ca_cert is None
    assert (await apiserver.request("GET", "/api/v1/namespaces")).status == 200
'''


async def test_a_marked_test_is_skipped_where_the_cluster_lacks_the_plugin(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A session on a cluster with kube-apiserver's default plugins only, through a
    kubeconfig that names no CA: the marked test is skipped naming the plugin, the one
    marked ``required=False`` runs and is told the plugin is off, the cluster is probed
    once, and the summary says what was found."""
    async with APIServer() as server:
        kubeconfig = write_kubeconfig(insecure_kubeconfig(server.kubeconfig()),
                                      tmp_path / "kubeconfig")
        pytester.makepyfile(test_marked=MARKED_TESTS)
        monkeypatch.setenv("RECONCILEKIT_TEST_KUBECONFIG", str(kubeconfig))
        # in a thread: the server answers on this test's event loop meanwhile
        result = await anyio.to_thread.run_sync(lambda: pytester.runpytest_subprocess(
            "-p", "no:cacheprovider", "-o", "asyncio_mode=auto", "-rs",
            "-o", "asyncio_default_fixture_loop_scope=function", timeout=170))
        out = result.stdout.str()
        assert result.ret == pytest.ExitCode.OK, out
        assert re.search(r"2 passed, 1 skipped", out), out
        assert re.search(rf"SKIPPED \[1\] .*needs the {PLUGIN} admission plugin, which this "
                         rf"cluster does not run", out), out
        assert f"reconcilekit: admission plugins probed: {PLUGIN} off" in out, out
        assert server.request_count("create", "roles") == 1  # once for the session


@pytest.mark.parametrize(("marked", "said"), [
    ('admission_plugin("AlwaysDeny")',
     f"no probe for 'AlwaysDeny'; the plugins a probe can find: {PLUGIN}"),
    ("admission_plugin()", "name at least one admission plugin"),
    (f'admission_plugin("{PLUGIN}", needed=True)', "the only keyword is required="),
])
def test_a_misused_marker_stops_the_run_naming_the_test(
        pytester: pytest.Pytester, marked: str, said: str) -> None:
    pytester.makepyfile(test_misused=f"""
import pytest

@pytest.mark.{marked}
async def test_it(apiserver):
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "test_misused.py::test_it: @pytest.mark.admission_plugin" in err, err
    assert said in err and "Traceback" not in err, err


def test_the_marker_needs_the_cluster_it_is_about(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_no_cluster=f"""
import pytest

@pytest.mark.admission_plugin("{PLUGIN}")
def test_it():
    pass
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=60)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "the test uses no apiserver fixture" in result.stderr.str()
