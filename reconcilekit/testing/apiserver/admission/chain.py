"""Admission webhooks: kube-apiserver's MutatingAdmissionWebhook and
ValidatingAdmissionWebhook plugins, for the in-process server's writes.

Expected flow of one write (create, update, patch, apply, delete, and the
``status`` subresource), driven by the write verbs of :mod:`..endpoints.handlers`:

1. the body is decoded and defaulted in the request's version;
2. :meth:`Admission.mutate`: the mutating webhooks of every
   MutatingWebhookConfiguration (by configuration name, then in list order)
   that match the request are called one after another; each JSONPatch
   answer is applied, and the object decoded and defaulted again. When a
   webhook changed the object, the webhooks before it with
   ``reinvocationPolicy: IfNeeded`` are called once more (one extra round);
3. the kind's own validation and the schema (422);
4. :meth:`Admission.validate`: the matching validating webhooks, called
   concurrently, see the object as it would be stored; the first refusal in
   configuration order is the answer;
5. the object is pruned to its schema (fields a webhook added) and stored.

A webhook matches when one of its rules names the operation, group, version
and resource (``*`` is every resource without a subresource, ``x/*`` x and
its subresources, ``x/status`` only the subresource) and the scope, or, with
``matchPolicy: Equivalent``, another served version of the same custom
resource (the object is then converted to that version for it, and back);
and ``namespaceSelector`` matches the namespace's labels (the namespace
object itself for namespace requests; never checked for other
cluster-scoped kinds), and ``objectSelector`` the new or the old object.
Webhook configurations themselves are never sent to webhooks.

The request (``AdmissionReview``, admission.k8s.io/v1 or v1beta1 as the
webhook accepts) carries uid, kind, resource, subResource, requestKind,
requestResource, requestSubResource, name, namespace, operation, userInfo,
object, oldObject, dryRun and options as kube-apiserver 1.28 fills them.

Errors, as kube-apiserver 1.28 words them:
  * a refusal (``allowed: false``): the webhook's ``status`` with
    ``admission webhook "NAME" denied the request: MESSAGE`` (or its reason,
    or ``without explanation``); a code below 400 becomes 400;
  * the webhook cannot be called (unreachable, certificate, timeout, a
    non-2xx or undecodable answer, a wrong uid, a patch without patchType
    or not JSONPatch): with ``failurePolicy: Fail``, 500 InternalError
    ``failed calling webhook "NAME": ...``; with ``Ignore`` the webhook is
    skipped;
  * a patch that does not apply or decode: 500 InternalError, whatever the
    failure policy;
  * a dry run to a webhook whose ``sideEffects`` is not ``None`` or
    ``NoneOnDryRun`` (v1 no longer accepts such configurations): 400
    ``admission webhook "NAME" does not support dry run``, without calling it.
Warnings in answers become ``Warning`` headers of the response.

A webhook whose rules and selectors match is then called only if its
``matchConditions`` allow it (:mod:`.match_conditions`).

Caveats: a ``service`` client config is never
reachable (the in-process server runs no Services); built-in kinds have no
equivalent resources here (kube-apiserver treats e.g. events.k8s.io/v1
Events as core/v1 Events).
"""

from __future__ import annotations

import base64
import binascii
import logging
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
import orjson

from ...._foundations.go_compat import go_quote
from ..apiextensions.version_conversion import ConversionError, Converter
from ..authorization.rbac_authorizer import RBACAuthorizer
from ..machinery.decoding import decode, go_base64_decode
from ..machinery.request_user import RequestUser
from ..machinery.resources import Registry, ResourceType
from ..machinery.status import DecodeError, StatusError
from ..machinery.unstructured import Obj, json_type
from ..patching.json_patch import PatchError, json_patch
from ..registry.generic_store import Storage
from ..registry.priority_classes import check_global_default
from ..webhook_client.https_client import CallError, WebhookClient
from .match_conditions import evaluate
from .owner_references_permission import check_owner_references
from .pod_security import PodSecurity
from .resource_quota import QuotaAdmission
from .webhook_configurations import GROUP, Webhook, webhooks

__all__ = ["Admission", "Attributes"]

log = logging.getLogger("reconcilekit.testing.apiserver")

_REVIEW_GROUP = "admission.k8s.io"
_PRIORITY_CLASSES = ("scheduling.k8s.io", "priorityclasses")  # Priority's Validate
_EXEMPT = frozenset({"mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                     "validatingadmissionpolicies", "validatingadmissionpolicybindings"})


@dataclass(slots=True)
class Attributes:
    """One write as admission sees it (``admission.Attributes``).

    ``rtype`` is the request's resource type (its version); ``namespace`` is
    the namespace's own name for requests on a namespace; ``options`` the
    CreateOptions, UpdateOptions or DeleteOptions sent to webhooks.
    ``obj`` is updated by :meth:`Admission.mutate`; ``patched`` says whether
    a webhook changed it; ``warnings`` collects the webhooks' warnings.
    """

    operation: str
    rtype: ResourceType
    namespace: str
    name: str
    subresource: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool
    options: Obj | None
    user: RequestUser
    warnings: list[str] = field(default_factory=list)
    patched: bool = False

    def patch(self, obj: Obj | None) -> None:
        """A mutating webhook's patch applied: ``obj`` is the object from now on."""
        self.obj = obj
        self.patched = True

    def for_validation(self, obj: Obj, name: str, namespace: str) -> Attributes:
        """These attributes for ``obj`` as mutating admission left it, under the name it
        is stored by (a create's ``generateName`` is resolved only then); warnings are
        shared."""
        return replace(self, obj=obj, name=name, namespace=namespace)


@dataclass(frozen=True, slots=True)
class _Invocation:
    hook: Webhook
    rtype: ResourceType  # the version the webhook is sent the object in


class _CallFailed(Exception):
    """``ErrCallingWebhook``: its failure policy decides (str is the reason)."""


def _rejection(name: str, status: Any) -> StatusError:
    """``ToStatusErr`` of kube-apiserver 1.28: the webhook's Status, made a failure."""
    status = dict(status) if isinstance(status, dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    denied = f"admission webhook {go_quote(name)} denied the request"
    message, reason = status.get("message") or "", status.get("reason") or ""
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return StatusError(max(code, 400), str(reason), text, details)


class Admission:
    """The admission webhooks of one server, read from its stored configurations."""

    def __init__(self, storage: Storage, registry: Registry, client: WebhookClient,
                 converter: Converter, *, owner_references: bool = False) -> None:
        self.storage = storage
        self.owner_references = owner_references  # OwnerReferencesPermissionEnforcement
        self.registry = registry
        self.client = client
        self.converter = converter
        quotas = registry.lookup("", "v1", "resourcequotas")
        assert quotas is not None
        self.quota = QuotaAdmission(storage, quotas)
        self.pod_security = PodSecurity(self._namespace)

    def _namespace(self, name: str) -> Obj | None:
        table = self.storage.tables.get(("", "namespaces"))
        return table.objects.get(("", name)) if table is not None else None

    def _webhooks(self, plural: str, rtype: ResourceType) -> list[Webhook]:
        r = rtype.resource
        if r.group == GROUP and r.plural in _EXEMPT:
            return []
        table = self.storage.tables.get((GROUP, plural))
        if table is None or not table.objects:
            return []
        mutating = plural == "mutatingwebhookconfigurations"
        return [hook for _, config in sorted(table.objects.items())
                for hook in webhooks(config, mutating=mutating)]

    # -- which webhooks a request goes to ---------------------------------------------

    def _invocation(self, hook: Webhook, attrs: Attributes) -> _Invocation | None:
        """``ShouldCallHook``: rules (or an equivalent version's), then the selectors."""
        target = None
        namespaced = bool(attrs.namespace) and not self.storage.strategies.of(
            attrs.rtype).own_namespace
        for rtype in (attrs.rtype, *self._equivalents(attrs.rtype, hook)):
            r = rtype.resource
            if any(rule.matches(attrs.operation, r.group, r.version, r.plural,
                                attrs.subresource, namespaced) for rule in hook.rules):
                target = rtype
                break
        if target is None or not self._namespace_matches(hook, attrs):
            return None
        if not hook.object_selector.is_empty and not any(
                o is not None and hook.object_selector.matches(
                    (o.get("metadata") or {}).get("labels")) for o in (attrs.obj, attrs.old)):
            return None
        return _Invocation(hook, target)

    async def _called(self, hook: Webhook, attrs: Attributes) -> _Invocation | None:
        """:meth:`_invocation`, then the webhook's ``matchConditions``
        (:mod:`.match_conditions`) on the objects in the version it is called with."""
        invocation = self._invocation(hook, attrs)
        if invocation is None or not hook.conditions:
            return invocation
        obj = await self._versioned(attrs.obj, invocation.rtype)
        old = await self._versioned(attrs.old, invocation.rtype)
        outcome = evaluate(hook.conditions, hook.failure_policy,
                           _request("", invocation.rtype, attrs, None, None), obj, old)
        if outcome.error is not None:
            log.warning("Failed evaluating match conditions, failing closed %s: %s",
                        hook.name, outcome.error)
            r = attrs.rtype.resource
            raise StatusError.forbidden_because(r.group_resource, attrs.name or "", r.group,
                                                outcome.error)
        return invocation if outcome.call else None

    def _equivalents(self, rtype: ResourceType, hook: Webhook) -> list[ResourceType]:
        """The other served versions of a custom resource (built-in kinds have none here)."""
        if hook.match_policy != "Equivalent" or rtype.crd_name is None:
            return []
        r = rtype.resource
        return [t for t in self.registry if t.crd_name == rtype.crd_name
                and t.resource.plural == r.plural and t.resource.version != r.version]

    def _namespace_matches(self, hook: Webhook, attrs: Attributes) -> bool:
        """``MatchNamespaceSelector``: the labels of the request's namespace."""
        own = self.storage.strategies.of(attrs.rtype).own_namespace
        if hook.namespace_selector.is_empty or (not attrs.namespace and not own):
            return True
        if own and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE"):
            labels = ((attrs.obj or {}).get("metadata") or {}).get("labels")
        else:
            table = self.storage.tables.get(("", "namespaces"))
            namespace = table.objects.get(("", attrs.namespace)) if table else None
            if namespace is None:
                raise StatusError.not_found("namespaces", attrs.namespace)
            labels = namespace["metadata"].get("labels")
        return hook.namespace_selector.matches(labels)

    def _default(self, rtype: ResourceType, obj: Obj) -> None:
        """The defaulting a patched object gets again (its strategy's, or its schema's)."""
        if rtype.builtin:
            self.storage.strategies.of(rtype).default(obj)
        elif rtype.schema is not None:
            rtype.schema.default(obj)

    # -- mutating ------------------------------------------------------------------------

    async def mutate(self, attrs: Attributes) -> Obj | None:
        """Call the matching mutating webhooks in order; returns ``attrs.obj`` as they
        leave it. Raises :class:`StatusError` (a refusal, or a failing webhook)."""
        hooks = self._webhooks("mutatingwebhookconfigurations", attrs.rtype)
        invoked_reinvocable: set[tuple[str, str]] = set()
        reinvoke: set[tuple[str, str]] = set()
        for hook in hooks:
            invocation = await self._called(hook, attrs)
            if invocation is None:
                continue
            if await self._mutating_call(invocation, attrs):
                reinvoke |= invoked_reinvocable
                invoked_reinvocable = set()
            if hook.reinvocation == "IfNeeded":
                invoked_reinvocable.add(hook.key)
        for hook in hooks if reinvoke else ():
            invocation = await self._called(hook, attrs) if hook.key in reinvoke else None
            if invocation is not None:
                await self._mutating_call(invocation, attrs)
        return attrs.obj

    async def _mutating_call(self, invocation: _Invocation, attrs: Attributes) -> bool:
        """One mutating webhook under its failure policy; whether it changed the object."""
        hook = invocation.hook
        try:
            return await self._mutate_with(invocation, attrs)
        except _CallFailed as err:
            if hook.failure_policy == "Ignore":
                log.warning("failed calling webhook, failing open %s: %s", hook.name, err)
                return False
            raise StatusError.internal(
                f"failed calling webhook {go_quote(hook.name)}: {err}") from None

    async def _mutate_with(self, invocation: _Invocation, attrs: Attributes) -> bool:
        hook, rtype = invocation.hook, invocation.rtype
        obj = await self._versioned(attrs.obj, rtype)
        response = await self._call(invocation, attrs, obj, await self._versioned(attrs.old, rtype))
        patch = response.get("patch")
        if not patch:
            return False
        try:
            operations = orjson.loads(patch)
        except orjson.JSONDecodeError as err:
            raise StatusError.internal(str(err)) from None
        if not isinstance(operations, list):
            raise StatusError.internal(f"json: cannot unmarshal {json_type(operations)} into Go "
                                       "value of type jsonpatch.Patch")
        if not operations:
            return False
        if obj is None:
            raise StatusError.internal(f"admission webhook {go_quote(hook.name)} attempted to "
                                       "modify the object, which is not supported for this "
                                       "operation")
        if response.get("patchType") != "JSONPatch":
            raise _CallFailed(f"unsupported patch type {go_quote(str(response['patchType']))}")
        try:
            patched = json_patch(obj, operations)
        except PatchError as err:
            raise StatusError.internal(str(err)) from None
        if not isinstance(patched, dict):
            raise StatusError.internal(f"json: cannot unmarshal {json_type(patched)} into Go value "
                                       f"of type {rtype.resource.kind}")
        try:
            if rtype.builtin:
                patched = decode(rtype, dict(patched, metadata=patched.get("metadata") or {}))
                self.storage.strategies.of(rtype).check_encoding(patched)
        except DecodeError as err:
            raise StatusError.internal(str(err)) from None
        self._default(rtype, patched)
        if patched == obj:
            return False
        attrs.patch(await self._versioned(patched, attrs.rtype))
        return True

    # -- validating ----------------------------------------------------------------------

    async def validate(self, attrs: Attributes) -> None:
        """OwnerReferencesPermissionEnforcement (when enabled), PodSecurity, Priority (one
        global default PriorityClass), then the matching validating webhooks,
        called concurrently, then ResourceQuota (kube-apiserver's last plugin); raise the
        first refusal (in configuration order) as :class:`StatusError`."""
        r = attrs.rtype.resource
        if self.owner_references:
            check_owner_references(attrs.operation, r.group, r.version, r.plural,
                                   attrs.subresource, attrs.namespace if r.namespaced else "",
                                   attrs.name, attrs.user, attrs.obj, attrs.old, self.registry,
                                   RBACAuthorizer(self.storage.tables))
        self.pod_security.admit(r.group, r.plural, attrs.operation, attrs.subresource,
                                attrs.namespace if r.namespaced else "", attrs.name, attrs.obj,
                                attrs.warnings)
        if (r.group, r.plural) == _PRIORITY_CLASSES and attrs.obj is not None \
                and not attrs.subresource:
            table = self.storage.tables.get(_PRIORITY_CLASSES)
            check_global_default(attrs.operation, attrs.obj,
                                 table.objects.values() if table is not None else ())
        await self._validating_webhooks(attrs)
        if attrs.operation == "CREATE" and attrs.obj is not None and not attrs.subresource:
            self.quota.admit_create(attrs.rtype, attrs.namespace, attrs.obj,
                                    dry_run=attrs.dry_run)

    async def _validating_webhooks(self, attrs: Attributes) -> None:
        invocations = [i for hook in self._webhooks("validatingwebhookconfigurations",
                                                    attrs.rtype)
                       if (i := await self._called(hook, attrs)) is not None]
        if not invocations:
            return
        versions: dict[str, tuple[Obj | None, Obj | None]] = {}
        for invocation in invocations:
            version = invocation.rtype.group_version
            if version not in versions:
                versions[version] = (await self._versioned(attrs.obj, invocation.rtype),
                                     await self._versioned(attrs.old, invocation.rtype))
        errors: list[StatusError | None] = [None] * len(invocations)

        async def call(index: int, invocation: _Invocation) -> None:
            hook = invocation.hook
            obj, old = versions[invocation.rtype.group_version]
            try:
                await self._call(invocation, attrs, obj, old)
            except _CallFailed as err:
                if hook.failure_policy == "Ignore":
                    log.warning("failed calling webhook, failing open %s: %s", hook.name, err)
                    return
                errors[index] = StatusError.internal(
                    f"failed calling webhook {go_quote(hook.name)}: {err}")
            except StatusError as err:
                errors[index] = err

        async with anyio.create_task_group() as tg:
            for index, invocation in enumerate(invocations):
                tg.start_soon(call, index, invocation)
        first = next((e for e in errors if e is not None), None)
        if first is not None:
            raise first

    # -- one call ---------------------------------------------------------------------------

    async def _versioned(self, obj: Obj | None, rtype: ResourceType) -> Obj | None:
        """``obj`` in the version a webhook is called with (500 if it cannot convert)."""
        if obj is None:
            return None
        try:
            return await self.converter.convert(rtype, obj, rtype.group_version)
        except ConversionError as err:
            raise StatusError.internal(err.message) from None

    async def _call(self, invocation: _Invocation, attrs: Attributes, obj: Obj | None,
                    old: Obj | None) -> Obj:
        """Send the review and check the answer; returns its ``response`` (an allowed one,
        with ``patch`` decoded). Raises :class:`_CallFailed` or a refusal."""
        hook = invocation.hook
        if attrs.dry_run and hook.side_effects not in ("None", "NoneOnDryRun"):
            if hook.side_effects is None:
                raise _CallFailed("Webhook SideEffects is nil")
            raise StatusError.bad_request(f"admission webhook {go_quote(hook.name)} does not "
                                          "support dry run")
        version = next((v for v in hook.review_versions if v in ("v1", "v1beta1")), "v1")
        uid = str(uuid.uuid4())
        review = {"kind": "AdmissionReview", "apiVersion": f"{_REVIEW_GROUP}/{version}",
                  "request": _request(uid, invocation.rtype, attrs, obj, old)}
        try:
            answer = await self.client.post(hook.client, review, hook.timeout,
                                            group=_REVIEW_GROUP, kinds=("AdmissionReview",))
        except CallError as err:
            raise _CallFailed(f"failed to call webhook: {err}") from None
        response = _verified(answer, uid, version, mutating=hook.mutating)
        for warning in response.get("warnings") or ():
            if isinstance(warning, str) and warning not in attrs.warnings:
                attrs.warnings.append(warning)
        if not response.get("allowed"):
            raise _rejection(hook.name, response.get("status"))
        return response


def _request(uid: str, rtype: ResourceType, attrs: Attributes, obj: Obj | None,
             old: Obj | None) -> Obj:
    """An ``AdmissionRequest``, its fields in kube-apiserver's order (empty ones left out
    where Go's ``omitempty`` leaves them out)."""
    r, asked = rtype.resource, attrs.rtype.resource

    def kind(res: Any) -> Obj:
        return {"group": res.group, "version": res.version, "kind": res.kind}

    def resource(res: Any) -> Obj:
        return {"group": res.group, "version": res.version, "resource": res.plural}

    request: Obj = {"uid": uid, "kind": kind(r), "resource": resource(r)}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = kind(asked)
    request["requestResource"] = resource(asked)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update(operation=attrs.operation, userInfo=attrs.user.review(), object=obj,
                   oldObject=old, dryRun=attrs.dry_run, options=attrs.options)
    return request


def _verified(answer: Obj, uid: str, version: str, *, mutating: bool) -> Obj:
    """``VerifyAdmissionResponse``: the answer's ``response``, its patch base64-decoded.
    Raises :class:`_CallFailed` with kube-apiserver's words."""
    invalid = "received invalid webhook response: "
    response = answer.get("response")
    if not isinstance(response, dict):
        raise _CallFailed(invalid + "webhook response was absent")
    response = dict(response)
    allowed = response.get("allowed", False)
    if not isinstance(allowed, bool):
        raise _CallFailed(f"failed to call webhook: json: cannot unmarshal {json_type(allowed)}"
                          " into Go struct field AdmissionResponse.response.allowed of type bool")
    patch = response.get("patch")
    if patch is not None:
        try:
            response["patch"] = base64.b64decode(str(patch), validate=True) if patch else b""
        except (binascii.Error, ValueError):
            raise _CallFailed(f"failed to call webhook: {_base64_error(str(patch))}") from None
    if version == "v1":
        got = response.get("uid") or ""
        if got != uid:
            raise _CallFailed(invalid + f"expected response.uid={go_quote(uid)}, "
                              f"got {go_quote(str(got))}")
        if answer.get("apiVersion") != f"{_REVIEW_GROUP}/v1":
            raise _CallFailed(invalid + f"expected webhook response of {_REVIEW_GROUP}/v1, "
                              f"Kind=AdmissionReview, got {answer.get('apiVersion')}, "
                              f"Kind={answer.get('kind')}")
    if response.get("patch") and not response.get("patchType"):
        raise _CallFailed(invalid + "webhook returned response.patch but not "
                          "response.patchType")
    if response.get("patch") and not mutating:
        raise _CallFailed(invalid + "validating webhook may not return response.patch")
    return response


def _base64_error(text: str) -> str:
    try:
        go_base64_decode(text)
    except DecodeError as err:
        return str(err)
    return "illegal base64 data at input byte 0"
