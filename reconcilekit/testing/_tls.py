"""Certificates for test servers: a throwaway CA and a serving certificate signed by it.

The in-process API server serves HTTPS like kube-apiserver, so that kubectl and
every client-go client (which send a bearer token only over TLS) work against
it; :class:`ControlPlane` gives kube-apiserver one too. The certificates come
from ``trustme``, the test-certificate library: ECDSA P-256 keys (made in a
millisecond, where RSA-2048 takes tens), accepted by every client
kube-apiserver supports.

Guarantees: the certificate names every host given (DNS names and IP
addresses), is valid from before it was made (clock skew) for the given
lifetime, and is signed by a CA made for it alone; the private key leaves
the :class:`ServingCertificate` only when written out, or for the moment
:meth:`~ServingCertificate.server_context` needs it in a private (0700)
temporary directory that it removes before returning.
"""

from __future__ import annotations

import datetime
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trustme

__all__ = ["ServingCertificate"]


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A CA certificate and a serving certificate with its key, all PEM-encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def generate(cls, hosts: Sequence[str] = ("127.0.0.1", "localhost"), *,
                 common_name: str = "reconcilekit", days: int = 365) -> ServingCertificate:
        """A new CA and a certificate for ``hosts`` (DNS names or IP addresses) signed by it."""
        if not hosts:
            raise ValueError("a serving certificate needs at least one host")
        ca = trustme.CA(organization_name=common_name)
        now = datetime.datetime.now(datetime.UTC)
        leaf = ca.issue_cert(*hosts, common_name=common_name,
                             not_before=now - datetime.timedelta(minutes=1),
                             not_after=now + datetime.timedelta(days=days))
        return cls(ca.cert_pem.bytes(), leaf.cert_chain_pems[0].bytes(),
                   leaf.private_key_pem.bytes())

    def server_context(self) -> ssl.SSLContext:
        """An SSL context that serves this certificate (TLS 1.2 and later)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # load_cert_chain reads files only: hand it a private temporary directory
        with tempfile.TemporaryDirectory(prefix="reconcilekit-tls-") as tmp:
            cert, key = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
            cert.write_bytes(self.cert_pem)
            key.touch(mode=0o600)
            key.write_bytes(self.key_pem)
            context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """An SSL context that trusts only this CA, checking the host name."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())

    def write_ca(self, path: str | Path) -> Path:
        """Write the CA certificate (PEM) to ``path``; returns it."""
        path = Path(path)
        path.write_bytes(self.ca_pem)
        return path
