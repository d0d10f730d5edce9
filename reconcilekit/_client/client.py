"""``Client``: async reads and writes of any resource, raw JSON in and out.

Objects are dicts exactly as the API server sends them (decoded by orjson);
nothing is converted into models. Errors are typed (:mod:`reconcilekit._foundations.errors`),
retries follow :class:`RetryPolicy`, and every write reports the
resourceVersion it produced to the write observers, so that a cache can tell
when it has caught up with this client's own writes.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from types import TracebackType
from typing import (
    TYPE_CHECKING,
    Any,
    Final,
    Literal,
    TypedDict,
    TypeVar,
    Unpack,
    cast,
    overload,
)

import aiohttp

from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import Gone
from .._foundations.objects import ObjectKey, ObjectList, Resource, TypedResource
from .._foundations.shard_selector import ShardSelector
from .._version import __version__
from .answers import check_list
from .config import load_from_environment, load_in_cluster, load_kubeconfig
from .read_caches import ReadCaches
from .request_options import (
    PATCH_CONTENT_TYPES,
    FieldSelectorLike,
    LabelSelectorLike,
    delete_options,
    list_params,
    object_path,
    path_of,
    required_namespace,
    scope,
    with_type,
)
from .retry import RetryPolicy
from .transport import ClientStatistics, Params, RequestRecord, Transport
from .writes import WriteRecord, WriteTracker

if TYPE_CHECKING:
    from ..kinds.autoscaling_v1 import Scale

__all__ = ["PARTIAL_OBJECT_METADATA", "PARTIAL_OBJECT_METADATA_LIST", "Client",
           "ClientOptions"]

PropagationPolicy = Literal["Foreground", "Background", "Orphan"]
_T = TypeVar("_T")

_SYSTEM_CLOCK: Final = SystemClock()
_DEFAULT_RETRY: Final = RetryPolicy()
# Accept headers for metadata-only answers, as client-go's metadata client sends them
# (JSON here): servers that cannot answer so (some aggregated APIs) send the full object.
PARTIAL_OBJECT_METADATA: Final = (
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json")
PARTIAL_OBJECT_METADATA_LIST: Final = (
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
_LIST_PAGE: Final = 500
_LIST_RESTARTS: Final = 3


def _default_user_agent() -> str:
    return f"reconcilekit/{__version__}"


class ClientOptions(TypedDict, total=False):
    """The keyword options of :class:`Client`, accepted by every constructor."""

    clock: Clock
    user_agent: str
    retry: RetryPolicy
    timeout: float


class Client:
    """Async client for any resource a :class:`Resource` describes.

    ``configuration`` is a kubernetes-asyncio ``Configuration``; the session
    is created on first use inside the running event loop, and closed by
    :meth:`close` or ``async with``.

    Guarantees:
      * every call but :meth:`open_stream` ends within ``timeout`` seconds
        per attempt, with at most ``retry.max_retries`` retries, waiting on
        ``clock`` (see :class:`RetryPolicy` for which failures are retried);
      * failures raise :class:`APIError` subclasses (NotFound, Conflict, ...)
        or :class:`APIConnectionError`; arguments that cannot make a valid
        request raise ValueError before anything is sent;
      * Lease requests (coordination.k8s.io: leader election, shard rings) use two
        connections of their own, so a renewal never waits for a connection behind
        other requests or the watches holding the pool's;
      * after each successful write, the write observers are called with a
        :class:`WriteRecord`, before the call returns, and
        :meth:`last_written_rv` knows the new resourceVersion (for the last
        10,000 objects written).

    ``read_caches`` holds the caches built on this client (each
    :class:`~reconcilekit.Cache` registers itself): the read-then-write
    helpers of :mod:`reconcilekit.upsert` read through them.
    """

    def __init__(self, configuration: Any, *, clock: Clock = _SYSTEM_CLOCK,
                 user_agent: str | None = None, retry: RetryPolicy = _DEFAULT_RETRY,
                 timeout: float = 30.0) -> None:
        self._transport = Transport(configuration, clock=clock,
                                    user_agent=user_agent or _default_user_agent(),
                                    retry=retry, timeout=timeout)
        self._writes = WriteTracker()
        self.read_caches = ReadCaches()
        self.clock: Final[Clock] = clock
        """The clock the client waits on (its retries, and helpers that poll through it)."""

    # -- construction -----------------------------------------------------------------------

    @classmethod
    async def from_kubeconfig(cls, path: str | os.PathLike[str] | None = None,
                              context: str | None = None,
                              **options: Unpack[ClientOptions]) -> Client:
        """A client for a kubeconfig: ``path``, else ``$KUBECONFIG``, else ``~/.kube/config``."""
        return cls(await load_kubeconfig(path, context), **options)

    @classmethod
    def in_cluster(cls, *, token_file: str | os.PathLike[str] | None = None,
                   ca_file: str | os.PathLike[str] | None = None, host: str | None = None,
                   **options: Unpack[ClientOptions]) -> Client:
        """A client for the cluster this pod runs in, as its service account.

        The token is read again as the kubelet rotates it (a request the
        server rejects with 401 is sent once more when the file then holds
        another token). ``token_file``, ``ca_file`` and ``host`` replace the
        kubelet's paths and ``$KUBERNETES_SERVICE_HOST``/``_PORT`` (a token
        mounted elsewhere, a test): see ``load_in_cluster``."""
        return cls(load_in_cluster(token_file=token_file, ca_file=ca_file, host=host),
                   **options)

    @classmethod
    async def from_environment(cls, **options: Unpack[ClientOptions]) -> Client:
        """In-cluster if ``$KUBERNETES_SERVICE_HOST`` is set, else from the kubeconfig."""
        return cls(await load_from_environment(), **options)

    @property
    def configuration(self) -> Any:
        return self._transport.configuration

    async def close(self) -> None:
        """Close the HTTP session; later calls raise RuntimeError. Idempotent."""
        await self._transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Client({self._transport.host})"

    # -- low level --------------------------------------------------------------------------

    async def request(self, method: str, path: str, *, params: Params | None = None,
                      body: Any = None, content_type: str | None = None,
                      accept: str | None = None) -> dict[str, Any]:
        """One request to ``path`` (``/api/v1/...``) with retries; its decoded JSON answer.

        ``body`` is serialized with orjson unless it is ``bytes``. Parameters
        whose value is None are left out; booleans become ``true``/``false``.
        ``accept`` replaces ``application/json`` as the Accept header.
        """
        return await self._transport.request(method, path, params=params, body=body,
                                             content_type=content_type, accept=accept)

    async def open_stream(self, path: str, params: Params | None = None, *,
                          inactivity_timeout: float | None = 70.0, accept: str | None = None,
                          shard_selector: ShardSelector | str | None = None
                          ) -> aiohttp.ClientResponse:
        """Open a streaming GET (a watch) that fails after ``inactivity_timeout`` s of silence.

        Returns aiohttp's response with status 200, which the caller must
        close; a non-200 answer raises its :class:`APIError`. Never retried.
        ``accept`` as for :meth:`request` (``PARTIAL_OBJECT_METADATA`` for a watch
        of PartialObjectMetadata). ``shard_selector`` as for :meth:`list`, sent
        as ``shardSelector``; a watch's events do not say whether the server
        honoured it (a list's ``metadata.shardInfo`` does), so a client that may
        talk to a server without sharding lists first.
        """
        if shard_selector is not None:
            params = {**(params or {}), "shardSelector": str(shard_selector)}
        return await self._transport.open_stream(path, params,
                                                 inactivity_timeout=inactivity_timeout,
                                                 accept=accept)

    def add_request_observer(self, callback: Callable[[RequestRecord], None]
                             ) -> Callable[[], None]:
        """Call ``callback`` after every attempt of every request; returns a remover."""
        return self._transport.add_observer(callback)

    def statistics(self) -> ClientStatistics:
        """Requests, errors and retries so far, per ``(verb, resource)``."""
        return self._transport.statistics()

    # -- reads ------------------------------------------------------------------------------

    @overload
    async def get(self, resource: TypedResource[_T], name: str,  # type: ignore[overload-overlap]
                  namespace: str | None = None, *,
                  metadata_only: Literal[False] = False) -> _T: ...
    @overload
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  metadata_only: bool = False) -> dict[str, Any]: ...
    async def get(self, resource: Resource, name: str, namespace: str | None = None, *,
                  metadata_only: bool = False) -> Any:
        """The object ``name`` (in ``namespace`` for a namespaced resource).

        ``metadata_only=True`` asks the server for its metadata alone: a
        ``PartialObjectMetadata`` (apiVersion ``meta.k8s.io/v1``), as
        client-go's metadata client does.
        """
        return await self.request("GET", object_path(resource, namespace, name, "get"),
                                  accept=PARTIAL_OBJECT_METADATA if metadata_only else None)

    @overload
    async def get_status(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                         name: str, namespace: str | None = None) -> _T: ...
    @overload
    async def get_status(self, resource: Resource, name: str,
                         namespace: str | None = None) -> dict[str, Any]: ...
    async def get_status(self, resource: Resource, name: str,
                         namespace: str | None = None) -> Any:
        """The object ``name`` read through its ``status`` subresource."""
        path = object_path(resource, namespace, name, "get_status")
        return await self.request("GET", path + "/status")

    @overload
    async def list(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                    namespace: str | None = None, *,
                   label_selector: LabelSelectorLike | None = None,
                   field_selector: FieldSelectorLike | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None,
                   metadata_only: Literal[False] = False,
                   shard_selector: ShardSelector | str | None = None) -> ObjectList[_T]: ...
    @overload
    async def list(self, resource: Resource, namespace: str | None = None, *,
                   label_selector: LabelSelectorLike | None = None,
                   field_selector: FieldSelectorLike | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None,
                   metadata_only: bool = False,
                   shard_selector: ShardSelector | str | None = None) -> dict[str, Any]: ...
    async def list(self, resource: Resource, namespace: str | None = None, *,
                   label_selector: LabelSelectorLike | None = None,
                   field_selector: FieldSelectorLike | None = None,
                   limit: int | None = None, continue_: str | None = None,
                   resource_version: str | None = None,
                   metadata_only: bool = False,
                   shard_selector: ShardSelector | str | None = None) -> Any:
        """One page of objects: the List as the server sends it.

        ``namespace`` None lists a namespaced resource across all namespaces.
        Selectors are strings (``"app=web,tier!=db"``), ``{"app": "web"}`` or
        selector objects. An answer that is not a List (no ``items``, an item
        without ``metadata.name``, a field of the wrong type) raises
        :class:`APIError` with reason ``InvalidResponse`` naming what was
        wrong. Follow ``metadata.continue`` for the next page, or
        use :meth:`list_all` / :meth:`iter_list`. ``metadata_only=True`` asks
        for a ``PartialObjectMetadataList``: each item's metadata alone.
        ``shard_selector`` (KEP-5866, ``ShardedListAndWatch``) asks for the
        objects whose key hash is in its ranges; a server that honours it says
        so in ``metadata.shardInfo``, one that does not (before v1.36, or with
        the feature gate off) ignores it and answers every object.
        """
        params = dict(list_params(label_selector, field_selector, limit, continue_,
                                  resource_version))
        if shard_selector is not None:
            params["shardSelector"] = str(shard_selector)
        answer = await self.request("GET", resource.path(scope(resource, namespace)),
                                    params=params, accept=(PARTIAL_OBJECT_METADATA_LIST
                                                           if metadata_only else None))
        return check_list(answer, f"list of {resource.plural}")

    @overload
    async def list_all(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                        namespace: str | None = None, *,
                       label_selector: LabelSelectorLike | None = None,
                       field_selector: FieldSelectorLike | None = None,
                       limit: int | None = _LIST_PAGE,
                       resource_version: str | None = None,
                       metadata_only: Literal[False] = False,
                       shard_selector: ShardSelector | str | None = None) -> ObjectList[_T]: ...
    @overload
    async def list_all(self, resource: Resource, namespace: str | None = None, *,
                       label_selector: LabelSelectorLike | None = None,
                       field_selector: FieldSelectorLike | None = None,
                       limit: int | None = _LIST_PAGE,
                       resource_version: str | None = None,
                       metadata_only: bool = False,
                       shard_selector: ShardSelector | str | None = None) -> dict[str, Any]: ...
    async def list_all(self, resource: Resource, namespace: str | None = None, *,
                       label_selector: LabelSelectorLike | None = None,
                       field_selector: FieldSelectorLike | None = None,
                       limit: int | None = _LIST_PAGE,
                       resource_version: str | None = None,
                       metadata_only: bool = False,
                       shard_selector: ShardSelector | str | None = None) -> Any:
        """Every matching object, read in pages of ``limit``, as one List.

        The List is one consistent snapshot: its ``metadata.resourceVersion``
        is the first page's, from which a watch can start. Items carry
        ``apiVersion`` and ``kind`` (built-in lists leave them out);
        ``metadata_only`` and ``shard_selector`` as for :meth:`list` (the List
        keeps the first page's ``metadata.shardInfo``; every page is asked with
        the same selector, which the continue token does not carry).

        If the snapshot expires mid-way (410: the continue token is older
        than etcd's compaction), the list starts over from the first page,
        up to 3 times; then the :class:`Gone` error is raised. (client-go's
        pager instead falls back to one unpaginated list.)
        """
        restarts = 0
        while True:
            items: list[dict[str, Any]] = []
            first: dict[str, Any] | None = None
            try:
                async for page in self._pages(resource, namespace, label_selector,
                                              field_selector, limit, resource_version,
                                              metadata_only, shard_selector):
                    first = first or page
                    items.extend(page.get("items") or ())
            except Gone:
                if first is None or restarts >= _LIST_RESTARTS:
                    raise
                restarts += 1
                continue
            assert first is not None
            meta = {k: v for k, v in (first.get("metadata") or {}).items()
                    if k not in ("continue", "remainingItemCount")}
            return dict(first, metadata=meta, items=items)

    @overload
    def iter_list(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                  namespace: str | None = None, *,
                  label_selector: LabelSelectorLike | None = None,
                  field_selector: FieldSelectorLike | None = None,
                  limit: int | None = _LIST_PAGE, resource_version: str | None = None,
                  metadata_only: Literal[False] = False,
                  shard_selector: ShardSelector | str | None = None
                  ) -> AsyncIterator[_T]: ...
    @overload
    def iter_list(self, resource: Resource, namespace: str | None = None, *,
                  label_selector: LabelSelectorLike | None = None,
                  field_selector: FieldSelectorLike | None = None,
                  limit: int | None = _LIST_PAGE, resource_version: str | None = None,
                  metadata_only: bool = False,
                  shard_selector: ShardSelector | str | None = None
                  ) -> AsyncIterator[dict[str, Any]]: ...
    async def iter_list(self, resource: Resource, namespace: str | None = None, *,
                        label_selector: LabelSelectorLike | None = None,
                        field_selector: FieldSelectorLike | None = None,
                        limit: int | None = _LIST_PAGE, resource_version: str | None = None,
                        metadata_only: bool = False,
                        shard_selector: ShardSelector | str | None = None
                        ) -> AsyncIterator[Any]:
        """Yield every matching object, fetching pages of ``limit`` as they are consumed.

        Items carry ``apiVersion`` and ``kind``. Unlike :meth:`list_all`, an
        expired continue token (410) mid-way raises :class:`Gone`: the items
        already yielded cannot be taken back, so starting over is the
        caller's decision. ``metadata_only`` and ``shard_selector`` as for
        :meth:`list` (the items alone do not say whether the server honoured
        the shard selector: use :meth:`list` or :meth:`list_all` to see
        ``metadata.shardInfo``).
        """
        async for page in self._pages(resource, namespace, label_selector, field_selector,
                                      limit, resource_version, metadata_only,
                                      shard_selector):
            for item in page.get("items") or ():
                yield item

    async def _pages(self, resource: Resource, namespace: str | None,
                     label_selector: LabelSelectorLike | None,
                     field_selector: FieldSelectorLike | None, limit: int | None,
                     resource_version: str | None,
                     metadata_only: bool = False,
                     shard_selector: ShardSelector | str | None = None
                     ) -> AsyncIterator[dict[str, Any]]:
        token: str | None = None
        while True:
            page = await self.list(resource, namespace, label_selector=label_selector,
                                   field_selector=field_selector, limit=limit, continue_=token,
                                   resource_version=None if token else resource_version,
                                   metadata_only=metadata_only, shard_selector=shard_selector)
            for item in page.get("items") or ():
                item.setdefault("apiVersion", resource.api_version)
                item.setdefault("kind", resource.kind)
            yield page
            token = (page.get("metadata") or {}).get("continue") or None
            if not token:
                return

    # -- writes -----------------------------------------------------------------------------

    @overload
    async def create(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                     obj: Mapping[str, Any], namespace: str | None = None) -> _T: ...
    @overload
    async def create(self, resource: Resource, obj: Mapping[str, Any],
                     namespace: str | None = None) -> dict[str, Any]: ...
    async def create(self, resource: Resource, obj: Mapping[str, Any],
                     namespace: str | None = None) -> Any:
        """Create ``obj`` (in ``namespace``, else its ``metadata.namespace``); the stored object.

        ``apiVersion`` and ``kind`` are filled in from ``resource`` when missing.
        """
        meta = obj.get("metadata") or {}
        ns = meta.get("namespace") or None
        if namespace and ns and namespace != ns:
            raise ValueError(f"create: namespace {namespace!r} does not match the object's "
                             f"metadata.namespace {ns!r}")
        path = resource.path(required_namespace(resource, namespace or ns, "create"))
        created = await self.request("POST", path, body=with_type(resource, obj))
        self._writes.observe("create", resource, created)
        return created

    @overload
    async def update(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                     obj: Mapping[str, Any]) -> _T: ...
    @overload
    async def update(self, resource: Resource, obj: Mapping[str, Any]) -> dict[str, Any]: ...
    async def update(self, resource: Resource, obj: Mapping[str, Any]) -> Any:
        """Replace the object (PUT); ``metadata.resourceVersion``, if set, makes it conditional.

        Raises :class:`Conflict` when the object changed since that version.
        """
        updated = await self.request("PUT", path_of(resource, obj, "update"),
                                     body=with_type(resource, obj))
        self._writes.observe("update", resource, updated)
        return updated

    @overload
    async def update_status(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                            obj: Mapping[str, Any]) -> _T: ...
    @overload
    async def update_status(self, resource: Resource,
                            obj: Mapping[str, Any]) -> dict[str, Any]: ...
    async def update_status(self, resource: Resource, obj: Mapping[str, Any]) -> Any:
        """Replace the object's status through the ``status`` subresource (PUT)."""
        updated = await self.request("PUT", path_of(resource, obj, "update_status") + "/status",
                                     body=with_type(resource, obj))
        self._writes.observe("update_status", resource, updated)
        return updated

    @overload
    async def patch(self, resource: TypedResource[_T], name: str, patch: Any,
                    namespace: str | None = None, *, type: str = "merge",
                    field_manager: str | None = None, force: bool | None = None
                    ) -> _T: ...
    @overload
    async def patch(self, resource: Resource, name: str, patch: Any,
                    namespace: str | None = None, *, type: str = "merge",
                    field_manager: str | None = None, force: bool | None = None
                    ) -> dict[str, Any]: ...
    async def patch(self, resource: Resource, name: str, patch: Any,
                    namespace: str | None = None, *, type: str = "merge",
                    field_manager: str | None = None, force: bool | None = None
                    ) -> Any:
        """Patch the object ``name``; the patched object.

        ``type`` is ``"merge"`` (RFC 7386, a dict), ``"json"`` (RFC 6902, a list
        of operations), ``"strategic"`` (built-in kinds only; custom resources
        answer :class:`UnsupportedMediaType`) or ``"apply"`` (server-side
        apply of a full intent, which needs ``field_manager``; ``force=True``
        takes over conflicting fields).
        """
        return await self._patch("patch", resource, name, patch, namespace, type,
                                 field_manager, force, "")

    @overload
    async def apply(self, resource: TypedResource[_T],  # type: ignore[overload-overlap]
                    obj: Mapping[str, Any], namespace: str | None = None, *,
                    field_manager: str, force: bool = False, dry_run: bool = False) -> _T: ...
    @overload
    async def apply(self, resource: Resource, obj: Mapping[str, Any],
                    namespace: str | None = None, *, field_manager: str, force: bool = False,
                    dry_run: bool = False) -> dict[str, Any]: ...
    async def apply(self, resource: Resource, obj: Mapping[str, Any],
                    namespace: str | None = None, *, field_manager: str, force: bool = False,
                    dry_run: bool = False) -> Any:
        """Server-side apply ``obj``, the full intent of ``field_manager``; the result.

        The object is created if missing. Fields another manager owns with a
        different value answer :class:`Conflict` naming each field and owner,
        unless ``force=True`` takes them over; fields this manager applied
        before and leaves out now are removed (unless another manager owns
        them too). ``dry_run=True`` asks the server to check and answer
        without storing anything (``dryRun=All``); the answer is not taken as
        a write the cache should wait to see.

        RBAC: ``patch`` on the resource, and ``create`` too, which kube-apiserver
        checks when the apply creates the object (``reconcilekit.rbac.applies``).
        """
        meta = obj.get("metadata") or {}
        name, ns = meta.get("name"), meta.get("namespace") or None
        if not name:
            raise ValueError("apply: the object needs metadata.name")
        if namespace and ns and namespace != ns:
            raise ValueError(f"apply: namespace {namespace!r} does not match the object's "
                             f"metadata.namespace {ns!r}")
        return await self._patch("patch", resource, str(name), obj, namespace or ns, "apply",
                                 field_manager, force, "", dry_run=dry_run)

    @overload
    async def patch_status(self, resource: TypedResource[_T], name: str, patch: Any,
                           namespace: str | None = None, *, type: str = "merge",
                           field_manager: str | None = None, force: bool | None = None
                           ) -> _T: ...
    @overload
    async def patch_status(self, resource: Resource, name: str, patch: Any,
                           namespace: str | None = None, *, type: str = "merge",
                           field_manager: str | None = None, force: bool | None = None
                           ) -> dict[str, Any]: ...
    async def patch_status(self, resource: Resource, name: str, patch: Any,
                           namespace: str | None = None, *, type: str = "merge",
                           field_manager: str | None = None, force: bool | None = None
                           ) -> Any:
        """Like :meth:`patch`, through the ``status`` subresource."""
        return await self._patch("patch_status", resource, name, patch, namespace, type,
                                 field_manager, force, "/status")

    # -- the scale subresource ---------------------------------------------------------------

    async def get_scale(self, resource: Resource, name: str,
                        namespace: str | None = None) -> Scale:
        """The object's ``autoscaling/v1`` Scale (``spec.replicas``, ``status.replicas``
        and ``status.selector``), read through its ``scale`` subresource.

        Any resource with a scale subresource has one: Deployments, ReplicaSets,
        StatefulSets, ReplicationControllers, and custom resources whose CRD
        declares ``subresources.scale``. Others answer :class:`NotFound`.
        """
        path = object_path(resource, namespace, name, "get_scale") + "/scale"
        return cast("Scale", await self.request("GET", path))

    async def update_scale(self, resource: Resource, scale: Mapping[str, Any]) -> Scale:
        """Replace the Scale (PUT), named by its ``metadata``; its ``metadata.
        resourceVersion``, if set, makes the write conditional (:class:`Conflict`
        when the object changed since). Only ``spec.replicas`` is written."""
        body = {"apiVersion": "autoscaling/v1", "kind": "Scale", **scale}
        updated = await self.request("PUT", path_of(resource, scale, "update_scale") + "/scale",
                                     body=body)
        self._writes.observe("update_scale", resource, updated)
        return cast("Scale", updated)

    async def patch_scale(self, resource: Resource, name: str, patch: Any,
                          namespace: str | None = None, *, type: str = "merge") -> Scale:
        """Patch the Scale of the object ``name``, e.g. ``{"spec": {"replicas": 5}}``
        (what ``kubectl scale`` sends); ``type`` as for :meth:`patch` (not ``"apply"``)."""
        if type == "apply":
            raise ValueError("patch_scale: server-side apply of a Scale is not supported; "
                             "use a merge or JSON patch")
        return cast("Scale", await self._patch("patch_scale", resource, name, patch, namespace,
                                               type, None, None, "/scale"))

    async def _patch(self, verb: str, resource: Resource, name: str, patch: Any,
                     namespace: str | None, type: str, field_manager: str | None,
                     force: bool | None, suffix: str, *, dry_run: bool = False
                     ) -> dict[str, Any]:
        content_type = PATCH_CONTENT_TYPES.get(type)
        if content_type is None:
            raise ValueError(f"unknown patch type {type!r}; use one of "
                             f"{', '.join(PATCH_CONTENT_TYPES)}")
        if type == "apply" and not field_manager:
            raise ValueError("an apply patch needs field_manager")
        if force is not None and type != "apply":
            raise ValueError("force is only allowed with type='apply'")
        if type == "apply" and isinstance(patch, Mapping):
            patch = with_type(resource, patch)
        params = {"fieldManager": field_manager, "force": force,
                  "dryRun": "All" if dry_run else None}
        path = object_path(resource, namespace, name, verb) + suffix
        patched = await self.request("PATCH", path, params=params, body=patch,
                                     content_type=content_type)
        if not dry_run:  # nothing was stored: no event of it will ever come
            self._writes.observe(verb, resource, patched)
        return patched

    async def delete(self, resource: Resource, name: str, namespace: str | None = None, *,
                     uid: str | None = None, resource_version: str | None = None,
                     propagation_policy: PropagationPolicy | None = None,
                     grace_period_seconds: int | None = None) -> dict[str, Any]:
        """Delete the object ``name``; the server's answer.

        ``uid`` and ``resource_version`` are preconditions: the delete fails
        with :class:`Conflict` if the object's differ. The answer is the
        object (still present while finalizers or a grace period hold it; for
        Pods and custom resources also once gone) or a ``Status`` of success.
        """
        body = delete_options(uid, resource_version, propagation_policy, grace_period_seconds)
        path = object_path(resource, namespace, name, "delete")
        answer = await self.request("DELETE", path, body=body)
        key = ObjectKey((namespace or "") if resource.namespaced else "", name)
        self._writes.observe("delete", resource, answer, key)
        return answer

    async def delete_collection(self, resource: Resource, namespace: str | None = None, *,
                                label_selector: LabelSelectorLike | None = None,
                                field_selector: FieldSelectorLike | None = None,
                                propagation_policy: PropagationPolicy | None = None,
                                grace_period_seconds: int | None = None) -> dict[str, Any]:
        """Delete every matching object in ``namespace`` (required for namespaced resources).

        Returns the server's List of the objects deleted (or being deleted).
        """
        ns = required_namespace(resource, namespace, "delete_collection")
        params = list_params(label_selector, field_selector, None, None, None)
        body = delete_options(None, None, propagation_policy, grace_period_seconds)
        answer = await self.request("DELETE", resource.path(ns), params=params, body=body)
        for item in answer.get("items") or ():
            self._writes.observe("delete_collection", resource, item)
        return answer

    # -- read-your-own-writes ---------------------------------------------------------------

    def add_write_observer(self, callback: Callable[[WriteRecord], None]) -> Callable[[], None]:
        """Call ``callback`` with a :class:`WriteRecord` after every successful write.

        Returns a function that removes the observer. Observers run before the
        write call returns; an observer that raises is logged and does not
        fail the write (which has happened).
        """
        return self._writes.add_observer(callback)

    def last_written_rv(self, resource: Resource, namespace: str | None,
                        name: str) -> str | None:
        """The resourceVersion of this client's last write to the object, if remembered.

        None if this client has not written it, has deleted it since, or has
        written 10,000 other objects since (least recently written first out).
        """
        key = ObjectKey((namespace or "") if resource.namespaced else "", name)
        return self._writes.last_written_rv(resource, key)
