"""The write verbs of the test API server, at the level of a REST request.

``create``, ``update``, ``patch``, ``delete`` and ``deletecollection`` take a
parsed request and body, check what kube-apiserver's handlers check before
storage (names, body type, patch types, preconditions), run admission
(mutating webhooks, validation, validating webhooks: :mod:`...admission.chain`)
and return the object (or list) to answer with and its HTTP status, in the
request's version (objects are stored at their storage version:
:mod:`...apiextensions.version_conversion`).

A change to a stored object is prepared from it, admitted (which awaits
webhooks) and committed only if the object is still the one it was
prepared from; otherwise it starts over from the new one, as
kube-apiserver's GuaranteedUpdate does.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import orjson
import yaml

from ....._selector_syntax import go_quote
from ...admission.chain import ADMIN, Admission, Attributes, RequestUser
from ...admission.webhook_configurations import (
    check_ca_bundles,
    configuration_errors,
    default_webhooks,
    is_webhook_configuration,
)
from ...apiextensions.crd import validate_crd
from ...apiextensions.version_conversion import Converter
from ...controllers.builtin_controllers import Lifecycle
from ...machinery.decoding import decode, normalize_microtimes
from ...machinery.request_info import ResourceRequest, go_int
from ...machinery.resources import ResourceType
from ...machinery.status import Cause, DecodeError, StatusError
from ...machinery.unstructured import Obj, json_type, timestamp
from ...machinery.validation import invalid, validate_object_meta
from ...patch.json_patch import PatchError, json_patch, merge_patch
from ...patch.strategic_merge import patch_schema_for, strategic_merge_patch
from ...registry.generic_store import Storage, Superseded
from ...registry.pod_defaults import admit_pod, default_pod
from ...registry.strategies import validate as validate_kind
from ...registry.strategies import validate_update

__all__ = ["DeleteOptions", "WriteOptions", "Writes", "dry_run_of"]

# What an update makes of the stored object (in the request's version): the new object,
# and the managed fields to give it (an apply's) or None.
Change: TypeAlias = Callable[[Obj], tuple[Obj, list[Obj] | None]]
_JSON_PATCH = "application/json-patch+json"
_MERGE_PATCH = "application/merge-patch+json"
_STRATEGIC_PATCH = "application/strategic-merge-patch+json"
_APPLY_PATCH = "application/apply-patch+yaml"
_PATCH_TYPES = (_JSON_PATCH, _MERGE_PATCH, _STRATEGIC_PATCH, _APPLY_PATCH)
_PROPAGATION = ("Foreground", "Background", "Orphan")


def dry_run_of(values: list[str], options_kind: str) -> bool:
    """The ``dryRun`` option: ``All`` or nothing (422 on ``options_kind`` otherwise)."""
    if any(v != "All" for v in values):
        shown = "[]string{" + ", ".join(go_quote(v) for v in values) + "}"
        raise StatusError.invalid_options(options_kind, [Cause(
            "FieldValueNotSupported", f'Unsupported value: {shown}: supported values: "All"',
            "dryRun")])
    return bool(values)


_FIELD_VALIDATION = ("", "Ignore", "Strict", "Warn")


@dataclass(slots=True)
class WriteOptions:
    """A create, update or patch's options, and the warnings its answer carries.

    ``field_validation``: what unknown fields do (``Strict``: 400; ``Warn``,
    the default: a warning each; ``Ignore``: nothing); they are pruned from
    custom resources either way. ``force``: an apply takes the fields other
    managers own instead of failing with a conflict.
    """

    dry_run: bool = False
    field_validation: str = "Warn"
    force: bool = False
    warnings: list[str] = field(default_factory=list)
    field_manager: str = ""
    validation_given: str = ""

    @classmethod
    def parse(cls, query: Mapping[str, str], dry_run: Sequence[str],
              options_kind: str) -> WriteOptions:
        """From the query (422 on ``options_kind`` for a value kube-apiserver refuses)."""
        validation = query.get("fieldValidation", "")
        if validation not in _FIELD_VALIDATION:
            raise StatusError.invalid_options(options_kind, [Cause(
                "FieldValueNotSupported", f"Unsupported value: {go_quote(validation)}: "
                'supported values: "", "Ignore", "Strict", "Warn"', "fieldValidation")])
        force = query.get("force", "") in ("true", "1")
        return cls(dry_run_of(list(dry_run), options_kind), validation or "Warn", force,
                   field_manager=query.get("fieldManager", ""), validation_given=validation)

    def review_options(self, kind: str) -> Obj:
        """The CreateOptions or UpdateOptions admission webhooks are sent."""
        out: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
        if self.dry_run:
            out["dryRun"] = ["All"]
        if self.field_manager:
            out["fieldManager"] = self.field_manager
        if self.validation_given:
            out["fieldValidation"] = self.validation_given
        return out


@dataclass(frozen=True, slots=True)
class DeleteOptions:
    """``metav1.DeleteOptions``: from a DELETE's JSON body, or from its query without one."""

    uid: str | None = None
    resource_version: str | None = None
    grace_period: int | None = None
    propagation: str | None = None
    orphan_dependents: bool | None = None
    dry_run: bool = False

    @property
    def orphan(self) -> bool:
        return self.propagation == "Orphan" or self.orphan_dependents is True

    def review_options(self) -> Obj:
        """The DeleteOptions admission webhooks are sent."""
        out: Obj = {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1"}
        if self.grace_period is not None:
            out["gracePeriodSeconds"] = self.grace_period
        preconditions = {k: v for k, v in (("uid", self.uid),
                                           ("resourceVersion", self.resource_version)) if v}
        if preconditions:
            out["preconditions"] = preconditions
        if self.orphan_dependents is not None:
            out["orphanDependents"] = self.orphan_dependents
        if self.propagation is not None:
            out["propagationPolicy"] = self.propagation
        if self.dry_run:
            out["dryRun"] = ["All"]
        return out

    @property
    def finalizer(self) -> str | None:
        """The garbage collector's finalizer this deletion adds, if any."""
        if self.orphan:
            return "orphan"
        return "foregroundDeletion" if self.propagation == "Foreground" else None

    @classmethod
    def parse(cls, raw: bytes, query: Mapping[str, str],
              query_dry_run: Sequence[str] = ()) -> DeleteOptions:
        """Decode and validate (400 for a bad body or query, 422 for bad values).

        ``query_dry_run`` holds the query's ``dryRun`` values (the parameter repeats).
        """
        grace: Any
        if raw.strip():
            body = parse_json(raw)
            if not isinstance(body, dict):
                raise StatusError.bad_request(f"json: cannot unmarshal {json_type(body)} into Go "
                                           "value of type v1.DeleteOptions")
            pre = body.get("preconditions") or {}
            grace, policy = body.get("gracePeriodSeconds"), body.get("propagationPolicy")
            orphan, dry = body.get("orphanDependents"), body.get("dryRun") or []
        else:
            pre = {}
            grace = go_int(query["gracePeriodSeconds"]) if "gracePeriodSeconds" in query else None
            policy = query.get("propagationPolicy")
            orphan = _go_bool(query["orphanDependents"]) if "orphanDependents" in query else None
            dry = list(query_dry_run)
        causes = []
        if orphan is not None and policy is not None:
            causes.append(invalid("propagationPolicy", policy,
                                  "orphanDependents and deletionPropagation cannot be both set"))
        if policy is not None and policy not in _PROPAGATION:
            causes.append(Cause("FieldValueNotSupported", f"Unsupported value: {go_quote(policy)}"
                                ': supported values: "Foreground", "Background", "Orphan", "nil"',
                                "propagationPolicy"))
        if causes:
            raise StatusError.invalid_options("DeleteOptions", causes)
        return cls(pre.get("uid"), pre.get("resourceVersion"),
                   grace if isinstance(grace, int) else None, policy, orphan,
                   dry_run_of([str(v) for v in dry], "DeleteOptions"))


def _go_bool(value: str) -> bool:
    """Go's ``strconv.ParseBool`` (400 BadRequest with its error otherwise)."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise StatusError.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


class Writes:
    """Write verbs over one :class:`Storage` (and its :class:`Lifecycle`).

    Each verb runs admission (:mod:`...admission.chain`) and answers in the request's
    version; objects are stored at their resource's storage version
    (:mod:`...apiextensions.version_conversion`).
    """

    def __init__(self, storage: Storage, lifecycle: Lifecycle, admission: Admission,
                 converter: Converter) -> None:
        self.storage = storage
        self.lifecycle = lifecycle
        self.admission = admission
        self.converter = converter

    # -- checks shared by the verbs ------------------------------------------------

    def check_body(self, req: ResourceRequest, body: Obj, *, patched: bool = False,
                   options: WriteOptions | None = None, default: bool = True) -> Obj:
        """Decode ``body`` as kube-apiserver does into the kind (a copy), or refuse it.

        kind/apiVersion must match the URL (defaulted for built-in kinds), the
        namespace too; field types, base64 and MicroTimes must decode. A
        request body is refused with 400, a patched object with 422 on
        ``patch``. A custom resource is pruned and defaulted by its schema;
        the fields pruned as unknown go to ``options.warnings``, or refuse
        the body under ``fieldValidation=Strict``.
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
            raise self._undecodable(req, body, patched, f"json: cannot unmarshal "
                                    f"{json_type(meta)} into Go struct field {r.kind}.metadata "
                                    "of type v1.ObjectMeta")
        ns = body["metadata"].get("namespace")
        if r.namespaced and ns and ns != req.namespace:
            raise StatusError.bad_request("the namespace of the provided object does not match "
                                       "the namespace sent on the request")
        try:
            decoded = decode(req.rtype, body)
            normalize_microtimes(req.rtype, decoded)
            check_ca_bundles(req.rtype, decoded)
        except DecodeError as err:
            raise self._undecodable(req, body, patched, str(err)) from None
        if default and _is_pod(req.rtype):
            default_pod(decoded)
        elif default:
            default_webhooks(req.rtype, decoded)
        schema = req.rtype.schema
        if schema is not None:
            unknown = [f"unknown field {go_quote(p)}"
                       for p in schema.decode(decoded, default=default)]
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
            shown = orjson.dumps(body, option=orjson.OPT_SORT_KEYS).decode()
            return StatusError.invalid("", "", [invalid("patch", shown, why)])
        return StatusError.bad_request(f'{kind or r.kind} in version "{version or r.version}" '
                                    f"cannot be handled as a {r.kind}: {why}")

    def validate(self, req: ResourceRequest, obj: Obj, old: Obj | None = None) -> None:
        """The kind's validation, and its update rules when ``old`` is given (422 Invalid)."""
        rtype = req.rtype
        r = rtype.resource
        causes = validate_object_meta(obj["metadata"],
                                      label_name=r.group == "" and r.plural == "namespaces",
                                      core=rtype.builtin and r.group != "apiextensions.k8s.io")
        if r.group == "apiextensions.k8s.io" and r.plural == "customresourcedefinitions":
            causes.extend(validate_crd(obj))
        causes.extend(validate_kind(rtype, obj, req.namespace or ""))
        if is_webhook_configuration(rtype):
            causes.extend(configuration_errors(rtype, obj))
        if old is not None:
            causes.extend(validate_update(rtype, old, obj))
        if rtype.schema is not None:
            causes.extend(rtype.schema.validate(obj, old))
        if causes:
            raise StatusError.invalid(rtype.qualified_kind(), obj["metadata"].get("name", ""),
                                   causes, r.group)

    def _checker(self, req: ResourceRequest) -> Callable[[Obj, Obj], None] | None:
        """The validation of an update: the kind's for the main resource, the
        schema's for a custom resource's ``status`` (none for other subresources)."""
        schema = req.rtype.schema
        if req.subresource == "status" and schema is not None:
            def check_status(old: Obj, new: Obj) -> None:
                causes = schema.validate_status(new, old)
                if causes:
                    raise StatusError.invalid(req.rtype.qualified_kind(), new["metadata"]["name"],
                                           causes, req.rtype.resource.group)
            return check_status
        if req.subresource:
            return None
        return lambda old, new: self.validate(req, new, old)

    def _check_namespace(self, req: ResourceRequest) -> None:
        if not req.rtype.resource.namespaced:
            return
        ns = req.namespace or ""
        ns_table = self.storage.tables.get(("", "namespaces"))
        if ns_table is None or ("", ns) not in ns_table.objects:
            raise StatusError.not_found("namespaces", ns)
        if self.lifecycle.namespace_terminating(ns):
            raise StatusError(403, "Forbidden", f"{req.rtype.resource.group_resource} "
                           f'"{_name_of(req)}" is forbidden: unable to create new content in '
                           f"namespace {ns} because it is being terminated",
                           {"name": _name_of(req), "kind": req.rtype.resource.plural,
                            "causes": [{"reason": "NamespaceTerminating",
                                        "message": f"namespace {ns} is being terminated",
                                        "field": "metadata.namespace"}]})

    # -- verbs -------------------------------------------------------------------------

    async def create(self, req: ResourceRequest, body: Obj, manager: str,
                     options: WriteOptions | None = None, *, user: RequestUser = ADMIN) -> Obj:
        options = options or WriteOptions()
        body = self.check_body(req, body, options=options)
        meta = body["metadata"]
        if not meta.get("name") and not meta.get("generateName"):
            r = req.rtype
            raise StatusError.invalid(r.qualified_kind(), "", [Cause(
                "FieldValueRequired", "Required value: name or generateName is required",
                "metadata.name")], r.resource.group)
        self._check_namespace(req)
        _dedup_owner_references(meta)
        self._admit(req, body)
        return await self._create(req, body, manager, options, user)

    async def _create(self, req: ResourceRequest, obj: Obj, manager: str,
                      options: WriteOptions, user: RequestUser,
                      managed_fields: list[Obj] | None = None) -> Obj:
        """Admission and storage of a new object: a create, or an apply that creates.

        Mutating webhooks see the object before it has a generated name or
        any server-set metadata; validating webhooks see it as it would be
        stored, but for its resourceVersion.
        """
        ns = req.namespace or ""
        attrs = self._attributes(req, "CREATE", obj, None, options.dry_run,
                                 options.review_options("CreateOptions"), user,
                                 options.warnings)
        obj = await self.admission.mutate(attrs) or obj
        meta = obj["metadata"]
        _dedup_owner_references(meta)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = self.storage.generate_name(req.rtype, ns, meta["generateName"])
        self.validate(req, obj)
        prepared = self.storage.prepare_create(req.rtype, ns, obj, manager=manager,
                                               dry_run=options.dry_run,
                                               managed_fields=managed_fields)
        attrs.obj = prepared
        attrs.name = meta["name"]
        if _is_namespace(req.rtype):
            attrs.namespace = attrs.name
        await self.admission.validate(attrs)
        if attrs.patched:
            self._prune(req, prepared)
        if options.dry_run:
            return prepared
        created = self.storage.commit_create(req.rtype, ns, await self._stored(req, prepared))
        return await self.shown(req, created)

    async def _update(self, req: ResourceRequest, change: Change, manager: str,
                      options: WriteOptions, user: RequestUser, *, check_rv: bool) -> Obj:
        """Admission and storage of a change to a stored object (``change`` of it, as the
        request's version shows it), started over when another write comes first, as
        kube-apiserver's GuaranteedUpdate does."""
        assert req.name is not None
        rtype = req.rtype
        while True:
            stored = self.storage.get(rtype, req.namespace or "", req.name)
            old = await self.shown(req, stored)
            new, managed_fields = change(old)
            attrs = self._attributes(req, "UPDATE", new, old, options.dry_run,
                                     options.review_options("UpdateOptions"), user,
                                     options.warnings)
            new = await self.admission.mutate(attrs) or new
            if attrs.patched:
                _dedup_owner_references(new["metadata"])
            result = self.storage.prepare_update(
                rtype, old, new, subresource=req.subresource, manager=manager,
                check_rv=check_rv, managed_fields=managed_fields, check=self._checker(req))
            attrs.obj = result
            await self.admission.validate(attrs)
            if result is old or options.dry_run:
                return result
            if attrs.patched:
                self._prune(req, result)
            try:
                committed = self.storage.commit_update(rtype, stored,
                                                       await self._stored(req, result))
            except Superseded:
                continue
            return await self.shown(req, committed)

    def _attributes(self, req: ResourceRequest, operation: str, obj: Obj | None,
                    old: Obj | None, dry_run: bool, options: Obj, user: RequestUser,
                    warnings: list[str]) -> Attributes:
        name = req.name or ((obj or {}).get("metadata") or {}).get("name") or ""
        namespace = name if _is_namespace(req.rtype) else req.namespace or ""
        return Attributes(operation, req.rtype, namespace, name, req.subresource or "", obj,
                          old, dry_run, options, user, warnings)

    async def shown(self, req: ResourceRequest, obj: Obj) -> Obj:
        """A stored object as the request's version shows it (converted if need be)."""
        return await self.converter.convert(req.rtype, obj, req.rtype.group_version)

    async def _stored(self, req: ResourceRequest, obj: Obj) -> Obj:
        return await self.converter.convert(req.rtype, obj,
                                            self.converter.storage_version(req.rtype))

    def _prune(self, req: ResourceRequest, obj: Obj) -> None:
        """Fields a mutating webhook added beyond a custom resource's schema go (kube-apiserver
        prunes them when it stores the object, after the validating webhooks saw them)."""
        if req.rtype.schema is not None:
            req.rtype.schema.decode(obj, default=False)

    def _default(self, req: ResourceRequest, obj: Obj) -> None:
        """Defaults for an object an apply made (its configuration was not defaulted)."""
        if _is_pod(req.rtype):
            default_pod(obj)
        elif req.rtype.schema is not None:
            req.rtype.schema.default(obj)
        else:
            default_webhooks(req.rtype, obj)

    def _admit(self, req: ResourceRequest, obj: Obj) -> None:
        """The mutating admission plugins of a create (Pods: service account and the rest)."""
        if _is_pod(req.rtype):
            admit_pod(obj, req.namespace or "", self._service_account)

    def _service_account(self, namespace: str, name: str) -> Obj | None:
        table = self.storage.tables.get(("", "serviceaccounts"))
        return table.objects.get((namespace, name)) if table is not None else None

    async def update(self, req: ResourceRequest, body: Obj, manager: str,
                     options: WriteOptions | None = None, *, user: RequestUser = ADMIN) -> Obj:
        assert req.name is not None
        options = options or WriteOptions()
        body = self.check_body(req, body, options=options)
        body_name = body["metadata"].get("name", "")
        if body_name != req.name:
            raise StatusError.bad_request(f"the name of the object ({body_name}) does not match "
                                       f"the name on the URL ({req.name})")
        _dedup_owner_references(body["metadata"])
        return await self._update(req, lambda old: (copy.deepcopy(body), None), manager,
                                  options, user, check_rv=True)

    def bind(self, req: ResourceRequest, body: Obj, manager: str) -> Obj:
        """``POST pods/NAME/binding``: what the scheduler writes, as kube-apiserver does it.

        Sets ``spec.nodeName`` (once: a bound Pod answers 409), adds the
        binding's annotations and a PodScheduled=True condition, in one write.
        """
        assert req.name is not None
        ns, name = req.namespace or "", req.name
        target = body.get("target") if isinstance(body, dict) else None
        node = target.get("name") if isinstance(target, dict) else None
        if not node or not isinstance(node, str):
            raise StatusError(500, "", "target.name: Required value")
        pod = self.storage.get(req.rtype, ns, name)
        meta: Obj = body.get("metadata") or {} if isinstance(body, dict) else {}
        if not isinstance(meta, dict):
            raise StatusError.bad_request("metadata must be an object")
        uid = meta.get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise StatusError.conflict("pods", name, "Precondition failed: UID in precondition: "
                                    f"{uid}, UID in object meta: {pod['metadata']['uid']}")
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise StatusError.conflict("pods/binding", name,
                                    f'pod {name} is already assigned to node "{assigned}"')
        bound = copy.deepcopy(pod)
        bound.setdefault("spec", {})["nodeName"] = node
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and annotations:
            bound["metadata"]["annotations"] = {
                **(bound["metadata"].get("annotations") or {}), **annotations}
        status = bound.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": timestamp(self.storage.now())})
        status["conditions"] = conditions
        return self.storage.update(req.rtype, ns, name, bound, subresource="binding",
                                   manager=manager, check_rv=False)

    async def patch(self, req: ResourceRequest, content_type: str, raw: bytes,
                    manager: str, field_manager_given: bool,
                    options: WriteOptions | None = None, *,
                    user: RequestUser = ADMIN) -> tuple[int, Obj]:
        assert req.name is not None
        options = options or WriteOptions()
        rtype = req.rtype
        if content_type not in _PATCH_TYPES or (
                content_type == _STRATEGIC_PATCH and not rtype.builtin):
            accepted = [t for t in _PATCH_TYPES if rtype.builtin or "strategic" not in t]
            raise StatusError(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format - accepted media '
                           f'types include: {", ".join(accepted)}', {})
        if content_type == _APPLY_PATCH:
            return await self._apply(req, raw, manager, field_manager_given, options, user)
        patch = _decode_patch(content_type, raw)

        def change(old: Obj) -> tuple[Obj, None]:
            try:
                if content_type == _JSON_PATCH:
                    patched = json_patch(old, patch)
                elif content_type == _MERGE_PATCH:
                    patched = merge_patch(old, patch)
                else:  # decoded into the kind, which keeps its kind and apiVersion
                    patched = strategic_merge_patch(old, patch,
                                                    patch_schema_for(rtype.resource.kind))
                    patched.update(apiVersion=old["apiVersion"], kind=old["kind"])
            except PatchError as err:
                raise StatusError(err.status, err.reason, err.api_message,
                               {} if err.status == 422 else None) from None
            if not isinstance(patched, dict):
                raise StatusError.bad_request("the patched object is not a JSON object")
            patched = self.check_body(req, patched, patched=True, options=options)
            name = patched["metadata"].get("name", "")
            if name != req.name:
                raise StatusError.bad_request(f"the name of the object ({name}) does not match "
                                           f"the name on the URL ({req.name})")
            _dedup_owner_references(patched["metadata"])
            return patched, None

        return 200, await self._update(req, change, manager, options, user, check_rv=False)

    async def _apply(self, req: ResourceRequest, raw: bytes, manager: str,
                     field_manager_given: bool, options: WriteOptions,
                     user: RequestUser) -> tuple[int, Obj]:
        """Server-side apply: create the object, or merge the configuration into it,
        with field ownership and conflicts (see :mod:`...patch.field_ownership`)."""
        assert req.name is not None
        if not field_manager_given:
            raise StatusError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                           "fieldManager: Required value: is required for apply patch", {})
        try:
            applied = yaml.safe_load(raw)
        except yaml.YAMLError as err:
            raise StatusError.bad_request(f"error decoding YAML: {err}") from None
        if not isinstance(applied, dict):
            raise StatusError.bad_request("the applied configuration is not an object")
        applied = self.check_body(req, applied, options=options, default=False)
        if applied["metadata"].get("name", req.name) != req.name:
            raise StatusError.bad_request("the name of the object does not match the URL")
        applied["metadata"]["name"] = req.name
        _dedup_owner_references(applied["metadata"])
        ns = req.namespace or ""
        if (ns, req.name) not in self.storage.table(req.rtype).objects:
            self._check_namespace(req)
            managed = self.storage.ownership(req.rtype).created_by_apply(
                applied, manager, self.storage.now())
            self._default(req, applied)
            self._admit(req, applied)
            return 201, await self._create(req, applied, manager, options, user,
                                           managed_fields=managed)

        def change(live: Obj) -> tuple[Obj, list[Obj] | None]:
            merged, managed = self.storage.ownership(req.rtype).applied(
                live, applied, manager, "status" if req.subresource == "status" else None,
                options.force, self.storage.now())
            self._default(req, merged)
            return merged, managed

        return 200, await self._update(req, change, manager, options, user, check_rv=False)

    async def delete(self, req: ResourceRequest, options: DeleteOptions, *,
                     user: RequestUser = ADMIN, warnings: list[str] | None = None,
                     in_collection: bool = False) -> tuple[Obj, bool]:
        """Delete (or start deleting); returns the answer's object and whether it is gone.

        Admission sees the stored object as ``oldObject``, unless the deletion
        changes nothing (an object already waiting on its finalizers); an
        item of a deletecollection is reviewed without a name, as
        kube-apiserver does.
        """
        assert req.name is not None
        ns = req.namespace or ""
        table = self.storage.table(req.rtype)
        while True:
            stored = self.storage.get(req.rtype, ns, req.name)
            obj, gone = self._delete(req, options, dry_run=True)
            if obj is not stored or gone:
                attrs = self._attributes(req, "DELETE", None, await self.shown(req, stored),
                                         options.dry_run, options.review_options(), user,
                                         [] if warnings is None else warnings)
                if in_collection:
                    attrs.name = ""
                await self.admission.mutate(attrs)
                await self.admission.validate(attrs)
            if options.dry_run:
                return await self.shown(req, obj), gone
            if table.objects.get((ns, req.name)) is stored:
                break
        obj, gone = self._delete(req, options, dry_run=False)
        if not gone:
            self.lifecycle.deletion_started(req.rtype, obj)
            obj = table.objects.get((ns, req.name), obj)
        return await self.shown(req, obj), gone

    def _delete(self, req: ResourceRequest, options: DeleteOptions, *,
                dry_run: bool) -> tuple[Obj, bool]:
        assert req.name is not None
        return self.storage.delete(req.rtype, req.namespace or "", req.name, uid=options.uid,
                                   resource_version=options.resource_version,
                                   propagation_finalizer=options.finalizer,
                                   grace_period=options.grace_period, dry_run=dry_run)

    async def delete_collection(self, req: ResourceRequest,
                                matches: Callable[[Mapping[str, Any]], bool],
                                options: DeleteOptions, *, user: RequestUser = ADMIN,
                                warnings: list[str] | None = None) -> list[Obj]:
        table = self.storage.table(req.rtype)
        ns = req.namespace
        item_options = DeleteOptions(None, None, options.grace_period, options.propagation,
                                     options.orphan_dependents, options.dry_run)
        deleted = []
        for key in sorted(k for k in table.objects if ns is None or k[0] == ns):
            obj = table.objects.get(key)
            if obj is None or not matches(obj):
                continue
            item_req = ResourceRequest(req.rtype, key[0] or None, key[1], None)
            deleted.append((await self.delete(item_req, item_options, user=user,
                                              warnings=warnings, in_collection=True))[0])
        return deleted


def _is_pod(rtype: ResourceType) -> bool:
    return rtype.builtin and rtype.resource.group == "" and rtype.resource.plural == "pods"


def _is_namespace(rtype: ResourceType) -> bool:
    return rtype.builtin and rtype.resource.group == "" and rtype.resource.plural == "namespaces"


def _decode_patch(content_type: str, raw: bytes) -> Any:
    """The patch document, with the decoder's errors (400) kube-apiserver gives for it."""
    prefix = "" if content_type == _STRATEGIC_PATCH else "error decoding patch: "
    try:
        patch = orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise StatusError.bad_request(f"{prefix}{err}") from None
    if patch is None:  # JSON null is no patch at all, but for a merge patch
        if content_type == _MERGE_PATCH:
            raise StatusError.bad_request("Invalid JSON Patch")
        return [] if content_type == _JSON_PATCH else {}
    if content_type == _MERGE_PATCH and not isinstance(patch, dict):
        raise StatusError.bad_request(f"{prefix}json: cannot unmarshal {json_type(patch)} into Go "
                                   "value of type map[string]interface {}")
    return patch


def _dedup_owner_references(meta: Obj) -> None:
    """The registry drops an owner reference equal to an earlier one, entirely equal
    (references that only share a UID are kept); kube-apiserver adds a Warning."""
    refs = meta.get("ownerReferences")
    if not isinstance(refs, list):
        return
    unique: list[Any] = []
    for ref in refs:
        if ref not in unique:
            unique.append(ref)
    meta["ownerReferences"] = unique


def parse_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise StatusError.bad_request(
            f"couldn't get version/kind; json parse error: {err}") from None


def short(body: Obj) -> str:
    text = orjson.dumps(body).decode()
    return text if len(text) <= 200 else text[:200] + "..."


def _name_of(req: ResourceRequest) -> str:
    return req.name or ""
