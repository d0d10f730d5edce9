"""``Cluster``: what a test talks to, the in-process server or a real cluster.

The same test runs three ways: against :class:`APIServer` by default, against
a :class:`ControlPlane` started from real binaries, or against the cluster a
kubeconfig names, each test in a namespace of its own that is removed
afterwards. Fault injection exists
only in-process; touching :attr:`Cluster.faults` against a real cluster skips
the test with a reason saying so.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import anyio
import orjson
import yaml
from multidict import CIMultiDict

from ._namespace_release import RemovalTiming, remove_namespace
from .apiserver.endpoints.faults import Faults
from .apiserver.kube_apiserver import APIServer

__all__ = ["Cluster", "HTTPResult", "NamespaceNotRemoved"]

KUBECONFIG_ENV = "RECONCILEKIT_TEST_KUBECONFIG"
NO_FAULTS_REASON = ("fault injection needs reconcilekit's in-process API server; "
                    "these tests run against a real kube-apiserver")


TEST_ANNOTATION = "testing.reconcilekit.dev/test"
# Admission plugins kube-apiserver runs only when told, which the pytest plugin's servers
# run (in-process and the session's control plane), as hardened clusters and OpenShift do:
# an owner reference with blockOwnerDeletion needs update on the owner's finalizers
# subresource, which generated RBAC must then grant.
OPTIONAL_ADMISSION_PLUGINS = ("OwnerReferencesPermissionEnforcement",)
_ADMISSION_MAPPING_SECONDS = 45.0  # beyond the 30 s reset of kube-apiserver's admission mapper


class NamespaceNotRemoved(AssertionError):
    """A test namespace still there after the timeout; the message names what holds it."""


class NamespaceSink(Protocol):
    """Takes deleted test namespaces to wait for in the background (a :class:`NamespaceReaper`)."""

    @property
    def labels(self) -> dict[str, str]:
        """The labels a namespace handed over must carry."""

    def submit(self, namespace: str, owner: str) -> None:
        """Wait for ``namespace``, deleted already, to go; report it for ``owner`` if not."""


class HTTPResult:
    """Status code, headers and decoded JSON body of one raw request."""

    __slots__ = ("body", "headers", "status")

    def __init__(self, status: int, headers: Mapping[str, str], body: Any) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def __repr__(self) -> str:
        return f"HTTPResult({self.status}, {self.body!r})"


class Cluster:
    """A kubernetes-asyncio configuration plus what tests need around it."""

    def __init__(self, configuration: Any, *, namespace: str = "default",
                 server: APIServer | None = None, kubeconfig_path: Path | None = None,
                 trust_env: bool = True,
                 delete_later: Callable[[str], None] | None = None) -> None:
        """The cluster ``configuration`` (kubernetes-asyncio's) reaches, tests working in
        ``namespace``; ``server``: the in-process server it is, if it is one;
        ``kubeconfig_path``: the file a subprocess should use to reach it.

        ``trust_env=False``: the proxy variables of the environment are ignored (a
        client working in the background must not follow a test's ``HTTPS_PROXY``).
        ``delete_later``: what takes the paths given to :meth:`delete_at_end` (the
        pytest session's, which deletes them when the session ends); None: the
        cluster keeps them for its owner (:func:`open_cluster`) to delete at its end.
        """
        self.configuration = configuration
        self.trust_env = trust_env
        self.namespace = namespace
        self.server = server
        self.kubeconfig_path = kubeconfig_path
        self._api: Any = None
        self._at_end: list[str] = []
        self._delete_later = delete_later

    @property
    def in_process(self) -> bool:
        return self.server is not None

    def require_server(self) -> APIServer:
        """The in-process server; skips the test against a real cluster."""
        if self.server is None:
            import pytest

            pytest.skip(NO_FAULTS_REASON)
        return self.server

    @property
    def faults(self) -> Faults:
        return self.require_server().faults

    def api_client(self) -> Any:
        """A new kubernetes-asyncio ``ApiClient`` (use as ``async with``)."""
        from kubernetes_asyncio.client import ApiClient

        return ApiClient(self.configuration)

    # -- raw HTTP over kubernetes-asyncio's session -----------------------------------------

    async def _client(self) -> Any:
        if self._api is None:
            self._api = self.api_client()
            if not self.trust_env:  # kubernetes-asyncio's session always trusts it
                rest = self._api.rest_client
                connector = rest.pool_manager.connector
                rest.pool_manager.detach()
                rest.pool_manager = aiohttp.ClientSession(connector=connector,
                                                          trust_env=False)
        return self._api

    async def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        token = await self.configuration.get_api_key_with_prefix("BearerToken")
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = token
        headers.update(extra or {})
        return headers

    async def request(self, method: str, path: str, *, json: Any = None,
                      body: bytes | str | None = None, content_type: str | None = None,
                      params: Mapping[str, str] | None = None,
                      headers: Mapping[str, str] | None = None) -> HTTPResult:
        """One request on the wire; ``json`` is serialized, ``body`` sent as is."""
        api = await self._client()
        session = api.rest_client.pool_manager
        hdrs = await self._headers(headers)
        data: Any = body
        if json is not None:
            data = orjson.dumps(json)
            hdrs.setdefault("Content-Type", content_type or "application/json")
        elif content_type:
            hdrs["Content-Type"] = content_type
        async with session.request(method, self.configuration.host + path, data=data,
                                   headers=hdrs, params=params) as resp:
            raw = await resp.read()
            try:
                decoded = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:
                decoded = raw.decode(errors="replace")
            return HTTPResult(resp.status, CIMultiDict(resp.headers), decoded)

    @asynccontextmanager
    async def watch(self, path: str, params: Mapping[str, str] | None = None,
                    headers: Mapping[str, str] | None = None
                    ) -> AsyncIterator[AsyncIterator[dict[str, Any]]]:
        """Open a watch stream; yields an iterator of decoded events.

        The iterator ends when the server closes the stream.
        """
        api = await self._client()
        session = api.rest_client.pool_manager
        query = {"watch": "true", **(params or {})}
        async with session.get(self.configuration.host + path, params=query,
                               headers=await self._headers(headers)) as resp:
            if resp.status != 200:
                raise AssertionError(f"watch {path} answered {resp.status}: "
                                     f"{await resp.text()}")

            async def events() -> AsyncIterator[dict[str, Any]]:
                while True:
                    line = await resp.content.readline()
                    if not line:
                        return
                    if line.strip():
                        yield orjson.loads(line)

            yield events()

    async def close(self) -> None:
        if self._api is not None:
            await self._api.close()
            self._api = None

    # -- helpers ------------------------------------------------------------------------------

    def delete_at_end(self, path: str) -> None:
        """Delete the object at API ``path`` (a CRD many tests share, say) when the cluster's
        owner ends: the pytest session for the ``apiserver`` fixture (then the session's
        leftover check does not count it), :func:`open_cluster`'s block otherwise.
        Nothing to do in-process: the server goes with the test.
        """
        if self.in_process:
            return
        if self._delete_later is not None:
            self._delete_later(path)
        elif path not in self._at_end:
            self._at_end.append(path)

    async def install_crd(self, source: str | Path | Mapping[str, Any],
                          wait_seconds: float = 30.0) -> dict[str, Any]:
        """Create a CustomResourceDefinition (YAML text, a path, or a dict) and wait
        until it is Established and discovery lists it in every served version (as
        envtest's WaitForCRDs does: kube-apiserver updates discovery a moment after
        the condition), and until its admission plugins can map the kind (their
        mapper reads discovery apart, reset every 30 s). An existing CRD of the
        same name is kept as is; one this call created is deleted at the end (see
        :meth:`delete_at_end`: for the ``apiserver`` fixture, when the session
        ends, so tests may share it)."""
        if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source
                                        and await anyio.Path(source).exists()):
            source = await anyio.Path(source).read_text()
        crd = yaml.safe_load(source) if isinstance(source, str) else dict(source)
        path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
        created = await self.request("POST", path, json=crd)
        if created.status not in (201, 409):
            raise RuntimeError(f"installing CRD {crd.get('metadata', {}).get('name')} "
                               f"failed: {created.status} {created.body}")
        name = crd["metadata"]["name"]
        if created.status == 201:
            self.delete_at_end(f"{path}/{name}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_seconds
        while True:
            got = await self.request("GET", f"{path}/{name}")
            conditions = (got.body or {}).get("status", {}).get("conditions") or []
            if any(c.get("type") == "Established" and c.get("status") == "True"
                   for c in conditions) and await self._discovered(got.body):
                await self._until_admission_maps(got.body)
                return dict(got.body)
            if loop.time() > deadline:
                raise TimeoutError(f"CRD {name} was not Established and discovered within "
                                   f"{wait_seconds}s")
            await asyncio.sleep(0.05)

    async def until_allowed(self, user: str, verb: str, resource: str, *,
                            namespace: str | None = None, group: str = "",
                            groups: Sequence[str] = (), within: float = 30.0) -> None:
        """Wait until the cluster's authorizer allows ``user`` (in ``groups``) to
        ``verb`` ``resource`` of API ``group`` in ``namespace`` (every namespace when
        None), asking with SubjectAccessReviews: kube-apiserver's RBAC reads roles
        and bindings from informers, one per kind, so a binding just created is
        in force a moment after its create is answered. :class:`TimeoutError`
        after ``within`` seconds."""
        attributes = {"verb": verb, "group": group, "resource": resource}
        if namespace is not None:
            attributes["namespace"] = namespace
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": user, "groups": list(groups),
                           "resourceAttributes": attributes}}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while True:
            got = await self.request(
                "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
            if got.status != 201:
                raise RuntimeError(f"a SubjectAccessReview failed: {got.status} {got.body}")
            if got.body["status"].get("allowed") is True:
                return
            if loop.time() > deadline:
                raise TimeoutError(f"{user} was not allowed to {verb} {resource} within "
                                   f"{within:g}s: {got.body['status']}")
            await asyncio.sleep(0.05)

    async def _until_admission_maps(self, crd: Mapping[str, Any]) -> None:
        """Wait until kube-apiserver's admission maps the CRD's kind to its resource.

        The OwnerReferencesPermissionEnforcement plugin resolves an owner reference
        with ``blockOwnerDeletion`` through discovery it caches apart from the
        CRD's handler, refreshed on a miss at most once between its periodic
        resets (every 30 s), and refuses such a write until it finds the kind
        ("cannot find RESTMapping"). A server-side dry run of a ConfigMap owned
        that way by one of the kind asks it; any other answer (the plugin off
        included) means the kind is mapped.
        """
        spec = crd["spec"]
        version = next((v["name"] for v in spec["versions"] if v.get("served", True)), None)
        if version is None:  # nothing served: nothing to write an owner reference to
            return
        probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "generateName": "crd-mapping-probe-", "ownerReferences": [{
                "apiVersion": f"{spec['group']}/{version}", "kind": spec["names"]["kind"],
                "name": "probe", "uid": "00000000-0000-4000-8000-000000000000",
                "blockOwnerDeletion": True}]}}
        path = f"/api/v1/namespaces/{self.namespace}/configmaps"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _ADMISSION_MAPPING_SECONDS
        while True:
            got = await self.request("POST", path, json=probe, params={"dryRun": "All"})
            if got.status != 403 or "cannot find RESTMapping" not in str(got.body):
                return
            if loop.time() > deadline:
                raise TimeoutError(f"admission did not map the kind of CRD "
                                   f"{crd['metadata']['name']} within "
                                   f"{_ADMISSION_MAPPING_SECONDS:g}s: {got.body}")
            await asyncio.sleep(0.1)

    async def _discovered(self, crd: Mapping[str, Any]) -> bool:
        """Whether discovery lists the CRD's plural in each of its served versions."""
        spec = crd["spec"]
        for version in spec["versions"]:
            if not version.get("served", True):
                continue
            found = await self.request("GET", f"/apis/{spec['group']}/{version['name']}")
            if found.status != 200 or spec["names"]["plural"] not in {
                    r.get("name") for r in (found.body or {}).get("resources") or ()}:
                return False
        return True


@asynccontextmanager
async def open_cluster(kubeconfig: str | Path | None = None, *,
                       configuration: Any = None, test: str = "",
                       reaper: NamespaceSink | None = None,
                       delete_at_end: Callable[[str], None] | None = None,
                       timing: RemovalTiming | None = None,
                       controllers: Iterable[str] = ("*",),
                       namespace_controller: bool = True) -> AsyncIterator[Cluster]:
    """The in-process server, or a real API server in a fresh namespace of the test's own.

    A real server is named by ``kubeconfig`` (a path) or by a kubernetes-asyncio
    ``configuration`` (a :class:`ControlPlane`'s, say; ``kubeconfig`` then names
    the file a subprocess should use). The namespace is usable when this
    yields: where the cluster makes them (kube-controller-manager runs), its
    ``default`` ServiceAccount and ``kube-root-ca.crt`` ConfigMap exist. It
    carries the annotation
    ``testing.reconcilekit.dev/test`` naming ``test``.

    Afterwards the namespace is deleted, and it must go: what the test left
    holding it (finalizers of objects in it, Pods no kubelet will finish) is
    released if it lingers (see :mod:`._namespace_release`). With a
    ``reaper`` (the pytest plugin's) that wait happens in the background and
    a namespace that does not go is reported for ``test`` later; without one
    the block waits, and raises :class:`NamespaceNotRemoved` naming what holds
    it (``timing``: how long it may take, by default
    :meth:`RemovalTiming.from_env`). Paths given to
    :meth:`Cluster.delete_at_end` go to ``delete_at_end`` (the session's) or
    are deleted at the end of the block, once the namespace is gone.
    ``controllers`` chooses the in-process server's controllers (see
    :class:`APIServer`); a real cluster runs its own. ``namespace_controller=False``
    says that no kube-controller-manager runs (a :class:`ControlPlane` without
    it, as from envtest's binaries): the namespace is then emptied and finalized
    here (a ``reaper`` is told so when it is made).
    """
    if kubeconfig is None and configuration is None:
        async with APIServer(controllers=controllers,
                             enable_admission_plugins=OPTIONAL_ADMISSION_PLUGINS) as server:
            cluster = Cluster(server.configuration(), server=server)
            try:
                yield cluster
            finally:
                await cluster.close()
        return
    if configuration is None:
        from kubernetes_asyncio import config
        from kubernetes_asyncio.client import Configuration

        configuration = Configuration()
        await config.load_kube_config(config_file=str(kubeconfig),
                                      client_configuration=configuration)
    namespace = f"rk-test-{secrets.token_hex(4)}"
    cluster = Cluster(configuration, namespace=namespace,
                      kubeconfig_path=Path(kubeconfig) if kubeconfig else None,
                      delete_later=delete_at_end)
    created = False
    try:
        meta: dict[str, Any] = {"name": namespace}
        if reaper is not None:
            meta["labels"] = reaper.labels
        if test:
            meta["annotations"] = {TEST_ANNOTATION: test}
        made = await cluster.request("POST", "/api/v1/namespaces", json={
            "apiVersion": "v1", "kind": "Namespace", "metadata": meta})
        if made.status != 201:
            raise RuntimeError(f"could not create test namespace {namespace}: "
                               f"{made.status} {made.body}")
        created = True
        await _wait_for_namespace_defaults(cluster)
        yield cluster
    finally:
        try:
            if created:
                await _delete_namespace(cluster, reaper, test, timing or RemovalTiming.from_env(),
                                        namespace_controller=namespace_controller)
            if cluster._at_end:
                problems = await delete_objects(cluster, cluster._at_end)
                if problems:
                    raise RuntimeError("; ".join(problems))
        finally:
            await cluster.close()


async def _delete_namespace(cluster: Cluster, reaper: NamespaceSink | None,
                            test: str, timing: RemovalTiming, *,
                            namespace_controller: bool) -> None:
    namespace = cluster.namespace
    deleted = await cluster.request("DELETE", f"/api/v1/namespaces/{namespace}")
    if deleted.status not in (200, 202, 404):
        raise RuntimeError(f"deleting test namespace {namespace} answered {deleted.status}: "
                           f"{deleted.body}")
    if reaper is not None:
        reaper.submit(namespace, test or namespace)
        return

    path = f"/api/v1/namespaces/{namespace}"

    async def observe(seconds: float) -> dict[str, Any] | None:
        seen: dict[str, Any] | None = None
        with anyio.move_on_after(seconds):
            while True:  # polling the API server: nothing in this process can signal it
                got = await cluster.request("GET", path)
                if got.status == 404:
                    return None
                seen = got.body
                await anyio.sleep(0.1)
        if seen is None:
            got = await cluster.request("GET", path)
            return None if got.status == 404 else dict(got.body)
        return seen

    removal = await remove_namespace(cluster, namespace, observe, timing, owner=test,
                                     namespace_controller=namespace_controller)
    if removal.message is not None:
        raise NamespaceNotRemoved(removal.message)


async def delete_objects(cluster: Cluster, paths: list[str], within: float = 60.0) -> list[str]:
    """Delete the objects at ``paths`` and wait until each is gone (a CRD's objects go
    first); what did not go, or refused, is returned, one line each."""
    problems: list[str] = []
    for path in paths:
        got = await cluster.request("DELETE", path)
        if got.status not in (200, 202, 404):
            problems.append(f"deleting {path} answered {got.status}: {got.body}")
    with anyio.move_on_after(within):
        for path in paths:
            while (await cluster.request("GET", path)).status != 404:  # noqa: ASYNC110
                await anyio.sleep(0.1)  # polling the API server: nothing here can signal it
        return problems
    return problems + [f"{path} still there {within:g}s after its deletion" for path in paths
                       if (await cluster.request("GET", path)).status != 404]


async def _wait_for_namespace_defaults(cluster: Cluster, within: float = 30.0) -> None:
    """Wait until the namespace's ``default`` ServiceAccount and ``kube-root-ca.crt``
    ConfigMap exist, each if the cluster makes them.

    kube-controller-manager creates both a moment after the namespace (on a
    loaded machine, seconds after). Pods are refused in a namespace without
    the ServiceAccount (the ServiceAccount admission plugin), and a ConfigMap
    arriving late would show up in a test's list or watch of its own
    ConfigMaps. A cluster whose own ``default`` namespace has none does not
    make them.
    """
    paths = [path for path in ("/api/v1/namespaces/{}/serviceaccounts/default",
                               "/api/v1/namespaces/{}/configmaps/kube-root-ca.crt")
             if (await cluster.request("GET", path.format("default"))).status != 404]
    with anyio.move_on_after(within):
        while paths:  # polling the API server: nothing in this process can signal it
            if (await cluster.request("GET", paths[0].format(cluster.namespace))).status == 200:
                paths.pop(0)
            else:
                await anyio.sleep(0.05)
        return
    missing = paths[0].format(cluster.namespace)
    raise RuntimeError(f"namespace {cluster.namespace}: {missing} not made after "
                       f"{within:g}s; is kube-controller-manager running?")
