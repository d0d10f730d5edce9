"""A kubeconfig with ``insecure-skip-tls-verify: true`` and no CA works wherever one with a
CA does: the client, the in-cluster configuration a test plays, and the kubeconfigs
``python -m reconcilekit.testing`` writes (docs/testing.md, "Insecure kubeconfigs")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from apiserver_helpers import serving_cli

from reconcilekit import APIConnectionError, Client, RetryPolicy
from reconcilekit._client.config import load_in_cluster
from reconcilekit.kinds import NAMESPACES
from reconcilekit.testing import APIServer
from reconcilekit.testing._control_plane import insecure_kubeconfig
from reconcilekit.testing.apiserver.kubeconfig import write_kubeconfig

NO_RETRY = RetryPolicy(max_retries=0)


def test_an_insecure_kubeconfig_names_no_ca_and_skips_verification() -> None:
    document = {"clusters": [
        {"name": "a", "cluster": {"server": "https://a", "certificate-authority-data": "Q0E="}},
        {"name": "b", "cluster": {"server": "https://b", "certificate-authority": "/ca.crt"}}],
        "users": []}
    assert insecure_kubeconfig(document)["clusters"] == [
        {"name": "a", "cluster": {"server": "https://a", "insecure-skip-tls-verify": True}},
        {"name": "b", "cluster": {"server": "https://b", "insecure-skip-tls-verify": True}}]
    assert "insecure-skip-tls-verify" not in document["clusters"][0]["cluster"]  # a copy


async def test_a_client_trusts_the_server_only_as_its_kubeconfig_says(tmp_path: Path) -> None:
    """Insecure: the request goes through. Neither a CA nor insecure (the system's CAs,
    which did not sign the server's certificate): refused, so the check is real."""
    async with APIServer() as server:
        insecure = write_kubeconfig(insecure_kubeconfig(server.kubeconfig()),
                                    tmp_path / "insecure")
        async with await Client.from_kubeconfig(insecure, retry=NO_RETRY) as client:
            assert client.configuration.verify_ssl is False
            assert client.configuration.ssl_ca_cert is None
            assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
        document = server.kubeconfig()
        del document["clusters"][0]["cluster"]["certificate-authority-data"]
        trusting = write_kubeconfig(document, tmp_path / "system-cas")
        async with await Client.from_kubeconfig(trusting, retry=NO_RETRY) as client:
            with pytest.raises(APIConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
                await client.get(NAMESPACES, "default")


async def test_an_in_cluster_configuration_may_skip_verification(tmp_path: Path) -> None:
    async with APIServer() as server:
        token = tmp_path / "token"
        token.write_text(server.token)
        cfg = load_in_cluster(token_file=token, host=server.url, insecure_skip_tls_verify=True)
        assert (cfg.verify_ssl, cfg.ssl_ca_cert) == (False, None)
        async with Client(cfg, retry=NO_RETRY) as client:
            assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"
        assert server.ca_file is not None
        with pytest.raises(ValueError, match=rf"a CA file \({server.ca_file}\) with "
                                             r"insecure_skip_tls_verify=True: give one or "
                                             r"the other"):
            load_in_cluster(token_file=token, host=server.url, ca_file=server.ca_file,
                            insecure_skip_tls_verify=True)


async def test_the_command_line_writes_an_insecure_kubeconfig_when_asked(
        tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    async with serving_cli(kubeconfig, "--insecure-skip-tls-verify") as line:
        assert "listening on https://127.0.0.1:" in line, line
        [cluster] = yaml.safe_load(kubeconfig.read_text())["clusters"]
        assert "certificate-authority-data" not in cluster["cluster"]
        assert cluster["cluster"]["insecure-skip-tls-verify"] is True
        async with await Client.from_kubeconfig(kubeconfig, retry=NO_RETRY) as client:
            assert (await client.get(NAMESPACES, "default"))["metadata"]["name"] == "default"


@pytest.mark.parametrize(("flags", "said"), [
    (["--control-plane", "/nowhere", "--port", "8443"],
     "--port: only for the in-process server, not with --control-plane"),
    (["--control-plane", "/nowhere", "--plain-http", "--controllers=*"],
     "--plain-http, --controllers: only for the in-process server"),
    (["--plain-http", "--insecure-skip-tls-verify"],
     "--insecure-skip-tls-verify: a plain-HTTP server has no TLS to skip"),
    (["--control-plane"],
     "--control-plane without DIR needs $RECONCILEKIT_TEST_ASSETS or $KUBEBUILDER_ASSETS"),
    (["--control-plane", "/nowhere"], "error: etcd is not an executable file in /nowhere"),
    (["--control-plane", "/nowhere", "--enable-admission-plugins=not-a-plugin"],
     "error: admission plugin 'not-a-plugin': expected a name such as"),
])
def test_the_command_line_refuses_options_that_do_not_fit_naming_them(
        tmp_path: Path, flags: list[str], said: str) -> None:
    env = {"PATH": "/usr/bin:/bin"}  # no assets directory in the environment
    got = subprocess.run([sys.executable, "-m", "reconcilekit.testing", "--kubeconfig-out",
                          str(tmp_path / "k"), *flags], capture_output=True, text=True,
                         timeout=30, env=env)
    assert got.returncode == 2, got.stderr
    assert said in got.stderr and "Traceback" not in got.stderr, got.stderr
    assert not (tmp_path / "k").exists()
