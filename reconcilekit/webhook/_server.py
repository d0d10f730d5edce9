"""``WebhookServer``: one HTTPS server for validating, mutating and conversion webhooks.

Expected flow (inside a :class:`~reconcilekit.Manager`, which runs it):

1. handlers are registered with :meth:`WebhookServer.validator`,
   :meth:`~WebhookServer.defaulter` (decorators) and
   :meth:`~WebhookServer.conversion`, before the server runs;
2. the manager starts the server before its caches (a cache of a kind with a
   conversion webhook cannot sync without it) and before its controllers,
   and stops it after them; ``/readyz`` is not ready until it serves;
3. each request is decoded (AdmissionReview or ConversionReview v1), its
   handler runs within a deadline inside the API server's own timeout, and
   the answer echoes the request's ``uid``;
4. with ``install_configurations=True`` the manager writes the
   Validating/MutatingWebhookConfiguration named after the server and each
   CRD's ``spec.conversion`` to point at it (``url`` or ``service``, with
   ``caBundle``), again whenever the certificate's CA changes, and removes
   the configurations it wrote on shutdown when
   ``remove_configurations_on_exit=True``.

Guarantees:
  * a handler that raises, times out or returns the wrong type is answered
    with a denied review naming the webhook and the reason (code 500 or 504)
    — never an HTTP 500; the traceback is logged once per webhook and kind
    of error, then one line each time;
  * a body that is not a review gets HTTP 400 with a message that says what
    is wrong (values quoted from the body cut short), and one WARNING line:
    the API server that sent it is misconfigured (a wrong
    ``admissionReviewVersions``) or something else is posting; a body over
    32 MiB gets 413, also with one line; one nested deeper than 250 levels
    gets 400 (the answer could not be written); the ``Content-Type`` is
    not checked (the body decides); a path no webhook serves gets 404 and
    a method other than POST 405, neither logged;
  * an idle connection is kept 120 s, longer than kube-apiserver keeps one
    (90 s), so the API server is the one that closes it; no TLS session
    tickets are issued (kube-apiserver never resumes a session);
  * a healthy server logs nothing per request (DEBUG only);
  * with tracing on (:func:`reconcilekit.tracing.enable`), each review is a
    server span (``validating webhook NAME``, ``mutating webhook NAME``,
    ``conversion webhook``), a child of the ``traceparent`` the API server
    sent if it sent one, current while the handler runs (its API requests
    are its children).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import anyio.abc
import anyio.lowlevel
import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Histogram

from .._foundations.clock import Clock, SystemClock
from .._foundations.http_endpoints import EndpointsError
from .._foundations.objects import Obj, Resource
from .._tracing import switch as tracing
from ..kinds import MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS
from ._admission_review import (
    AdmissionDenied,
    AdmissionRequest,
    MalformedReview,
    Verdict,
    json_patch,
    review_response,
    shown,
)
from ._certificates import CertificateFiles, CertificateSource, ServingCertificate
from ._conversion import (
    Conversion,
    ConversionFailed,
    ConvertFunction,
    conversion_request,
    conversion_response,
)
from ._hooks import (
    Hook,
    HookType,
    ServiceReference,
    ca_bundle_field,
    default_name,
    default_path,
)
from ._tls_handshakes import stop_tls_site

__all__ = ["WebhookServer"]

logger = logging.getLogger("reconcilekit.webhook")
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Awaitable[Any]])
CONVERT_PATH = "/convert"
MAX_BODY = 32 * 1024 * 1024  # kube-apiserver sends an object and its old version, 3 MiB each
# An idle connection is kept longer than kube-apiserver keeps it (client-go's transports close
# theirs after 90 s idle): the client always closes first, never sending a review on a
# connection the server is closing, and its idle connections are reused across bursts.
KEEPALIVE_SECONDS = 120.0


class WebhookServer:
    """Serves admission and conversion webhooks over HTTPS; see the module docstring.

    ``url`` (``https://host:port``, no path) or ``service`` say how the API
    server reaches this server (for the configurations the manager
    installs); by default ``https://HOST:PORT`` with the bound port, and
    127.0.0.1 for a server on all interfaces. ``certificate`` is a
    :class:`CertificateFiles` (production: cert-manager's Secret) or a
    :class:`ServingCertificate`; by default one is generated at start for
    the advertised host names (development and tests).
    """

    def __init__(self, *, name: str = "reconcilekit", host: str = "0.0.0.0", port: int = 9443,
                 certificate: CertificateSource | None = None, url: str | None = None,
                 service: ServiceReference | None = None,
                 install_configurations: bool = False,
                 remove_configurations_on_exit: bool = False,
                 clock: Clock | None = None) -> None:
        if url is not None and service is not None:
            raise ValueError("give the webhook server a url or a service, not both")
        if url is not None and (not url.startswith("https://") or url.rstrip("/").count("/") > 2):
            raise ValueError(f"webhook url {url!r} must be https://host[:port], without a path "
                             f"(each webhook adds its own)")
        if not 0 <= port <= 65535:
            raise ValueError(f"webhook port {port} is not a TCP port")
        self.name = name
        self.host = host
        self.port = port
        self.url = url.rstrip("/") if url else None
        self.service = service
        self.install_configurations = install_configurations
        self.remove_configurations_on_exit = remove_configurations_on_exit
        self.clock = clock if clock is not None else SystemClock()
        self.certificate: CertificateSource = (
            certificate if certificate is not None
            else ServingCertificate.generate(self._hosts(), common_name=name))
        self.hooks: dict[str, Hook] = {}
        self.conversions: dict[tuple[str, str], tuple[Resource, Conversion]] = {}
        self.serving = False
        self._context = self.certificate.server_context()
        self._failures: set[tuple[str, type[BaseException]]] = set()
        self._requests: Counter | None = None
        self._latency: Histogram | None = None

    # -- registration ------------------------------------------------------------------------

    def validator(self, resource: Resource, *, operations: tuple[str, ...] = ("CREATE", "UPDATE"),
                  name: str | None = None, path: str | None = None,
                  **options: Any) -> Callable[[F], F]:
        """Decorator: ``async def f(request) -> Verdict`` validates ``resource``.

        ``options`` are :class:`Hook`'s: ``sub_resources``, ``failure_policy``,
        ``side_effects``, ``timeout_seconds``, ``namespace_selector``,
        ``object_selector``, ``match_conditions`` (see :func:`exclude_users`).
        """
        return self._register("validating", "validate", resource, operations, name, path, options)

    def defaulter(self, resource: Resource, *, operations: tuple[str, ...] = ("CREATE", "UPDATE"),
                  name: str | None = None, path: str | None = None,
                  **options: Any) -> Callable[[F], F]:
        """Decorator: ``async def f(request) -> object | None`` sets defaults on ``resource``.

        Return the object as it should be stored (``request.object`` changed
        in place is fine) or None for no change; the server answers with the
        JSON patch between them.
        """
        return self._register("mutating", "default", resource, operations, name, path, options)

    def add(self, hook: Hook) -> Hook:
        """Register a hook built by hand; ValueError if its path or name is taken."""
        if self.serving:
            raise RuntimeError("webhooks must be registered before the server runs")
        for other in self.hooks.values():
            if other.path == hook.path or other.name == hook.name:
                raise ValueError(f"webhook {hook.name} at {hook.path}: the path or name is "
                                 f"already taken by {other.name} at {other.path}")
        self.hooks[hook.path] = hook
        return hook

    def conversion(self, resource: Resource, *, hub: str,
                   spokes: Mapping[str, tuple[ConvertFunction, ConvertFunction]]) -> Conversion:
        """Convert ``resource``'s kind between ``hub`` and each spoke version
        (``{version: (to_hub, from_hub)}``) at ``/convert``."""
        conversion = Conversion(resource.group, resource.kind, hub, dict(spokes))
        key = (resource.group, resource.kind)
        if key in self.conversions:
            raise ValueError(f"{resource.kind}.{resource.group} already has a conversion")
        self.conversions[key] = (resource, conversion)
        return conversion

    def _register(self, type: HookType, verb: str, resource: Resource,
                  operations: tuple[str, ...], name: str | None, path: str | None,
                  options: dict[str, Any]) -> Callable[[F], F]:
        hook_name = name or default_name(verb, resource)
        hook_path = path or default_path(verb, resource)

        def register(handler: F) -> F:
            self.add(Hook(type, hook_name, hook_path, resource, handler,
                          operations=tuple(operations), **options))
            return handler
        return register

    # -- configurations ----------------------------------------------------------------------

    def client_config(self, path: str) -> Obj:
        """``clientConfig`` pointing at ``path`` of this server, with ``caBundle`` if known."""
        ca = ca_bundle_field(self.certificate.ca_bundle())
        if self.service is not None:
            return {"service": {"namespace": self.service.namespace, "name": self.service.name,
                                "path": path, "port": self.service.port}, **ca}
        return {"url": f"{self.base_url}{path}", **ca}

    @property
    def base_url(self) -> str:
        if self.url is not None:
            return self.url
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"https://{f'[{host}]' if ':' in host else host}:{self.port}"

    def configurations(self) -> list[tuple[Resource, Obj]]:
        """The webhook configurations for the registered hooks (one per type present)."""
        out = []
        kinds: tuple[tuple[Resource, str], ...] = (
            (MUTATING_WEBHOOK_CONFIGURATIONS, "mutating"),
            (VALIDATING_WEBHOOK_CONFIGURATIONS, "validating"))
        for resource, type in kinds:
            hooks = [h for h in self.hooks.values() if h.type == type]
            if hooks:
                out.append((resource, {
                    "apiVersion": resource.api_version, "kind": resource.kind,
                    "metadata": {"name": self.name,
                                 "labels": {"app.kubernetes.io/managed-by": "reconcilekit"}},
                    "webhooks": [h.entry(self.client_config(h.path)) for h in hooks]}))
        return out

    def crd_conversions(self) -> dict[str, Obj]:
        """CRD name -> its ``spec.conversion`` pointing at this server's ``/convert``."""
        return {f"{resource.plural}.{resource.group}": {
                    "strategy": "Webhook",
                    "webhook": {"clientConfig": self.client_config(CONVERT_PATH),
                                "conversionReviewVersions": ["v1"]}}
                for resource, _ in self.conversions.values()}

    # -- serving -----------------------------------------------------------------------------

    def attach_metrics(self, registry: CollectorRegistry) -> None:
        """Count requests by webhook and answer, and their latency, into ``registry``."""
        self._requests = Counter("reconcilekit_webhook_requests", "Webhook requests answered, "
                                 "by webhook path and answer", ["webhook", "answer"],
                                 registry=registry)
        self._latency = Histogram("reconcilekit_webhook_request_duration_seconds",
                                  "Time to answer a webhook request", ["webhook"],
                                  registry=registry)

    async def run(self, *, on_certificate_change: Callable[[], object] | None = None,
                  task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; started once the port is bound (:attr:`port` is the bound one)."""
        routes: dict[str, Callable[[web.BaseRequest], Awaitable[web.Response]]] = {
            path: _traced(f"{hook.type} webhook {hook.name}",
                          {"reconcilekit.webhook.name": hook.name,
                           "reconcilekit.webhook.type": hook.type},
                          self._admission_handler(hook))
            for path, hook in self.hooks.items()}
        if self.conversions:
            routes[CONVERT_PATH] = _traced("conversion webhook",
                                           {"reconcilekit.webhook.type": "conversion"},
                                           self._convert)
        runner = web.ServerRunner(
            web.Server(_dispatch(routes), request_factory=_request_factory,
                       access_log=None, keepalive_timeout=KEEPALIVE_SECONDS),
            handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, self.host, self.port, ssl_context=self._context,
                           reuse_address=True)
        try:
            try:
                await site.start()
            except OSError as err:
                raise EndpointsError(f"cannot serve webhooks on {self.host}:{self.port}: "
                                     f"{err.strerror or err}") from None
            sockets: Any = getattr(site._server, "sockets", None) or ()
            if sockets:
                self.port = int(sockets[0].getsockname()[1])
            self.serving = True
            logger.info("serving %d webhook(s) on %s", len(self.hooks) + bool(self.conversions),
                        self.base_url)
            async with anyio.create_task_group() as tg:
                if isinstance(self.certificate, CertificateFiles):
                    tg.start_soon(self.certificate.watch, on_certificate_change)
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self.serving = False
            with anyio.CancelScope(shield=True):
                server = getattr(site, "_server", None)
                await stop_tls_site(runner, server)

    def _admission_handler(self, hook: Hook
                           ) -> Callable[[web.BaseRequest], Awaitable[web.Response]]:
        async def handle(request: web.BaseRequest) -> web.Response:
            started = time.perf_counter()
            try:
                body = await _read(request)
                review = orjson.loads(body)
                admission = AdmissionRequest.from_review(review, body=body)
            except (orjson.JSONDecodeError, MalformedReview, _TooLarge) as err:
                return self._bad_request(hook.path, err)
            verdict, patch = await self._admit(hook, admission,
                                               hook.deadline(request.query.get("timeout")))
            self._observe(hook.path, "allowed" if verdict.allowed else str(verdict.code),
                          started)
            if (t := tracing.active) is not None:
                t.annotate({"reconcilekit.admission.uid": admission.uid,
                            "reconcilekit.admission.operation": admission.operation,
                            "reconcilekit.admission.kind": admission.kind.get("kind", ""),
                            "k8s.namespace.name": admission.namespace,
                            "reconcilekit.admission.name": admission.name,
                            "reconcilekit.admission.allowed": verdict.allowed,
                            "reconcilekit.admission.code": verdict.code})
            logger.debug("%s %s %s/%s: %s", hook.name, admission.operation,
                         admission.namespace, admission.name,
                         "allowed" if verdict.allowed else verdict.message)
            return _json(review_response(admission.uid, verdict, patch))
        return handle

    async def _admit(self, hook: Hook, request: AdmissionRequest,
                     deadline: float) -> tuple[Verdict, list[Obj] | None]:
        if hook.type == "mutating" and request.object is None:
            return Verdict.allow(), None  # nothing to default on DELETE/CONNECT
        # What a defaulter's answer is diffed against (a validator's changes go nowhere).
        original = copy.deepcopy(request.object) if hook.type == "mutating" else None
        done, outcome = await self._within(deadline, hook.handler(request))
        if not done:
            return Verdict(False, f"webhook {hook.name} did not answer within {deadline:.1f}s",
                           504), None
        if isinstance(outcome, AdmissionDenied):
            return Verdict.deny(outcome.message, code=outcome.code), None
        if isinstance(outcome, BaseException):
            return self._failed(hook, outcome), None
        if hook.type == "validating":
            if not isinstance(outcome, Verdict):
                return self._failed(hook, TypeError(
                    f"the validator returned {type(outcome).__name__}, not a Verdict")), None
            return outcome, None
        if outcome is None:
            return Verdict.allow(), None
        if not isinstance(outcome, dict):
            return self._failed(hook, TypeError(
                f"the defaulter returned {type(outcome).__name__}, not the object")), None
        return Verdict.allow(), json_patch(original, outcome)

    async def _within(self, seconds: float, call: Awaitable[T]) -> tuple[bool, T | BaseException]:
        """(True, result or raised exception) if ``call`` ended within ``seconds`` of the
        server's clock; (False, TimeoutError) if not (it is cancelled)."""
        outcome: T | BaseException = TimeoutError()
        done = False
        if isinstance(self.clock, SystemClock):  # a deadline on the loop: no timer task
            with anyio.CancelScope(deadline=anyio.current_time() + seconds):
                try:
                    outcome = await call
                except Exception as err:
                    outcome = err
                done = True
            return done, outcome
        async with anyio.create_task_group() as tg:
            async def timer() -> None:
                await self.clock.sleep(seconds)
                tg.cancel_scope.cancel()

            tg.start_soon(timer)
            try:
                outcome = await call
            except Exception as err:
                outcome = err
            done = True
            tg.cancel_scope.cancel()
        return done, outcome

    def _failed(self, hook: Hook, err: BaseException) -> Verdict:
        key = (hook.path, type(err))
        if key not in self._failures:
            self._failures.add(key)
            logger.error("webhook %s failed (answered as denied)", hook.name,
                         exc_info=(type(err), err, err.__traceback__))
        else:
            logger.warning("webhook %s failed (answered as denied): %s: %s", hook.name,
                           type(err).__name__, err)
        return Verdict(False, f"webhook {hook.name} failed: {type(err).__name__}: {err}", 500)

    async def _convert(self, request: web.BaseRequest) -> web.Response:
        started = time.perf_counter()
        try:
            body = await _read(request)
            uid, desired, objects = conversion_request(orjson.loads(body), body=body)
        except (orjson.JSONDecodeError, MalformedReview, _TooLarge) as err:
            return self._bad_request(CONVERT_PATH, err)
        converted: list[Obj] = []
        failure: str | None = None
        try:
            for obj in objects:
                group = str(obj.get("apiVersion") or "").rpartition("/")[0]
                found = self.conversions.get((group, str(obj.get("kind"))))
                if found is None:
                    raise ConversionFailed(f"no conversion registered for kind "
                                           f"{shown(obj.get('kind'))} of "
                                           f"{shown(obj.get('apiVersion'))}")
                converted.append(found[1].convert(obj, desired))
        except ConversionFailed as err:
            failure = str(err)
            logger.warning("conversion to %s refused: %s", desired, failure)
        self._observe(CONVERT_PATH, "converted" if failure is None else "failed", started)
        if (t := tracing.active) is not None:
            t.annotate({"reconcilekit.conversion.uid": uid,
                        "reconcilekit.conversion.desired_api_version": desired,
                        "reconcilekit.conversion.objects": len(objects),
                        "reconcilekit.conversion.converted": failure is None})
        return _json(conversion_response(uid, converted, failure))

    def _bad_request(self, path: str, err: Exception) -> web.Response:
        message = (f"the body is not JSON: {err}" if isinstance(err, orjson.JSONDecodeError)
                   else str(err))
        status = 413 if isinstance(err, _TooLarge) else 400
        logger.warning("webhook %s: bad request: %s", path, message)
        self._observe(path, str(status), None)
        return web.Response(status=status, text=message + "\n")

    def _observe(self, path: str, answer: str, started: float | None) -> None:
        if self._requests is not None:
            self._requests.labels(path, answer).inc()
        if self._latency is not None and started is not None:
            self._latency.labels(path).observe(time.perf_counter() - started)

    def _hosts(self) -> tuple[str, ...]:
        hosts: list[str] = []
        if self.service is not None:
            hosts.extend(self.service.hosts)
        if self.url is not None and urlsplit(self.url).hostname:
            hosts.append(str(urlsplit(self.url).hostname))
        if self.host not in ("", "0.0.0.0", "::"):
            hosts.append(self.host)
        hosts.extend(("127.0.0.1", "localhost"))
        return tuple(dict.fromkeys(hosts))

    def __repr__(self) -> str:
        return f"WebhookServer({self.name!r}, {len(self.hooks)} hook(s), {self.base_url})"


class _TooLarge(Exception):
    """The body is over the server's limit (answered 413)."""


def _traced(name: str, attributes: Mapping[str, str],
            serve: Callable[[web.BaseRequest], Awaitable[web.Response]]
            ) -> Callable[[web.BaseRequest], Awaitable[web.Response]]:
    """``serve``, within a server span ``name`` whenever tracing is on."""
    async def handle(request: web.BaseRequest) -> web.Response:
        hooks = tracing.active
        if hooks is None:
            return await serve(request)
        with hooks.server_request(name, request.path, request.headers, attributes) as span:
            response = await serve(request)
            span.answered(response.status)
            return response
    return handle


def _dispatch(routes: Mapping[str, Callable[[web.BaseRequest], Awaitable[web.Response]]]
              ) -> Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]:
    """One request to the handler of its path: a dictionary look-up (aiohttp's low-level
    server, no application router, middlewares or signals); 404 for a path no webhook
    serves, 405 for a method other than POST."""
    async def dispatch(request: web.BaseRequest) -> web.StreamResponse:
        serve = routes.get(request.path)
        if serve is None:
            return web.Response(status=404,
                                text=f"no webhook is served at {shown(request.path)}\n")
        if request.method != "POST":
            return web.Response(status=405, headers={"Allow": "POST"},
                                text=f"a webhook takes POST, not {request.method}\n")
        return await serve(request)
    return dispatch


def _request_factory(message: Any, payload: Any, protocol: Any, writer: Any,
                     task: asyncio.Task[None]) -> web.BaseRequest:
    """A request whose body may be up to :data:`MAX_BODY` (aiohttp's default is 1 MiB)."""
    return web.BaseRequest(message, payload, protocol, writer, task, task.get_loop(),
                           client_max_size=MAX_BODY)


async def _read(request: web.BaseRequest) -> bytes:
    """The body, or :class:`_TooLarge` naming the limit."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise _TooLarge(f"the body is larger than {MAX_BODY} bytes, the most this server "
                        f"reads") from None


def _json(body: Obj) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")
