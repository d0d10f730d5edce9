"""kube-controller-manager's disruption controller: a PodDisruptionBudget's status.

The Pods a budget's selector picks in its namespace are counted: healthy
when Ready and not being deleted. How many are expected depends on the
budget: with an integer ``minAvailable``, the Pods found; otherwise (a
percentage, or ``maxUnavailable``) the replicas their controllers ask for
(a ReplicaSet's, or its Deployment's when it has one; a StatefulSet's;
a ReplicationController's; a custom resource's scale). Then
``desiredHealthy`` is ``minAvailable`` (a percentage rounded up) or
``expectedPods - maxUnavailable``, ``disruptionsAllowed`` what the healthy
Pods exceed it by, and the ``DisruptionAllowed`` condition says whether any
is (``SufficientPods``) or not (``InsufficientPods``), at the budget's
``observedGeneration``.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.unstructured import timestamp
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import controller_of, own_key, selector_of
from .pod_readiness import is_ready

__all__ = ["DisruptionController"]

Obj = dict[str, Any]
_SCALED = {"ReplicaSet": ("apps", "replicasets"), "StatefulSet": ("apps", "statefulsets"),
           "ReplicationController": ("", "replicationcontrollers"),
           "Deployment": ("apps", "deployments")}


def _scaled(value: Any, total: int) -> int:
    text = str(value)
    if text.endswith("%"):
        return math.ceil(int(text[:-1]) * total / 100)
    return int(text)


class DisruptionController(Loop):
    name = "disruption"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("policy", "poddisruptionbudgets"): own_key, ("", "pods"): self._budgets_of,
                ("apps", "replicasets"): self._budgets_in_namespace,
                ("apps", "statefulsets"): self._budgets_in_namespace,
                ("apps", "deployments"): self._budgets_in_namespace}

    def _budgets_of(self, pod: Obj) -> Iterable[ObjKey]:
        ns = pod["metadata"].get("namespace", "")
        labels = pod["metadata"].get("labels") or {}
        return [key for key, pdb in self.ctx.objects("policy", "poddisruptionbudgets").items()
                if key[0] == ns and selector_of(pdb).matches(labels)]

    def _budgets_in_namespace(self, obj: Obj) -> Iterable[ObjKey]:
        ns = obj["metadata"].get("namespace", "")
        return [key for key in self.ctx.objects("policy", "poddisruptionbudgets") if key[0] == ns]

    def _expected(self, pods: list[Obj]) -> int:
        """The replicas the Pods' controllers ask for (``getExpectedScale``)."""
        seen: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                continue
            ns = pod["metadata"]["namespace"]
            table = _SCALED.get(str(ref.get("kind")))
            owner = self.ctx.objects(*table).get((ns, ref["name"])) if table else None
            if owner is None or owner["metadata"]["uid"] != ref.get("uid"):
                continue
            upper = controller_of(owner)
            if ref.get("kind") == "ReplicaSet" and upper is not None and upper.get(
                    "kind") == "Deployment":
                deployment = self.ctx.objects("apps", "deployments").get((ns, upper["name"]))
                if deployment is not None:
                    owner = deployment
            replicas = (owner.get("spec") or {}).get("replicas")
            seen[owner["metadata"]["uid"]] = 1 if replicas is None else int(replicas)
        return sum(seen.values())

    async def sync(self, key: ObjKey) -> float | None:
        pdb = self.ctx.objects("policy", "poddisruptionbudgets").get(key)
        if pdb is None or pdb["metadata"].get("deletionTimestamp"):
            return None
        spec = pdb.get("spec") or {}
        selector = selector_of(pdb)
        pods = [p for (ns, _), p in sorted(self.ctx.objects("", "pods").items())
                if ns == key[0] and selector.matches(p["metadata"].get("labels") or {})]
        healthy = sum(1 for p in pods if is_ready(p) and not p["metadata"].get(
            "deletionTimestamp"))
        if spec.get("maxUnavailable") is not None:
            expected = self._expected(pods)
            desired = max(expected - _scaled(spec["maxUnavailable"], expected), 0)
        elif isinstance(spec.get("minAvailable"), int):
            expected = len(pods)
            desired = int(spec["minAvailable"])
        elif spec.get("minAvailable") is not None:
            expected = self._expected(pods)
            desired = _scaled(spec["minAvailable"], expected)
        else:
            expected, desired = len(pods), 0
        allowed = max(healthy - desired, 0) if expected else 0
        old = pdb.get("status") or {}
        generation = pdb["metadata"].get("generation", 0)
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        previous = next((c for c in old.get("conditions") or ()
                         if c.get("type") == "DisruptionAllowed"), None)
        status_value = "True" if allowed > 0 else "False"
        condition = {"type": "DisruptionAllowed", "status": status_value,
                     "observedGeneration": generation,
                     "lastTransitionTime": previous["lastTransitionTime"] if previous and (
                         previous.get("status") == status_value) else timestamp(
                         self.ctx.clock.time()),
                     "reason": reason, "message": ""}
        status: Obj = {"observedGeneration": generation, "disruptionsAllowed": allowed,
                       "currentHealthy": healthy, "desiredHealthy": desired,
                       "expectedPods": expected, "conditions": [condition]}
        if old.get("disruptedPods"):
            status["disruptedPods"] = old["disruptedPods"]
        if all(old.get(k) == status[k] for k in ("observedGeneration", "disruptionsAllowed",
                                                 "currentHealthy", "desiredHealthy",
                                                 "expectedPods")) and (
                previous is not None and previous.get("status") == status_value
                and previous.get("reason") == reason):
            return None
        meta = pdb["metadata"]
        await self.ctx.api.request(
            "PUT", f"/apis/policy/v1/namespaces/{meta['namespace']}/poddisruptionbudgets/"
            f"{meta['name']}/status", {**copy.deepcopy(pdb), "status": status})
        return None
