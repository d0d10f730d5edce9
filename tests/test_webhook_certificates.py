"""Serving certificates: generated for the given hosts, or read from files, reloaded on change."""

from __future__ import annotations

import asyncio
import logging
import ssl
from pathlib import Path

import anyio
import pytest
from cryptography import x509

from reconcilekit.testing import FakeClock, eventually
from reconcilekit.webhook import CertificateFiles, ServingCertificate, WebhookServer


def test_a_generated_certificate_names_its_hosts_and_is_signed_by_its_ca() -> None:
    cert = ServingCertificate.generate(("127.0.0.1", "hooks.ns.svc"), common_name="hooks")
    leaf = x509.load_pem_x509_certificate(cert.cert_pem)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert names.get_values_for_type(x509.DNSName) == ["hooks.ns.svc"]
    ca = x509.load_pem_x509_certificate(cert.ca_pem)
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    with pytest.raises(ValueError, match="at least one host"):
        ServingCertificate.generate(())



def _handshake(server: ssl.SSLContext, client: ssl.SSLContext) -> ssl.SSLObject:
    """A TLS handshake between the two contexts in memory, then a few bytes from the server
    (after which a TLS 1.3 server sends its session tickets); the client's side."""
    server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
    serving = server.wrap_bio(server_in, server_out, server_side=True)
    calling = client.wrap_bio(client_in, client_out, server_hostname="127.0.0.1")
    done: set[str] = set()
    while len(done) < 2:
        for name, side in (("client", calling), ("server", serving)):
            if name not in done:
                try:
                    side.do_handshake()
                    done.add(name)
                except ssl.SSLWantReadError:
                    pass
            client_in.write(server_out.read())
            server_in.write(client_out.read())
    serving.write(b"answer")
    client_in.write(server_out.read())
    assert calling.read(100) == b"answer"
    return calling


def test_the_server_speaks_tls_1_3_and_issues_no_session_tickets(tmp_path: Path) -> None:
    """kube-apiserver never resumes a session with a webhook: no ticket is made for it."""
    cert = ServingCertificate.generate(("127.0.0.1",))
    cert.write(tmp_path)
    for context in (cert.server_context(), CertificateFiles(tmp_path).server_context()):
        calling = _handshake(context, cert.client_context())
        assert calling.version() == "TLSv1.3"
        assert calling.session is not None and not calling.session.has_ticket
    context = cert.server_context()
    context.num_tickets = 2  # what OpenSSL does unless told: the check above can fail
    assert _handshake(context, cert.client_context()).session.has_ticket

def test_certificate_files_name_the_missing_or_mismatched_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"tls\.crt does not exist"):
        CertificateFiles(tmp_path)
    one, other = ServingCertificate.generate(), ServingCertificate.generate()
    one.write(tmp_path)
    (tmp_path / "tls.key").write_bytes(other.key_pem)
    with pytest.raises(ValueError, match="are not a certificate and its private key"):
        CertificateFiles(tmp_path)
    with pytest.raises(ValueError, match="needs a directory, or both cert_file and key_file"):
        CertificateFiles(cert_file=tmp_path / "tls.crt")


async def _served_serial(server: WebhookServer, ca: bytes) -> int:
    """The serial number of the certificate a new TLS connection to ``server`` gets."""
    context = ssl.create_default_context(cadata=ca.decode())
    _, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    await writer.wait_closed()
    return x509.load_der_x509_certificate(der).serial_number


async def test_rotated_files_are_served_to_new_connections_after_the_next_look(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    first = ServingCertificate.generate()
    first.write(tmp_path)
    files = CertificateFiles(tmp_path, interval=10, clock=clock)
    assert files.ca_bundle() == first.ca_pem
    server = WebhookServer(host="127.0.0.1", port=0, certificate=files, clock=clock)
    changes: list[None] = []
    caplog.set_level(logging.INFO, "reconcilekit.webhook")
    async with anyio.create_task_group() as tg:
        await tg.start(lambda task_status: server.run(
            on_certificate_change=lambda: changes.append(None), task_status=task_status))
        first_serial = x509.load_pem_x509_certificate(first.cert_pem).serial_number
        assert await _served_serial(server, first.ca_pem) == first_serial

        # a half-written pair (new certificate, old key) is not taken
        second = ServingCertificate.generate()
        (tmp_path / "tls.crt").write_bytes(second.cert_pem)
        await eventually(lambda: clock.sleepers == 1)
        clock.advance(10)
        await eventually(lambda: any("cannot be loaded" in r.getMessage()
                                     for r in caplog.records))
        assert await _served_serial(server, first.ca_pem) == first_serial

        second.write(tmp_path)  # the key and the CA follow
        await eventually(lambda: clock.sleepers == 1)
        clock.advance(10)
        await eventually(lambda: changes == [None])
        assert files.ca_bundle() == second.ca_pem
        second_serial = x509.load_pem_x509_certificate(second.cert_pem).serial_number
        assert await _served_serial(server, second.ca_pem) == second_serial

        clock.advance(10)  # nothing changed: no reload, no call
        await eventually(lambda: clock.sleepers == 1)
        assert changes == [None]
        tg.cancel_scope.cancel()
    levels = [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records
              if "certificate" in r.getMessage()]
    assert levels == [("WARNING", f"serving certificate {tmp_path / 'tls.crt'} changed but "
                                  f"cannot be loaded"),
                      ("INFO", f"serving certificate reloaded from {tmp_path / 'tls.crt'}")]
