"""Keep a Secret next to every ConfigMap, with the same name and data."""

from __future__ import annotations

import base64

from reconcilekit import Cache, Client, Manager, NotFound, Reconciler, Request, Result
from reconcilekit.kinds import CONFIG_MAPS, SECRETS, Secret
from reconcilekit.ownership import set_controller_reference


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
            cm = await self.cache.get(CONFIG_MAPS, request.name, request.namespace)
        except NotFound:
            return Result.done()  # the Secret is garbage-collected with its owner
        data = {k: base64.b64encode(v.encode()).decode()
                for k, v in (cm.get("data") or {}).items()}
        try:
            secret = await self.cache.get(SECRETS, request.name, request.namespace)
        except NotFound:
            new: Secret = {"apiVersion": "v1", "kind": "Secret", "data": data,
                           "metadata": {"name": request.name,
                                        "namespace": request.namespace}}
            set_controller_reference(cm, new)  # it goes when its ConfigMap goes
            await self.client.create(SECRETS, new, request.namespace)
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
        .for_(CONFIG_MAPS)  # reconcile each ConfigMap...
        .owns(SECRETS)     # ...and its owner when one of its Secrets changes
        .complete(CopyToSecret(client, manager.cache)))
    return manager
