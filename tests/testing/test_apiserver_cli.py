"""``python -m reconcilekit.testing``: serve until SIGTERM, usable by any client."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reconcilekit.testing import Cluster


@pytest.mark.in_process_only
async def test_cli_serves_and_exits_cleanly_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out", str(kubeconfig),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        assert "listening on http://127.0.0.1:" in line and str(kubeconfig) in line
        from kubernetes_asyncio import client, config

        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
        cluster = Cluster(cfg)
        got = await cluster.request("GET", "/api/v1/namespaces/default")
        await cluster.close()
        assert got.status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await proc.wait()
    assert code == 0


def test_cli_rejects_a_bad_port_with_a_clear_message(tmp_path: Path) -> None:
    got = subprocess.run([sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out",
                          str(tmp_path / "k"), "--port", "99999"],
                         capture_output=True, text=True, timeout=30)
    assert got.returncode == 2
    assert "--port must be between 0 and 65535" in got.stderr
    assert "Traceback" not in got.stderr
