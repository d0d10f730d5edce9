"""Keep a Secret next to every ConfigMap, with the same name and data."""

from __future__ import annotations

import base64

from reconcilekit import Cache, Client, Manager, NotFound, Reconciler, Request, Resource, Result
from reconcilekit.ownership import set_controller_reference

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps")
SECRETS = Resource("", "v1", "Secret", "secrets")


class CopyToSecret(Reconciler):
    """Makes the Secret named like the ConfigMap hold the ConfigMap's data.

    The Secret is created with the ConfigMap as its controlling owner (so it
    is garbage-collected with it) and updated whenever its data differs.
    """

    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    async def reconcile(self, request: Request) -> Result:
        try:
            cm = await self.cache.get(CONFIGMAPS, request.name, request.namespace)
        except NotFound:
            return Result.done()  # the Secret is garbage-collected with its owner
        data = {k: base64.b64encode(v.encode()).decode()
                for k, v in (cm.get("data") or {}).items()}
        try:
            secret = await self.cache.get(SECRETS, request.name, request.namespace)
        except NotFound:
            secret = {"apiVersion": "v1", "kind": "Secret", "data": data,
                      "metadata": {"name": request.name, "namespace": request.namespace}}
            set_controller_reference(cm, secret)  # it goes when its ConfigMap goes
            await self.client.create(SECRETS, secret, request.namespace)
            return Result.done()
        if secret.get("data") != data:
            secret["data"] = data  # cached objects are copies: changing them is safe
            await self.client.update(SECRETS, secret)
        return Result.done()


def build(client: Client, *, namespace: str | None = None,
          http_addr: str | None = ":8080") -> Manager:
    """A manager running :class:`CopyToSecret` on ``namespace`` (None: every namespace),
    serving /metrics, /healthz and /readyz on ``http_addr`` (None: not at all)."""
    manager = Manager(client, name="copy-operator", namespace=namespace,
                      http_addr=http_addr)
    (manager.controller()
        .for_(CONFIGMAPS)  # reconcile each ConfigMap...
        .owns(SECRETS)     # ...and its owner when one of its Secrets changes
        .complete(CopyToSecret(client, manager.cache)))
    return manager
