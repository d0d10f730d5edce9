"""Custom resources converted between the versions of their CRD, as kube-apiserver does.

All served versions of a CRD share one table of objects, stored at the CRD's
storage version (an object keeps the version it was stored at until it is
written again, as in etcd). A request through another version sees, and
writes, objects converted (:meth:`Converter.convert`):

* ``spec.conversion.strategy: None``: only ``apiVersion`` changes;
* ``Webhook``: a ConversionReview (``apiextensions.k8s.io/v1``, or v1beta1
  when ``conversionReviewVersions`` names only that) POSTed to
  ``spec.conversion.webhook.clientConfig`` with kube-apiserver's fixed 30 s
  timeout, one object per review as kube-apiserver converts objects read
  from etcd. The answer is checked as the apiextensions-apiserver checks it
  (uid, ``result.status``, count, apiVersion, kind, name, namespace and uid of
  each object); only ``labels`` and ``annotations`` of the converted
  metadata are kept. A failure is a 500 without a reason, ``conversion webhook
  for GROUP/VERSION, Kind=KIND failed: WHY`` (the version converted from).

:func:`conversion_errors` is the CRD validation of ``spec.conversion``.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Mapping
from typing import Any

from ..machinery.resources import ResourceType
from ..machinery.status import Cause, StatusError
from ..machinery.unstructured import Obj
from ..machinery.validation import invalid, label_value_errors, qualified_name_errors
from ..registry.generic_store import Storage
from ..webhook_client.client_config_validation import client_config_errors, review_version_errors
from ..webhook_client.https_client import CallError, ClientConfig, WebhookClient

__all__ = ["CONVERSION_TIMEOUT", "ConversionError", "Converter", "conversion_errors"]

CONVERSION_TIMEOUT = 30.0  # kube-apiserver's, not configurable
_GROUP = "apiextensions.k8s.io"


class ConversionError(StatusError):
    """A conversion webhook that failed: kube-apiserver's plain-error 500."""

    def __init__(self, message: str) -> None:
        super().__init__(500, "", message)


def conversion_errors(spec: Mapping[str, Any]) -> list[Cause]:
    """Why kube-apiserver would refuse a CRD's ``spec.conversion`` (paths of its
    internal version: ``webhookClientConfig``, ``conversionReviewVersions``)."""
    conversion = spec.get("conversion")
    if not isinstance(conversion, Mapping):
        return []
    base = "spec.conversion"
    strategy = conversion.get("strategy")
    webhook = conversion.get("webhook") if isinstance(conversion.get("webhook"), Mapping) else {}
    assert isinstance(webhook, Mapping)
    config, versions = webhook.get("clientConfig"), webhook.get("conversionReviewVersions")
    if strategy not in ("None", "Webhook"):
        return [Cause("FieldValueNotSupported", f'Unsupported value: "{strategy or ""}": '
                      'supported values: "None", "Webhook"', f"{base}.strategy")]
    if strategy == "None":
        forbidden = "Forbidden: should not be set when strategy is not set to Webhook"
        return [Cause("FieldValueForbidden", forbidden, f"{base}.{field}")
                for field, value in (("webhookClientConfig", config),
                                     ("conversionReviewVersions", versions))
                if value is not None]
    causes = []
    if config is None:
        causes.append(Cause("FieldValueRequired", "Required value: required when strategy is "
                            "set to Webhook", f"{base}.webhookClientConfig"))
    else:
        causes.extend(client_config_errors(config, f"{base}.webhookClientConfig",
                                           url_field="url"))
    causes.extend(review_version_errors(versions, f"{base}.conversionReviewVersions",
                                        missing=""))
    return causes


class Converter:
    """Converts custom resources between the versions their CRD serves."""

    def __init__(self, storage: Storage, client: WebhookClient) -> None:
        self.storage = storage
        self.client = client

    def _crd(self, rtype: ResourceType) -> Mapping[str, Any] | None:
        if rtype.crd_name is None:
            return None
        crds = self.storage.tables.get((_GROUP, "customresourcedefinitions"))
        return crds.objects.get(("", rtype.crd_name)) if crds is not None else None

    def storage_version(self, rtype: ResourceType) -> str:
        """The apiVersion objects of this resource are written at."""
        if rtype.builtin:
            return self.storage.strategies.of(rtype).storage_type(rtype).group_version
        crd = self._crd(rtype)
        if crd is None:
            return rtype.group_version
        spec = crd["spec"]
        stored = [v["name"] for v in spec["versions"] if v.get("storage")]
        return f"{spec['group']}/{stored[0]}" if stored else rtype.group_version

    def converts(self, rtype: ResourceType) -> bool:
        """Whether a watch must convert what is stored (not just rename the apiVersion)."""
        return self.uses_webhook(rtype) or self.storage.strategies.of(rtype).converts_stored(
            rtype)

    def uses_webhook(self, rtype: ResourceType) -> bool:
        """Whether converting this resource's objects may call a webhook."""
        crd = self._crd(rtype)
        return crd is not None and _conversion(crd).get("strategy") == "Webhook"

    async def convert(self, rtype: ResourceType, obj: Obj, api_version: str) -> Obj:
        """``obj`` at ``api_version`` (itself if it is there already). Raises
        :class:`ConversionError` when the webhook fails."""
        if obj.get("apiVersion") == api_version:
            return obj
        converted = self.storage.strategies.of(rtype).convert_version(obj, api_version)
        if converted is not None:
            return converted
        crd = self._crd(rtype)
        conversion = _conversion(crd) if crd is not None else {}
        if conversion.get("strategy") != "Webhook":
            return dict(obj, apiVersion=api_version)
        return await self._call_webhook(conversion, obj, api_version)

    async def _call_webhook(self, conversion: Mapping[str, Any], obj: Obj,
                            api_version: str) -> Obj:
        webhook = conversion.get("webhook") or {}
        source = f"{obj.get('apiVersion')}, Kind={obj.get('kind')}"
        review_version = next((v for v in webhook.get("conversionReviewVersions") or ()
                               if v in ("v1", "v1beta1")), "v1")
        uid = str(uuid.uuid4())
        sent = copy.deepcopy(obj)
        sent.get("metadata", {}).pop("resourceVersion", None)  # etcd holds none
        review = {"kind": "ConversionReview", "apiVersion": f"{_GROUP}/{review_version}",
                  "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": [sent]},
                  "response": {"uid": "", "convertedObjects": None,
                               "result": {"metadata": {}}}}
        try:
            answer = await self.client.post(
                ClientConfig.parse(webhook.get("clientConfig") or {}), review,
                CONVERSION_TIMEOUT, group=_GROUP, kinds=("ConversionReview",))
            converted = _converted_objects(answer, uid, review_version)
        except CallError as err:
            raise ConversionError(f"conversion webhook for {source} failed: {err}") from None
        if len(converted) != 1:
            raise ConversionError(f"conversion webhook for {source} returned "
                                  f"{len(converted)} objects, expected 1")
        out = converted[0]
        if not isinstance(out, dict):
            raise ConversionError(f"conversion webhook for {source} failed: json: cannot "
                                  "unmarshal into Go value of type map[string]interface {}")
        if out.get("apiVersion") != api_version:
            raise ConversionError(
                f"conversion webhook for {source} returned invalid object at index 0: invalid "
                f"groupVersion (expected {api_version}, received {out.get('apiVersion')})")
        if out.get("kind") != obj.get("kind"):
            raise ConversionError(
                f"conversion webhook for {source} returned invalid object at index 0: invalid "
                f"kind (expected {obj.get('kind')}, received {out.get('kind')})")
        problem = _changed_identity(obj, out)
        if problem:
            raise ConversionError(f"conversion webhook for {source} returned invalid object: "
                                  f"{problem}")
        return _restore_metadata(obj, out, source)


def _conversion(crd: Mapping[str, Any]) -> Mapping[str, Any]:
    conversion = crd["spec"].get("conversion")
    return conversion if isinstance(conversion, Mapping) else {"strategy": "None"}


def _converted_objects(answer: Mapping[str, Any], uid: str, review_version: str) -> list[Any]:
    """``getConvertedObjectsFromResponse``: raises :class:`CallError` with its words."""
    got = f"{answer.get('apiVersion')}, Kind={answer.get('kind')}"
    response = answer.get("response")
    if review_version == "v1" and answer.get("apiVersion") != f"{_GROUP}/v1":
        raise CallError(f"expected webhook response of {_GROUP}/v1, Kind=ConversionReview, "
                        f"got {got}")
    if not isinstance(response, Mapping):
        raise CallError("no response provided")
    if review_version == "v1" and response.get("uid") != uid:
        raise CallError(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    result = response.get("result") if isinstance(response.get("result"), Mapping) else {}
    assert isinstance(result, Mapping)
    if result.get("status") != "Success":
        if result.get("message"):
            raise CallError(str(result["message"]))
        raise CallError(f"response.result.status was '{result.get('status') or ''}', "
                        "not 'Success'")
    objects = response.get("convertedObjects")
    return list(objects) if isinstance(objects, list) else []


def _changed_identity(before: Obj, after: Obj) -> str | None:
    """``validateConvertedObject``: kind, name, namespace and uid must not change."""
    meta_before = before.get("metadata") or {}
    meta_after = after.get("metadata") if isinstance(after.get("metadata"), dict) else {}
    assert isinstance(meta_after, dict)
    for field in ("name", "namespace", "uid"):
        was, now = meta_before.get(field) or "", meta_after.get(field) or ""
        if was != now:
            label = "UID" if field == "uid" else field
            return f"must have the same {label}: {was} != {now}"
    return None


def _restore_metadata(original: Obj, converted: Obj, source: str) -> Obj:
    """``restoreObjectMeta``: the original metadata, with the converted labels and
    annotations (which must be maps of strings, and valid)."""
    answered = converted.get("metadata")
    if not isinstance(answered, dict):
        raise ConversionError(f"conversion webhook for {source} returned invalid metadata: "
                              "missing metadata in converted object")
    meta = copy.deepcopy(original.get("metadata") or {})
    for field in ("labels", "annotations"):
        value = answered.get(field)
        if value is None:
            meta.pop(field, None)
            continue
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise ConversionError(f"conversion webhook for {source} returned invalid metadata: "
                                  f"metadata.{field} must be a map of strings")
        if field == "labels":
            causes = [invalid("metadata.labels", k, m) for k in sorted(value)
                      for m in qualified_name_errors(k)]
            causes += [invalid("metadata.labels", v, m) for v in value.values()
                       for m in label_value_errors(v)]
            if causes:
                shown = ", ".join(f"{c.field}: {c.message}" for c in causes)
                raise ConversionError(f"conversion webhook for {source} returned invalid "
                                      f"metadata: {shown}")
        meta[field] = value
    return dict(converted, metadata=meta)
