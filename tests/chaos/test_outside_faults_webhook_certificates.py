"""Faults from outside: the webhook server's certificate replaced on disk mid-storm.

A Manager's WebhookServer serves a validating webhook for ConfigMaps with a
certificate read from files (``CertificateFiles``, looked at every 0.1 s),
laid out as the kubelet mounts cert-manager's Secret: ``tls.crt``,
``tls.key`` and ``ca.crt`` are links into ``..data``, itself a link to a
timestamped directory. The configuration's ``caBundle`` (the ``ca.crt``
file) trusts the CAs of the old and the new certificates, as cert-manager's
CA bundle does while a CA rotates. 200 writes the webhook admits are sent at
once, and while the first of them are held inside the webhook, the files are
replaced:

* as the kubelet does: a new directory, ``..data`` swapped to it by a rename;
* by a plain rewrite of ``tls.crt`` and then ``tls.key`` in place (not atomic:
  for a moment the certificate and key do not match).

Runs on both backends (kube-apiserver and the in-process server call the
webhook over HTTPS the same way).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from cryptography import x509

from reconcilekit import APIConnectionError, APIError, Client, Manager
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.testing import Cluster, eventually, write_volume
from reconcilekit.webhook import (
    AdmissionRequest,
    CertificateFiles,
    ServingCertificate,
    Verdict,
    WebhookServer,
)

pytestmark = pytest.mark.timeout(120)


WRITES = 200
FIRST = 60  # writes sent before the files are replaced (the rest after)
HELD = 40  # admissions held inside the webhook, at least, when the files are replaced
# (the in-process server calls webhooks over at most 100 connections: FIRST leaves room)
Obj = dict[str, Any]


def mount(volume: Path, cert: ServingCertificate, ca_bundle: bytes) -> None:
    """Write ``cert`` (and ``ca_bundle`` as ``ca.crt``) into ``volume`` as the kubelet
    updates a Secret volume: a fresh directory, ``..data`` swapped to it by a rename."""
    write_volume(volume, {"tls.crt": cert.cert_pem, "tls.key": cert.key_pem,
                          "ca.crt": ca_bundle})


def rewrite_in_place(volume: Path, cert: ServingCertificate) -> None:
    """Rewrite ``tls.crt``, then ``tls.key``, in place (through the links)."""
    (volume / "tls.crt").write_bytes(cert.cert_pem)
    (volume / "tls.key").write_bytes(cert.key_pem)


def serial(cert: ServingCertificate) -> int:
    return x509.load_pem_x509_certificate(cert.cert_pem).serial_number


async def served_serial(port: int, ca_bundle: bytes) -> int:
    """The serial number of the certificate a new TLS connection to the webhook gets."""
    context = ssl.create_default_context(cadata=ca_bundle.decode())
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


class Gate:
    """Holds every admission inside the webhook while closed (8 s at most: within the
    webhook's 10 s timeout, so a stuck test fails instead of hanging)."""

    def __init__(self) -> None:
        self.reviews = 0
        self.held = 0
        self.expired = 0  # holds ended by the bound, not by the gate opening
        self.renewals: list[float] = []  # seconds from a replacement to the new cert served
        self.opened = anyio.Event()

    def close(self) -> None:
        self.held = 0
        self.opened = anyio.Event()

    async def pass_through(self) -> None:
        self.reviews += 1
        if not self.opened.is_set():
            self.held += 1
            with anyio.move_on_after(8) as bound:
                await self.opened.wait()
            self.expired += bound.cancelled_caught


async def storm(writer: Client, ns: str, tag: str, gate: Gate,
                replace: Callable[[], object], new_serial: int, port: int,
                ca_bundle: bytes) -> list[str]:
    """``WRITES`` creates, the webhook holding each: ``FIRST`` are sent, and once ``HELD``
    of them are held (on connections made with the old certificate) the files are
    replaced; once a new connection gets the certificate of ``new_serial`` the rest are
    sent, and reach the webhook while the first are still held, so over new connections
    (one request per HTTP/1.1 connection), with the new certificate. Then the gate opens.
    Returns the writes that failed."""
    failures: list[str] = []
    gate.close()

    async def create(i: int) -> None:
        try:
            await writer.create(CONFIG_MAPS, {"metadata": {"name": f"{tag}-{i}"},
                                             "data": {"i": str(i)}}, ns)
        except (APIError, APIConnectionError) as err:
            failures.append(f"{tag}-{i}: {err}")

    async def renewed() -> bool:
        return await served_serial(port, ca_bundle) == new_serial

    async with anyio.create_task_group() as tg:
        for i in range(FIRST):
            tg.start_soon(create, i)
        await eventually(lambda: gate.held >= HELD, within=30, what="admissions held")
        replaced = anyio.current_time()
        replace()
        await eventually(renewed, within=30, interval=0.05, what="the new certificate served")
        gate.renewals.append(anyio.current_time() - replaced)
        before = gate.held
        for i in range(FIRST, WRITES):
            tg.start_soon(create, i)
        await eventually(lambda: gate.held >= before + HELD // 2, within=30,
                         what="later admissions held, over new connections")
        gate.opened.set()
    return failures


async def test_certificate_files_replaced_during_200_admissions_fail_none(
        apiserver: Cluster, client: Client, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """Must hold, for a ``..data`` swap and for a plain rewrite alike: all 200 writes
    succeed (none refused, none failing to reach the webhook), and TLS handshakes after
    the reload present the new certificate (its serial, read from a client connection).
    The only line above INFO is the plain rewrite's half-written pair, if the reload
    looked in between (one WARNING at most)."""
    ns = apiserver.namespace
    first, second, third = (ServingCertificate.generate() for _ in range(3))
    bundle = first.ca_pem + second.ca_pem + third.ca_pem
    volume = tmp_path / "webhook-certs"
    volume.mkdir()
    mount(volume, first, bundle)
    files = CertificateFiles(volume, interval=0.1)
    server = WebhookServer(name=f"rk-{ns}", host="127.0.0.1", port=0, certificate=files,
                           install_configurations=True, remove_configurations_on_exit=True)
    gate = Gate()

    @server.validator(CONFIG_MAPS, name="certs.configmaps.reconcilekit.dev",
                      failure_policy="Fail", timeout_seconds=10,
                      namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": ns}})
    async def validate(request: AdmissionRequest) -> Verdict:
        assert request.object is not None
        if (request.object.get("data") or {}).get("deny"):
            return Verdict.deny("asked to")
        await gate.pass_through()
        return Verdict.allow()

    configuration = copy.deepcopy(apiserver.configuration)
    configuration.connection_pool_maxsize = WRITES
    caplog.set_level(logging.INFO, "reconcilekit")
    async with Manager(client, namespace=ns, http_addr=None, webhook_server=server), \
            Client(configuration) as writer:
        # kube-apiserver loads webhook configurations through an informer: wait until
        # it calls this one
        async def called() -> bool:
            got = await apiserver.request("POST", f"{CONFIG_MAPS.path(ns)}?dryRun=All", json={
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"},
                "data": {"deny": "yes"}})
            return got.status == 403

        await eventually(called, within=30, interval=0.1, what="the webhook called")
        assert await served_serial(server.port, bundle) == serial(first)

        swapped = await storm(writer, ns, "swap", gate, lambda: mount(volume, second, bundle),
                              serial(second), server.port, bundle)
        rewritten = await storm(writer, ns, "rewrite", gate,
                                lambda: rewrite_in_place(volume, third), serial(third),
                                server.port, bundle)
    assert swapped == []
    assert rewritten == []
    listed = await client.list_all(CONFIG_MAPS, ns)
    names = {o["metadata"]["name"] for o in listed["items"]}
    assert {f"{tag}-{i}" for tag in ("swap", "rewrite") for i in range(WRITES)} <= names
    assert gate.reviews >= 2 * WRITES
    assert gate.expired == 0
    above_info = [r.getMessage() for r in caplog.records if r.levelno > logging.INFO]
    assert len(above_info) <= 1, above_info
    assert all("changed but cannot be loaded" in line for line in above_info), above_info
    print(f"\n{2 * WRITES} admissions, {gate.reviews} reviews; new certificate served "
          f"{', '.join(f'{t:.2f}' for t in gate.renewals)} s after the replacements; lines "
          f"above INFO: {above_info}")
