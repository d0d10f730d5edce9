"""kopf, a Python operator framework nobody here wrote, against both servers.

The operator in ``kopf/widget_operator.py`` runs as ``kopf run --standalone``
in a process of its own with a kubeconfig for one server; the test creates a
Widget, waits for the operator to have handled it (its status written, its
finalizer and last-handled annotation set), records the object, deletes it
and waits for it to be gone (kopf runs its deletion handler and removes its
finalizer). The records of the two servers, normalized, must be the same.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from differential_normalize import normalize

from reconcilekit.testing import Cluster

OPERATOR = Path(__file__).parent / "kopf" / "widget_operator.py"
CRD = Path(__file__).parent / "crds" / "widgets.yaml"
DEADLINE = 60.0  # seconds for kopf to handle a change: the run fails rather than hangs


async def _until(cluster: Cluster, path: str, done: Any) -> Any:
    """Read ``path`` until ``done(answer)``; the answer, or a failure at the deadline."""
    end = time.monotonic() + DEADLINE
    while True:
        got = await cluster.request("GET", path)
        if done(got):
            return got
        if time.monotonic() > end:
            raise AssertionError(f"kopf did not act within {DEADLINE:g}s: {got.status} "
                                 f"{got.body}")
        await anyio.sleep(0.2)  # waiting for the operator's write, not for a timeout


def _record(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    return {"finalizers": meta.get("finalizers"), "annotations": meta.get("annotations"),
            "spec": obj.get("spec"), "status": obj.get("status"),
            "managers": sorted({e["manager"] for e in meta.get("managedFields") or ()})}


async def _session(cluster: Cluster, kubeconfig: Path, namespace: str,
                   log: Path) -> list[str]:
    path = f"/apis/differential.reconcilekit.dev/v1/namespaces/{namespace}/widgets"
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    with log.open("w") as out:
        proc = await anyio.open_process(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--namespace", namespace,
             str(OPERATOR)], stdout=out, stderr=subprocess.STDOUT,
            env={**env, "KUBECONFIG": str(kubeconfig)})
        try:
            made = await cluster.request("POST", path, json={
                "apiVersion": "differential.reconcilekit.dev/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"app": "kopf"}},
                "spec": {"size": "small", "replicas": 2}})
            assert made.status == 201, made.body
            handled = await _until(cluster, f"{path}/w", lambda got: (
                (got.body.get("status") or {}).get("replicas") == 2
                and "kopf.zalando.org/last-handled-configuration"
                in (got.body["metadata"].get("annotations") or {})))
            records = [json.dumps(_record(handled.body), sort_keys=True, indent=1)]
            gone = await cluster.request("DELETE", f"{path}/w")
            records.append(f"delete: {gone.status} {_record(gone.body)['finalizers']}")
            await _until(cluster, f"{path}/w", lambda got: got.status == 404)
            records.append("gone")
            return [normalize(r, namespace) for r in records]
        finally:
            proc.send_signal(signal.SIGINT)  # kopf's graceful stop
            with anyio.move_on_after(30) as waited:
                await proc.wait()
            if waited.cancelled_caught:
                proc.kill()
                await proc.wait()
            await proc.aclose()


async def test_a_kopf_operator_with_a_finalizer(kubectl: str, in_process_kubeconfig: Path,
                                                apiserver: Cluster, in_process_twin: Cluster,
                                                tmp_path: Path) -> None:
    """(``kubectl`` only gates the test to the kube pass.)"""
    assert apiserver.kubeconfig_path is not None, "a real backend has a kubeconfig"
    for cluster in (apiserver, in_process_twin):
        await cluster.install_crd(CRD)
    reference = await _session(apiserver, apiserver.kubeconfig_path, apiserver.namespace,
                               tmp_path / "kube-apiserver.log")
    candidate = await _session(in_process_twin, in_process_kubeconfig, apiserver.namespace,
                               tmp_path / "in-process.log")
    assert candidate == reference, (
        f"kopf's log on the in-process server:\n{(tmp_path / 'in-process.log').read_text()}")
