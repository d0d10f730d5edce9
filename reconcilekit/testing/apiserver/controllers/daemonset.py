"""kube-controller-manager's daemonset controller.

A DaemonSet runs one Pod (``<daemonset>-<random>``) on each Node its template
may run on: the template's ``nodeSelector`` and required node affinity match
the Node's labels, and its tolerations (with those every daemon Pod gets:
``not-ready`` and ``unreachable`` NoExecute, the ``*-pressure`` and
``unschedulable`` NoSchedule taints, ``network-unavailable`` with host
networking) tolerate the Node's NoSchedule and NoExecute taints (a Pod
already there stays through a NoSchedule taint). Each Pod
requires its Node by affinity on ``metadata.name`` (the scheduler, or a
``NodeSimulator``, binds it there) and carries the ``controller-revision-hash``
and ``pod-template-generation`` labels; a Pod on a Node it may no longer run
on, or a second one on a Node, is deleted. ``RollingUpdate`` replaces Pods of
an older template at most ``maxUnavailable`` unavailable at a time;
``OnDelete`` waits for them to be deleted. The status counts scheduled,
misscheduled, ready, available and updated Pods.

The template's revision hash is an FNV hash of its JSON, where
kube-controller-manager hashes its Go structure: the label's value differs.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import controlled_by, controller_of, own_key, owner_reference
from .deployment_rollout import template_hash
from .pod_control import create_pod, delete_pod
from .pod_readiness import is_available, is_ready

__all__ = ["DaemonSetController"]

Obj = dict[str, Any]
COMPONENT = "daemonset-controller"
REVISION_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
_DAEMON_TOLERATIONS = (
    ("node.kubernetes.io/not-ready", "NoExecute"), ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"))


def daemon_tolerations(spec: Obj) -> list[Obj]:
    """The template's tolerations with those every daemon Pod gets added."""
    out = list(spec.get("tolerations") or [])
    wanted = list(_DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in out):
            out.append({"key": key, "operator": "Exists", "effect": effect})
    return out


def _tolerates(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _term_matches(term: Obj, node: Obj) -> bool:
    labels = node["metadata"].get("labels") or {}
    for expr in term.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (
                op == "NotIn" and labels.get(key) in values) or (
                op == "Exists" and key not in labels) or (
                op == "DoesNotExist" and key in labels):
            return False
    for field in term.get("matchFields") or ():
        if field.get("key") == "metadata.name":
            inside = node["metadata"]["name"] in (field.get("values") or [])
            if inside != (field.get("operator") == "In"):
                return False
    return True


def should_run(pod_spec: Obj, node: Obj, *, effects: tuple[str, ...] = (
        "NoSchedule", "NoExecute")) -> bool:
    """Whether a daemon Pod of this spec may run on ``node``, as far as taints of
    ``effects`` go (``("NoExecute",)``: whether one running there may stay)."""
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    terms = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if terms and not any(_term_matches(t, node) for t in terms):
        return False
    tolerations = daemon_tolerations(pod_spec)
    return all(_tolerates(tolerations, taint)
               for taint in (node.get("spec") or {}).get("taints") or ()
               if taint.get("effect") in effects)


class DaemonSetController(Loop):
    name = "daemonset"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("apps", "daemonsets"): own_key, ("", "pods"): controlled_by("DaemonSet"),
                ("", "nodes"): self._every_daemonset}

    def _every_daemonset(self, _node: Obj) -> Iterable[ObjKey]:
        return list(self.ctx.objects("apps", "daemonsets"))

    async def sync(self, key: ObjKey) -> float | None:
        stored = self.ctx.objects("apps", "daemonsets").get(key)
        if stored is None:
            return None
        ds = copy.deepcopy(stored)
        ns, uid = key[0], ds["metadata"]["uid"]
        spec = ds.get("spec") or {}
        template = spec.get("template") or {}
        revision = template_hash(template, (ds.get("status") or {}).get("collisionCount"))
        generation = str(ds["metadata"].get("generation", 1))
        pods = [p for (pns, _), p in sorted(self.ctx.objects("", "pods").items())
                if pns == ns and (controller_of(p) or {}).get("uid") == uid]
        nodes = sorted(self.ctx.objects("", "nodes").values(),
                       key=lambda n: n["metadata"]["name"])
        by_node: dict[str, list[Obj]] = {}
        for pod in pods:
            if not pod["metadata"].get("deletionTimestamp"):
                by_node.setdefault(_node_of(pod), []).append(pod)
        wanted = {n["metadata"]["name"] for n in nodes
                  if should_run(template.get("spec") or {}, n)}
        kept = {n["metadata"]["name"] for n in nodes  # a NoSchedule taint evicts no one
                if should_run(template.get("spec") or {}, n, effects=("NoExecute",))}
        if not ds["metadata"].get("deletionTimestamp"):
            for node in sorted(wanted - set(by_node)):
                await self._create(ds, node, revision, generation)
            for node, here in by_node.items():
                extra = here if node not in kept else sorted(
                    here, key=lambda p: p["metadata"].get("creationTimestamp") or "")[1:]
                for pod in extra:
                    await self._delete(ds, pod)
            await self._roll(ds, by_node, wanted, revision)
        return await self._status(ds, pods, wanted, revision)

    async def _roll(self, ds: Obj, by_node: dict[str, list[Obj]], wanted: set[str],
                    revision: str) -> None:
        """Replace Pods of older templates, ``maxUnavailable`` at a time."""
        strategy = (ds.get("spec") or {}).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return
        rolling = strategy.get("rollingUpdate") or {}
        most = rolling.get("maxUnavailable", 1)
        most = math.floor(int(str(most)[:-1]) * len(wanted) / 100) if str(most).endswith(
            "%") else int(most)
        most = max(most, 1) if not rolling.get("maxSurge") else most
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.ctx.clock.time()
        current = [by_node.get(n, [None])[0] for n in sorted(wanted)]
        unavailable = sum(1 for p in current if p is None or not is_available(p, min_ready, now))
        for pod in current:
            if pod is None or _label(pod, REVISION_LABEL) == revision:
                continue
            if unavailable >= most and is_available(pod, min_ready, now):
                continue
            await self._delete(ds, pod)
            if is_available(pod, min_ready, now):
                unavailable += 1

    async def _create(self, ds: Obj, node: str, revision: str, generation: str) -> None:
        meta = ds["metadata"]
        template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        pod_spec = template.get("spec") or {}
        affinity = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [{
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}
        pod_spec["tolerations"] = daemon_tolerations(pod_spec)
        pod_meta: Obj = {"generateName": f"{meta['name']}-",
                         "labels": {**(tmeta.get("labels") or {}), REVISION_LABEL: revision,
                                    GENERATION_LABEL: generation},
                         "ownerReferences": [owner_reference(ds)]}
        for field in ("annotations", "finalizers"):
            if tmeta.get(field):
                pod_meta[field] = tmeta[field]
        await create_pod(self.ctx, ds, {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                                         "spec": pod_spec}, COMPONENT)

    async def _delete(self, ds: Obj, pod: Obj) -> None:
        await delete_pod(self.ctx, ds, pod, COMPONENT)

    async def _status(self, ds: Obj, pods: list[Obj], wanted: set[str],
                      revision: str) -> float | None:
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = self.ctx.clock.time()
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        scheduled = {_node_of(p) for p in live if _node_of(p)}
        on_wanted = [p for p in live if _node_of(p) in wanted]
        ready = [p for p in on_wanted if is_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, now)]
        updated = [p for p in on_wanted if _label(p, REVISION_LABEL) == revision]
        old = ds.get("status") or {}
        status: Obj = {"currentNumberScheduled": len(scheduled & wanted),
                       "numberMisscheduled": len(scheduled - wanted),
                       "desiredNumberScheduled": len(wanted), "numberReady": len(ready),
                       "observedGeneration": ds["metadata"].get("generation", 1),
                       "updatedNumberScheduled": len(updated),
                       "numberAvailable": len(available),
                       "numberUnavailable": len(wanted) - len(available)}
        status = {k: v for k, v in status.items() if v or k in (
            "currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
            "numberReady")}
        for field in ("collisionCount", "conditions"):
            if field in old:
                status[field] = old[field]
        if status != old:
            meta = ds["metadata"]
            await self.ctx.api.request(
                "PUT", f"/apis/apps/v1/namespaces/{meta['namespace']}/daemonsets/"
                f"{meta['name']}/status", {**ds, "status": status})
        if min_ready and len(ready) != len(available):
            return float(min_ready)
        return None


def _node_of(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    for term in (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
            "nodeSelectorTerms") or ():
        for field in term.get("matchFields") or ():
            if field.get("key") == "metadata.name" and field.get("values"):
                return str(field["values"][0])
    return ""


def _label(pod: Obj, key: str) -> str:
    return str((pod["metadata"].get("labels") or {}).get(key, ""))
