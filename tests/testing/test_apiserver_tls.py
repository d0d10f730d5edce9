"""The in-process API server serves HTTPS as kube-apiserver does, so every client works.

client-go (kubectl with it) sends a bearer token only over TLS: over plain
HTTP it arrives as system:anonymous. These tests start their own server, on
either backend: they are about the in-process server itself.
"""

from __future__ import annotations

import asyncio
import base64
import os
import shutil
import ssl
import subprocess
from pathlib import Path

import aiohttp
import pytest
import yaml
from apiserver_helpers import serving_cli
from kubernetes_asyncio import client, config

from reconcilekit.testing import APIServer, Cluster
from reconcilekit.testing._tls import ServingCertificate


async def test_it_serves_https_that_its_own_ca_verifies() -> None:
    async with APIServer() as server:
        assert server.url.startswith("https://127.0.0.1:")
        ca_file = server.ca_file
        assert ca_file is not None and ca_file.read_bytes() == server.ca_pem
        cluster = Cluster(server.configuration())
        try:
            got = await cluster.request("GET", "/api/v1/namespaces/default")
        finally:
            await cluster.close()
        assert got.status == 200, got
        context = server.client_ssl_context()
        assert context is not None
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{server.url}/readyz", ssl=context) as resp:
                assert resp.status == 200
            # a client that trusts only the system's CAs refuses the certificate
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                async with http.get(f"{server.url}/readyz"):
                    pass
            # plain HTTP to the TLS port gets no answer
            with pytest.raises(aiohttp.ClientError):
                async with http.get(server.url.replace("https://", "http://") + "/readyz"):
                    pass
    assert server.ca_file is None and not ca_file.parent.exists()  # it goes with the server


def test_the_serving_context_refuses_tls_before_1_2() -> None:
    context = ServingCertificate.generate().server_context()
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


async def test_plain_http_only_when_asked() -> None:
    async with APIServer(tls=False) as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.ca_pem is None and server.client_ssl_context() is None
        cluster = Cluster(server.configuration())
        try:
            got = await cluster.request("GET", "/api/v1/namespaces")
        finally:
            await cluster.close()
        assert got.status == 200
        assert "certificate-authority-data" not in server.kubeconfig()["clusters"][0]["cluster"]


async def test_the_kubeconfig_carries_the_ca(tmp_path: Path) -> None:
    async with APIServer() as server:
        path = server.write_kubeconfig(tmp_path / "kubeconfig")
        cluster_entry = yaml.safe_load(path.read_text())["clusters"][0]["cluster"]
        assert base64.b64decode(cluster_entry["certificate-authority-data"]) == server.ca_pem
        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(path), client_configuration=cfg)
        async with client.ApiClient(cfg) as api:
            listed = await client.CoreV1Api(api).list_namespace()
        assert "default" in {ns.metadata.name for ns in listed.items}


CRDS = Path(__file__).parents[2] / "examples" / "cnclaim" / "manifests" / "crds.yaml"
CLAIM = """apiVersion: core.matrixorigin.io/v1alpha1
kind: CNClaim
metadata: {{name: c, namespace: default}}
spec: {{poolName: {pool}}}
"""


def _kubectl() -> str | None:
    assets = os.environ.get("RECONCILEKIT_TEST_ASSETS") or os.environ.get("KUBEBUILDER_ASSETS")
    if assets and Path(assets, "kubectl").is_file():
        return str(Path(assets, "kubectl"))
    return shutil.which("kubectl")


async def _run(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*args, stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_kubectl_works_against_python_m_reconcilekit_testing(tmp_path: Path) -> None:
    kubectl = _kubectl()
    if kubectl is None:
        pytest.skip("no kubectl on PATH nor in RECONCILEKIT_TEST_ASSETS")
    kubeconfig = tmp_path / "kubeconfig"
    async with serving_cli(kubeconfig) as line:
        assert "listening on https://127.0.0.1:" in line, line
        kc = ("--kubeconfig", str(kubeconfig))
        code, out, err = await _run(kubectl, *kc, "get", "namespaces", "-o", "name")
        assert code == 0, err
        assert "namespace/default" in out.split()
        code, out, err = await _run(kubectl, *kc, "create", "configmap", "x", "-n", "default",
                                    "--from-literal=a=b")
        assert code == 0, err
        code, out, err = await _run(kubectl, *kc, "get", "configmap", "x", "-n", "default",
                                    "-o", "jsonpath={.data.a}")
        assert (code, out) == (0, "b"), err
        code, out, err = await _run(kubectl, *kc, "get", "namespaces")
        assert code == 0 and out.split()[:3] == ["NAME", "STATUS", "AGE"], (out, err)
        # kubectl apply (client-side and server-side) and its printer columns
        code, out, err = await _run(kubectl, *kc, "apply", "-f", str(CRDS))
        assert code == 0, err
        claim = tmp_path / "claim.yaml"
        for pool, verb in (("a", "created"), ("b", "configured")):
            claim.write_text(CLAIM.format(pool=pool))
            code, out, err = await _run(kubectl, *kc, "apply", "-f", str(claim))
            assert (code, out.strip()) == (0, f"cnclaim.core.matrixorigin.io/c {verb}"), err
        code, out, err = await _run(kubectl, *kc, "apply", "--server-side", "-f", str(claim))
        assert code == 0 and "serverside-applied" in out, err
        code, out, err = await _run(kubectl, *kc, "get", "cnclaims", "-n", "default")
        assert code == 0 and out.split()[:5] == ["NAME", "POD", "NODE", "PHASE", "AGE"], err
        claim.write_text(CLAIM.format(pool="7, bogus: 1"))
        code, out, err = await _run(kubectl, *kc, "apply", "-f", str(claim))
        assert code == 1 and 'strict decoding error: unknown field "spec.bogus"' in err, err
