"""A replicated key-value store operator, as an operator author would write one: each
``KVStore`` runs as a StatefulSet (a claim per replica) behind a headless Service, with
a PodDisruptionBudget keeping a quorum, and reports how many replicas are ready in a
``Ready`` condition; a finalizer deletes the claims the StatefulSet leaves behind when
the KVStore goes. One replica of the operator works at a time (leader election).

The kind is defined here, in Python: its CRD (CEL rules, defaults, the scale
subresource, printer columns) and the operator's RBAC (what the cache watches, the
Lease, what the reconciler declares in ``permissions``) are generated from this file
into ``kvstore_manifests/`` (COMMAND), and a test keeps them up to date.

Typed end to end, with no ``cast``: the kind's shape flows through the cache, the
client (scale subresource included), ``finalize``, ``create_or_patch``, the ownership
and condition helpers and the builder's predicates and mappers; ``mypy --strict``
checks it (a test runs it on this file).

Its tests (``test_kvstore.py``) run unchanged on the in-process server and on
kube-apiserver with kube-controller-manager: the StatefulSet's Pods, claims and status,
the Service's Endpoints and the budget's status come from the cluster's controllers.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, NotRequired, TypedDict

from reconcilekit import (
    Cache,
    Client,
    LeaderElection,
    Manager,
    NotFound,
    Reconciler,
    Request,
    Result,
    predicate,
)
from reconcilekit.conditions import set_status_condition
from reconcilekit.crd import (
    CustomKind,
    Default,
    Maximum,
    Minimum,
    MinLength,
    Pattern,
    PrinterColumn,
    Rule,
    Scale,
    Version,
)
from reconcilekit.finalizers import CleanupDone, CleanupResult, finalize
from reconcilekit.kinds import (
    PERSISTENT_VOLUME_CLAIMS,
    POD_DISRUPTION_BUDGETS,
    SERVICES,
    STATEFUL_SETS,
    Condition,
    ObjectMeta,
    PersistentVolumeClaim,
    PodDisruptionBudget,
    Service,
    StatefulSet,
)
from reconcilekit.kinds.core_v1 import Container
from reconcilekit.ownership import set_controller_reference
from reconcilekit.rbac import Permission, blocks_owner_deletion
from reconcilekit.upsert import create_or_patch

COMMAND = ("python -m reconcilekit manifests kvstore_operator:build "
           "--out kvstore_manifests")  # run in tests/examples
PORT = 6379
FINALIZER = "test.reconcilekit.dev/claims"


# --8<-- [start:kind]
class KVStoreSpec(TypedDict):
    image: Annotated[str, MinLength(1)]
    replicas: NotRequired[Annotated[int, Minimum(1), Maximum(9), Default(3), Rule(
        "self % 2 == 1", message="must be odd: a quorum is a majority of the replicas")]]
    storage: NotRequired[Annotated[str, Pattern(r"^[0-9]+[MG]i$"), Default("1Gi"), Rule(
        "self == oldSelf", message="cannot change: each replica's claim is made once")]]


class KVStoreStatus(TypedDict, total=False):
    replicas: int
    readyReplicas: int
    selector: str  # the scale subresource's: what an autoscaler counts
    conditions: list[Condition]  # metav1.Condition's schema, a list map keyed by type


class KVStore(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: KVStoreSpec
    status: NotRequired[KVStoreStatus]


KVSTORES_KIND = CustomKind(
    group="test.reconcilekit.dev", kind="KVStore", plural="kvstores",
    versions=[Version(
        "v1", KVStore, storage=True,
        scale=Scale(label_selector_path=".status.selector"),
        printer_columns=[
            PrinterColumn("Replicas", ".spec.replicas"),
            PrinterColumn("Ready", ".status.readyReplicas"),
            PrinterColumn("Status", '.status.conditions[?(@.type=="Ready")].reason'),
            PrinterColumn("Age", ".metadata.creationTimestamp")])])
KVSTORES = KVSTORES_KIND.resource  # a TypedResource[KVStore]
# --8<-- [end:kind]


def labels_of(store: KVStore) -> dict[str, str]:
    return {"app.kubernetes.io/name": "kvstore",
            "app.kubernetes.io/instance": store["metadata"]["name"]}


class KVStoreReconciler(Reconciler):
    permissions = (  # what it sends itself; the cache's list and watch are inferred
        Permission(KVSTORES, "get", "patch"),  # finalize: its finalizer on, then off
        Permission(KVSTORES, "patch", subresource="status"),
        Permission(SERVICES, "get", "create", "patch"),  # create_or_patch
        Permission(STATEFUL_SETS, "get", "create", "patch"),
        Permission(POD_DISRUPTION_BUDGETS, "get", "create", "patch"),
        blocks_owner_deletion(KVSTORES),  # the children's controller references
        Permission(PERSISTENT_VOLUME_CLAIMS, "delete"),
    )

    def __init__(self, client: Client, cache: Cache) -> None:
        self.client = client
        self.cache = cache

    # --8<-- [start:reconcile]
    async def reconcile(self, request: Request) -> Result:
        try:
            store = await self.cache.get(KVSTORES, request.name, request.namespace)
        except NotFound:
            return Result.done()
        result = await finalize(self.client, KVSTORES, store, FINALIZER,
                                apply=self.apply, cleanup=self.cleanup)
        return result if isinstance(result, Result) else Result.done()
    # --8<-- [end:reconcile]

    async def apply(self, store: KVStore) -> Result:
        name, ns = store["metadata"]["name"], store["metadata"]["namespace"]
        replicas = store["spec"].get("replicas", 3)  # defaulted by the API server
        labels = labels_of(store)

        def service(obj: Service) -> None:
            set_controller_reference(store, obj)
            spec = obj.setdefault("spec", {})
            spec["clusterIP"] = "None"
            spec["selector"] = labels
            spec["publishNotReadyAddresses"] = True
            spec["ports"] = [{"name": "client", "port": PORT, "protocol": "TCP"}]

        def statefulset(obj: StatefulSet) -> None:
            set_controller_reference(store, obj)
            spec = obj.setdefault("spec", {"selector": {}, "serviceName": name, "template": {}})
            spec["replicas"] = replicas
            spec["serviceName"] = name
            spec["selector"] = {"matchLabels": labels}
            template = spec.setdefault("template", {})
            template["metadata"] = {**template.get("metadata", {}), "labels": labels}
            pod = template.setdefault("spec", {"containers": []})
            new: Container = {"name": "kv"}  # else kept as the API server defaulted it
            kv = next((c for c in pod.get("containers", []) if c["name"] == "kv"), new)
            kv["image"] = store["spec"]["image"]
            kv["ports"] = [{"name": "client", "containerPort": PORT, "protocol": "TCP"}]
            pod["containers"] = [kv]
            if "volumeClaimTemplates" not in spec:  # immutable once made
                storage = store["spec"].get("storage", "1Gi")
                spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"}, "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": storage}}}}]

        def budget(obj: PodDisruptionBudget) -> None:
            set_controller_reference(store, obj)
            obj["spec"] = {"minAvailable": replicas // 2 + 1, "selector": {"matchLabels": labels}}

        await create_or_patch(self.client, SERVICES, name, ns, service)
        _, sts = await create_or_patch(self.client, STATEFUL_SETS, name, ns, statefulset)
        await create_or_patch(self.client, POD_DISRUPTION_BUDGETS, name, ns, budget)
        # --8<-- [start:status]
        observed = sts.get("status", {})
        ready = observed.get("readyReplicas", 0)
        settled = observed.get("observedGeneration") == sts["metadata"].get(
            "generation") and ready == replicas
        status = store.get("status", {})
        conditions = list(status.get("conditions", []))
        changed = set_status_condition(conditions, {
            "type": "Ready", "status": "True" if settled else "False",
            "reason": "AllReplicasReady" if settled else "Scaling",
            "message": f"{ready} of {replicas} replicas ready",
            "observedGeneration": store["metadata"].get("generation", 0)})
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
        wanted: KVStoreStatus = {"replicas": observed.get("replicas", 0),
                                 "readyReplicas": ready, "selector": selector,
                                 "conditions": conditions}
        counts = ("replicas", "readyReplicas", "selector")
        if changed or [status.get(k) for k in counts] != [wanted.get(k) for k in counts]:
            await self.client.patch_status(KVSTORES, name, {"status": wanted}, ns)
        return Result.done()
        # --8<-- [end:status]

    # --8<-- [start:cleanup]
    async def cleanup(self, store: KVStore) -> CleanupResult[Result]:
        """Delete the claims the StatefulSet made (its controller keeps them): they go
        once their Pods have."""
        ns = store["metadata"]["namespace"]
        claims: list[PersistentVolumeClaim] = await self.cache.list(
            PERSISTENT_VOLUME_CLAIMS, ns, label_selector=labels_of(store))
        for claim in claims:
            if "deletionTimestamp" not in claim["metadata"]:
                with contextlib.suppress(NotFound):  # gone meanwhile
                    await self.client.delete(PERSISTENT_VOLUME_CLAIMS,
                                             claim["metadata"]["name"], ns)
        return CleanupDone(Result.done())
    # --8<-- [end:cleanup]


def build(client: Client, *, namespace: str | None = None) -> Manager:
    """The operator on ``namespace`` (None: every one, its Lease in ``kvstore-system``),
    one replica at a time: the holder of the Lease ``kvstore-operator``."""
    manager = Manager(client, name="kvstore-operator", namespace=namespace, http_addr=None,
                      coordination=LeaderElection(name="kvstore-operator",
                                                  namespace=namespace or "kvstore-system"))

    def rolled(old: StatefulSet, new: StatefulSet) -> bool:  # metadata-only changes: skip
        return old.get("status") != new.get("status") or old.get("spec") != new.get("spec")

    def owner_of(claim: PersistentVolumeClaim) -> list[Request]:
        instance = claim["metadata"].get("labels", {}).get("app.kubernetes.io/instance")
        return [Request(claim["metadata"]["namespace"], instance)] if instance else []

    (manager.controller()
        .for_(KVSTORES)
        .owns(STATEFUL_SETS, predicate(update=rolled))
        .owns(SERVICES)
        .owns(POD_DISRUPTION_BUDGETS)
        .watches(PERSISTENT_VOLUME_CLAIMS, owner_of)
        .complete(KVStoreReconciler(client, manager.cache)))
    return manager
