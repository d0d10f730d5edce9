"""ControlPlane: etcd, kube-apiserver and kube-controller-manager from an assets directory.

The tests that start binaries need them (``RECONCILEKIT_TEST_ASSETS`` or
``KUBEBUILDER_ASSETS``; CI's kube passes set it) and are skipped without.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from reconcilekit import APIConnectionError, Client, NotFound, RetryPolicy
from reconcilekit.kinds import CONFIG_MAPS, NAMESPACES, SECRETS
from reconcilekit.testing import Cluster, ControlPlane, ControlPlaneError, OperatorProcess
from reconcilekit.testing._admission_probe import admission_plugin_enabled
from reconcilekit.testing._cluster import NamespaceNotRemoved, open_cluster
from reconcilekit.testing._control_plane import ASSETS_ENV, assets_from_env
from reconcilekit.testing._namespace_release import RemovalTiming

ASSETS = assets_from_env()
PLUGIN = "OwnerReferencesPermissionEnforcement"
needs_assets = pytest.mark.skipif(
    ASSETS is None, reason="needs kube-apiserver and etcd binaries: set "
    + " or ".join(ASSETS_ENV))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def test_no_assets_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ASSETS_ENV:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ControlPlaneError, match="RECONCILEKIT_TEST_ASSETS or KUBEBUILDER_ASSETS"):
        ControlPlane()
    with pytest.raises(ControlPlaneError, match=f"etcd is not an executable file in {tmp_path}"):
        ControlPlane(tmp_path)


@needs_assets
async def test_start_serve_and_stop_leave_nothing_behind(tmp_path: Path) -> None:
    async with ControlPlane(ASSETS) as plane:
        assert plane.url.startswith("https://127.0.0.1:")
        assert plane.startup_seconds is not None
        pids, data = plane.pids, plane.ca_file.parent
        assert len(pids) == (3 if plane.controller_manager else 2)
        async with Client(plane.configuration()) as client:  # TLS verified against its CA
            await client.create(CONFIG_MAPS, {"metadata": {"name": "hello"}}, "default")
            assert (await client.get(CONFIG_MAPS, "hello", "default"))["metadata"]["uid"]
        kubeconfig = plane.write_kubeconfig(tmp_path / "kubeconfig")
        kubectl = Path(ASSETS or ".") / "kubectl"
        if os.access(kubectl, os.X_OK):
            got = await anyio.run_process([str(kubectl), "--kubeconfig", str(kubeconfig),
                                           "get", "configmap", "hello", "-o", "name"],
                                          check=False)
            assert got.returncode == 0, got.stderr
            assert got.stdout.decode().strip() == "configmap/hello"
    assert not plane.running
    assert not [pid for pid in pids if _alive(pid)]
    assert not data.exists()


@needs_assets
async def test_components_can_be_killed_restarted_and_paused() -> None:
    """The faults chaos runs inject from outside: kube-apiserver killed and started again
    (same port, certificates and data), etcd paused and resumed, then killed and started
    again on its data."""
    async with ControlPlane(ASSETS, controller_manager=False) as plane:
        configuration = plane.configuration()
        async with Client(configuration, retry=RetryPolicy(max_retries=0)) as client:
            await client.create(CONFIG_MAPS, {"metadata": {"name": "kept"}}, "default")
            old_pid = plane.pids[-1]
            plane.kill("kube-apiserver")
            assert not _alive(old_pid)
            with pytest.raises(APIConnectionError):
                await client.get(CONFIG_MAPS, "kept", "default")
            assert await plane.restart("kube-apiserver") > 0
            assert (await client.get(CONFIG_MAPS, "kept", "default"))["metadata"]["name"]
            plane.pause("etcd")
            try:  # kube-apiserver cannot answer a read that needs etcd
                with pytest.raises(TimeoutError), anyio.fail_after(3):
                    await client.get(CONFIG_MAPS, "kept", "default")
            finally:
                plane.resume("etcd")
            assert (await client.get(CONFIG_MAPS, "kept", "default"))["metadata"]["name"]
            plane.kill("etcd")
            assert await plane.restart("etcd") > 0  # same ports, same data directory
            async with Client(configuration) as patient:  # retried until kube-apiserver
                got = await patient.get(CONFIG_MAPS, "kept", "default")  # reconnects
            assert got["metadata"]["name"] == "kept"
        with pytest.raises(ValueError, match="'kube-scheduler' cannot be restarted"):
            await plane.restart("kube-scheduler")
        with pytest.raises(ValueError, match="no 'kube-controller-manager' in this control"):
            plane.kill("kube-controller-manager")


@needs_assets
def test_a_killed_owner_takes_its_control_plane_along(tmp_path: Path) -> None:
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from reconcilekit.testing import ControlPlane
        plane = ControlPlane({str(ASSETS)!r}, controller_manager=False)
        plane.start()
        print(" ".join(map(str, plane.pids)), flush=True)
        time.sleep(600)
    """))
    owner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        pids = [int(p) for p in owner.stdout.readline().split()]
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        owner.send_signal(signal.SIGKILL)  # no clean-up code runs
        owner.wait()
        deadline = time.monotonic() + 30  # the kernel signals them at once; a bound, not a timing
        while any(_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in pids if _alive(p)], "etcd or kube-apiserver outlived its owner"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()


@needs_assets
def test_a_component_that_fails_is_named_with_its_log(tmp_path: Path) -> None:
    assert ASSETS is not None
    (tmp_path / "etcd").symlink_to(ASSETS / "etcd")
    broken = tmp_path / "kube-apiserver"
    broken.write_text("#!/bin/sh\necho 'Error: unknown flag: --secure-port'\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(ControlPlaneError) as caught:
        ControlPlane(tmp_path, start_timeout=30).start()
    message = str(caught.value)
    assert message.startswith("kube-apiserver exited with code 1 during start-up")
    assert "Error: unknown flag: --secure-port" in message


@needs_assets
async def test_each_user_is_told_apart_in_the_audit_log_even_through_a_proxy(
        tmp_path: Path) -> None:
    from reconcilekit.testing import TCPProxy

    async with ControlPlane(ASSETS, users=("op-a",), audit=True, controller_manager=False
                            ) as plane, TCPProxy(plane.url) as proxy:
        began = time.time()
        async with Client(plane.configuration(user="op-a", server=proxy.url)) as client:
            await client.create(CONFIG_MAPS, {"metadata": {"name": "mine"}}, "default")
            await client.get(CONFIG_MAPS, "mine", "default")
        assert proxy.connections >= 1
        events = [e for e in plane.audit_log().read() if e.user == "op-a"]
        assert [(e.verb, e.key, e.code) for e in events] == [
            ("create", "configmaps default/mine", 201), ("get", "configmaps default/mine", 200)]
        assert began <= events[0].received <= events[0].completed <= time.time()
        assert plane.kubeconfig(user="op-a", server=proxy.url)["clusters"][0]["cluster"][
            "server"] == proxy.url


@needs_assets
async def test_extra_flags_reach_etcd_and_kube_apiserver() -> None:
    async with ControlPlane(ASSETS, controller_manager=False,
                            etcd_flags=("--quota-backend-bytes=4294967296",),
                            apiserver_flags=("--max-requests-inflight=500",)) as plane:
        etcd, apiserver = [(await anyio.Path(f"/proc/{pid}/cmdline").read_bytes()).split(b"\0")
                           for pid in plane.pids]
        assert b"--quota-backend-bytes=4294967296" in etcd
        assert b"--max-requests-inflight=500" in apiserver


def test_admission_plugin_names_are_checked_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"admission plugin 'Owner References': expected a "
                                         r"name such as OwnerReferencesPermissionEnforcement"):
        ControlPlane(tmp_path, enable_admission_plugins=("Owner References",))


def _cmdline(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


@needs_assets
async def test_a_named_admission_plugin_runs_and_clients_may_skip_verification() -> None:
    """``enable_admission_plugins`` reaches kube-apiserver's flag, and the probe finds the
    plugin; ``insecure_skip_tls_verify`` gives a configuration with no CA that works."""
    async with ControlPlane(ASSETS, controller_manager=False,
                            enable_admission_plugins=(PLUGIN,)) as plane:
        assert f"--enable-admission-plugins={PLUGIN}" in _cmdline(plane.pids[-1])
        configuration = plane.configuration(insecure_skip_tls_verify=True)
        assert (configuration.verify_ssl, configuration.ssl_ca_cert) == (False, None)
        cluster = Cluster(configuration)
        try:
            assert await admission_plugin_enabled(cluster, PLUGIN, namespace="default")
        finally:
            await cluster.close()
        [entry] = plane.kubeconfig(insecure_skip_tls_verify=True)["clusters"]
        assert entry["cluster"] == {"server": plane.url, "insecure-skip-tls-verify": True}


@needs_assets
async def test_without_a_controller_manager_a_test_namespace_is_emptied_and_removed() -> None:
    """envtest's binaries (no kube-controller-manager): nothing deletes a deleted
    namespace's content nor its ``kubernetes`` finalizer, so ``open_cluster`` does it,
    an object's finalizer included; told a controller runs, the namespace stays and the
    message says what holds it."""
    async with ControlPlane(ASSETS, controller_manager=False) as plane, \
            Client(plane.configuration()) as client:
        names = []
        for namespace_controller in (False, True):
            with contextlib.ExitStack() as expected:
                if namespace_controller:
                    expected.enter_context(pytest.raises(
                        NamespaceNotRemoved, match=r"is still there 1s after its deletion"))
                async with open_cluster(configuration=plane.configuration(),
                                        namespace_controller=namespace_controller,
                                        timing=RemovalTiming(1.0, 0.5, 0.5)) as cluster:
                    ns = cluster.namespace
                    names.append(ns)
                    await client.create(CONFIG_MAPS, {"metadata": {
                        "name": "held", "finalizers": ["example.com/held"]}}, ns)
                    await client.create(SECRETS, {"metadata": {"name": "kept"}}, ns)
        emptied, left = names
        with pytest.raises(NotFound):
            await client.get(NAMESPACES, emptied)
        assert (await client.get(NAMESPACES, left))["metadata"].get("deletionTimestamp")


@needs_assets
async def test_the_command_line_serves_a_control_plane_until_sigterm(tmp_path: Path) -> None:
    """``python -m reconcilekit.testing --control-plane DIR``: kube-apiserver's default
    admission plugins only, kube-controller-manager beside it, an insecure kubeconfig on
    request; SIGTERM stops every process and removes the temporary directory."""
    kubeconfig = tmp_path / "kubeconfig"
    async with OperatorProcess(
            sys.executable, "-m", "reconcilekit.testing", "--control-plane", str(ASSETS),
            "--insecure-skip-tls-verify", "--kubeconfig-out", str(kubeconfig),
            name="python -m reconcilekit.testing --control-plane") as cli:
        line = (await cli.wait_for_line(" listening on ", within=120)).string
        assert "admission plugins besides kube-apiserver's defaults: none" in line, line
        children = [int(pid) for pid in (await anyio.Path(
            f"/proc/{cli.pid}/task/{cli.pid}/children").read_text()).split()]
        names = {Path(_cmdline(pid)[0]).name: pid for pid in children}
        assert sorted(names) == ["etcd", "kube-apiserver", "kube-controller-manager"]
        apiserver = _cmdline(names["kube-apiserver"])
        assert not [a for a in apiserver if a.startswith("--enable-admission-plugins")]
        assert "--controllers=*,-podgc,-nodeipam,-nodelifecycle" in _cmdline(
            names["kube-controller-manager"])
        [data] = {Path(a.split("=", 1)[1]).parent for a in apiserver
                  if a.startswith("--cert-dir=")}
        async with open_cluster(kubeconfig) as cluster:
            assert cluster.configuration.verify_ssl is False
            assert not await admission_plugin_enabled(cluster, PLUGIN,
                                                      namespace=cluster.namespace)
        assert await cli.stop() == 0, cli.log_tail()
    assert not [pid for pid in children if _alive(pid)]
    assert not data.exists()
