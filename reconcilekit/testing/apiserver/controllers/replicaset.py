"""kube-controller-manager's replicaset controller.

For each ReplicaSet not being deleted: the active Pods it controls (claimed
by its selector, :mod:`.controller_refs`) are brought to ``spec.replicas``
by creating Pods from its template (named ``<replicaset>-<random>``,
an Event ``SuccessfulCreate`` each) or deleting the least useful ones first
(unscheduled, then pending, not ready, ready for the shortest time, most
restarted, newest; an Event ``SuccessfulDelete`` each), stopping at the
first refused write (a quota, a webhook), which sets the ``ReplicaFailure``
condition until a sync succeeds. Its status counts the Pods it listed before
those writes (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas`` after ``minReadySeconds``) at its ``observedGeneration``;
the controller comes back when a Pod becomes available by the clock.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ...._foundations.selectors import LabelSelector
from ..machinery.unstructured import epoch_seconds, timestamp
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import (
    claim,
    controller_of,
    controllers_or_adopters,
    own_key,
    owner_reference,
    selector_of,
)
from .loopback import LoopbackError
from .pod_control import create_pod, delete_pod, refusal
from .pod_readiness import is_active, is_available, is_ready, ready_since

__all__ = ["ReplicaSetController", "pods_of"]

Obj = dict[str, Any]
COMPONENT = "replicaset-controller"
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def pods_of(owner: Obj, pods: Mapping[ObjKey, Obj]) -> list[Obj]:
    """The Pods of ``owner``'s namespace that it controls or could adopt."""
    meta = owner["metadata"]
    ns, uid = meta["namespace"], meta["uid"]
    out = []
    for (pod_ns, _), pod in pods.items():
        if pod_ns != ns:
            continue
        ref = controller_of(pod)
        if ref is None or ref.get("uid") == uid:
            out.append(pod)
    return out


def _deletion_order(pod: Obj) -> tuple[Any, ...]:
    """Sort key: the Pods to delete first come first (``ActivePods`` ordering)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    since = ready_since(pod)
    restarts = sum(int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ())
    created = epoch_seconds(pod["metadata"].get("creationTimestamp") or "1970-01-01T00:00:00Z")
    return (bool(spec.get("nodeName")), _PHASE_RANK.get(status.get("phase", ""), 0),
            is_ready(pod), -(since or 0.0), -restarts, -created)


class ReplicaSetController(Loop):
    name = "replicaset"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("apps", "replicasets"): own_key, ("", "pods"): self._owner_keys}

    def _owner_keys(self, pod: Obj) -> Iterable[ObjKey]:
        return controllers_or_adopters("ReplicaSet", self.ctx.objects("apps", "replicasets"), pod)

    async def sync(self, key: ObjKey) -> float | None:
        rs = self.ctx.objects("apps", "replicasets").get(key)
        if rs is None:
            return None
        ns = key[0]
        selector = selector_of(rs)
        pods_path = f"/api/v1/namespaces/{ns}/pods"
        candidates = [p for p in pods_of(rs, self.ctx.objects("", "pods")) if is_active(p)]
        pods = await claim(self.ctx.api, rs, selector, candidates, pods_path)
        failure = None
        if not rs["metadata"].get("deletionTimestamp"):
            failure = await self._manage(rs, pods)
        return await self._update_status(key, rs, pods, failure)

    async def _manage(self, rs: Obj, pods: list[Obj]) -> tuple[str, str] | None:
        """Create or delete Pods toward ``spec.replicas``; (reason, message) of a refusal."""
        spec = rs.get("spec") or {}
        diff = len(pods) - int(spec.get("replicas", 1))
        if diff < 0:
            template = spec.get("template") or {}
            tmeta = template.get("metadata") or {}
            pod_meta: Obj = {"generateName": f"{rs['metadata']['name']}-",
                             "ownerReferences": [owner_reference(rs)]}
            for field in ("labels", "annotations", "finalizers"):
                if tmeta.get(field):
                    pod_meta[field] = copy.deepcopy(tmeta[field])
            body = {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                    "spec": copy.deepcopy(template.get("spec") or {})}
            for _ in range(-diff):
                try:
                    await create_pod(self.ctx, rs, body, COMPONENT)
                except LoopbackError as err:
                    return "FailedCreate", refusal(err)
        elif diff > 0:
            for pod in sorted(pods, key=_deletion_order)[:diff]:
                try:
                    await delete_pod(self.ctx, rs, pod, COMPONENT)
                except LoopbackError as err:
                    return "FailedDelete", refusal(err)
        return None

    async def _update_status(self, key: ObjKey, rs: Obj, pods: list[Obj],
                             failure: tuple[str, str] | None) -> float | None:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.ctx.clock.time()
        template_labels = LabelSelector.from_labels(
            ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {})
        status = copy.deepcopy(rs.get("status") or {})
        ready = [p for p in pods if is_ready(p)]
        available = [p for p in ready if is_available(p, min_ready, now)]
        status["replicas"] = len(pods)
        status["fullyLabeledReplicas"] = sum(
            template_labels.matches(p["metadata"].get("labels") or {}) for p in pods)
        status["readyReplicas"] = len(ready)
        status["availableReplicas"] = len(available)
        conditions = [c for c in status.get("conditions") or ()
                      if c.get("type") != "ReplicaFailure"]
        if failure is not None:
            old = next((c for c in status.get("conditions") or ()
                        if c.get("type") == "ReplicaFailure"), None)
            conditions.append(old or {"type": "ReplicaFailure", "status": "True",
                                      "lastTransitionTime": timestamp(now),
                                      "reason": failure[0], "message": failure[1]})
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
        status["observedGeneration"] = rs["metadata"].get("generation", 1)
        order = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
                 "observedGeneration", "conditions")
        status = {k: status[k] for k in order
                  if k in status and (k == "replicas" or status[k] not in (0, None))}
        if status != (rs.get("status") or {}):
            ns, name = key
            body = {**rs, "status": status}
            await self.ctx.api.request(
                "PUT", f"/apis/apps/v1/namespaces/{ns}/replicasets/{name}/status", body)
        replicas = int(spec.get("replicas", 1))
        if failure is None and min_ready and len(ready) == replicas and (
                len(available) != replicas):
            return float(min_ready)
        return None
