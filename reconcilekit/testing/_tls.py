"""Certificates for test servers: a throwaway CA and a serving certificate signed by it.

The in-process API server serves HTTPS like kube-apiserver, so that kubectl and
every client-go client (which send a bearer token only over TLS) work against
it. Keys are ECDSA P-256: a key is made in about a millisecond, where RSA-2048
takes tens, and every client kube-apiserver supports accepts them.

Guarantees: the certificate names every host given (DNS names and IP
addresses), is valid from a minute before it was made (clock skew) for the
given lifetime, and is signed by a CA that signs nothing else; the private
keys never leave the :class:`ServingCertificate` unless written out.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["ServingCertificate"]

_PEM = serialization.Encoding.PEM


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(_PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


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
        now = datetime.datetime.now(datetime.UTC)
        start, end = now - datetime.timedelta(minutes=1), now + datetime.timedelta(days=days)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = _name(f"{common_name}-ca")
        ca = (x509.CertificateBuilder()
              .subject_name(ca_name).issuer_name(ca_name)
              .public_key(ca_key.public_key())
              .serial_number(x509.random_serial_number())
              .not_valid_before(start).not_valid_after(end)
              .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
              .add_extension(x509.KeyUsage(
                  digital_signature=True, key_cert_sign=True, crl_sign=True,
                  content_commitment=False, key_encipherment=False, data_encipherment=False,
                  key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
              .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                             critical=False)
              .sign(ca_key, hashes.SHA256()))
        key = ec.generate_private_key(ec.SECP256R1())
        cert = (x509.CertificateBuilder()
                .subject_name(_name(common_name)).issuer_name(ca_name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.SubjectAlternativeName([_san(h) for h in hosts]),
                               critical=False)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        return cls(ca.public_bytes(_PEM), cert.public_bytes(_PEM), _key_pem(key))

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
