"""``crds.yaml``: the CustomResourceDefinition of each resource the manager uses whose
``definition`` has a ``crd()`` method (the kinds defined with :mod:`reconcilekit.crd`),
with the webhook server's conversion when it converts the kind."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._foundations.objects import Obj, Resource
from .deploy_options import ManifestError
from .webhook_wiring import CA_INJECTION, WebhookWiring

if TYPE_CHECKING:
    from .._manager.manager import Manager

__all__ = ["crd_documents"]


def crd_documents(manager: Manager, wiring: WebhookWiring | None) -> list[Obj]:
    """The CRDs, sorted by name; a converted kind's points at the webhook server (its
    ``caBundle`` left to cert-manager, or to the manager, as ``wiring`` says)."""
    used: set[Resource] = {i.resource for i in manager.cache.informers()}
    for controller in manager.controllers:
        if controller.primary is not None:
            used.add(controller.primary)
        for permission in getattr(controller.reconciler, "permissions", ()) or ():
            used.add(permission.resource)
    server = manager.webhook_server
    if server is not None:
        used.update(h.resource for h in server.hooks.values())
        used.update(r for r, _ in server.conversions.values())
    crds: dict[str, Obj] = {}
    for resource in used:
        definition = getattr(resource, "definition", None)
        make = getattr(definition, "crd", None)
        if not callable(make):
            continue
        crd = make()
        if not isinstance(crd, Mapping) or not (crd.get("metadata") or {}).get("name"):
            raise ManifestError(f"{resource.plural}.{resource.group}: definition.crd() gave "
                                f"{type(crd).__name__}, not a CustomResourceDefinition")
        name = str(crd["metadata"]["name"])
        if name in crds and crds[name] != crd:
            raise ManifestError(f"two different definitions of CustomResourceDefinition "
                                f"{name}: one resource per kind, please")
        crds[name] = dict(crd)
    if server is not None:
        ca_from = wiring.ca_from if wiring is not None else None
        for name, conversion in server.crd_conversions().items():
            if name in crds:
                crds[name] = _with_conversion(crds[name], conversion, ca_from)
    return [crds[name] for name in sorted(crds)]


def _with_conversion(crd: Obj, conversion: Obj, ca_from: str | None) -> Obj:
    crd = copy.deepcopy(crd)
    conversion = copy.deepcopy(conversion)
    conversion["webhook"]["clientConfig"].pop("caBundle", None)
    crd.setdefault("spec", {})["conversion"] = conversion
    if ca_from:
        crd["metadata"].setdefault("annotations", {})[CA_INJECTION] = ca_from
    return crd
