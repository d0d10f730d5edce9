"""Bearer tokens and the users they name: the server's static tokens and the
ServiceAccount tokens it issues (kube-apiserver's token file and its service account
token authenticator).

A static token names an administrator (``system:masters``; the server's own
token is ``admin``). A token issued by a TokenRequest names its ServiceAccount
(``system:serviceaccount:NS:NAME``, the service account groups, the account's
uid) until it expires on the server's clock, and only while that
ServiceAccount (the same uid) exists, and the Pod or Secret it is bound to
(``boundObjectRef``), if any: deleting either revokes the token, as
kube-apiserver's lookup of bound tokens does. An issued token is a JWT
with kube-apiserver's claims (``iss``, ``sub``, ``aud``, ``exp``, ``iat``,
``nbf`` and ``kubernetes.io``), signed ES256 by a key of the server's own,
for the clients that read a token's claims; the server itself accepts
exactly the tokens it issued.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from .request_user import RequestUser, service_account_user, user_named

__all__ = ["ISSUER", "TokenAuthenticator", "UidLookup"]

ISSUER = "https://kubernetes.default.svc"
_REFUSED = "invalid bearer token"

# (resource, namespace, name) -> the stored object's uid, or None when there is none
UidLookup = Callable[[str, str, str], str | None]


@dataclass(frozen=True, slots=True)
class _Issued:
    namespace: str
    name: str
    uid: str
    expires: float  # seconds since the epoch, on the server's clock
    audiences: tuple[str, ...]
    bound: tuple[str, str, str] | None  # (resource, name, uid) of the object it is bound to


class TokenAuthenticator:
    """The tokens the server accepts (``static``: token -> user name)."""

    def __init__(self, static: dict[str, str]) -> None:
        self._static = dict(static)
        self._issued: dict[str, _Issued] = {}
        self._key: ec.EllipticCurvePrivateKey | None = None  # made on the first issue

    def add(self, token: str, username: str) -> None:
        self._static[token] = username

    def revoke(self, token: str) -> bool:
        """Forget a static token (False: there was none)."""
        return self._static.pop(token, None) is not None

    def issue(self, namespace: str, name: str, uid: str, *, now: float, expires: float,
              audiences: tuple[str, ...], bound: tuple[str, str, str] | None = None) -> str:
        """A new token for the ServiceAccount ``namespace/name`` (``uid``), good while
        ``bound`` (resource, name and uid of an object of the namespace) exists."""
        issued = _Issued(namespace, name, uid, expires, audiences, bound)
        token = self._signed(issued, now)
        self._issued[token] = issued
        return token

    def _signed(self, issued: _Issued, now: float) -> str:
        if self._key is None:
            self._key = ec.generate_private_key(ec.SECP256R1())
        public = self._key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        scope: dict[str, Any] = {"namespace": issued.namespace, "serviceaccount": {
            "name": issued.name, "uid": issued.uid}}
        if issued.bound is not None:
            scope[issued.bound[0].removesuffix("s")] = {"name": issued.bound[1],
                                                       "uid": issued.bound[2]}
        claims = {"aud": list(issued.audiences), "exp": int(issued.expires),
                  "iat": int(now), "iss": ISSUER, "kubernetes.io": scope, "nbf": int(now),
                  "sub": f"system:serviceaccount:{issued.namespace}:{issued.name}"}
        header = {"alg": "ES256", "kid": _b64(hashlib.sha256(public).digest())}
        signing_input = f"{_b64(orjson.dumps(header))}.{_b64(orjson.dumps(claims))}"
        r, s = decode_dss_signature(self._key.sign(signing_input.encode(),
                                                   ec.ECDSA(hashes.SHA256())))
        return f"{signing_input}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def authenticate(self, token: str, now: float, uid_of: UidLookup
                     ) -> tuple[RequestUser, tuple[str, ...]] | None:
        """The user ``token`` names and the audiences it is good for (none: any), or None
        for a token the server does not accept (unknown, expired, or its account gone)."""
        found = self.review(token, now, uid_of)
        return None if isinstance(found, str) else found

    def review(self, token: str, now: float, uid_of: UidLookup
               ) -> tuple[RequestUser, tuple[str, ...]] | str:
        """What :meth:`authenticate` finds, or for a token refused the error a
        TokenReview's status reports, as kube-apiserver words it: ``invalid bearer
        token`` alone when no authenticator claims the token (not a JWT, or not of this
        issuer), with the service account authenticator's reason otherwise (a signature
        not of this server's key, the account deleted)."""
        if (username := self._static.get(token)) is not None:
            return user_named(username), ()
        issued = self._issued.get(token)
        if issued is None:
            if _issuer(token) != ISSUER:
                return _REFUSED
            return f"[{_REFUSED}, square/go-jose: error in cryptographic primitive]"
        if uid_of("serviceaccounts", issued.namespace, issued.name) is None:
            return f'[{_REFUSED}, serviceaccounts "{issued.name}" not found]'
        gone = uid_of("serviceaccounts", issued.namespace, issued.name) != issued.uid or (
            issued.bound is not None and uid_of(issued.bound[0], issued.namespace,
                                                issued.bound[1]) != issued.bound[2])
        if now >= issued.expires or gone:
            return f"[{_REFUSED}, token lookup failed]"
        return (service_account_user(issued.namespace, issued.name, issued.uid),
                issued.audiences)


def _issuer(token: str) -> object:
    """The ``iss`` claim of a JWT's payload; None when ``token`` is no JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        claims = orjson.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        return None
    return claims.get("iss") if isinstance(claims, dict) else None


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
