"""``kubectl rollout`` against a Deployment with running Pods, on every backend.

kubectl (from the assets directory, else PATH) runs against the test's
cluster, a :class:`NodeSimulator` playing the kubelet: ``rollout status``
waits on the Deployment's status, ``rollout history`` reads its ReplicaSets'
revisions, ``rollout undo`` patches the previous revision's template back.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from reconcilekit import Client
from reconcilekit.kinds import DEPLOYMENTS, PODS
from reconcilekit.testing import Cluster, NodeSimulator, eventually
from reconcilekit.testing._control_plane import assets_from_env

IMAGE, NEXT = "registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.8"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


def _kubectl() -> str:
    """kubectl from the assets directory, else from PATH; skips the test without one."""
    assets = assets_from_env()
    if assets is not None and Path(assets, "kubectl").is_file():
        return str(Path(assets, "kubectl"))
    found = shutil.which("kubectl")
    if found is None:
        pytest.skip(f"no kubectl in the assets directory ({assets}) nor on PATH")
    return found


class _Kubectl:
    """kubectl against one cluster and namespace, with a HOME and cache of its own."""

    def __init__(self, binary: str, kubeconfig: Path, namespace: str, home: Path) -> None:
        self._args = [binary, "--kubeconfig", str(kubeconfig), "--namespace", namespace,
                      "--cache-dir", str(home / "cache")]
        self._env = {"HOME": str(home), "PATH": "/usr/bin:/bin"}

    async def __call__(self, *args: str) -> str:
        """kubectl's standard output; fails the test naming what it wrote on error."""
        done = await anyio.run_process([*self._args, *args], check=False, env=self._env)
        assert done.returncode == 0, (args, done.stdout.decode(), done.stderr.decode())
        return done.stdout.decode()


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "app", "image": IMAGE}]}}}}


async def _images(client: Client, ns: str, image: str) -> bool:
    """Whether every Pod of the Deployment, three of them, runs ``image``."""
    pods = [p for p in (await client.list(PODS, ns, label_selector="app=web"))["items"]
            if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == 3 and all(p["spec"]["containers"][0]["image"] == image
                                  and (p.get("status") or {}).get("phase") == "Running"
                                  for p in pods)


async def test_kubectl_rollout_status_history_and_undo(
        apiserver: Cluster, client: Client, tmp_path: Path) -> None:
    binary = _kubectl()
    ns = apiserver.namespace
    if apiserver.server is not None:
        kubeconfig = apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")
    else:
        assert apiserver.kubeconfig_path is not None, "a real backend has a kubeconfig"
        kubeconfig = apiserver.kubeconfig_path
    kubectl = _Kubectl(binary, kubeconfig, ns, tmp_path)
    wait = f"--timeout={SETTLE:g}s"
    async with NodeSimulator(client, nodes=2, namespace=ns):
        await client.create(DEPLOYMENTS, _deployment(), ns)
        assert (await kubectl("rollout", "status", "deployment/web", wait)).endswith(
            'deployment "web" successfully rolled out\n')  # after any "Waiting for" lines
        assert await _images(client, ns, IMAGE)

        await client.patch(DEPLOYMENTS, "web", {"spec": {"template": {"spec": {
            "containers": [{"name": "app", "image": NEXT}]}}}}, ns)
        assert (await kubectl("rollout", "status", "deployment/web", wait)).endswith(
            'deployment "web" successfully rolled out\n')
        await eventually(lambda: _images(client, ns, NEXT), within=SETTLE,
                         what="every Pod on the new image")
        history = await kubectl("rollout", "history", "deployment/web")
        assert history.split("\n") == [
            "deployment.apps/web ", "REVISION  CHANGE-CAUSE", "1         <none>",
            "2         <none>", "", ""]
        revision_1 = await kubectl("rollout", "history", "deployment/web", "--revision=1")
        assert revision_1.startswith("deployment.apps/web with revision #1\nPod Template:\n")
        assert f"\n    Image:\t{IMAGE}\n" in revision_1

        assert await kubectl("rollout", "undo", "deployment/web") == (
            "deployment.apps/web rolled back\n")
        assert (await kubectl("rollout", "status", "deployment/web", wait)).endswith(
            'deployment "web" successfully rolled out\n')
        deployment = await client.get(DEPLOYMENTS, "web", ns)
        assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
        assert deployment["metadata"]["annotations"][
            "deployment.kubernetes.io/revision"] == "3"
        await eventually(lambda: _images(client, ns, IMAGE), within=SETTLE,
                         what="every Pod back on the first image")
        history = await kubectl("rollout", "history", "deployment/web")
        assert history.split("\n")[1:] == [
            "REVISION  CHANGE-CAUSE", "2         <none>", "3         <none>", "", ""]
