"""``python -m reconcilekit.testing``: serve until SIGTERM, usable by any client."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from apiserver_helpers import serving_cli
from kubernetes_asyncio import client, config

from reconcilekit.testing import Cluster


async def _get_default_namespace(kubeconfig: Path) -> int:
    """The status of GET /api/v1/namespaces/default through the written kubeconfig."""
    cfg = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cluster = Cluster(cfg)
    try:
        return (await cluster.request("GET", "/api/v1/namespaces/default")).status
    finally:
        await cluster.close()


@pytest.mark.in_process_only
async def test_cli_serves_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with serving_cli(kubeconfig) as line:
        assert "listening on https://127.0.0.1:" in line and str(kubeconfig) in line
        assert await _get_default_namespace(kubeconfig) == 200


async def test_cli_serves_plain_http_only_when_asked(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with serving_cli(kubeconfig, "--plain-http") as line:
        assert "listening on http://127.0.0.1:" in line, line
        assert await _get_default_namespace(kubeconfig) == 200


def test_cli_rejects_a_bad_port_with_a_clear_message(tmp_path: Path) -> None:
    got = subprocess.run([sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out",
                          str(tmp_path / "k"), "--port", "99999"],
                         capture_output=True, text=True, timeout=30)
    assert got.returncode == 2
    assert "--port must be between 0 and 65535" in got.stderr
    assert "Traceback" not in got.stderr


@pytest.mark.parametrize(("flag", "said"), [
    ("--enable-admission-plugins=AlwaysAdmit", "error: unknown admission plugin(s) AlwaysAdmit"),
    ("--controllers=*,-statefulsets", "error: unknown controller(s) statefulsets")])
def test_cli_refuses_an_unknown_plugin_or_controller_naming_it(tmp_path: Path, flag: str,
                                                               said: str) -> None:
    got = subprocess.run([sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out",
                          str(tmp_path / "k"), flag], capture_output=True, text=True, timeout=30)
    assert got.returncode == 2
    assert said in got.stderr and "Traceback" not in got.stderr, got.stderr
