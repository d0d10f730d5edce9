"""``APIServer``: an in-process Kubernetes API server for tests and local runs."""

from __future__ import annotations

import secrets
import time
from collections import Counter
from pathlib import Path
from types import TracebackType
from typing import Any

from aiohttp import web

from ._faults import Faults
from ._http import Handler, ServerSettings
from ._kubeconfig import kubeconfig_document, write_kubeconfig
from ._lifecycle import Lifecycle
from ._registry import Registry
from ._storage import Storage

__all__ = ["APIServer"]

_DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class APIServer:
    """A Kubernetes API server with storage and nothing else, on 127.0.0.1.

    It speaks kube-apiserver's JSON wire protocol over HTTP, so any client
    (kubernetes-asyncio, kubectl, kopf, reconcilekit's own) talks to it as to
    a cluster: discovery, CRUD with optimistic concurrency, patches, list
    with selectors and pagination, watch with bookmarks and 410 Expired,
    finalizers, status subresources, CRDs served as soon as they are created,
    namespaces, background garbage collection, bearer-token authentication.
    There is no scheduler and no kubelet: Pods stay Pending until something
    writes their status.

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
                 users: dict[str, str] | None = None) -> None:
        self.token = token or secrets.token_urlsafe(24)
        self._tokens = {self.token: "admin", **(users or {})}
        self._port = port
        self.registry = Registry()
        self.storage = Storage(history_limit=history_limit, now=time.time)
        self.lifecycle = Lifecycle(self.storage, self.registry)
        self.faults = Faults(self.storage)
        self.requests: Counter[tuple[str, str]] = Counter()
        self._settings = ServerSettings(self._tokens, bookmark_interval, watch_buffer,
                                        lambda: f"127.0.0.1:{self.port}")
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        ns_type = self.registry.lookup("", "v1", "namespaces")
        assert ns_type is not None
        for name in _DEFAULT_NAMESPACES:
            self.storage.create(ns_type, "", {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": name}},
                                manager="kube-apiserver")

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Listen on 127.0.0.1 (a free port unless one was given)."""
        if self._runner is not None:
            raise RuntimeError("APIServer is already started")
        handler = Handler(self.registry, self.storage, self.lifecycle, self.faults,
                          self.requests, self._settings)
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", handler.handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=1.0)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._port, reuse_address=True)
        await site.start()
        self._runner, self._site = runner, site
        server = site._server
        sockets: Any = getattr(server, "sockets", None) or ()
        self._port = int(sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Close every watch and stop listening."""
        if self._runner is None:
            return
        self.faults.close_watches()
        runner, self._runner, self._site = self._runner, None, None
        await runner.cleanup()

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
        """``http://127.0.0.1:PORT``."""
        if self._runner is None:
            raise RuntimeError("APIServer is not started")
        return f"http://127.0.0.1:{self._port}"

    def configuration(self) -> Any:
        """A kubernetes-asyncio ``Configuration`` that authenticates as the admin user."""
        from kubernetes_asyncio.client import Configuration

        cfg = Configuration(host=self.url)
        cfg.api_key = {"BearerToken": self.token}
        cfg.api_key_prefix = {"BearerToken": "Bearer"}
        return cfg

    def api_client(self) -> Any:
        """A kubernetes-asyncio ``ApiClient`` (use as ``async with``) for this server."""
        from kubernetes_asyncio.client import ApiClient

        return ApiClient(self.configuration())

    def kubeconfig(self, *, namespace: str = "default") -> dict[str, Any]:
        """A kubeconfig document (as a dict) pointing at this server."""
        return kubeconfig_document("reconcilekit", self.url, self.token, namespace=namespace)

    def write_kubeconfig(self, path: str | Path, *, namespace: str = "default") -> Path:
        """Write :meth:`kubeconfig` to ``path`` (mode 0600) and return the path."""
        return write_kubeconfig(self.kubeconfig(namespace=namespace), path)

    # -- introspection for tests ----------------------------------------------------------

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        """How many requests matched ``verb`` and ``resource`` (``None`` matches any)."""
        return sum(n for (v, r), n in self.requests.items()
                   if (verb is None or v == verb) and (resource is None or r == resource))

    def __repr__(self) -> str:
        state = self.url if self._runner else "stopped"
        return f"APIServer({state})"
