"""What the verbs (:mod:`.create`, :mod:`.update`, :mod:`.patch`, :mod:`.delete`) share
before the registry: decoding a body into its kind, the namespace lifecycle check,
the admission functions of a request (:mod:`...admission.chain`) and conversion
between the request's version and the storage version
(:mod:`...apiextensions.version_conversion`), handed to the registry's
:class:`~...registry.registry_store.RegistryStore`, which runs the write (validation, admission,
GuaranteedUpdate).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from ....._foundations.go_compat import go_quote
from ...admission.chain import Admission, Attributes
from ...apiextensions.version_conversion import Converter
from ...controllers.builtin_controllers import Lifecycle
from ...machinery.decoding import decode, normalize_microtimes
from ...machinery.request_info import ResourceRequest
from ...machinery.request_user import RequestUser
from ...machinery.status import DecodeError, StatusError
from ...machinery.unstructured import Obj, json_type
from ...machinery.validation import invalid
from ...registry.generic_store import Storage
from ...registry.registry_store import Change, RegistryStore, Versions
from ...registry.strategy import Strategy
from .write_options import WriteOptions

__all__ = ["WritePath", "name_of", "short"]


class WritePath:
    """The write path over one :class:`Storage` (and its :class:`Lifecycle`)."""

    def __init__(self, storage: Storage, lifecycle: Lifecycle, admission: Admission,
                 converter: Converter) -> None:
        self.storage = storage
        self.lifecycle = lifecycle
        self.admission = admission
        self.converter = converter
        self.store = RegistryStore(storage, deletion_started=lifecycle.deletion_started)

    def strategy(self, req: ResourceRequest) -> Strategy:
        """The strategy of the request's kind."""
        return self.storage.strategies.of(req.rtype)

    def check_body(self, req: ResourceRequest, body: Obj, *, patched: bool = False,
                   options: WriteOptions | None = None, default: bool = True,
                   applied: bool = False) -> Obj:
        """Decode ``body`` as kube-apiserver does into the kind (a copy), or refuse it.

        kind/apiVersion must match the URL (defaulted for built-in kinds), the
        namespace too; field types, base64 and MicroTimes must decode. A
        request body is refused with 400, a patched object with 422 on
        ``patch``. Unknown fields are dropped (a built-in kind's by its
        OpenAPI schema; a custom resource is pruned and defaulted by its
        own); they go to ``options.warnings`` in the decoder's order, or
        refuse the body under ``fieldValidation=Strict``. An ``applied``
        configuration of a built-in kind with an unknown field is refused
        with 500, whatever ``fieldValidation``, as kube-apiserver's typed
        patch does.
        """
        r = req.rtype.resource
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if not api_version and not kind and req.rtype.builtin and not patched:
            body = dict(body, apiVersion=r.api_version, kind=r.kind)
        elif not kind:
            raise StatusError.bad_request(f"Object 'Kind' is missing in '{short(body)}'")
        elif api_version != r.api_version:  # the decoder's errors, as kube-apiserver 1.28's
            version = str(api_version).rpartition("/")[2]
            raise self._undecodable(
                req, body, patched, f'no kind "{kind}" is registered for version '
                f'"{api_version}" in scheme "pkg/runtime/scheme.go:100"', kind, version)
        elif kind != r.kind:
            raise self._undecodable(
                req, body, patched, f"converting ({r.version}.{kind}) to "
                f"({r.group or 'core'}.{r.kind}): unknown conversion", kind)
        meta = body.get("metadata")
        if meta is None:
            body = dict(body, metadata={})
        elif not isinstance(meta, dict):
            where = (f"Go struct field {r.kind}.metadata" if req.rtype.builtin
                     else "Go value")  # a custom resource's metadata is decoded on its own
            raise self._undecodable(req, body, patched, f"json: cannot unmarshal "
                                    f"{json_type(meta)} into {where} of type v1.ObjectMeta")
        paths: list[str] = []
        try:
            decoded = decode(req.rtype, body, paths, sort=patched)
            normalize_microtimes(req.rtype, decoded)
            self.strategy(req).check_encoding(decoded)
        except DecodeError as err:
            raise self._undecodable(req, body, patched, str(err)) from None
        ns = decoded["metadata"].get("namespace")
        if r.namespaced and ns and ns != req.namespace:
            raise StatusError.bad_request("the namespace of the provided object does not match "
                                          "the namespace sent on the request")
        if applied and paths:
            raise _undeclared(req, decoded, paths[0])
        if default:
            self.strategy(req).default(decoded)
        schema = req.rtype.schema
        if schema is not None:
            paths.extend(schema.decode(decoded, default=default))
        if paths:
            unknown = [f"unknown field {go_quote(p)}" for p in paths]
            validation = options.field_validation if options else "Warn"
            if unknown and validation == "Strict":
                raise self._undecodable(req, body, patched,
                                        "strict decoding error: " + ", ".join(unknown))
            if options is not None and validation == "Warn":
                options.warnings.extend(unknown)
        return decoded

    def _undecodable(self, req: ResourceRequest, body: Obj, patched: bool, why: str,
                     kind: Any = None, version: str | None = None) -> StatusError:
        r = req.rtype.resource
        if patched:  # the patched object, as Go marshals a map: keys sorted
            return StatusError.invalid("", "", [invalid("patch", _sorted_json(body), why)])
        return StatusError.bad_request(f'{kind or r.kind} in version "{version or r.version}" '
                                       f"cannot be handled as a {r.kind}: {why}")

    def check_namespace(self, req: ResourceRequest, name: str | None = None) -> None:
        """The NamespaceLifecycle admission plugin on a create: the namespace must exist
        (404) and not be terminating (403 naming the object, ``name`` or the URL's)."""
        if not req.rtype.resource.namespaced:
            return
        ns = req.namespace or ""
        ns_table = self.storage.tables.get(("", "namespaces"))
        if ns_table is None or ("", ns) not in ns_table.objects:
            raise StatusError.not_found("namespaces", ns)
        if self.lifecycle.namespace_terminating(ns):
            name = name_of(req) if name is None else name
            raise StatusError(403, "Forbidden", f"{req.rtype.resource.group_resource} "
                              f'"{name}" is forbidden: unable to create new content in '
                              f"namespace {ns} because it is being terminated",
                              {"name": name, "kind": req.rtype.resource.plural,
                            "causes": [{"reason": "NamespaceTerminating",
                                        "message": f"namespace {ns} is being terminated",
                                        "field": "metadata.namespace"}]})

    async def create_new(self, req: ResourceRequest, obj: Obj, manager: str,
                         options: WriteOptions, user: RequestUser,
                         managed_fields: list[Obj] | None = None) -> Obj:
        """A new object (a create, or an apply that creates), by the store, admitted
        by the admission chain."""
        admission = _RequestAdmission(self, req, "CREATE", options,
                                      options.review_options("CreateOptions"), user)
        return await self.store.create(req.rtype, req.namespace or "", obj, manager=manager,
                                       dry_run=options.dry_run, admission=admission,
                                       versions=self.versions(req),
                                       managed_fields=managed_fields)

    async def guaranteed_update(self, req: ResourceRequest, change: Change, manager: str,
                                options: WriteOptions, user: RequestUser, *,
                                check_rv: bool) -> Obj:
        """``change`` of a stored object (as the request's version shows it), by the
        store's GuaranteedUpdate, admitted by the admission chain."""
        assert req.name is not None
        admission = _RequestAdmission(self, req, "UPDATE", options,
                                      options.review_options("UpdateOptions"), user)
        return await self.store.guaranteed_update(
            req.rtype, req.namespace or "", req.name, change, subresource=req.subresource,
            manager=manager, dry_run=options.dry_run, check_rv=check_rv,
            admission=admission, versions=self.versions(req))

    def versions(self, req: ResourceRequest) -> Versions:
        """Conversion between the request's version and the storage version."""
        return Versions(lambda obj: self.shown(req, obj), lambda obj: self.stored(req, obj))

    def attributes(self, req: ResourceRequest, operation: str, obj: Obj | None,
                   old: Obj | None, dry_run: bool, options: Obj, user: RequestUser,
                   warnings: list[str]) -> Attributes:
        name = req.name or ((obj or {}).get("metadata") or {}).get("name") or ""
        namespace = name if self.strategy(req).own_namespace else req.namespace or ""
        return Attributes(operation, req.rtype, namespace, name, req.subresource or "", obj,
                          old, dry_run, options, user, warnings)

    async def shown(self, req: ResourceRequest, obj: Obj) -> Obj:
        """A stored object as the request's version shows it (converted if need be)."""
        return await self.converter.convert(req.rtype, obj, req.rtype.group_version)

    async def stored(self, req: ResourceRequest, obj: Obj) -> Obj:
        return await self.converter.convert(req.rtype, obj,
                                            self.converter.storage_version(req.rtype))

    def default(self, req: ResourceRequest, obj: Obj) -> None:
        """Defaults for an object an apply made (its configuration was not defaulted)."""
        if req.rtype.schema is not None:
            req.rtype.schema.default(obj)
        else:
            self.strategy(req).default(obj)

    def admit(self, req: ResourceRequest, obj: Obj) -> None:
        """The built-in mutating admission plugins of a create, as the kind's strategy
        runs them (LimitRanger and ServiceAccount for a Pod, DefaultStorageClass for a
        claim, ...)."""
        self.strategy(req).admit(obj, req.namespace or "", self.stored_objects)

    def stored_objects(self, group: str, plural: str) -> Mapping[tuple[str, str], Obj]:
        """What the server holds of a resource, by (namespace, name) (read-only)."""
        table = self.storage.tables.get((group, plural))
        return table.objects if table is not None else {}


def _undeclared(req: ResourceRequest, obj: Obj, path: str) -> StatusError:
    """kube-apiserver's answer to an applied configuration with a field its type lacks."""
    r = req.rtype.resource
    meta = obj["metadata"]
    where = f"{meta.get('namespace') or ''}/{meta.get('name') or req.name}"
    return StatusError(500, "", f"failed to create typed patch object ({where}; {r.group}/"
                       f"{r.version}, Kind={r.kind}): .{path}: field not declared in schema")


def short(body: Obj) -> str:
    text = _json_text(body, sort_keys=False)
    return text if len(text) <= 200 else text[:200] + "..."


def name_of(req: ResourceRequest) -> str:
    return req.name or ""


def _sorted_json(body: Obj) -> str:
    return _json_text(body, sort_keys=True)


def _json_text(body: Obj, *, sort_keys: bool) -> str:
    """``body`` as JSON; orjson writes 255 levels of nesting at most, the standard
    library's encoder a few hundred more; deeper than that it is not shown."""
    try:
        return orjson.dumps(body, option=orjson.OPT_SORT_KEYS if sort_keys else None).decode()
    except orjson.JSONEncodeError:
        try:
            return json.dumps(body, sort_keys=sort_keys, separators=(",", ":"),
                              ensure_ascii=False)
        except RecursionError:
            return "(an object nested too deeply to show)"


class _RequestAdmission:
    """The admission chain on one request's write: the store's
    :class:`~...registry.registry_store.WriteAdmission`."""

    def __init__(self, path: WritePath, req: ResourceRequest, operation: str,
                 options: WriteOptions, review_options: Obj, user: RequestUser) -> None:
        self._path = path
        self._req = req
        self._operation = operation
        self._options = options
        self._review_options = review_options
        self._user = user
        self._attrs: Attributes | None = None

    @property
    def patched(self) -> bool:
        return self._attrs is not None and self._attrs.patched

    async def mutate(self, obj: Obj, old: Obj | None) -> Obj:
        self._attrs = attrs = self._path.attributes(
            self._req, self._operation, obj, old, self._options.dry_run, self._review_options,
            self._user, self._options.warnings)
        return await self._path.admission.mutate(attrs) or obj

    async def validate(self, obj: Obj) -> None:
        attrs = self._attrs
        assert attrs is not None
        name, namespace = attrs.name, attrs.namespace
        if self._operation == "CREATE":  # named only now (generateName)
            name = obj["metadata"]["name"]
            if self._path.strategy(self._req).own_namespace:
                namespace = name
        await self._path.admission.validate(attrs.for_validation(obj, name, namespace))
