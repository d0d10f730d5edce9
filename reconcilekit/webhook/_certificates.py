"""Serving certificates for the webhook server: generated at start, or read from files.

Two sources, one interface (:class:`CertificateSource`):

* :class:`ServingCertificate` — a CA and a serving certificate signed by it,
  made in memory (:meth:`ServingCertificate.generate`). For development and
  tests: the manager puts the CA into the webhook configurations it installs.
  The in-process API server and :class:`~reconcilekit.testing.ControlPlane`
  serve one too.
* :class:`CertificateFiles` — ``tls.crt``/``tls.key`` (and ``ca.crt``) as
  cert-manager writes them into a mounted Secret. The files are checked every
  ``interval`` seconds and reloaded when they change (cert-manager rotates in
  place: the kubelet swaps the volume's ``..data`` link), as controller-runtime's
  certwatcher does; new TLS handshakes get the new certificate, open
  connections keep the old one.

Guarantees: a reload that fails (a half-written pair, a key that does not
match) keeps the certificate being served and logs one line; the private key
leaves a :class:`ServingCertificate` only when written out, or for the moment
:meth:`~ServingCertificate.server_context` needs it in a private (0700)
temporary directory that it removes before returning.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import ssl
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._foundations.clock import Clock, SystemClock

if TYPE_CHECKING:
    from cryptography import x509

__all__ = ["CertificateFiles", "CertificateSource", "ServingCertificate"]

logger = logging.getLogger("reconcilekit.webhook")


class CertificateSource(Protocol):
    """What the webhook server serves: an SSL context, and the CA that clients must trust."""

    def server_context(self) -> ssl.SSLContext:
        """The context new connections are served with (the same object across reloads)."""
        ...

    def ca_bundle(self) -> bytes | None:
        """PEM of the CA that signed the serving certificate, if known (for ``caBundle``)."""
        ...


@dataclass(frozen=True, slots=True)
class ServingCertificate:
    """A CA certificate and a serving certificate with its key, all PEM-encoded."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    @classmethod
    def generate(cls, hosts: Sequence[str] = ("127.0.0.1", "localhost"), *,
                 common_name: str = "reconcilekit", days: int = 365) -> ServingCertificate:
        """A new CA and a certificate for ``hosts`` (DNS names or IP addresses) signed by it.

        ECDSA P-256 keys (made in a millisecond, where RSA-2048 takes tens),
        accepted by every client kube-apiserver supports; valid from a minute
        ago (clock skew) for ``days``.
        """
        if not hosts:
            raise ValueError("a serving certificate needs at least one host")
        if days <= 0:
            raise ValueError(f"a serving certificate must be valid for at least a day, not {days}")
        # Imported here: cryptography takes tens of milliseconds to import, which an
        # operator whose certificates come from files (or that serves no webhook) never needs.
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
        now = datetime.datetime.now(datetime.UTC)
        start, end = now - datetime.timedelta(minutes=1), now + datetime.timedelta(days=days)
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, common_name),
                             x509.NameAttribute(NameOID.COMMON_NAME, f"{common_name} CA")])
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
        leaf = (x509.CertificateBuilder()
                .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
                .issuer_name(ca_name)
                .public_key(key.public_key())
                .serial_number(x509.random_serial_number())
                .not_valid_before(start).not_valid_after(end)
                .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                .add_extension(x509.SubjectAlternativeName([_general_name(h) for h in hosts]),
                               critical=False)
                .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                               critical=False)
                .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                    ca_key.public_key()), critical=False)
                .sign(ca_key, hashes.SHA256()))
        pem = serialization.Encoding.PEM
        return cls(ca.public_bytes(pem), leaf.public_bytes(pem),
                   key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                     serialization.NoEncryption()))

    def server_context(self) -> ssl.SSLContext:
        """An SSL context that serves this certificate (TLS 1.2 and later)."""
        context = _server_context()
        # load_cert_chain reads files only: hand it a private temporary directory
        with tempfile.TemporaryDirectory(prefix="reconcilekit-tls-") as tmp:
            cert, key = self.write(tmp)
            context.load_cert_chain(cert, key)
        return context

    def client_context(self) -> ssl.SSLContext:
        """An SSL context that trusts only this CA, checking the host name."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())

    def ca_bundle(self) -> bytes:
        return self.ca_pem

    def write_ca(self, path: str | Path) -> Path:
        """Write the CA certificate (PEM) to ``path``; returns it."""
        path = Path(path)
        path.write_bytes(self.ca_pem)
        return path

    def write(self, directory: str | Path) -> tuple[Path, Path]:
        """Write ``tls.crt``, ``tls.key`` (mode 0600) and ``ca.crt`` (if any) into ``directory``,
        as cert-manager lays out a Secret; returns the certificate and key paths."""
        directory = Path(directory)
        cert, key = directory / "tls.crt", directory / "tls.key"
        cert.write_bytes(self.cert_pem)
        key.touch(mode=0o600)
        key.write_bytes(self.key_pem)
        if self.ca_pem:
            self.write_ca(directory / "ca.crt")
        return cert, key


class CertificateFiles:
    """A serving certificate read from files, reloaded when they change.

    ``CertificateFiles(directory)`` reads ``tls.crt``, ``tls.key`` and (if
    present) ``ca.crt`` from a mounted Secret; or name each file. The first
    read happens in the constructor, so a missing or bad pair fails at once
    with the file named. :meth:`watch` then checks the files every
    ``interval`` seconds (by modification time, size and inode, through
    symlinks) and reloads the pair into the same :class:`ssl.SSLContext`;
    ``on_change`` hears of each successful reload (the manager re-applies
    ``caBundle`` then).
    """

    def __init__(self, directory: str | Path | None = None, *,
                 cert_file: str | Path | None = None, key_file: str | Path | None = None,
                 ca_file: str | Path | None = None, interval: float = 10.0,
                 clock: Clock | None = None) -> None:
        def path(given: str | Path | None, name: str) -> Path:
            if given is not None:
                return Path(given)
            if directory is None:
                raise ValueError("CertificateFiles needs a directory, or both cert_file and "
                                 "key_file")
            return Path(directory) / name

        self.cert_file = path(cert_file, "tls.crt")
        self.key_file = path(key_file, "tls.key")
        self.ca_file: Path | None = (
            path(ca_file, "ca.crt") if ca_file is not None or directory is not None else None)
        if interval <= 0:
            raise ValueError(f"interval must be positive, not {interval}")
        self.interval = interval
        self.clock = clock if clock is not None else SystemClock()
        self._context = _server_context()
        self._ca: bytes | None = None
        self._seen = self._stamp()
        self._load()

    def server_context(self) -> ssl.SSLContext:
        return self._context

    def ca_bundle(self) -> bytes | None:
        return self._ca

    def reload_if_changed(self) -> bool:
        """Reload the files if they changed since the last look; True if it reloaded.

        A pair that does not load (half written, key and certificate apart)
        is logged and the current one kept; the next look tries again.
        """
        stamp = self._stamp()
        if stamp == self._seen:
            return False
        try:
            self._load()
        except (OSError, ssl.SSLError, ValueError) as err:
            logger.warning("serving certificate %s changed but cannot be loaded (keeping the "
                           "current one): %s", self.cert_file, err)
            return False
        self._seen = stamp
        logger.info("serving certificate reloaded from %s", self.cert_file)
        return True

    async def watch(self, on_change: Callable[[], object] | None = None) -> None:
        """Check the files every ``interval`` seconds until cancelled."""
        while True:
            await self.clock.sleep(self.interval)
            if self.reload_if_changed() and on_change is not None:
                on_change()

    def _load(self) -> None:
        for path in (self.cert_file, self.key_file):
            if not path.is_file():
                raise FileNotFoundError(f"serving certificate file {path} does not exist")
        # Read the pair once (a rotation between two reads would mix old and new), and
        # try it on a scratch context first: a pair that fails to load leaves a context
        # half-replaced, serving nothing.
        pair = ServingCertificate(b"", self.cert_file.read_bytes(), self.key_file.read_bytes())
        try:
            pair.server_context()
            with tempfile.TemporaryDirectory(prefix="reconcilekit-tls-") as tmp:
                self._context.load_cert_chain(*pair.write(tmp))
        except ssl.SSLError as err:
            raise ValueError(f"{self.cert_file} and {self.key_file} are not a certificate "
                             f"and its private key: {err.reason or err}") from None
        if self.ca_file is not None and self.ca_file.is_file():
            self._ca = self.ca_file.read_bytes()

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        out = []
        for path in (self.cert_file, self.key_file, self.ca_file):
            try:
                st = path.stat() if path is not None else None
            except OSError:
                st = None
            out.append((st.st_mtime_ns, st.st_size, st.st_ino) if st else (0, 0, 0))
        return tuple(out)

    def __repr__(self) -> str:
        return f"CertificateFiles({str(self.cert_file)!r}, {str(self.key_file)!r})"


def _server_context() -> ssl.SSLContext:
    """TLS 1.2 and later, OpenSSL's defaults otherwise (TLS 1.3 with X25519 and AES-GCM,
    which kube-apiserver's Go client picks), and no TLS 1.3 session tickets.

    kube-apiserver never resumes a session with a webhook (client-go's transports
    set no ``ClientSessionCache``, without which Go's client neither keeps nor
    offers tickets), and opens a connection for each review it has in flight beyond
    its idle ones: the two tickets OpenSSL would make, encrypt and send after each
    handshake are work for nothing, about a seventh of the server's TLS work per
    handshake (docs/performance.md, "Admission webhooks")."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.num_tickets = 0
    return context


def _general_name(host: str) -> x509.GeneralName:
    from cryptography import x509

    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)
