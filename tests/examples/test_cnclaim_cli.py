"""``python -m examples.cnclaim``: the demo, the cluster mode, and argument errors."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from examples.cnclaim.operator import load_crds
from examples.cnclaim.resources import CNCLAIMS, CNPOOLS
from reconcilekit import APIError, Client, NotFound
from reconcilekit.kinds import CUSTOM_RESOURCE_DEFINITIONS, VALIDATING_WEBHOOK_CONFIGURATIONS
from reconcilekit.testing import Cluster, OperatorProcess, eventually

ROOT = Path(__file__).resolve().parents[2]
SETTLE = 60.0  # seconds: a bound for a loaded machine, not a timing
# a record at WARNING or above, as configure_logging's key=value lines begin
LOUD_RECORD = re.compile(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) ", re.MULTILINE)


async def _run(*args: str, limit: float = 60.0) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "examples.cnclaim", *args, cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(limit):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_the_demo_plays_every_step_and_exits_zero() -> None:
    code, out, err = await _run()
    assert code == 0, out + err
    steps = re.findall(r"^\[ *\d+\.\d\ds\] step (\d): ", out, re.MULTILINE)
    assert steps == [str(i) for i in range(1, 10)], out
    assert ('refused at admission: admission webhook "validate.cnclaims.core.matrixorigin.io" '
            "denied the request: spec.selector.matchExpressions[0].values: must be specified "
            "when operator is In") in out
    assert "went Lost (spec.podName and spec.nodeName cleared), then bound" in out
    assert "the migrating" in out and "kept" in out
    for header in ("POOL  REPLICAS  IDLE  BOUND  DRAINING", "CLAIM  PHASE", "POD  "):
        assert header in out, out
    assert "Traceback" not in err


async def test_the_shard_demo_hands_a_stopped_replicas_shards_over_and_exits_zero() -> None:
    code, out, err = await _run("--shard-demo", limit=120)
    assert code == 0, out + err
    assert "started 3 replicas in shard ring cnclaim-demo (16 shards, by namespace)" in out
    assert "replica-2 released its shards; the ring now:" in out
    assert re.search(r"the third claim in \w+ is Bound, by its new owner replica-[01]", out), out
    assert "stopped every replica" in out and "Traceback" not in err


async def test_a_step_that_does_not_converge_exits_one_naming_it() -> None:
    code, _, err = await _run("--step-timeout", "0.001")
    assert code == 1  # (a step already true when first checked passes: which fails varies)
    assert re.search(r"^error: step \d \([^)]+\) did not converge within "
                     r"0.001s; last seen: ", err, re.MULTILINE), err
    assert "Traceback" not in err


async def test_a_metrics_address_in_use_is_one_line_and_status_one() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        code, _, err = await _run("--metrics-addr", address, limit=60)
    assert code == 1
    assert err.strip() == (f"error: cannot serve /metrics, /healthz and /readyz on {address}: "
                           "address already in use"), err


@pytest.mark.parametrize(("args", "message"), [
    (["--workers", "0"], "--workers: must be at least 1, got 0"),
    (["--workers", "many"], "--workers: expected a whole number, got 'many'"),
    (["--metrics-addr", "8080"], "--metrics-addr: expected HOST:PORT or :PORT"),
    (["--kubeconfig", "/nonexistent/kubeconfig"], "/nonexistent/kubeconfig: no such file"),
    (["--scenario"], "--scenario goes with --kubeconfig"),
    (["--kubeconfig", "x", "--in-cluster"], "not allowed with argument"),
    (["--shard-ring", "r", "--leader-elect"], "--shard-ring and --leader-elect exclude"),
    (["--step-timeout", "-1"], "--step-timeout: must be more than 0 seconds"),
    (["--lease-duration", "5", "--renew-deadline", "6"],
     "--renew-deadline, --retry-period: lease_duration (5.0) must be greater than "
     "renew_deadline (6.0)"),
    (["--retry-period", "0"], "--retry-period: must be more than 0 seconds"),
])
async def test_argument_errors_are_one_clear_line_and_status_two(args: list[str],
                                                                 message: str) -> None:
    code, _, err = await _run(*args, limit=30)
    assert code == 2
    assert message in err and "Traceback" not in err, err


def _cluster_args(apiserver: Cluster, kubeconfig: Path) -> list[str]:
    args = ["--kubeconfig", str(kubeconfig),
            "--namespace", apiserver.namespace, "--metrics-addr", "127.0.0.1:0",
            "--install-crds", "--webhook-addr", "127.0.0.1:0"]
    return [*args, "--simulated-nodes", "3"]


async def test_kubeconfig_scenario_installs_the_crds_and_plays_there(apiserver: Cluster,
                                                                     kubeconfig: Path) -> None:
    code, out, err = await _run(*_cluster_args(apiserver, kubeconfig), "--scenario",
                                "--leader-elect", limit=120)
    assert code == 0, out + err
    assert "step 8: delete CNClaimSet web" in out and "Traceback" not in err
    async with Client(apiserver.configuration) as client:
        pools = await client.list(CNPOOLS, apiserver.namespace)  # the CRDs are installed
        assert [p["metadata"]["name"] for p in pools["items"]] == ["demo"]


async def test_kubeconfig_serves_until_sigterm_and_binds_a_bare_claim(
        apiserver: Cluster, kubeconfig: Path) -> None:
    """No CNPool object: Idle Pods labelled with the pool (provisioned by another tool)
    are bound all the same; a malformed claim is refused at admission by the webhook the
    operator registered. SIGTERM ends the operator with status 0, its webhook
    configuration removed."""
    from cnclaim_env import (
        bound_to,
        eventually,
        idle_pod,
        new_claim,
        until_admission_refuses,
    )

    async with OperatorProcess(sys.executable, "-m", "examples.cnclaim",
                               *_cluster_args(apiserver, kubeconfig), cwd=ROOT,
                               env={**os.environ, "POD_NAMESPACE": apiserver.namespace},
                               name="the operator") as proc:
        await proc.wait_for_line(re.escape("started 3 controller(s)"), within=60)
        async with Client(apiserver.configuration) as client:
            pod = await idle_pod(apiserver, client, "preprovisioned")
            await new_claim(apiserver, client, "bare", "preprovisioned")
            assert await eventually(lambda: bound_to(client, apiserver.namespace, "bare"),
                                    what="the bare claim Bound") == pod["metadata"]["name"]
            await client.delete(CNCLAIMS, "bare", apiserver.namespace)
            bad = {"matchExpressions": [{"key": "zone", "operator": "NotIn"}]}
            await until_admission_refuses(apiserver, "bad", "preprovisioned", selector=bad)
            with pytest.raises(APIError) as refused:
                await new_claim(apiserver, client, "bad", "preprovisioned", selector=bad)
            assert ("denied the request: spec.selector.matchExpressions[0].values: must be "
                    "specified when operator is NotIn") in str(refused.value)
            configuration = f"cnclaim-operator-{apiserver.namespace}"
            assert (await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, configuration))["webhooks"]
            code = await proc.stop(grace=30)
            with pytest.raises(NotFound):
                await client.get(VALIDATING_WEBHOOK_CONFIGURATIONS, configuration)
    log = "\n".join(proc.lines)
    assert code == 0, log
    assert "Traceback" not in log


async def _without_the_crds(apiserver: Cluster) -> list[str]:
    """The CNClaim CRDs' names, once none of them is installed: a real cluster's session
    shares them between tests, so the ones there are deleted first and waited for."""
    names = [crd["metadata"]["name"] for crd in load_crds()]
    async with Client(apiserver.configuration) as client:
        for name in names:
            with contextlib.suppress(NotFound):
                await client.delete(CUSTOM_RESOURCE_DEFINITIONS, name)

        async def gone() -> bool:
            for name in names:
                try:
                    await client.get(CUSTOM_RESOURCE_DEFINITIONS, name)
                except NotFound:
                    continue
                return False
            return True
        await eventually(gone, within=SETTLE, what="the CNClaim CRDs deleted")
    return names


async def test_install_crds_on_a_cluster_without_them_logs_no_warning_nor_error(
        apiserver: Cluster, kubeconfig: Path) -> None:
    """``--install-crds`` where the CRDs are not installed yet: the operator creates them,
    its informers wait for them to be served, its controllers start, a claim is bound, and
    SIGTERM ends it with status 0, with not one record at WARNING or above, nor a
    traceback, on the way."""
    from cnclaim_env import bound_to, idle_pod, new_claim

    names = await _without_the_crds(apiserver)
    try:
        async with OperatorProcess(sys.executable, "-m", "examples.cnclaim",
                                   *_cluster_args(apiserver, kubeconfig), cwd=ROOT,
                                   env={**os.environ, "POD_NAMESPACE": apiserver.namespace},
                                   name="the operator") as proc:
            await proc.wait_for_line(re.escape("started 3 controller(s)"), within=SETTLE)
            async with Client(apiserver.configuration) as client:
                pod = await idle_pod(apiserver, client, "fresh")
                await new_claim(apiserver, client, "first", "fresh")
                assert await eventually(
                    lambda: bound_to(client, apiserver.namespace, "first"), within=SETTLE,
                    what="the claim Bound") == pod["metadata"]["name"]
            code = await proc.stop(grace=30)
    finally:
        for name in names:  # installed by the operator: the session's to delete
            apiserver.delete_at_end(CUSTOM_RESOURCE_DEFINITIONS.path(name=name))
    log = "\n".join(proc.lines)
    assert code == 0, log
    assert f"installed CRDs: {', '.join(names)}" in log, log
    assert not LOUD_RECORD.search(log), log
    assert "Traceback" not in log, log
