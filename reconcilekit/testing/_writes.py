"""The write verbs of the test API server, at the level of a REST request.

``create``, ``update``, ``patch``, ``delete`` and ``deletecollection`` take a
parsed request and body, check what kube-apiserver's handlers check before
storage (names, body type, patch types, preconditions) and return the
object (or list) to answer with and its HTTP status.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from typing import Any

import orjson
import yaml

from ._lifecycle import Lifecycle
from ._patch import PatchError, json_patch, merge_patch
from ._requests import ResourceRequest
from ._status import APIError, Cause
from ._storage import Storage, timestamp
from ._strategic_patch import patch_schema_for, strategic_merge_patch
from ._validation import normalize_microtimes, validate_crd, validate_name

__all__ = ["Writes"]

Obj = dict[str, Any]
_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                "application/strategic-merge-patch+json", "application/apply-patch+yaml")


class Writes:
    """Write verbs over one :class:`Storage` (and its :class:`Lifecycle`)."""

    def __init__(self, storage: Storage, lifecycle: Lifecycle) -> None:
        self.storage = storage
        self.lifecycle = lifecycle

    # -- checks shared by the verbs ------------------------------------------------

    def check_body(self, req: ResourceRequest, body: Obj) -> Obj:
        """Default or check kind/apiVersion and the namespace against the URL (400)."""
        r = req.rtype.resource
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if not api_version and not kind and req.rtype.builtin:
            body = dict(body, apiVersion=r.api_version, kind=r.kind)
        elif not kind:
            raise APIError.bad_request(f"Object 'Kind' is missing in '{short(body)}'")
        elif api_version != r.api_version:  # the decoder's errors, as kube-apiserver 1.28's
            version = str(api_version).rpartition("/")[2]
            raise APIError.bad_request(
                f'{kind} in version "{version}" cannot be handled as a {r.kind}: no kind '
                f'"{kind}" is registered for version "{api_version}" in scheme '
                '"pkg/runtime/scheme.go:100"')
        elif kind != r.kind:
            raise APIError.bad_request(
                f'{kind} in version "{r.version}" cannot be handled as a {r.kind}: converting '
                f"({r.version}.{kind}) to ({r.group or 'core'}.{r.kind}): unknown conversion")
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = {}
        elif not isinstance(meta, dict):
            raise APIError.bad_request(f'{r.kind} in version "{r.version}" cannot be handled '
                                       f"as a {r.kind}: metadata must be an object")
        ns = body["metadata"].get("namespace")
        if r.namespaced and ns and ns != req.namespace:
            raise APIError.bad_request("the namespace of the provided object does not match "
                                       "the namespace sent on the request")
        return body

    def validate(self, req: ResourceRequest, obj: Obj) -> None:
        """Name rules, CRD specs and finalizer entries (422 Invalid)."""
        rtype = req.rtype
        r = rtype.resource
        name = obj["metadata"].get("name", "")
        causes = validate_name(name, label=r.group == "" and r.plural == "namespaces")
        if r.group == "apiextensions.k8s.io" and r.plural == "customresourcedefinitions":
            causes.extend(validate_crd(obj))
        finalizers = obj["metadata"].get("finalizers")
        if finalizers is not None and not isinstance(finalizers, list):
            causes.append(Cause("FieldValueInvalid", "Invalid value: must be a list",
                                "metadata.finalizers"))
        for i, fin in enumerate(finalizers if isinstance(finalizers, list) else ()):
            if not isinstance(fin, str) or not fin:
                causes.append(Cause("FieldValueInvalid", f'Invalid value: "{fin}": finalizer '
                                    "must be a non-empty string", f"metadata.finalizers[{i}]"))
        for field in ("labels", "annotations"):
            value = obj["metadata"].get(field)
            if value is not None and (not isinstance(value, dict) or not all(
                    isinstance(v, str) for v in value.values())):
                causes.append(Cause("FieldValueInvalid",
                                    "Invalid value: must be a map of string to string",
                                    f"metadata.{field}"))
        if causes:
            raise APIError.invalid(rtype.qualified_kind(), name, causes, r.group)
        normalize_microtimes(rtype, obj)

    def _check_namespace(self, req: ResourceRequest) -> None:
        if not req.rtype.resource.namespaced:
            return
        ns = req.namespace or ""
        ns_table = self.storage.tables.get(("", "namespaces"))
        if ns_table is None or ("", ns) not in ns_table.objects:
            raise APIError.not_found("namespaces", ns)
        if self.lifecycle.namespace_terminating(ns):
            raise APIError(403, "Forbidden", f"{req.rtype.resource.group_resource} "
                           f'"{_name_of(req)}" is forbidden: unable to create new content in '
                           f"namespace {ns} because it is being terminated",
                           {"name": _name_of(req), "kind": req.rtype.resource.plural,
                            "causes": [{"reason": "NamespaceTerminating",
                                        "message": f"namespace {ns} is being terminated",
                                        "field": "metadata.namespace"}]})

    # -- verbs -------------------------------------------------------------------------

    def create(self, req: ResourceRequest, body: Obj, manager: str) -> Obj:
        body = self.check_body(req, body)
        meta = body["metadata"]
        name = meta.get("name")
        if not name and not meta.get("generateName"):
            r = req.rtype
            raise APIError.invalid(r.qualified_kind(), "", [Cause(
                "FieldValueRequired", "Required value: name or generateName is required",
                "metadata.name")], r.resource.group)
        validate_target = dict(body, metadata=dict(meta, name=name or meta["generateName"]
                                                   + "x"))
        self.validate(req, validate_target)
        self._check_namespace(req)
        return self.storage.create(req.rtype, req.namespace or "", copy.deepcopy(body),
                                   manager=manager)

    def update(self, req: ResourceRequest, body: Obj, manager: str) -> Obj:
        assert req.name is not None
        body = self.check_body(req, body)
        body_name = body["metadata"].get("name", "")
        if body_name != req.name:
            raise APIError.bad_request(f"the name of the object ({body_name}) does not match "
                                       f"the name on the URL ({req.name})")
        if not req.subresource:
            self.validate(req, body)
        return self.storage.update(req.rtype, req.namespace or "", req.name,
                                   copy.deepcopy(body), subresource=req.subresource,
                                   manager=manager, check_rv=True)

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
            raise APIError(500, "", "target.name: Required value")
        pod = self.storage.get(req.rtype, ns, name)
        meta: Obj = body.get("metadata") or {} if isinstance(body, dict) else {}
        if not isinstance(meta, dict):
            raise APIError.bad_request("metadata must be an object")
        uid = meta.get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise APIError.conflict("pods", name, "Precondition failed: UID in precondition: "
                                    f"{uid}, UID in object meta: {pod['metadata']['uid']}")
        assigned = (pod.get("spec") or {}).get("nodeName")
        if assigned:
            raise APIError.conflict("pods/binding", name,
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

    def patch(self, req: ResourceRequest, content_type: str, raw: bytes,
              manager: str, field_manager_given: bool) -> tuple[int, Obj]:
        assert req.name is not None
        rtype = req.rtype
        if content_type not in _PATCH_TYPES or (
                content_type == "application/strategic-merge-patch+json" and not rtype.builtin):
            accepted = [t for t in _PATCH_TYPES if rtype.builtin or "strategic" not in t]
            raise APIError(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format - accepted media '
                           f'types include: {", ".join(accepted)}', {})
        if content_type == "application/apply-patch+yaml":
            return self._apply(req, raw, manager, field_manager_given)
        patch = parse_json(raw)
        if content_type == "application/merge-patch+json" and not isinstance(patch, dict | list):
            raise APIError.bad_request("Invalid JSON Patch")
        ns = req.namespace or ""
        old = self.storage.get(rtype, ns, req.name)
        try:
            if content_type == "application/json-patch+json":
                patched = json_patch(old, patch)
            elif content_type == "application/merge-patch+json":
                patched = merge_patch(old, patch)
            else:
                patched = strategic_merge_patch(old, patch, patch_schema_for(rtype.resource.kind))
        except PatchError as err:
            raise APIError(err.status, err.reason, err.api_message, {}) from None
        if not isinstance(patched, dict):
            raise APIError.bad_request("the patched object is not a JSON object")
        patched = self.check_body(req, patched)
        if patched["metadata"].get("name") != req.name:
            raise APIError.bad_request("metadata.name cannot be changed by a patch")
        if not req.subresource:
            self.validate(req, patched)
        return 200, self.storage.update(rtype, ns, req.name, patched,
                                        subresource=req.subresource, manager=manager,
                                        check_rv=False)

    def _apply(self, req: ResourceRequest, raw: bytes, manager: str,
               field_manager_given: bool) -> tuple[int, Obj]:
        """Server-side apply, approximated: create, or merge the applied fields in.

        Field ownership is not tracked: fields a later apply omits are kept,
        and no apply conflicts are reported.
        """
        assert req.name is not None
        if not field_manager_given:
            raise APIError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: '
                           "fieldManager: Required value: is required for apply patch", {})
        try:
            applied = yaml.safe_load(raw)
        except yaml.YAMLError as err:
            raise APIError.bad_request(f"error decoding YAML: {err}") from None
        if not isinstance(applied, dict):
            raise APIError.bad_request("the applied configuration is not an object")
        applied = self.check_body(req, applied)
        if applied["metadata"].get("name", req.name) != req.name:
            raise APIError.bad_request("the name of the object does not match the URL")
        applied["metadata"]["name"] = req.name
        ns = req.namespace or ""
        if (ns, req.name) not in self.storage.table(req.rtype).objects:
            self.validate(req, applied)
            self._check_namespace(req)
            return 201, self.storage.create(req.rtype, ns, applied, manager=manager)
        old = self.storage.get(req.rtype, ns, req.name)
        merged = _deep_merge(old, applied)
        return 200, self.storage.update(req.rtype, ns, req.name, merged,
                                        subresource=req.subresource, manager=manager,
                                        check_rv=False, operation="Apply")

    def delete(self, req: ResourceRequest, options: Obj,
               query: Mapping[str, str]) -> tuple[Obj, bool]:
        assert req.name is not None
        pre = options.get("preconditions") or {}
        policy = options.get("propagationPolicy") or query.get("propagationPolicy")
        orphan = policy == "Orphan" or options.get("orphanDependents") is True
        obj, gone = self.storage.delete(req.rtype, req.namespace or "", req.name,
                                        uid=pre.get("uid"),
                                        resource_version=pre.get("resourceVersion"),
                                        orphan=orphan)
        if not gone:
            self.lifecycle.deletion_started(req.rtype, obj)
            table = self.storage.table(req.rtype)
            obj = table.objects.get((req.namespace or "", req.name), obj)
        return obj, gone

    def delete_collection(self, req: ResourceRequest,
                          matches: Callable[[Mapping[str, Any]], bool]) -> list[Obj]:
        table = self.storage.table(req.rtype)
        ns = req.namespace
        deleted = []
        for key in sorted(k for k in table.objects if ns is None or k[0] == ns):
            obj = table.objects.get(key)
            if obj is None or not matches(obj):
                continue
            item_req = ResourceRequest(req.rtype, key[0] or None, key[1], None)
            deleted.append(self.delete(item_req, {}, {})[0])
        return deleted


def parse_json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as err:
        raise APIError.bad_request(
            f"couldn't get version/kind; json parse error: {err}") from None


def short(body: Obj) -> str:
    text = orjson.dumps(body).decode()
    return text if len(text) <= 200 else text[:200] + "..."


def _name_of(req: ResourceRequest) -> str:
    return req.name or ""


def _deep_merge(base: Any, overlay: Any) -> Any:
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for k, v in overlay.items():
            out[k] = _deep_merge(base.get(k), v)
        return out
    return copy.deepcopy(overlay)
