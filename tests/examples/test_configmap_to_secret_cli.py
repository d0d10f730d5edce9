"""``python -m examples.configmap_to_secret``: its help, its argument errors, and a run
against a kubeconfig of the test's API server (either backend) until SIGTERM."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from reconcilekit import Client, NotFound
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.testing import Cluster, eventually

ROOT = Path(__file__).resolve().parents[2]
COMMAND = (sys.executable, "-m", "examples.configmap_to_secret")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMAND, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_help_says_what_it_does_and_exits_zero() -> None:
    got = _run("--help")
    assert got.returncode == 0, got.stderr
    assert got.stdout.startswith("usage: python -m examples.configmap_to_secret")
    assert "Keep a Secret next to every ConfigMap" in got.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["/nonexistent/kubeconfig"], "/nonexistent/kubeconfig: no such file"),
    (["--metrics-addr", "8080"], "--metrics-addr: expected HOST:PORT or :PORT"),
    (["--color"], "unrecognized arguments: --color"),
])
def test_argument_errors_are_one_clear_line_and_status_two(args: list[str],
                                                            message: str) -> None:
    got = _run(*args)
    assert got.returncode == 2
    assert message in got.stderr and "Traceback" not in got.stderr, got.stderr


def _kubeconfig(apiserver: Cluster, tmp_path: Path) -> Path:
    if apiserver.server is not None:
        return apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")
    assert apiserver.kubeconfig_path is not None
    return apiserver.kubeconfig_path


async def test_a_kubeconfig_run_copies_a_configmap_and_stops_cleanly_on_sigterm(
        apiserver: Cluster, tmp_path: Path) -> None:
    ns = apiserver.namespace
    proc = await asyncio.create_subprocess_exec(
        *COMMAND, str(_kubeconfig(apiserver, tmp_path)), "--namespace", ns,
        "--metrics-addr", "127.0.0.1:0", cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        async with Client(apiserver.configuration) as client:
            await client.create(CONFIG_MAPS, {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"},
                "data": {"color": "blue"}}, ns)

            async def copied() -> bool:
                try:
                    secret = await client.get(SECRETS, "app", ns)
                except NotFound:
                    return False
                return secret.get("data") == {"color": "Ymx1ZQ=="}  # base64 of "blue"

            await eventually(copied, within=30, what="the Secret made by the operator")
        proc.send_signal(signal.SIGTERM)
        with anyio.fail_after(30):
            output = (await proc.communicate())[0].decode()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, output
    assert "Traceback" not in output, output
