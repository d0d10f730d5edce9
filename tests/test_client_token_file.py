"""The in-cluster client's service-account token: read again as it rotates, 401 handled.

The kubelet rotates a projected service-account token by writing the new one
into a fresh directory and swapping the volume's ``..data`` link (an atomic
rename); the old token may then be revoked. These tests play the kubelet
against the in-process server, whose tokens can be issued and revoked
(kube-apiserver's bound tokens are exercised in
``tests/chaos/test_outside_faults_token_rotation.py``).
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path

import pytest

from reconcilekit import Client, Unauthorized
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import APIServer, Cluster, write_volume

REVIEWS = "/apis/authentication.k8s.io/v1/selfsubjectreviews"


def write_like_the_kubelet(volume: Path, token: str) -> Path:
    """Write ``token`` into ``volume`` as the kubelet rotates a projected token."""
    return write_volume(volume, {"token": token})["token"]


def rewrite_unseen(path: Path, token: str) -> None:
    """Rewrite the file in place, keeping its inode, size and modification time: what a
    filesystem with coarse timestamps shows of a same-length token rewritten quickly."""
    before = path.stat()
    assert len(token) == before.st_size
    with path.open("r+") as out:
        out.write(token)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


async def whoami(client: Client) -> str:
    review = await client.request("POST", REVIEWS, body={
        "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    return str(review["status"]["userInfo"]["username"])


def in_cluster(server: APIServer, token_file: Path) -> Client:
    assert server.ca_file is not None
    return Client.in_cluster(token_file=token_file, ca_file=server.ca_file, host=server.url)


@pytest.mark.in_process_only
async def test_a_token_rotated_like_the_kubelet_does_is_carried_by_the_next_request(
        apiserver: Cluster, tmp_path: Path) -> None:
    """Guarantee: the request after the ``..data`` swap carries the new token, so revoking
    the old one right after fails nothing (no 401 at all)."""
    server = apiserver.require_server()
    old, new = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    server.add_token(old, "operator-old")
    server.add_token(new, "operator-new")
    async with in_cluster(server, write_like_the_kubelet(tmp_path, old)) as client:
        assert await whoami(client) == "operator-old"
        write_like_the_kubelet(tmp_path, new)
        server.revoke_token(old)
        assert await whoami(client) == "operator-new"
        await client.create(CONFIG_MAPS, {"metadata": {"name": "after"}}, apiserver.namespace)
        assert sum(client.statistics().errors.values()) == 0


@pytest.mark.in_process_only
async def test_a_401_reads_the_token_again_and_sends_the_request_once_more(
        apiserver: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Guarantee: a request the server rejects with 401 is sent once more, with the token
    read again, when the file then holds another one (any verb: a 401 is answered before
    anything is done); a watch is opened once more the same way. The rejected attempt
    counts as an error and a retry, and is one INFO line.

    Fails without the re-read on 401 (kubernetes-asyncio's in-cluster loader reads the
    file once a minute): every request until then gets 401."""
    server = apiserver.require_server()
    ns = apiserver.namespace
    first, second, third = (secrets.token_urlsafe(24) for _ in range(3))
    for token in (first, second, third):
        server.add_token(token, "operator")
    path = tmp_path / "token"
    path.write_text(first)
    caplog.set_level(logging.INFO, "reconcilekit")
    async with in_cluster(server, path) as client:
        await client.create(CONFIG_MAPS, {"metadata": {"name": "before"}}, ns)
        rewrite_unseen(path, second)  # the client cannot tell the file changed
        server.revoke_token(first)
        await client.create(CONFIG_MAPS, {"metadata": {"name": "after"}}, ns)
        stats = client.statistics()
        assert stats.errors == {("create", "configmaps"): 1}
        assert stats.retries == {("create", "configmaps"): 1}

        rewrite_unseen(path, third)
        server.revoke_token(second)
        response = await client.open_stream(CONFIG_MAPS.path(ns), {"watch": "true"})
        response.release()
        assert client.statistics().retries[("watch", "configmaps")] == 1

        # a file that still holds the rejected token: nothing to retry with
        server.revoke_token(third)
        with pytest.raises(Unauthorized):
            await client.get(CONFIG_MAPS, "after", ns)
        assert ("get", "configmaps") not in client.statistics().retries
    lines = [r for r in caplog.records if "rejected the service-account token" in r.getMessage()]
    assert [r.levelname for r in lines] == ["INFO", "INFO"]


@pytest.mark.in_process_only
async def test_a_token_file_ending_with_a_newline_authenticates(
        apiserver: Cluster, tmp_path: Path) -> None:
    """Guarantee: surrounding whitespace is not part of the token (kubernetes-asyncio sent
    ``Bearer TOKEN\\n``, which no HTTP header may hold: every request failed)."""
    server = apiserver.require_server()
    token = secrets.token_urlsafe(24)
    server.add_token(token, "operator")
    path = tmp_path / "token"
    path.write_text(token + "\n")
    async with in_cluster(server, path) as client:
        assert await whoami(client) == "operator"


@pytest.mark.in_process_only
async def test_a_token_file_missing_during_a_rotation_keeps_the_token_read_before(
        apiserver: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Guarantee: a token file gone or empty when read again keeps the last token and logs
    one line; it is read again once it is back."""
    server = apiserver.require_server()
    token = secrets.token_urlsafe(24)
    server.add_token(token, "operator")
    path = tmp_path / "token"
    path.write_text(token)
    async with in_cluster(server, path) as client:
        path.write_text("")
        assert await whoami(client) == "operator"
        path.write_text(token)
        assert await whoami(client) == "operator"
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"cannot read the service-account token file {path}")


def test_in_cluster_configuration_names_what_is_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input gets an error naming the problem: no service variables, a CA or token file
    missing or empty. The defaults are the kubelet's paths and variables."""
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    with pytest.raises(ValueError, match=r"KUBERNETES_SERVICE_HOST and \$KUBERNETES_SERVICE_PORT"):
        Client.in_cluster()
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(ValueError, match=r"/var/run/secrets/kubernetes\.io/serviceaccount/ca\.crt"):
        Client.in_cluster()
    ca = tmp_path / "ca.crt"
    ca.write_text("")
    with pytest.raises(ValueError, match=f"CA file {ca} is empty"):
        Client.in_cluster(ca_file=ca)
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    with pytest.raises(ValueError, match=f"token file {tmp_path / 'token'}: No such file"):
        Client.in_cluster(ca_file=ca, token_file=tmp_path / "token")
    (tmp_path / "token").write_text("\n")
    with pytest.raises(ValueError, match="it is empty"):
        Client.in_cluster(ca_file=ca, token_file=tmp_path / "token")
