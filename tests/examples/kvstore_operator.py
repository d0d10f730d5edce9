"""A replicated key-value store operator, as an operator author would write one: each
``KVStore`` runs as a StatefulSet (a claim per replica) behind a headless Service, with
a PodDisruptionBudget keeping a quorum, and reports how many replicas are ready.

Its tests (``test_kvstore.py``) run unchanged on the in-process server and on
kube-apiserver with kube-controller-manager: the StatefulSet's Pods, claims and status,
the Service's Endpoints and the budget's status come from the cluster's controllers.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired, TypedDict

from reconcilekit import Cache, Client, Manager, NotFound, Reconciler, Request, Result
from reconcilekit.conditions import set_status_condition
from reconcilekit.crd import CustomKind, Default, Minimum, MinLength, Version
from reconcilekit.kinds import POD_DISRUPTION_BUDGETS, SERVICES, STATEFUL_SETS, ObjectMeta
from reconcilekit.ownership import set_controller_reference
from reconcilekit.upsert import create_or_patch

PORT = 6379


class KVStoreSpec(TypedDict):
    image: Annotated[str, MinLength(1)]
    replicas: NotRequired[Annotated[int, Minimum(1), Default(3)]]


class KVStore(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: NotRequired[KVStoreSpec]
    status: NotRequired[dict[str, Any]]


KVSTORES_KIND = CustomKind(group="test.reconcilekit.dev", kind="KVStore", plural="kvstores",
                           versions=[Version("v1", KVStore, storage=True)])
KVSTORES = KVSTORES_KIND.resource
KVSTORE_CRD: dict[str, Any] = KVSTORES_KIND.crd()


class KVStoreReconciler(Reconciler):
    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    async def reconcile(self, request: Request) -> Result:
        try:
            store = await self.cache.get(KVSTORES, request.name, request.namespace)
        except NotFound:
            return Result.done()
        name, ns = request.name, request.namespace
        replicas = store["spec"].get("replicas", 3)
        labels = {"app.kubernetes.io/name": "kvstore", "app.kubernetes.io/instance": name}

        def service(obj: dict[str, Any]) -> None:
            set_controller_reference(store, obj)
            spec = obj.setdefault("spec", {})
            spec.update(clusterIP="None", selector=labels, publishNotReadyAddresses=True,
                        ports=[{"name": "client", "port": PORT, "protocol": "TCP"}])

        def statefulset(obj: dict[str, Any]) -> None:
            set_controller_reference(store, obj)
            spec = obj.setdefault("spec", {})
            spec.update(replicas=replicas, serviceName=name, selector={"matchLabels": labels})
            template = spec.setdefault("template", {})
            template["metadata"] = {**(template.get("metadata") or {}), "labels": labels}
            pod = template.setdefault("spec", {})
            current: dict[str, Any] = next(
                (c for c in pod.get("containers") or () if c["name"] == "kv"), {})
            pod["containers"] = [{**current, "name": "kv", "image": store["spec"]["image"],
                                  "ports": [{"name": "client", "containerPort": PORT,
                                             "protocol": "TCP"}]}]
            if "volumeClaimTemplates" not in spec:  # immutable once made
                spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}]

        def budget(obj: dict[str, Any]) -> None:
            set_controller_reference(store, obj)
            obj["spec"] = {"minAvailable": replicas // 2 + 1,
                           "selector": {"matchLabels": labels}}

        await create_or_patch(self.client, SERVICES, name, ns, service)
        _, sts = await create_or_patch(self.client, STATEFUL_SETS, name, ns, statefulset)
        await create_or_patch(self.client, POD_DISRUPTION_BUDGETS, name, ns, budget)
        ready = int((sts.get("status") or {}).get("readyReplicas") or 0)
        settled = (sts.get("status") or {}).get("observedGeneration") == sts["metadata"].get(
            "generation") and ready == replicas
        status = dict(store.get("status") or {})
        conditions = list(status.get("conditions") or [])
        changed = set_status_condition(conditions, {
            "type": "Ready", "status": "True" if settled else "False",
            "reason": "AllReplicasReady" if settled else "Scaling",
            "message": f"{ready} of {replicas} replicas ready",
            "observedGeneration": store["metadata"].get("generation")})
        if changed or status.get("readyReplicas") != ready:
            await self.client.patch_status(KVSTORES, name, {"status": {
                "readyReplicas": ready, "conditions": conditions}}, ns)
        return Result.done()


def build(client: Client, *, namespace: str) -> Manager:
    manager = Manager(client, name="kvstore-operator", namespace=namespace, http_addr=None)
    (manager.controller()
        .for_(KVSTORES)
        .owns(STATEFUL_SETS)
        .owns(SERVICES)
        .owns(POD_DISRUPTION_BUDGETS)
        .complete(KVStoreReconciler(client, manager.cache)))
    return manager
