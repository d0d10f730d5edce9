"""Run each ``Website`` (an image and a replica count) as a Deployment behind a Service.

The reconciler owns both children through controller references (so they are
garbage-collected with their Website, and a change to either wakes their
Website up), writes only what differs from what it wants (a merge patch of
the fields it manages, so the server's defaults stay), and reports a ``Ready``
condition for the generation it acted on.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from reconcilekit import Cache, Client, Manager, NotFound, Reconciler, Request, Result
from reconcilekit.conditions import set_status_condition
from reconcilekit.crd import CustomKind, Default, Description, Minimum, MinLength, Version
from reconcilekit.kinds import DEPLOYMENTS, SERVICES, ObjectMeta
from reconcilekit.ownership import set_controller_reference
from reconcilekit.rbac import Permission, blocks_owner_deletion
from reconcilekit.upsert import create_or_patch

GROUP = "example.reconcilekit.dev"


class WebsiteSpec(TypedDict):
    """What a Website serves."""

    image: Annotated[str, MinLength(1), Description("the container image")]
    replicas: NotRequired[Annotated[int, Minimum(0), Default(1),
                                    Description("the Deployment's replicas")]]


class Website(TypedDict):
    """An image served by a Deployment behind a Service."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: NotRequired[WebsiteSpec]
    status: NotRequired[dict[str, Any]]  # conditions


WEBSITES_KIND = CustomKind(group=GROUP, kind="Website", plural="websites",
                           versions=[Version("v1", Website, storage=True)])
WEBSITES = WEBSITES_KIND.resource

WEBSITE_CRD: dict[str, Any] = WEBSITES_KIND.crd()
"""The CustomResourceDefinition to install (made from :data:`WEBSITES_KIND`)."""

PORT = 8080


class WebsiteReconciler(Reconciler):
    """Makes the Deployment and the Service named like the Website match its spec."""

    # What it sends beyond the cache's reads (python -m reconcilekit manifests): create_or_patch
    # reads each child through the cache, or with a GET before the cache has seen its last
    # write, then creates it or patches what differs.
    permissions = (
        Permission(DEPLOYMENTS, "get", "create", "patch"),
        Permission(SERVICES, "get", "create", "patch"),
        blocks_owner_deletion(WEBSITES),  # the children's controller reference
        Permission(WEBSITES, "patch", subresource="status"),
    )

    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    async def reconcile(self, request: Request) -> Result:
        try:
            site = await self.cache.get(WEBSITES, request.name, request.namespace)
        except NotFound:
            return Result.done()  # its children are garbage-collected with it
        labels = {"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": request.name}

        def deployment(obj: dict[str, Any]) -> None:
            set_controller_reference(site, obj)
            spec = obj.setdefault("spec", {})
            spec["replicas"] = site["spec"].get("replicas", 1)
            spec["selector"] = {"matchLabels": labels}
            template = spec.setdefault("template", {})
            template.setdefault("metadata", {})["labels"] = labels
            pod = template.setdefault("spec", {})
            pod["containers"] = [_container(pod, site["spec"]["image"])]

        def service(obj: dict[str, Any]) -> None:
            set_controller_reference(site, obj)
            spec = obj.setdefault("spec", {})
            spec["selector"] = labels
            spec["ports"] = [{"name": "http", "port": 80, "targetPort": PORT,
                              "protocol": "TCP"}]

        await create_or_patch(self.client, DEPLOYMENTS, request.name, request.namespace,
                              deployment)
        await create_or_patch(self.client, SERVICES, request.name, request.namespace, service)
        conditions = list((site.get("status") or {}).get("conditions") or [])
        if set_status_condition(conditions, {
                "type": "Ready", "status": "True", "reason": "ChildrenUpToDate",
                "message": "the Deployment and the Service match the spec",
                "observedGeneration": site["metadata"].get("generation")}):
            await self.client.patch_status(WEBSITES, request.name,
                                           {"status": {"conditions": conditions}},
                                           request.namespace)
        return Result.done()


def _container(pod: dict[str, Any], image: str) -> dict[str, Any]:
    """The ``web`` container as stored (server defaults kept), with the wanted image."""
    current: dict[str, Any] = next(
        (c for c in pod.get("containers") or () if c.get("name") == "web"), {})
    return {**current, "name": "web", "image": image,
            "ports": [{"containerPort": PORT, "protocol": "TCP"}]}


def build(client: Client, *, namespace: str | None = None,
          http_addr: str | None = ":8080") -> Manager:
    """A manager running :class:`WebsiteReconciler` on ``namespace`` (None: every one),
    serving /metrics, /healthz and /readyz on ``http_addr`` (None: not at all)."""
    manager = Manager(client, name="website-operator", namespace=namespace,
                      http_addr=http_addr)
    (manager.controller()
        .for_(WEBSITES)      # reconcile each Website...
        .owns(DEPLOYMENTS)   # ...and its owner when its Deployment
        .owns(SERVICES)      # or its Service changes
        .complete(WebsiteReconciler(client, manager.cache)))
    return manager
