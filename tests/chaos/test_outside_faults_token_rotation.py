"""Faults from outside: the service-account token rotated, the old one revoked.

An operator runs as a ServiceAccount, configured as in a Pod (the
configuration ``Client.in_cluster`` makes, pointed at this test's token file
and server, trusting the server as the test's own configuration does: its CA
file, or no CA where its kubeconfig sets ``insecure-skip-tls-verify``),
with informers and a stream of writes. Then the kubelet's rotation is played:
a new token (from the TokenRequest API, bound to another Secret) is written
into the token volume by an atomic ``..data`` swap, and the Secret the old
token is bound to is deleted, which makes the API server refuse the old
token from then on. Runs on both backends (the in-process server issues
bound tokens as kube-apiserver does).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest
from kubernetes_asyncio.client import Configuration

from reconcilekit import APIConnectionError, APIError, Client
from reconcilekit._client.config import load_in_cluster
from reconcilekit.kinds import CONFIG_MAPS, ROLE_BINDINGS, ROLES, SECRETS, SERVICE_ACCOUNTS
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import Cluster, eventually, write_volume

pytestmark = pytest.mark.timeout(120)


SA = "operator"
LIVENESS = 4.0  # the informers' watches last 2 to 3 s: several are opened after the revocation
Obj = dict[str, Any]


def write_like_the_kubelet(volume: Path, token: str) -> Path:
    """Write ``token`` into ``volume`` as the kubelet rotates a projected token."""
    return write_volume(volume, {"token": token})["token"]


async def grant(admin: Client, ns: str) -> None:
    """The ServiceAccount, and what it may do in ``ns``: ConfigMaps and Secrets."""
    await admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": SA}}, ns)
    await admin.create(ROLES, {"metadata": {"name": SA}, "rules": [{
        "apiGroups": [""], "resources": ["configmaps", "secrets"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]}]}, ns)
    await admin.create(ROLE_BINDINGS, {
        "metadata": {"name": SA},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": SA},
        "subjects": [{"kind": "ServiceAccount", "name": SA, "namespace": ns}]}, ns)


async def bound_token(admin: Client, ns: str, secret: str) -> str:
    """A token for the ServiceAccount bound to a new Secret ``secret``: deleting the Secret
    revokes the token (kube-apiserver looks the bound object up on every request)."""
    created = await admin.create(SECRETS, {"metadata": {"name": secret}}, ns)
    review = await admin.request(
        "POST", SERVICE_ACCOUNTS.path(ns, SA) + "/token", body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600, "boundObjectRef": {
                "apiVersion": "v1", "kind": "Secret", "name": secret,
                "uid": created["metadata"]["uid"]}}})
    return str(review["status"]["token"])


def trust_of(configuration: Any) -> dict[str, Any]:
    """How ``configuration`` trusts its server, as ``load_in_cluster`` takes it: its CA
    file, or ``insecure_skip_tls_verify``; skips the test where it names neither (a
    kubeconfig trusting the system's CAs: a Pod's configuration needs a CA file)."""
    if configuration.ssl_ca_cert:
        return {"ca_file": str(configuration.ssl_ca_cert)}
    if not configuration.verify_ssl:
        return {"insecure_skip_tls_verify": True}
    pytest.skip("the cluster's kubeconfig names no CA file and verifies TLS (the system's "
                "CAs): the Pod's configuration this test plays needs a CA file, or "
                "insecure-skip-tls-verify")


async def answers(host: str, trust: dict[str, Any], token: str) -> int:
    """The status kube-apiserver answers a request carrying ``token``."""
    cfg = Configuration(host=host)
    cfg.ssl_ca_cert = trust.get("ca_file")
    cfg.verify_ssl = not trust.get("insecure_skip_tls_verify", False)
    cfg.api_key = {"BearerToken": token}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    async with Client(cfg) as probe:
        try:
            await probe.request("GET", "/api")
        except APIError as err:
            return err.status
    return 200


async def test_a_token_rotated_and_revoked_fails_no_request_and_watches_go_on(
        apiserver: Cluster, client: Client, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """Guarantees, on kube-apiserver, when the kubelet writes a new token (bound to another
    Secret) and the old one is revoked (its Secret deleted) while an operator lists,
    watches and writes:

    * the requests after the swap carry the new token (the old one is refused with 401
      from the revocation on, and every request after it succeeds), and the client's
      configuration holds it;
    * no write fails and none is lost: the writes all happened, once; at most one
      request is answered 401 (sent before the swap, answered after the revocation),
      and it is sent once more with the new token;
    * the informers keep watching: watches opened after the revocation (with the new
      token) deliver the writes made after it, and each store ends equal to a fresh list;
    * nothing is logged at WARNING or above.
    """
    ns = apiserver.namespace
    trust = trust_of(apiserver.configuration)
    await grant(client, ns)
    await apiserver.until_allowed(f"system:serviceaccount:{ns}:{SA}", "list", "secrets",
                                  namespace=ns, groups=["system:serviceaccounts"])
    old = await bound_token(client, ns, "token-old")
    host = str(apiserver.configuration.host)
    volume = tmp_path / "serviceaccount"
    volume.mkdir()
    token_file = write_like_the_kubelet(volume, old)
    caplog.set_level(logging.INFO, "reconcilekit")
    written: list[str] = []
    failures: list[str] = []
    revoked = anyio.Event()
    written_after_revocation: list[str] = []

    stop_writing, writer_done = anyio.Event(), anyio.Event()

    async def writer(operator: Client) -> None:
        n = 0
        while not stop_writing.is_set():
            name = f"cm-{n}"
            try:
                await operator.create(CONFIG_MAPS, {"metadata": {"name": name},
                                                   "data": {"n": str(n)}}, ns)
            except (APIError, APIConnectionError) as err:
                failures.append(f"{name}: {err}")
            else:
                written.append(name)
                if revoked.is_set():
                    written_after_revocation.append(name)
            n += 1
            await anyio.sleep(0.02)
        writer_done.set()

    async with Client(load_in_cluster(token_file=token_file, host=host, **trust)) as operator:
        configmaps = Informer(operator, CONFIG_MAPS, namespace=ns, liveness_timeout=LIVENESS)
        secrets_ = Informer(operator, SECRETS, namespace=ns, liveness_timeout=LIVENESS)
        informers = (configmaps, secrets_)
        async with anyio.create_task_group() as tg:
            for informer in informers:
                tg.start_soon(informer.run)
            for informer in informers:
                with anyio.fail_after(30):
                    await informer.synced.wait()
            tg.start_soon(writer, operator)
            await eventually(lambda: len(written) >= 10, within=30, what="writes")

            new = await bound_token(client, ns, "token-new")
            write_like_the_kubelet(volume, new)  # the kubelet's rotation...
            await client.delete(SECRETS, "token-old", ns)  # ...and the old token revoked

            async def old_refused() -> bool:
                return await answers(host, trust, old) == 401

            await eventually(old_refused, within=30, interval=0.1,
                             what="the old token refused")
            assert await answers(host, trust, new) == 200
            revoked.set()
            opened = [i.watchers[0].statistics().watches for i in informers]

            # every informer opens watches with the new token and goes on delivering
            await eventually(lambda: all(
                i.watchers[0].statistics().watches >= n + 2 and i.statistics().watching
                for i, n in zip(informers, opened, strict=True)), within=30,
                what="watches opened again after the revocation")
            await eventually(lambda: len(written_after_revocation) >= 10, within=30,
                             what="writes after the revocation")
            stop_writing.set()
            with anyio.fail_after(30):
                await writer_done.wait()
            await converged(client, ns, informers)
            tg.cancel_scope.cancel()
            # after the swap the configuration holds the new token
            assert operator.configuration.api_key["BearerToken"] == new
            stats = operator.statistics()

    assert failures == []
    listed = await client.list_all(CONFIG_MAPS, ns)
    names = sorted(o["metadata"]["name"] for o in listed["items"]
                   if o["metadata"]["name"].startswith("cm-"))
    assert names == sorted(written)  # every write happened, once
    rejected = sum(n for (verb, resource), n in stats.errors.items())
    assert rejected <= 1, f"more than one request refused: {stats.errors}"
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    reopened = [i.watchers[0].statistics().watches - n
                for i, n in zip(informers, opened, strict=True)]
    print(f"\n{len(written)} writes ({len(written_after_revocation)} after the revocation), "
          f"requests refused with 401: {rejected}; watches opened after it: {reopened}")


async def converged(admin: Client, ns: str, informers: tuple[Informer, ...]) -> None:
    """Each informer's store ends holding exactly a fresh list's objects, at their
    resourceVersions (compared after the writes stopped)."""
    for informer in informers:
        truth = await admin.list_all(informer.resource, ns)
        want = {(o["metadata"]["name"], o["metadata"]["resourceVersion"])
                for o in truth["items"]}
        await eventually(lambda i=informer, w=want: {  # type: ignore[misc]
            (o["metadata"]["name"], o["metadata"]["resourceVersion"]) for o in i.store.list()
        } == w, within=30, what=f"{informer.resource} store equal to a fresh list")
