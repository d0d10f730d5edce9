"""Keeping the API server's webhook configurations in step with a :class:`WebhookServer`.

What kopf does for a development operator, and envtest's
``WebhookInstallOptions`` for tests: write the Validating- and
MutatingWebhookConfiguration named after the server (its hooks, pointed at
its ``url`` or ``service``, with the CA that signed its certificate as
``caBundle``) and each converted CRD's ``spec.conversion``. In production
they usually come from manifests, with cert-manager's CA injector filling
``caBundle``; then leave ``install_configurations`` off.

Guarantees: the configurations are written only when they differ from what
is stored (a restart writes nothing); only the ``webhooks`` list and the
CRD's ``spec.conversion`` are written, so labels and annotations others set
stay; :func:`remove_configurations` deletes only the configurations it wrote
(a missing one is fine) and never the CRDs' conversion (objects stored at
another version would become unreadable).
"""

from __future__ import annotations

import logging

from .._client.client import Client
from .._foundations.errors import APIError, NotFound, ServerError, describe_error
from .._foundations.objects import Obj, Resource
from ..kinds import CUSTOM_RESOURCE_DEFINITIONS
from ..upsert import Outcome, create_or_patch
from ._server import WebhookServer

__all__ = ["WebhookSetupError", "install_configurations", "remove_configurations"]

logger = logging.getLogger("reconcilekit.webhook")


class WebhookSetupError(RuntimeError):
    """The webhook configurations could not be written; the message names which and why."""


async def install_configurations(client: Client, server: WebhookServer) -> list[str]:
    """Write the server's configurations and CRD conversions; the names of those changed."""
    changed = []
    for resource, wanted in server.configurations():
        def mutate(obj: Obj, wanted: Obj = wanted) -> None:
            obj.setdefault("metadata", {}).setdefault("labels", {}).update(
                wanted["metadata"]["labels"])
            obj["webhooks"] = wanted["webhooks"]

        try:
            outcome, _ = await create_or_patch(client, resource, server.name, None, mutate)
        except APIError as err:
            raise WebhookSetupError(f"cannot write {resource.kind} {server.name}: "
                                    f"{describe_error(err)}") from None
        if outcome is not Outcome.UNCHANGED:
            changed.append(f"{resource.kind}/{server.name}")
    for crd, conversion in server.crd_conversions().items():
        try:
            await client.get(CUSTOM_RESOURCE_DEFINITIONS, crd)
        except NotFound:
            raise WebhookSetupError(f"CustomResourceDefinition {crd} is not installed: install "
                                    f"it before its conversion webhook is configured") from None

        def convert(obj: Obj, conversion: Obj = conversion) -> None:
            obj.setdefault("spec", {})["conversion"] = conversion

        try:
            outcome, stored = await create_or_patch(client, CUSTOM_RESOURCE_DEFINITIONS, crd,
                                                    None, convert)
        except APIError as err:
            raise WebhookSetupError(f"cannot write the conversion of CustomResourceDefinition "
                                    f"{crd}: {describe_error(err)}") from None
        if outcome is not Outcome.UNCHANGED:
            changed.append(f"CustomResourceDefinition/{crd}")
            await _until_served(client, server, stored)
    if changed:
        logger.info("webhook configuration written: %s", ", ".join(changed))
    return changed


async def _until_served(client: Client, server: WebhookServer, crd: Obj,
                        within: float = 30.0) -> None:
    """Wait until every served version of ``crd`` answers a list again.

    kube-apiserver replaces a CRD's storage when its conversion changes; for a
    moment after, requests to the kind get 503 "apiserver is shutting down"
    (the old storage going). The manager's caches and controllers start right
    after this: they should meet the new storage, not that moment.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    deadline = server.clock.monotonic() + within
    for version in spec.get("versions") or ():
        if not version.get("served", True):
            continue
        resource = Resource(spec.get("group", ""), version["name"], names.get("kind", ""),
                            names.get("plural", ""), spec.get("scope") == "Namespaced")
        while True:
            try:
                await client.list(resource, limit=1)
                break
            except ServerError as err:
                if err.status != 503:
                    raise WebhookSetupError(f"cannot list {resource.group_resource} after its "
                                            f"conversion changed: {err}") from None
                if server.clock.monotonic() >= deadline:
                    raise WebhookSetupError(
                        f"{resource.group_resource} still answers 503 {within:g}s after "
                        f"its conversion was changed") from None
                await server.clock.sleep(0.1)


async def remove_configurations(client: Client, server: WebhookServer) -> None:
    """Delete the server's Validating/MutatingWebhookConfiguration (missing ones are fine)."""
    for resource, _ in server.configurations():
        try:
            await client.delete(resource, server.name)
        except NotFound:
            continue
        logger.info("webhook configuration removed: %s/%s", resource.kind, server.name)
