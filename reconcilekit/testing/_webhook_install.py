"""Webhook configurations from manifests, pointed at a test's local webhook server.

What envtest's ``WebhookInstallOptions`` does for Go operators: the
Validating/MutatingWebhookConfigurations a project ships (which name a
Service in the cluster) are installed with each webhook's ``clientConfig``
rewritten to the test's own :class:`~reconcilekit.webhook.WebhookServer`
(its URL plus the Service's ``path``) and ``caBundle`` set to the CA of the
server's certificate, so the API server under test — kube-apiserver or the
in-process one — calls the handlers the test runs. They are deleted when
the block ends.

Guarantees: every configuration of the manifests is installed (other kinds
are refused with a ValueError naming them, so a typo cannot skip a
webhook); names may be given a suffix so that tests sharing one cluster
never collide; a configuration the block created is deleted even when the
block fails.

Not guaranteed: that kube-apiserver already calls the webhooks when the
block starts. It loads webhook configurations through an informer, a moment
after they are written, and no request can ask it whether it has (a probe
would have to pass each kind's own validation first). A test that needs a
webhook in force dry-runs its request until the webhook's answer comes back;
the in-process server reads the configurations at each request, so there the
first try succeeds.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import yaml

from .._client.client import Client
from .._foundations.errors import NotFound
from ..kinds import MUTATING_WEBHOOK_CONFIGURATIONS, VALIDATING_WEBHOOK_CONFIGURATIONS
from ..webhook import WebhookServer

__all__ = ["installed_webhooks"]

_KINDS = {r.kind: r for r in (VALIDATING_WEBHOOK_CONFIGURATIONS, MUTATING_WEBHOOK_CONFIGURATIONS)}


@asynccontextmanager
async def installed_webhooks(client: Client, manifests: str | Path | Iterable[Mapping[str, Any]],
                             server: WebhookServer, *, name_suffix: str = "",
                             namespace: str | None = None
                             ) -> AsyncIterator[list[dict[str, Any]]]:
    """Install the webhook configurations of ``manifests`` (a YAML file, or the documents)
    pointed at ``server``, which must be serving; yields them as stored.

    ``namespace``: limit every webhook to that namespace (a namespaceSelector
    on its ``kubernetes.io/metadata.name`` label), so that on a shared
    cluster no other test's requests reach this test's handlers.
    """
    docs = (yaml.safe_load_all(await anyio.Path(manifests).read_text())
            if isinstance(manifests, str | Path) else manifests)
    configurations = [_pointed(doc, server, name_suffix, namespace) for doc in docs
                      if doc and doc.get("kind") in _KINDS]
    if not configurations:
        raise ValueError(f"no Validating- or MutatingWebhookConfiguration in {manifests}")
    created: list[dict[str, Any]] = []
    try:
        for config in configurations:
            created.append(await client.create(_KINDS[config["kind"]], config))
        yield created
    finally:
        for config in created:
            with suppress(NotFound):
                await client.delete(_KINDS[config["kind"]], config["metadata"]["name"])


def _pointed(doc: Mapping[str, Any], server: WebhookServer, suffix: str,
             namespace: str | None) -> dict[str, Any]:
    config = copy.deepcopy(dict(doc))
    meta = config.setdefault("metadata", {})
    meta["name"] = f"{meta.get('name', '')}{suffix}"
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
        meta.pop(key, None)
    ca = server.certificate.ca_bundle()
    for webhook in config.get("webhooks") or ():
        where = webhook.get("clientConfig") or {}
        path = (where.get("service") or {}).get("path") or ""
        if not path and "url" in where:
            path = "/" + str(where["url"]).split("://", 1)[-1].partition("/")[2]
        webhook["clientConfig"] = {"url": f"{server.base_url}{path}"}
        if ca:
            webhook["clientConfig"]["caBundle"] = base64.b64encode(ca).decode()
        if namespace is not None:
            webhook["namespaceSelector"] = {
                "matchLabels": {"kubernetes.io/metadata.name": namespace}}
    return config
