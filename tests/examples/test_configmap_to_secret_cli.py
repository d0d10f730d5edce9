"""``python -m examples.configmap_to_secret``: its help, its argument errors, and a run
against a kubeconfig of the test's API server (either backend) until SIGTERM."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reconcilekit import Client, NotFound
from reconcilekit.kinds import CONFIG_MAPS, SECRETS
from reconcilekit.testing import Cluster, OperatorProcess, eventually

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


async def test_a_kubeconfig_run_copies_a_configmap_and_stops_cleanly_on_sigterm(
        apiserver: Cluster, kubeconfig: Path) -> None:
    ns = apiserver.namespace
    async with OperatorProcess(*COMMAND, str(kubeconfig), "--namespace", ns,
                               "--metrics-addr", "127.0.0.1:0", cwd=ROOT,
                               name="the operator") as proc:
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
        code = await proc.stop(grace=30)
    output = "\n".join(proc.lines)
    assert code == 0, output
    assert "Traceback" not in output, output
