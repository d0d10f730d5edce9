"""The CustomResourceDefinition strategy (apiextensions-apiserver's ``strategy.go``).

A CRD's conversion webhook's ``caBundle`` decodes as Go's []byte; its
``spec.conversion`` defaults to ``strategy: None`` (and a webhook service's
port to 443), ``spec.names.singular`` to the lower-cased kind and
``spec.names.listKind`` to the kind and ``List``; it is validated by
:func:`.definitions.validate_crd`, its metadata as an apiextensions object
(finalizers need not be standard); and its removal waits for the cleanup of
its custom resources (the CRD cleanup controller's finalizer).
"""

from __future__ import annotations

from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from ..registry.strategy import Strategy, StrategyTable
from ..webhook_client.client_config_validation import check_ca_bundle, default_client_config
from .definitions import validate_crd

__all__ = ["CustomResourceDefinitionStrategy", "register_strategy"]

GROUP = "apiextensions.k8s.io"


def _conversion_client_config(obj: Obj) -> Obj | None:
    webhook = ((obj.get("spec") or {}).get("conversion") or {}).get("webhook")
    config = webhook.get("clientConfig") if isinstance(webhook, dict) else None
    return config if isinstance(config, dict) else None


class CustomResourceDefinitionStrategy(Strategy):
    """CRDs: served by kube-apiserver, validated and finalized as apiextensions objects."""

    core_metadata = False

    def check_encoding(self, obj: Obj) -> None:
        if (config := _conversion_client_config(obj)) is not None:
            check_ca_bundle(config)

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("conversion") is None:
            spec["conversion"] = {"strategy": "None"}
        names = spec.get("names") if isinstance(spec, dict) else None
        kind = names.get("kind") if isinstance(names, dict) else None
        if isinstance(names, dict) and isinstance(kind, str) and kind:
            if not names.get("singular"):
                names["singular"] = kind.lower()
            if not names.get("listKind"):
                names["listKind"] = f"{kind}List"
        if (config := _conversion_client_config(obj)) is not None:
            default_client_config(config)

    def validate(self, obj: Obj, namespace: str) -> list[Cause]:
        return validate_crd(obj)

    def blocks_delete(self, obj: Obj) -> bool:
        """Always: the cleanup controller removes it once its resources are gone."""
        return True


def register_strategy(table: StrategyTable) -> None:
    """Register the CRD strategy in ``table``."""
    table.register(GROUP, "customresourcedefinitions", CustomResourceDefinitionStrategy())
