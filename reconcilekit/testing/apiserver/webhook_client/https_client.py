"""Calling a webhook as kube-apiserver does: a JSON review POSTed over HTTPS.

One :class:`WebhookClient` serves the admission and the conversion webhooks of
a server. What kube-apiserver's webhook client (``k8s.io/apiserver/pkg/util/
webhook`` and client-go's REST client) does, and the words it fails with:

* the target is ``clientConfig.url``, or ``clientConfig.service``
  (``https://NAME.NAMESPACE.svc:PORT/PATH``). The in-process server runs no
  Services, so a service is never found, as kube-apiserver answers for a
  Service that does not exist (``service "NAME" not found``);
* the server certificate is verified against ``caBundle`` (the system's
  roots without one), host name included;
* the timeout is sent along as ``?timeout=Ns`` (whole seconds, rounded up)
  and enforced here: past it the call fails with ``context deadline exceeded``;
* a non-2xx answer fails with the ``Status`` message it carries, or client-go's
  generic message for its code; a 2xx answer must decode as one of the
  review kinds expected.

Every failure is a :class:`CallError` whose text is client-go's error, which
the callers wrap (``failed calling webhook "NAME": failed to call webhook:
...``, ``conversion webhook for ... failed: ...``).
"""

from __future__ import annotations

import asyncio
import base64
import errno
import math
import ssl
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from ...._foundations.go_compat import go_quote

__all__ = ["CallError", "ClientConfig", "WebhookClient"]

_GENERIC_MESSAGES = {
    400: "the server rejected our request for an unknown reason",
    401: "the server has asked for the client to provide credentials",
    404: "the server could not find the requested resource",
    405: "the server does not allow this method on the requested resource",
    406: "the server was unable to respond with a content type that the client supports",
    409: "the server reported a conflict",
    413: "the server has rejected the request because the request is too large",
    415: "the server was unable to handle the media type",
    422: "the server rejected our request due to an error in our request",
    429: "the server has received too many requests and has asked us to try again later",
    503: "the server is currently unable to handle the request",
    504: "the server was unable to return a response in the time allotted, but may still be "
         "processing the request",
}


class CallError(Exception):
    """A webhook call that failed; ``str()`` is client-go's error text."""


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """A ``WebhookClientConfig``: where the webhook is and the CA its certificate chains to."""

    url: str | None
    service: Mapping[str, Any] | None
    ca_bundle: bytes

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ClientConfig:
        """From a stored (validated) ``clientConfig``; ``caBundle`` is base64 in JSON."""
        bundle = config.get("caBundle") or ""
        return cls(config.get("url"), config.get("service"),
                   base64.b64decode(bundle) if bundle else b"")

    def target(self) -> str:
        """The URL posted to (before the timeout parameter)."""
        if self.url is not None:
            return self.url
        service = self.service or {}
        return (f"https://{service.get('name')}.{service.get('namespace')}.svc:"
                f"{service.get('port', 443)}{service.get('path') or ''}")


class WebhookClient:
    """POSTs reviews to webhooks; keeps an SSL context per CA bundle and one session whose
    connections are kept alive and reused, as kube-apiserver's webhook client does (a TLS
    handshake per review would cost the webhook more than the review). :meth:`close` it."""

    def __init__(self) -> None:
        self._contexts: dict[bytes, ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=100))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _context(self, ca_bundle: bytes) -> ssl.SSLContext:
        context = self._contexts.get(ca_bundle)
        if context is None:
            context = ssl.create_default_context()
            if ca_bundle:
                context = ssl.create_default_context(cadata=ca_bundle.decode(errors="replace"))
            self._contexts[ca_bundle] = context
        return context

    async def post(self, config: ClientConfig, review: Mapping[str, Any], seconds: float,
                   *, group: str, kinds: Collection[str]) -> dict[str, Any]:
        """POST ``review`` with a deadline of ``seconds``; the answer must be one of
        ``kinds`` of API group ``group``. Raises :class:`CallError`."""
        url = f"{config.target()}?timeout={max(1, math.ceil(seconds))}s"
        if config.url is None:
            raise CallError(f"Post {go_quote(url)}: service "
                            f"{go_quote(str((config.service or {}).get('name')))} not found")
        headers = {"Content-Type": "application/json", "Accept": "application/json, */*"}
        try:
            async with asyncio.timeout(seconds):
                try:
                    status, raw = await self._send(url, review, headers, config.ca_bundle)
                except aiohttp.ServerDisconnectedError:
                    # A kept-alive connection the webhook closed meanwhile (it restarted,
                    # or timed the connection out): once more on a new one, as Go's
                    # transport retries a request on a reused connection that died.
                    status, raw = await self._send(url, review, headers, config.ca_bundle)
        except TimeoutError:
            raise CallError(f"Post {go_quote(url)}: context deadline exceeded") from None
        except aiohttp.ClientConnectorCertificateError as err:
            raise CallError(f"Post {go_quote(url)}: {_tls_error(err, url)}") from None
        except aiohttp.ClientConnectorError as err:
            raise CallError(f"Post {go_quote(url)}: {_dial_error(err)}") from None
        except (aiohttp.ClientError, OSError) as err:
            raise CallError(f"Post {go_quote(url)}: {err}") from None
        if not 200 <= status < 300:
            raise CallError(_status_error(status, raw))
        return _decode(raw, group, kinds)


    async def _send(self, url: str, review: Mapping[str, Any], headers: Mapping[str, str],
                    ca_bundle: bytes) -> tuple[int, bytes]:
        async with self._open().post(url, data=orjson.dumps(review), headers=headers,
                                     ssl=self._context(ca_bundle)) as resp:
            return resp.status, await resp.read()


def _tls_error(err: aiohttp.ClientConnectorCertificateError, url: str) -> str:
    cert_error = err.certificate_error
    code = getattr(cert_error, "verify_code", None)
    if code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
        host = url.split("://", 1)[-1].split("/", 1)[0].rsplit(":", 1)[0]
        return f"tls: failed to verify certificate: x509: certificate is not valid for {host}"
    if code in (18, 19, 20, 21):  # self-signed, unknown issuer, cannot verify leaf
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return f"tls: failed to verify certificate: {cert_error}"


def _dial_error(err: aiohttp.ClientConnectorError) -> str:
    where = f"{err.host}:{err.port}"
    if err.os_error.errno == errno.ECONNREFUSED:
        return f"dial tcp {where}: connect: connection refused"
    return f"dial tcp {where}: {err.os_error.strerror or err.os_error}"


def _status_error(status: int, raw: bytes) -> str:
    """client-go's error for a non-2xx answer: its Status message, or the generic one."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    text = raw.decode(errors="replace").strip()
    if status in _GENERIC_MESSAGES:
        return _GENERIC_MESSAGES[status]
    if status == 403:
        return text
    if status >= 500:
        return f"an error on the server ({go_quote(text)}) has prevented the request from " \
               "succeeding"
    return f"the server responded with the status code {status} but did not return more " \
           "information"


def _decode(raw: bytes, group: str, kinds: Collection[str]) -> dict[str, Any]:
    """The answer as client-go's decoder takes it: JSON with a kind the scheme knows."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise CallError(f"couldn't get version/kind; json parse error: {err}") from None
    if not isinstance(body, dict):
        raise CallError("couldn't get version/kind; json parse error: json: cannot unmarshal "
                        "into Go value of type struct { APIVersion string; Kind string }")
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if not kind:
        text = raw.decode(errors="replace")
        raise CallError(f"Object 'Kind' is missing in '{text}'")
    if not isinstance(api_version, str) or api_version.split("/", 1)[0] != group or (
            kind not in kinds):
        raise CallError(f"no kind {go_quote(str(kind))} is registered for version "
                        f"{go_quote(str(api_version))} in scheme "
                        '"pkg/runtime/scheme.go:100"')
    return body
