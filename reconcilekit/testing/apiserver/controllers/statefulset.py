"""kube-controller-manager's statefulset controller.

Each StatefulSet owns Pods named ``<set>-<ordinal>`` for ordinals
``[0, replicas)``, each with the set's identity (``hostname``, ``subdomain``
from ``serviceName``, the ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash`` labels)
and a PersistentVolumeClaim per ``volumeClaimTemplates`` entry
(``<template>-<set>-<ordinal>``, made before its Pod and never deleted but
by the retention policy, which puts the set or the Pod in the claim's owner
references). Its template history is kept in ControllerRevisions
(:mod:`.controller_history`): the update revision is the current template's
(an earlier revision with the same template is reused, a rollback), the
current revision the one the Pods ran before.

``OrderedReady`` makes one Pod at a time, each once its predecessors are
Running and Ready (available after ``minReadySeconds``), and removes Pods
beyond ``replicas`` from the highest ordinal, one at a time; ``Parallel``
does both at once. A ``RollingUpdate`` then deletes, from the highest ordinal
down to ``partition``, one Pod not at the update revision at a time, waiting
for it to come back healthy; ``OnDelete`` waits for someone to delete it. A
finished Pod (Succeeded, Failed) is deleted and made again. The status
(counts by revision, ``currentRevision`` once every Pod is updated and
ready, ``collisionCount``) is written when it changes; old revisions beyond
``revisionHistoryLimit`` that no Pod uses are deleted.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ...._foundations.selectors import LabelSelector
from ..storage.versioned_store import ObjKey, TableKey
from .controller_history import HASH_LABEL, revision_hash, revision_patch, sort_revisions
from .controller_manager import KeysOf, Loop
from .controller_refs import (
    claim,
    controlled_by,
    controller_of,
    controllers_or_adopters,
    own_key,
    owner_reference,
    selector_of,
)
from .loopback import LoopbackError
from .pod_readiness import is_available, is_ready

__all__ = ["StatefulSetController"]

Obj = dict[str, Any]
COMPONENT = "statefulset-controller"
REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def _ordinal(set_name: str, pod: Obj) -> int:
    """The Pod's ordinal if it is named as a Pod of ``set_name``, else -1."""
    name = pod["metadata"]["name"]
    parent, _, ordinal = name.rpartition("-")
    return int(ordinal) if parent == set_name and ordinal.isdigit() else -1


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _terminating(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _running_and_ready(pod: Obj) -> bool:
    return _phase(pod) == "Running" and is_ready(pod)


def _healthy(pod: Obj) -> bool:
    return _running_and_ready(pod) and not _terminating(pod)


def _revision_of(pod: Obj) -> str:
    return str((pod["metadata"].get("labels") or {}).get(REVISION_LABEL, ""))


class StatefulSetController(Loop):
    name = "statefulset"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("apps", "statefulsets"): own_key, ("", "pods"): self._owner_of_pod,
                ("apps", "controllerrevisions"): controlled_by("StatefulSet")}

    def _owner_of_pod(self, pod: Obj) -> Iterable[ObjKey]:
        return controllers_or_adopters("StatefulSet", self.ctx.objects("apps", "statefulsets"), pod)

    async def sync(self, key: ObjKey) -> float | None:
        stored = self.ctx.objects("apps", "statefulsets").get(key)
        if stored is None:
            return None
        sts = copy.deepcopy(stored)
        ns, name = key
        selector = selector_of(sts)
        candidates = [p for (pns, _), p in self.ctx.objects("", "pods").items()
                      if pns == ns and _ordinal(name, p) >= 0]
        pods = await claim(self.ctx.api, sts, selector, candidates,
                           f"/api/v1/namespaces/{ns}/pods")
        revisions = await self._revisions(sts, selector)
        status, current, update = await self._update(sts, pods, revisions)
        await self._write_status(sts, status)
        await self._truncate_history(sts, revisions, current, update)
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready and status.get("availableReplicas", 0) != _replicas(sts):
            return float(min_ready)
        return None

    # -- revisions ------------------------------------------------------------------------

    async def _revisions(self, sts: Obj, selector: LabelSelector) -> list[Obj]:
        ns, uid = sts["metadata"]["namespace"], sts["metadata"]["uid"]
        mine = [r for (rns, _), r in self.ctx.objects("apps", "controllerrevisions").items()
                if rns == ns and (controller_of(r) or {}).get("uid") == uid]
        orphans = [r for (rns, _), r in self.ctx.objects("apps", "controllerrevisions").items()
                   if rns == ns and controller_of(r) is None]
        if orphans:
            mine.extend(await claim(self.ctx.api, sts, selector, orphans,
                                    f"/apis/apps/v1/namespaces/{ns}/controllerrevisions"))
        return sort_revisions(mine)

    async def _update_revision(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, int]:
        """``getStatefulSetRevisions``: (current, update, collision count)."""
        collisions = int((sts.get("status") or {}).get("collisionCount") or 0)
        data = revision_patch(sts)
        number = max((int(r.get("revision") or 0) for r in revisions), default=0) + 1
        equal = [r for r in revisions if r.get("data") == data]
        if equal and equal[-1] is revisions[-1]:
            update = revisions[-1]
        elif equal:
            meta = equal[-1]["metadata"]
            update = await self.ctx.api.request(
                "PATCH", f"/apis/apps/v1/namespaces/{meta['namespace']}/controllerrevisions/"
                f"{meta['name']}", {"revision": number},
                content_type="application/merge-patch+json")
        else:
            update, collisions = await self._create_revision(sts, data, number, collisions)
        current = next((r for r in revisions if r["metadata"]["name"] == (
            sts.get("status") or {}).get("currentRevision")), update)
        return current, update, collisions

    async def _create_revision(self, sts: Obj, data: Obj, number: int,
                               collisions: int) -> tuple[Obj, int]:
        meta = sts["metadata"]
        labels = dict((((sts.get("spec") or {}).get("template") or {}).get("metadata") or {}
                       ).get("labels") or {})
        while True:
            hash_ = revision_hash(data, collisions)
            revision: Obj = {
                "apiVersion": "apps/v1", "kind": "ControllerRevision",
                "metadata": {"name": f"{meta['name']}-{hash_}", "namespace": meta["namespace"],
                             "labels": {**labels, HASH_LABEL: hash_},
                             "ownerReferences": [owner_reference(sts)]},
                "data": data, "revision": number}
            if meta.get("annotations"):
                revision["metadata"]["annotations"] = dict(meta["annotations"])
            try:
                made = await self.ctx.api.request(
                    "POST", f"/apis/apps/v1/namespaces/{meta['namespace']}/controllerrevisions",
                    revision)
                return made, collisions
            except LoopbackError as err:
                if err.status != 409:
                    raise
                taken = self.ctx.objects("apps", "controllerrevisions").get(
                    (meta["namespace"], revision["metadata"]["name"]))
                if taken is not None and taken.get("data") == data:
                    return taken, collisions
                collisions += 1

    # -- the Pods -------------------------------------------------------------------------

    async def _update(self, sts: Obj, pods: list[Obj], revisions: list[Obj]
                      ) -> tuple[Obj, Obj, Obj]:
        """``updateStatefulSet``: the status, and the current and update revisions."""
        spec = sts.get("spec") or {}
        name = sts["metadata"]["name"]
        current, update, collisions = await self._update_revision(sts, revisions)
        status: Obj = {"observedGeneration": sts["metadata"].get("generation", 0),
                       "currentRevision": current["metadata"]["name"],
                       "updateRevision": update["metadata"]["name"],
                       "collisionCount": collisions}
        count = _replicas(sts)
        replicas: list[Obj | None] = [None] * count
        condemned: list[Obj] = []
        for pod in pods:
            ordinal = _ordinal(name, pod)
            if 0 <= ordinal < count:
                replicas[ordinal] = pod
            elif ordinal >= 0:
                condemned.append(pod)
        condemned.sort(key=lambda p: -_ordinal(name, p))
        self._count(status, sts, current, update, pods)
        if sts["metadata"].get("deletionTimestamp"):
            return status, current, update
        monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        first_unhealthy = next((p for p in [*replicas, *reversed(condemned)]
                                if p is not None and not _healthy(p)), None)
        for ordinal in range(count):
            if await self._process_replica(sts, current, update, replicas, ordinal, monotonic):
                self._count(status, sts, current, update, [*replicas, *condemned])
                return status, current, update
        for pod in condemned:
            if await self._process_condemned(sts, pod, first_unhealthy, monotonic):
                self._count(status, sts, current, update, [*replicas, *condemned])
                return status, current, update
        self._count(status, sts, current, update, [*replicas, *condemned])
        strategy = spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "OnDelete":
            return status, current, update
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        for ordinal in range(count - 1, partition - 1, -1):
            target = replicas[ordinal]
            if target is None:
                continue
            if _revision_of(target) != update["metadata"]["name"] and not _terminating(target):
                await self._delete_pod(sts, target)
                status["currentReplicas"] = status.get("currentReplicas", 0) - 1
                return status, current, update
            if not _healthy(target):
                break
        return status, current, update

    async def _process_replica(self, sts: Obj, current: Obj, update: Obj,
                               replicas: list[Obj | None], ordinal: int, monotonic: bool) -> bool:
        """One Pod of the set's range; whether the sync must stop there."""
        pod = replicas[ordinal]
        if pod is not None and _phase(pod) in ("Failed", "Succeeded"):
            if not _terminating(pod):
                await self._delete_pod(sts, pod)
            return True
        if pod is None:
            pod = replicas[ordinal] = self._new_pod(sts, current, update, ordinal)
            await self._create_pod(sts, pod)
            return monotonic
        if _phase(pod) == "Pending":
            await self._create_claims(sts, pod, record=False)
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        return monotonic and (_terminating(pod) or not _running_and_ready(pod)
                              or not is_available(pod, min_ready, self.ctx.clock.time()))

    async def _process_condemned(self, sts: Obj, pod: Obj, first_unhealthy: Obj | None,
                                 monotonic: bool) -> bool:
        if _terminating(pod):
            return monotonic
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        if monotonic and pod is not first_unhealthy and (
                not _running_and_ready(pod)
                or not is_available(pod, min_ready, self.ctx.clock.time())):
            return True
        await self._delete_pod(sts, pod)
        return monotonic

    def _new_pod(self, sts: Obj, current: Obj, update: Obj, ordinal: int) -> Obj:
        """``newVersionedStatefulSetPod``: at the current revision below the partition."""
        spec = sts.get("spec") or {}
        strategy = spec.get("updateStrategy") or {}
        partition = (strategy.get("rollingUpdate") or {}).get("partition")
        at_current = strategy.get("type", "RollingUpdate") == "RollingUpdate" and (
            ordinal < int((sts.get("status") or {}).get("currentReplicas") or 0)
            if partition is None else ordinal < int(partition))
        revision = current if at_current else update
        template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get(
            "template") or spec.get("template") or {})
        template.pop("$patch", None)
        meta = sts["metadata"]
        name = f"{meta['name']}-{ordinal}"
        tmeta = template.get("metadata") or {}
        labels = {**(tmeta.get("labels") or {}), POD_NAME_LABEL: name,
                  POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision["metadata"]["name"]}
        pod_meta: Obj = {"name": name, "generateName": f"{meta['name']}-", "labels": labels,
                         "ownerReferences": [owner_reference(sts)]}
        for field in ("annotations", "finalizers"):
            if tmeta.get(field):
                pod_meta[field] = copy.deepcopy(tmeta[field])
        pod_spec = copy.deepcopy(template.get("spec") or {})
        claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates") or ()]
        volumes = [{"name": c, "persistentVolumeClaim": {
            "claimName": f"{c}-{meta['name']}-{ordinal}"}} for c in claims]
        volumes += [v for v in pod_spec.get("volumes") or () if v.get("name") not in claims]
        if volumes:
            pod_spec["volumes"] = volumes
        pod_spec["hostname"] = name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": pod_spec}

    async def _create_pod(self, sts: Obj, pod: Obj) -> None:
        meta = sts["metadata"]
        pod_name = pod["metadata"]["name"]
        await self._create_claims(sts, pod, record=True)
        try:
            await self.ctx.api.request("POST", f"/api/v1/namespaces/{meta['namespace']}/pods",
                                       pod)
        except LoopbackError as err:
            if err.status == 409:
                raise
            self.ctx.event(sts, "Warning", "FailedCreate",
                           f"create Pod {pod_name} in StatefulSet {meta['name']} failed error: "
                           f"{_message(err)}", COMPONENT)
            raise
        await self._retain_claims(sts, pod)
        self.ctx.event(sts, "Normal", "SuccessfulCreate",
                       f"create Pod {pod_name} in StatefulSet {meta['name']} successful",
                       COMPONENT)

    async def _delete_pod(self, sts: Obj, pod: Obj) -> None:
        meta = sts["metadata"]
        pod_name = pod["metadata"]["name"]
        try:
            await self.ctx.api.request(
                "DELETE", f"/api/v1/namespaces/{meta['namespace']}/pods/{pod_name}")
        except LoopbackError as err:
            if err.status == 404:
                return
            self.ctx.event(sts, "Warning", "FailedDelete",
                           f"delete Pod {pod_name} in StatefulSet {meta['name']} failed error: "
                           f"{_message(err)}", COMPONENT)
            raise
        self.ctx.event(sts, "Normal", "SuccessfulDelete",
                       f"delete Pod {pod_name} in StatefulSet {meta['name']} successful",
                       COMPONENT)

    # -- claims ---------------------------------------------------------------------------

    def _claims(self, sts: Obj, pod: Obj) -> list[Obj]:
        """``getPersistentVolumeClaims``: the claims a Pod of the set mounts."""
        spec, meta = sts.get("spec") or {}, sts["metadata"]
        ordinal = _ordinal(meta["name"], pod)
        match = ((spec.get("selector") or {}).get("matchLabels") or {})
        out = []
        for template in spec.get("volumeClaimTemplates") or ():
            tmeta = dict(template.get("metadata") or {})
            tmeta.pop("creationTimestamp", None)
            labels = {**(tmeta.get("labels") or {}), **match}
            tmeta.update(name=f"{tmeta.get('name')}-{meta['name']}-{ordinal}",
                         namespace=meta["namespace"])
            if labels:
                tmeta["labels"] = labels
            out.append({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": tmeta,
                        "spec": copy.deepcopy(template.get("spec") or {})})
        return out

    async def _create_claims(self, sts: Obj, pod: Obj, *, record: bool) -> None:
        meta = sts["metadata"]
        ns, pod_name = meta["namespace"], pod["metadata"]["name"]
        stored = self.ctx.objects("", "persistentvolumeclaims")
        for pvc in self._claims(sts, pod):
            claim_name = pvc["metadata"]["name"]
            existing = stored.get((ns, claim_name))
            if existing is not None:
                if existing["metadata"].get("deletionTimestamp"):
                    raise LoopbackError("POST", claim_name, 409, {
                        "message": f"pvc {claim_name} is being deleted"})
                continue
            try:
                await self.ctx.api.request(
                    "POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", pvc)
            except LoopbackError as err:
                self.ctx.event(sts, "Warning", "FailedCreate",
                               f"create Claim {claim_name} for Pod {pod_name} in StatefulSet "
                               f"{meta['name']} failed error: {_message(err)}", COMPONENT)
                raise
            if record:
                self.ctx.event(sts, "Normal", "SuccessfulCreate",
                               f"create Claim {claim_name} Pod {pod_name} in StatefulSet "
                               f"{meta['name']} success", COMPONENT)

    async def _retain_claims(self, sts: Obj, pod: Obj) -> None:
        """The retention policy as owner references: the set's when ``whenDeleted`` is
        Delete, the Pod's when ``whenScaled`` is Delete and the Pod is beyond replicas."""
        policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
        if policy.get("whenDeleted", "Retain") != "Delete":
            return
        meta = sts["metadata"]
        owner = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": meta["name"],
                 "uid": meta["uid"]}
        for pvc in self._claims(sts, pod):
            path = (f"/api/v1/namespaces/{meta['namespace']}/persistentvolumeclaims/"
                    f"{pvc['metadata']['name']}")
            stored = self.ctx.objects("", "persistentvolumeclaims").get(
                (meta["namespace"], pvc["metadata"]["name"]))
            refs = list((stored or {}).get("metadata", {}).get("ownerReferences") or [])
            if stored is None or any(r.get("uid") == meta["uid"] for r in refs):
                continue
            await self.ctx.api.request("PATCH", path, {"metadata": {
                "ownerReferences": [*refs, owner]}},
                content_type="application/merge-patch+json")

    # -- status and history ---------------------------------------------------------------

    def _count(self, status: Obj, sts: Obj, current: Obj, update: Obj,
               pods: Iterable[Obj | None]) -> None:
        """``updateStatus``: the counts of the Pods the server holds."""
        min_ready = int((sts.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.ctx.clock.time()
        counts = dict.fromkeys(("replicas", "readyReplicas", "availableReplicas",
                                "currentReplicas", "updatedReplicas"), 0)
        for pod in pods:
            if pod is None or "uid" not in pod["metadata"]:
                continue  # made this sync: counted once the server has it
            created = bool(_phase(pod))
            counts["replicas"] += created
            if _running_and_ready(pod):
                counts["readyReplicas"] += 1
                counts["availableReplicas"] += is_available(pod, min_ready, now)
            if created and not _terminating(pod):
                counts["currentReplicas"] += _revision_of(pod) == current["metadata"]["name"]
                counts["updatedReplicas"] += _revision_of(pod) == update["metadata"]["name"]
        status.update(counts)

    async def _write_status(self, sts: Obj, status: Obj) -> None:
        spec = sts.get("spec") or {}
        if (spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate" \
                and status["updatedReplicas"] == status["replicas"] == status["readyReplicas"]:
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = sts.get("status") or {}
        fields = ("observedGeneration", "replicas", "currentReplicas", "readyReplicas",
                  "updatedReplicas", "currentRevision", "availableReplicas", "updateRevision")
        if all(old.get(f, 0 if f.endswith(("Replicas", "Generation", "replicas")) else "")
               == status.get(f) for f in fields):
            return
        order = ("observedGeneration", "replicas", "readyReplicas", "currentReplicas",
                 "updatedReplicas", "currentRevision", "updateRevision", "collisionCount",
                 "conditions", "availableReplicas")
        written = {k: status[k] for k in order if k in status and (
            k in ("replicas", "availableReplicas", "collisionCount") or status[k])}
        if old.get("conditions"):
            written["conditions"] = old["conditions"]
        meta = sts["metadata"]
        await self.ctx.api.request(
            "PUT", f"/apis/apps/v1/namespaces/{meta['namespace']}/statefulsets/{meta['name']}"
            "/status", {**sts, "status": written})

    async def _truncate_history(self, sts: Obj, revisions: list[Obj], current: Obj,
                                update: Obj) -> None:
        """Delete the oldest revisions no Pod runs beyond ``revisionHistoryLimit``."""
        ns, name = sts["metadata"]["namespace"], sts["metadata"]["name"]
        used = {_revision_of(p) for (pns, _), p in self.ctx.objects("", "pods").items()
                if pns == ns and _ordinal(name, p) >= 0}
        used |= {current["metadata"]["name"], update["metadata"]["name"]}
        history = [r for r in revisions if r["metadata"]["name"] not in used]
        limit = int((sts.get("spec") or {}).get("revisionHistoryLimit", 10) or 0)
        for revision in history[:max(len(history) - limit, 0)]:
            await self.ctx.api.delete(f"/apis/apps/v1/namespaces/{ns}/controllerrevisions/"
                                      f"{revision['metadata']['name']}")


def _replicas(sts: Obj) -> int:
    value = (sts.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def _message(err: LoopbackError) -> str:
    return str(err.body.get("message", "")) if isinstance(err.body, dict) else str(err.body)
