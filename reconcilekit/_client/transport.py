"""HTTP for :class:`reconcilekit.Client`: one request with timeout, typed errors and retries.

The aiohttp session is built from the kubernetes-asyncio configuration the
way kubernetes-asyncio builds its own (TLS verification and CA, client
certificate, TLS server name, ``connection_pool_maxsize`` connections, a 2 MiB
read buffer for large watch events), with two differences. Requests for
coordination.k8s.io (Leases: leader election and shard rings) have a session
of their own (two connections): under load or latency a renewal would
otherwise wait for a connection behind the requests of the work the Lease
guards (and behind the watches holding theirs), and the holder lose its
Lease for want of a connection. And the environment is
read once per session, not on every request. kubernetes-asyncio's session
trusts the environment, and aiohttp then looks up ``~/.netrc`` and the proxy
variables in a worker thread for each request, two thread hand-offs that cost
more CPU than the request itself. Like client-go (whose
``ProxyFromEnvironment`` reads the variables once per process), the proxy for
the API server is resolved when the session is created: the configuration's
``proxy`` if set, else ``HTTPS_PROXY``/``HTTP_PROXY`` unless ``NO_PROXY``
exempts the host. ``.netrc`` is not consulted (no Kubernetes client does).

The bearer token is asked of the configuration for every request: in-cluster
and exec-plugin configurations install a hook that refreshes it, and the hook
only does work when the token is due. A configuration whose token comes from
a rotated file (:func:`reconcilekit._client.config.load_in_cluster`) also has
its 401s handled: the file is read again and, if it now holds another token,
the request (any verb: a 401 is answered before anything is done) is sent
once more with it; the rejected attempt is counted as an error and a retry.

With tracing on (:func:`reconcilekit.tracing.enable`), each attempt of a
request made within a span is a child span, and its ``traceparent`` header is
sent (kube-apiserver's own spans then join the trace); watch streams are not
traced.
"""

from __future__ import annotations

import contextlib
import logging
import random
import ssl
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import orjson
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from .._foundations.clock import Clock
from .._foundations.collector import collector_paused
from .._foundations.errors import (
    APIConnectionError,
    APIError,
    APITimeoutError,
    Unauthorized,
    describe_error,
    error_from_response,
)
from .._foundations.logging import RepeatFilter
from .._tracing import switch as tracing
from .config import token_file_of
from .retry import RetryPolicy

__all__ = ["ClientStatistics", "RequestRecord", "Transport", "request_labels"]

log = logging.getLogger("reconcilekit.client")

Params = Mapping[str, str | int | bool | None]


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One attempt of one request, as passed to request observers.

    ``verb`` is kube-apiserver's (get, list, watch, create, update, patch,
    delete, deletecollection); ``resource`` is ``pods``, ``pods/status`` or
    ``widgets.example.com`` (the path for non-resource URLs). ``status`` is
    the HTTP status, or None when no answer came (connection error, timeout).
    ``duration`` is in seconds of the client's clock. ``retried`` says the
    client will send this request again.
    """

    verb: str
    resource: str
    method: str
    status: int | None
    duration: float
    retried: bool


@dataclass(frozen=True, slots=True)
class ClientStatistics:
    """Counts per ``(verb, resource)`` since the client was created.

    ``requests`` counts attempts sent (retries included), ``errors`` the
    attempts that failed (non-2xx or no answer), ``retries`` the attempts
    that were followed by a retry. ``in_flight`` is the number of requests
    sent and not yet answered now (a retry's wait is not in flight; a
    watch stream is, until its response headers arrive): zero means no
    request of this client is waiting on the API server.
    """

    requests: Mapping[tuple[str, str], int]
    errors: Mapping[tuple[str, str], int]
    retries: Mapping[tuple[str, str], int]
    in_flight: int = 0

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def total_retries(self) -> int:
        return sum(self.retries.values())


# Lease requests (leader election, shard rings) go over connections of their own: a
# renewal must not queue behind the work it guards, nor behind watches holding the pool.
_LEASES_PATH = "/apis/coordination.k8s.io/"
_LEASE_CONNECTIONS = 2
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def request_labels(method: str, path: str, params: Params | None = None) -> tuple[str, str]:
    """kube-apiserver's ``(verb, resource)`` for a request, as its RequestInfo resolver does."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    else:
        return method.lower(), path
    if rest[:1] == ["watch"]:
        rest, params = rest[1:], {"watch": "true"}
    if len(rest) > 2 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        rest = rest[2:]
    if not rest:
        return method.lower(), path
    resource = f"{rest[0]}.{group}" if group else rest[0]
    if len(rest) > 2:
        resource = f"{resource}/{rest[2]}"
    named = len(rest) > 1
    method = method.upper()
    if method == "GET":
        watch = str((params or {}).get("watch", "")).lower() in ("true", "1")
        verb = "watch" if watch else ("get" if named else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    return verb, resource


def _query(params: Params | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, value in (params or {}).items():
        if value is None:
            continue
        out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


class Transport:
    """Sends requests over an aiohttp session made from the configuration (module docstring).

    Guarantees:
      * every request other than :meth:`open_stream` ends within ``timeout``
        seconds per attempt, and is sent at most ``retry.max_retries + 1``
        times (one more after a 401 when the token file then holds another
        token); retries follow :class:`RetryPolicy` and wait on ``clock``;
      * a non-2xx answer raises the :class:`APIError` subclass of its Status;
        no answer raises :class:`APIConnectionError` (:class:`APITimeoutError`
        after a timeout); aiohttp's own exceptions never escape :meth:`request`;
      * every attempt is counted in :meth:`statistics` and reported to the
        request observers, in order.
    """

    def __init__(self, configuration: Any, *, clock: Clock, user_agent: str,
                 retry: RetryPolicy, timeout: float) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        self.configuration = configuration
        self.host = str(configuration.host).rstrip("/")
        self._clock = clock
        self._repeats = RepeatFilter(clock=clock)
        self._user_agent = user_agent
        self._retry = retry
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._connect_timeout = timeout
        self._random = random.Random()
        self._http: tuple[aiohttp.ClientSession, dict[str, Any]] | None = None
        self._lease_http: tuple[aiohttp.ClientSession, dict[str, Any]] | None = None
        self._closed = False
        self._requests: Counter[tuple[str, str]] = Counter()
        self._errors: Counter[tuple[str, str]] = Counter()
        self._retries: Counter[tuple[str, str]] = Counter()
        self._in_flight = 0
        self._observers: list[Callable[[RequestRecord], None]] = []
        self._token_file = token_file_of(configuration)

    # -- session ----------------------------------------------------------------------------

    def _session(self, url: str = "") -> tuple[aiohttp.ClientSession, dict[str, Any]]:
        """The session for ``url`` (created on first use, inside the running loop) and
        per-request options: Lease requests have a session of their own (requests
        only: a watch, even of Leases, never takes one of its connections)."""
        if self._closed:
            raise RuntimeError("the client is closed")
        if _LEASES_PATH in url:
            if self._lease_http is None:
                self._lease_http = _new_session(self.configuration, self.host,
                                                limit=_LEASE_CONNECTIONS)
            return self._lease_http
        if self._http is None:
            self._http = _new_session(self.configuration, self.host)
        return self._http

    async def _headers(self, content_type: str | None,
                       accept: str | None = None) -> dict[str, str]:
        headers = {"Accept": accept or "application/json", "User-Agent": self._user_agent}
        token = await self.configuration.get_api_key_with_prefix("BearerToken")
        if token:
            headers["Authorization"] = token
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    def _token_changed(self, error: Exception, headers: Mapping[str, str]) -> bool:
        """After a 401: True if the token file now holds another token than was sent."""
        if self._token_file is None or not isinstance(error, Unauthorized):
            return False
        sent = headers.get("Authorization", "").removeprefix("Bearer ")
        if not self._token_file.refresh_after_rejection(sent):
            return False
        log.info("the server rejected the service-account token (401); sending again with "
                 "the token read again from %s", self._token_file.path)
        return True

    async def close(self) -> None:
        """Close the session; further requests raise RuntimeError. Idempotent."""
        self._closed = True
        sessions = (self._http, self._lease_http)
        self._http = self._lease_http = None
        with anyio.CancelScope(shield=True):  # a cancelled caller must not leave one open
            for http in sessions:
                if http is not None:
                    await http[0].close()

    # -- observation ------------------------------------------------------------------------

    def add_observer(self, callback: Callable[[RequestRecord], None]) -> Callable[[], None]:
        self._observers.append(callback)
        return lambda: self._observers.remove(callback) if callback in self._observers else None

    def statistics(self) -> ClientStatistics:
        return ClientStatistics(dict(self._requests), dict(self._errors), dict(self._retries),
                                self._in_flight)

    def _record(self, labels: tuple[str, str], method: str, status: int | None, start: float,
                failed: bool, retried: bool) -> None:
        self._requests[labels] += 1
        if failed:
            self._errors[labels] += 1
        if retried:
            self._retries[labels] += 1
        if self._observers:
            record = RequestRecord(labels[0], labels[1], method, status,
                                   self._clock.monotonic() - start, retried)
            for observer in list(self._observers):
                try:
                    observer(record)
                except Exception:
                    log.exception("request observer %r failed", observer)

    # -- requests ---------------------------------------------------------------------------

    async def request(self, method: str, path: str, *, params: Params | None = None,
                      body: Any = None, content_type: str | None = None,
                      accept: str | None = None) -> dict[str, Any]:
        """Send one request (with retries) and return its decoded JSON answer.

        ``body`` is serialized with orjson unless it is already ``bytes``;
        ``content_type`` defaults to ``application/json`` when there is a body;
        ``accept`` to ``application/json``.
        """
        method = method.upper()
        labels = request_labels(method, path, params)
        query = _query(params)
        data = body if body is None or isinstance(body, bytes) else orjson.dumps(body)
        if data is not None and content_type is None:
            content_type = "application/json"
        url = self.host + path
        retry = 0
        reauthenticated = False
        while True:
            start = self._clock.monotonic()
            status: int | None = None
            error: Exception
            sent = await self._headers(content_type, accept)
            try:
                if tracing.active is None:
                    status, raw, headers = await self._send(method, url, query, data, sent)
                else:
                    status, raw, headers = await self._send_traced(
                        method, url, path, labels, query, data, sent)
            except APIConnectionError as err:
                error = err
            else:
                if 200 <= status < 300:
                    self._record(labels, method, status, start, False, False)
                    return _decode(status, raw)
                error = error_from_response(status, raw, headers)
            if not reauthenticated and self._token_changed(error, sent):
                reauthenticated = True  # once per request: the token read again, sent now
                self._record(labels, method, status, start, True, True)
                continue
            delay = None if _is_tls(error) else self._retry.delay(
                method, error, retry, self._random.random())
            self._record(labels, method, status, start, True, delay is not None)
            if delay is None:
                if retry:
                    error.add_note(f"(after {retry} {'retry' if retry == 1 else 'retries'})")
                raise error
            self._repeats.log(log, logging.INFO, (labels, type(error)),
                              "retrying %s %s in %.2fs (retry %d of %d) after: %s", method, path,
                              delay, retry + 1, self._retry.max_retries, describe_error(error))
            retry += 1
            await self._clock.sleep(delay)

    async def _send(self, method: str, url: str, query: dict[str, str], data: bytes | None,
                    headers: Mapping[str, str]) -> tuple[int, bytes, Mapping[str, str]]:
        session, extra = self._session(url)
        self._in_flight += 1
        try:
            async with session.request(method, url, params=query, data=data, headers=headers,
                                       timeout=self._timeout, **extra) as resp:
                return resp.status, await resp.read(), resp.headers
        except Exception as err:
            wrapped = _connection_error(method, url, err)
            if wrapped is err:
                raise
            raise wrapped from err
        finally:
            self._in_flight -= 1

    async def _send_traced(self, method: str, url: str, path: str, labels: tuple[str, str],
                           query: dict[str, str], data: bytes | None,
                           headers: Mapping[str, str]
                           ) -> tuple[int, bytes, Mapping[str, str]]:
        """:meth:`_send` within a span of its own, if a span is current."""
        hooks = tracing.active
        if hooks is None:
            return await self._send(method, url, query, data, headers)
        with hooks.client_request(method, url, path.split("?", 1)[0], labels,
                                  headers) as span:
            if span is None:
                return await self._send(method, url, query, data, headers)
            answer = await self._send(method, url, query, data, span.headers)
            span.answered(answer[0])
            return answer

    async def open_stream(self, path: str, params: Params | None = None, *,
                          inactivity_timeout: float | None = 70.0, accept: str | None = None
                          ) -> aiohttp.ClientResponse:
        """Open a streaming ``GET`` (a watch) and return aiohttp's response, status 200.

        The stream fails when no byte arrives for ``inactivity_timeout``
        seconds (pair it
        with the server-side ``timeoutSeconds``). Connecting is bounded by the
        client's request timeout. Never retried: the caller decides. Opening
        raises reconcilekit's errors; reading the body afterwards raises
        aiohttp's (``aiohttp.ClientPayloadError``, ``aiohttp.SocketTimeoutError``),
        which the watcher handles. The caller must close the response
        (``async with response:`` or ``response.release()``).
        """
        labels = request_labels("GET", path, params)
        url = self.host + path
        session, extra = self._session()  # a watch of Leases holds no Lease connection
        stream_timeout = aiohttp.ClientTimeout(total=None, sock_connect=self._connect_timeout,
                                               sock_read=inactivity_timeout)
        reauthenticated = False
        while True:
            headers = await self._headers(None, accept)
            start = self._clock.monotonic()
            self._in_flight += 1
            try:
                resp = await self._open(session, url, params, headers, stream_timeout, extra,
                                        labels, start)
            except Unauthorized as err:
                if reauthenticated or not self._token_changed(err, headers):
                    raise
                reauthenticated = True  # once: the token read again, the stream opened again
                self._retries[labels] += 1
                continue
            finally:
                self._in_flight -= 1
            self._record(labels, "GET", resp.status, start, False, False)
            return resp


    async def _open(self, session: aiohttp.ClientSession, url: str, params: Params | None,
                    headers: Mapping[str, str], stream_timeout: aiohttp.ClientTimeout,
                    extra: Mapping[str, Any], labels: tuple[str, str],
                    start: float) -> aiohttp.ClientResponse:
        """Send the watch's GET; its response once the status is 200 (else its error)."""
        try:
            resp = await session.request("GET", url, params=_query(params), headers=headers,
                                         timeout=stream_timeout, **extra)
        except Exception as err:
            self._record(labels, "GET", None, start, True, False)
            wrapped = _connection_error("GET", url, err)
            if wrapped is err:
                raise
            raise wrapped from err
        if resp.status != 200:
            try:
                raw = await resp.read()
            except Exception:
                raw = b""
            finally:
                resp.release()
            self._record(labels, "GET", resp.status, start, True, False)
            raise error_from_response(resp.status, raw, resp.headers)
        return resp


def _new_session(configuration: Any, host: str, *, limit: int | None = None
                 ) -> tuple[aiohttp.ClientSession, dict[str, Any]]:
    """An aiohttp session for ``configuration`` and the options every request passes;
    at most ``limit`` connections (default: the configuration's pool size)."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.disable_strict_ssl_verification:
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    extra: dict[str, Any] = {}
    if configuration.proxy:
        extra["proxy"] = configuration.proxy
        if configuration.proxy_headers:
            extra["proxy_headers"] = configuration.proxy_headers
    else:
        # LookupError: no proxy variable for the scheme, or NO_PROXY exempts the host
        with contextlib.suppress(LookupError):
            extra["proxy"], extra["proxy_auth"] = get_env_proxy_for_url(URL(host))
    if configuration.tls_server_name:
        extra["server_hostname"] = configuration.tls_server_name
    connector = aiohttp.TCPConnector(limit=limit or configuration.connection_pool_maxsize,
                                     ssl=context)
    return aiohttp.ClientSession(connector=connector, read_bufsize=2**21), extra


_QUIET_DECODE_BYTES = 64 * 1024
"""Answers this large are decoded with the cyclic garbage collector paused."""


def _loads(raw: bytes) -> Any:
    """``orjson.loads(raw)``; for a large answer (a list page), with the collector paused.

    Decoding a page of 500 Pods allocates some 50,000 dicts and lists, none
    part of a cycle. With the collector on, each 700 of them start a
    collection of the young generation, and as they all survive they are
    walked again by the older generations' collections: on a 30,000-Pod
    list that was four fifths of the decoding time (``benchmarks/scale.py``).
    Paused, the collector runs once the decoding is done, at the next
    allocation. orjson holds the GIL for the whole call, so no other thread
    runs while it is paused; a collector already disabled stays so.
    """
    if len(raw) < _QUIET_DECODE_BYTES:
        return orjson.loads(raw)
    with collector_paused():
        return orjson.loads(raw)


def _decode(status: int, raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        decoded = _loads(raw)
    except orjson.JSONDecodeError:
        decoded = None
    if not isinstance(decoded, dict):
        snippet = raw[:200].decode(errors="replace")
        raise APIError(f"expected a JSON object in the answer, got: {snippet!r}", status=status,
                       reason="InvalidResponse")
    return decoded


_TLS_ERRORS: tuple[type[Exception], ...] = (aiohttp.ClientConnectorCertificateError,
                                          aiohttp.ClientSSLError)


def _is_tls(error: Exception) -> bool:
    return isinstance(error, APIConnectionError) and isinstance(error.__cause__, _TLS_ERRORS)


def _connection_error(method: str, url: str, err: Exception) -> Exception:
    """The reconcilekit error for an aiohttp failure (other exceptions pass through)."""
    where = f"{method} {url}"
    if isinstance(err, aiohttp.ClientConnectorError):  # before ClientOSError: its base
        return APIConnectionError(f"{where}: cannot connect: {err}", sent=False)
    if isinstance(err, TimeoutError):  # aiohttp's total and socket timeouts are TimeoutErrors
        return APITimeoutError(f"{where}: no answer within the timeout")
    if isinstance(err, aiohttp.ClientPayloadError):
        return APIConnectionError(f"{where}: the answer was cut short: {err}", sent=True)
    if isinstance(err, aiohttp.ClientConnectionError):
        return APIConnectionError(f"{where}: connection lost: {err}", sent=True)
    return err
