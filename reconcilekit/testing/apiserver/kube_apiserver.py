"""``APIServer``: an in-process Kubernetes API server for tests and local runs."""

from __future__ import annotations

import copy
import secrets
import shutil
import ssl
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from ..._cache.mutation_detector import enable_by_default as detect_cache_mutations
from ..._foundations.clock import Clock, SystemClock
from ...webhook._certificates import ServingCertificate
from ...webhook._tls_handshakes import stop_tls_site
from .admission import webhook_configurations
from .apiextensions import definition_strategy
from .authorization.bootstrap_policy import bootstrap_objects
from .controllers.builtin_controllers import LIFECYCLE_CONTROLLERS, Lifecycle
from .controllers.controller_manager import ControllerManager, selected_controllers
from .controllers.controller_set import CONTROLLERS
from .controllers.loopback import USER as CONTROLLER_MANAGER_USER
from .controllers.loopback import Loopback
from .controllers.owner_index import OwnerIndex
from .endpoints.faults import Faults
from .endpoints.filters import ServerSettings
from .endpoints.handler_chain import Handler
from .extra import require_testing_extra
from .kubeconfig import kubeconfig_document, write_kubeconfig
from .machinery.builtin_kinds import builtin_api
from .machinery.resources import Registry
from .machinery.token_authenticator import TokenAuthenticator
from .registry.generic_store import Storage
from .registry.priority_classes import SYSTEM_PRIORITY_CLASSES
from .registry.strategy import StrategyTable
from .registry.strategy_table import builtin_strategies

__all__ = ["APIServer", "served_strategies"]

_DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# kube-apiserver's admission plugins that are off unless --enable-admission-plugins names them
OPTIONAL_ADMISSION_PLUGINS = frozenset({"OwnerReferencesPermissionEnforcement"})


def served_strategies() -> StrategyTable:
    """A new table of every kind's strategy: the built-in kinds', with the CRD and webhook
    configuration strategies of the parts above the registry."""
    table = builtin_strategies()
    definition_strategy.register_strategy(table)
    webhook_configurations.register_strategies(table)
    return table


class APIServer:
    """A Kubernetes API server with storage and nothing else, on 127.0.0.1.

    It speaks kube-apiserver's JSON wire protocol over HTTPS (a certificate
    made at start, signed by a CA of its own that :meth:`configuration` and
    :meth:`kubeconfig` trust; plain HTTP only with ``tls=False``), so any client
    (kubernetes-asyncio, kubectl, kopf, reconcilekit's own) talks to it as to
    a cluster: discovery, CRUD with optimistic concurrency, patches, list
    with selectors and pagination, watch with bookmarks and 410 Expired,
    finalizers, status subresources, CRDs served as soon as they are created
    (every version from one storage, converted with ``strategy: None`` or by
    the CRD's conversion webhook), admission webhooks (Validating- and
    MutatingWebhookConfigurations, called over HTTPS as kube-apiserver calls
    them), namespaces, background garbage collection, bearer-token
    authentication (the server's ``token`` and each of ``users``, token to
    user name, are administrators in ``system:masters``, as the test control
    plane's users are; ServiceAccount tokens come from TokenRequests), RBAC
    authorization and impersonation, sharded list and watch (KEP-5866's ``shardSelector``, as
    v1.36 serves it with its ``ShardedListAndWatch`` feature gate on; off with
    ``sharded_list_watch=False``, when the parameter is ignored as a server
    before v1.36 ignores it).
    kube-controller-manager's deployment and replicaset controllers run in
    it (``controllers``, read as its ``--controllers`` flag: ``("*",
    "-deployment")`` leaves one out for a test that plays it), acting on the
    server's ``clock`` (a :class:`~reconcilekit.testing.FakeClock` makes their
    deadlines deterministic) and writing through the API as
    ``kube-controller-manager``. ``enable_admission_plugins`` turns on admission
    plugins kube-apiserver leaves off (``OwnerReferencesPermissionEnforcement``, as
    the test control plane enables it). There is no scheduler and no kubelet: Pods
    stay Pending until something (a :class:`~reconcilekit.testing.NodeSimulator`)
    binds them and writes their status.
    It needs the ``testing`` extra (``pip install 'reconcilekit[testing]'``):
    without it the constructor raises one ImportError naming the extra.

    Usage::

        async with APIServer() as server:
            async with server.api_client() as api:
                ...
            server.faults.close_watches()

    Guarantees:
      * one global resourceVersion, strictly increasing with every write;
      * every write that changes an object emits exactly one watch event, in
        resourceVersion order; a write that changes nothing emits none;
      * errors are ``kind: Status`` bodies with kube-apiserver's codes and
        reasons, never a traceback or a hung connection.
    """

    def __init__(self, *, port: int = 0, token: str | None = None,
                 history_limit: int = 10_000, bookmark_interval: float = 60.0,
                 watch_buffer: int = 100_000,
                 users: dict[str, str] | None = None, tls: bool = True,
                 sharded_list_watch: bool = True, clock: Clock | None = None,
                 controllers: Iterable[str] = ("*",),
                 enable_admission_plugins: Iterable[str] = ()) -> None:
        require_testing_extra("reconcilekit.testing.APIServer")
        plugins = set(enable_admission_plugins)
        if unknown := sorted(plugins - OPTIONAL_ADMISSION_PLUGINS):
            raise ValueError(f"unknown admission plugin(s) {', '.join(unknown)}; the ones "
                             f"off by default: {', '.join(sorted(OPTIONAL_ADMISSION_PLUGINS))}")
        chosen = selected_controllers(  # a bad name fails first
            controllers, {*CONTROLLERS, *LIFECYCLE_CONTROLLERS})
        self.clock = clock or SystemClock()
        self.token = token or secrets.token_urlsafe(24)
        self._loopback_token = secrets.token_urlsafe(24)
        self._tokens = TokenAuthenticator({self.token: "admin", **(users or {}),
                                           self._loopback_token: CONTROLLER_MANAGER_USER})
        self._port = port
        self._tls = tls
        # made here, not at start: the root CA ConfigMap of every namespace names its CA
        self._certificate = ServingCertificate.generate(("127.0.0.1", "localhost"),
                                                        common_name="reconcilekit-apiserver")
        self._ca_dir: Path | None = None
        builtin = builtin_api()  # the capture is read here, by the first server made
        self.registry = Registry(builtin.types, builtin.group_order)
        owners = OwnerIndex()
        self.storage = Storage(strategies=served_strategies(), index=owners.update,
                               history_limit=history_limit, now=self.clock.time)
        self.lifecycle = Lifecycle(self.storage, self.registry, owners,
                                   root_ca=self._certificate.ca_pem.decode(),
                                   enabled=chosen & LIFECYCLE_CONTROLLERS)
        self.controller_manager = ControllerManager(
            self.storage, self.registry, self.clock,
            [cls for name, cls in CONTROLLERS.items() if name in chosen])
        self.faults = Faults(self.storage)
        self.requests: Counter[tuple[str, str]] = Counter()
        self._settings = ServerSettings(self._tokens, bookmark_interval, watch_buffer,
                                        lambda: f"127.0.0.1:{self.port}",
                                        sharded_list_watch,
                                        "OwnerReferencesPermissionEnforcement" in plugins)
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        for name in _DEFAULT_NAMESPACES:
            self.storage.create(ns_type, "", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": name}},
                                manager="kube-apiserver")
        for obj in bootstrap_objects():  # RBAC's bootstrap roles and bindings
            rtype = self.registry.lookup("rbac.authorization.k8s.io", "v1",
                                         obj["kind"].lower() + "s")
            assert rtype is not None
            self.storage.create(rtype, obj["metadata"].get("namespace", ""), obj,
                                manager="kube-apiserver")
        classes = self.registry.lookup("scheduling.k8s.io", "v1", "priorityclasses")
        assert classes is not None
        for obj in SYSTEM_PRIORITY_CLASSES:
            self.storage.create(classes, "", copy.deepcopy(obj), manager="kube-apiserver")

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port unless one was given).

        Caches made in this process from then on detect mutations of their
        shared objects (see ``Cache(detect_mutations=...)``), as in tests they
        should."""
        if self._runner is not None:
            raise RuntimeError("APIServer is already started")
        detect_cache_mutations()
        handler = Handler(self.registry, self.storage, self.lifecycle, self.faults,
                          self.requests, self._settings)
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", handler.handle)

        async def close_webhook_client(_: web.Application) -> None:
            await handler.webhooks.close()
        app.on_cleanup.append(close_webhook_client)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=1.0)
        context = None
        if self._tls:
            context = self._certificate.server_context()
            self._ca_dir = Path(tempfile.mkdtemp(prefix="reconcilekit-apiserver-"))
            self._certificate.write_ca(self._ca_dir / "ca.crt")
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port, reuse_address=True,
                           ssl_context=context)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            self._remove_ca()
            raise
        self._runner, self._site = runner, site
        server = site._server
        sockets: Any = getattr(server, "sockets", None) or ()
        self._port = int(sockets[0].getsockname()[1])
        self._publish_kubernetes_service()
        self.controller_manager.start(Loopback(self.url, self._loopback_token,
                                               self.client_ssl_context()))

    def _publish_kubernetes_service(self) -> None:
        """The ``kubernetes`` Service in ``default`` (10.0.0.1:443 to the server's port),
        as kube-apiserver keeps it."""
        rtype = self.registry.lookup("", "v1", "services")
        assert rtype is not None
        ports = [{"name": "https", "protocol": "TCP", "port": 443, "targetPort": self._port}]
        existing = self.storage.table(rtype).objects.get(("default", "kubernetes"))
        if existing is not None:
            if existing["spec"].get("ports") != ports:
                self.storage.update(rtype, "default", "kubernetes", {
                    **existing, "spec": {**existing["spec"], "ports": ports}},
                    subresource=None, manager="kube-apiserver", check_rv=False)
            return
        self.storage.create(rtype, "default", {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"ports": ports, "clusterIP": "10.0.0.1", "type": "ClusterIP",
                     "sessionAffinity": "None", "ipFamilyPolicy": "SingleStack",
                     "internalTrafficPolicy": "Cluster"}}, manager="kube-apiserver")

    async def stop(self) -> None:
        """Close every watch and stop listening."""
        if self._runner is None:
            return
        await self.controller_manager.stop()
        self.faults.close_watches()
        runner, site = self._runner, self._site
        self._runner = self._site = None
        # every connection aborted after cleanup: an idle keep-alive TLS connection (a
        # blocking client's pool) would otherwise wait for the peer's close_notify
        await stop_tls_site(runner, None if site is None else site._server)
        self._remove_ca()

    def _remove_ca(self) -> None:
        if self._ca_dir is not None:
            shutil.rmtree(self._ca_dir, ignore_errors=True)
            self._ca_dir = None

    async def __aenter__(self) -> APIServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.stop()

    # -- how clients reach it -------------------------------------------------------------

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """``https://127.0.0.1:PORT`` (``http://`` with ``tls=False``)."""
        if self._runner is None:
            raise RuntimeError("APIServer is not started")
        return f"{'https' if self._tls else 'http'}://127.0.0.1:{self._port}"

    @property
    def ca_pem(self) -> bytes | None:
        """The CA certificate (PEM) that signed the serving certificate; None without TLS."""
        return self._certificate.ca_pem if self._tls else None

    @property
    def ca_file(self) -> Path | None:
        """A file holding :attr:`ca_pem` while the server runs; None without TLS."""
        return self._ca_dir / "ca.crt" if self._ca_dir is not None else None

    def client_ssl_context(self) -> ssl.SSLContext | None:
        """An SSL context trusting only this server's CA (for raw aiohttp clients)."""
        return self._certificate.client_context() if self._tls else None

    def configuration(self) -> Any:
        """A kubernetes-asyncio ``Configuration`` that authenticates as the admin user
        and verifies the server's certificate with its CA."""
        from kubernetes_asyncio.client import Configuration

        cfg = Configuration(host=self.url)
        cfg.api_key = {"BearerToken": self.token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        if self.ca_file is not None:
            cfg.ssl_ca_cert = str(self.ca_file)
        return cfg

    def api_client(self) -> Any:
        """A kubernetes-asyncio ``ApiClient`` (use as ``async with``) for this server."""
        from kubernetes_asyncio.client import ApiClient

        return ApiClient(self.configuration())

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig document (as a dict) pointing at this server."""
        return kubeconfig_document("reconcilekit", self.url, self.token, namespace=namespace,
                                   ca_pem=self.ca_pem)

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600) and return the path."""
        return write_kubeconfig(self.kubeconfig(namespace=namespace), path)

    # -- credentials ------------------------------------------------------------------------

    def add_token(self, token: str, user: str) -> None:
        """Accept the bearer ``token`` as ``user`` from now on (a credential issued)."""
        if not token or token != token.strip():
            raise ValueError("a bearer token must be non-empty, without surrounding spaces")
        self._tokens.add(token, user)

    def revoke_token(self, token: str) -> None:
        """Answer 401 to ``token`` from now on (a credential revoked, as deleting the Secret
        a service-account token is bound to revokes it). As on kube-apiserver, a request
        already authenticated (an open watch) goes on. The admin token cannot be revoked."""
        if token == self.token:
            raise ValueError("the server's own admin token cannot be revoked")
        if not self._tokens.revoke(token):
            raise ValueError("no such token")

    # -- introspection for tests ----------------------------------------------------------

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """How many requests matched ``verb`` and ``resource`` (``None`` matches any)."""
        return sum(n for (v, r), n in self.requests.items()
                   if (verb is None or v == verb) and (resource is None or r == resource))

    def __repr__(self) -> str:
        state = self.url if self._runner else "stopped"
        return f"APIServer({state})"
