"""kube-controller-manager's deployment controller.

A Deployment runs its Pods through ReplicaSets: the one whose template is
the Deployment's (but for its ``pod-template-hash`` label) is the new one,
made as ``<deployment>-<hash>`` when there is none; the others are old. Each
sync, as kube-controller-manager's ``syncDeployment``:

* claims the ReplicaSets its selector picks (:mod:`.controller_refs`);
* while paused, or when ``spec.replicas`` changed (a ReplicaSet's
  ``desired-replicas`` annotation differs), only scales, proportionally
  across the active ReplicaSets;
* otherwise rolls out: ``RollingUpdate`` scales the new ReplicaSet up within
  ``maxSurge`` and the old ones down within ``maxUnavailable`` of the
  available Pods; ``Recreate`` scales the old ones to 0, waits for their
  Pods to go, then scales the new one up;
* numbers revisions (``deployment.kubernetes.io/revision``, on the
  Deployment and each ReplicaSet, ``revision-history`` when an old template
  comes back, which is how ``kubectl rollout undo`` works), deletes the
  oldest unused ReplicaSets beyond ``revisionHistoryLimit``;
* writes the status: counts, ``observedGeneration``, ``Available`` and
  ``Progressing`` (``ProgressDeadlineExceeded`` on the clock once
  ``progressDeadlineSeconds`` pass without progress), ``ReplicaFailure``
  from its ReplicaSets; Events ``ScalingReplicaSet``.

Where kube-controller-manager writes a Deployment twice from one read (and
its second write conflicts and is retried), this controller writes from the
answer of the first; the objects end the same.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from ..machinery.unstructured import epoch_seconds
from ..storage.versioned_store import ObjKey, TableKey
from . import deployment_rollout as util
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

__all__ = ["DeploymentController"]

Obj = dict[str, Any]
COMPONENT = "deployment-controller"


def _created(obj: Obj) -> tuple[float, str]:
    meta = obj["metadata"]
    return epoch_seconds(meta.get("creationTimestamp") or "1970-01-01T00:00:00Z"), meta["name"]


def _template(obj: Obj) -> Obj:
    return (obj.get("spec") or {}).get("template") or {}


def _status(obj: Obj, field: str) -> int:
    return int((obj.get("status") or {}).get(field) or 0)


def _active(rss: Iterable[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and util.replicas(rs) > 0]


class DeploymentController(Loop):
    name = "deployment"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("apps", "deployments"): own_key, ("apps", "replicasets"): self._rs_owner,
                ("", "pods"): self._pod_owner}

    def _rs_owner(self, rs: Obj) -> Iterable[ObjKey]:
        return controllers_or_adopters("Deployment", self.ctx.objects("apps", "deployments"), rs)

    def _pod_owner(self, pod: Obj) -> Iterable[ObjKey]:
        """A Recreate rollout waits for the old Pods to go: their changes wake it."""
        ref = controller_of(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return []
        ns = pod["metadata"].get("namespace", "")
        rs = self.ctx.objects("apps", "replicasets").get((ns, ref["name"]))
        owner = controller_of(rs) if rs is not None else None
        if owner is None or owner.get("kind") != "Deployment":
            return []
        d = self.ctx.objects("apps", "deployments").get((ns, owner["name"]))
        recreate = d is not None and ((d.get("spec") or {}).get("strategy") or {}).get(
            "type") == "Recreate"
        return [(ns, owner["name"])] if recreate else []

    # -- syncDeployment -------------------------------------------------------------------

    async def sync(self, key: ObjKey) -> float | None:
        stored = self.ctx.objects("apps", "deployments").get(key)
        if stored is None:
            return None
        d = copy.deepcopy(stored)
        ns = key[0]
        if (d.get("spec") or {}).get("selector") == {}:
            self.ctx.event(d, "Warning", "SelectingAll", "This deployment is selecting all "
                           "pods. A non-empty selector is required.", COMPONENT)
            if _status(d, "observedGeneration") < d["metadata"].get("generation", 0):
                d.setdefault("status", {})["observedGeneration"] = d["metadata"]["generation"]
                await self._write_status(d)
            return None
        path = f"/apis/apps/v1/namespaces/{ns}/replicasets"
        candidates = [rs for rs in self.ctx.objects("apps", "replicasets").values()
                      if rs["metadata"].get("namespace") == ns]
        rss = await claim(self.ctx.api, d, selector_of(d), candidates, path)
        rss.sort(key=_created)
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rss = await self._new_and_old(d, rss, create=False)
            await self._sync_status(d, [*old_rss, new_rs], new_rs)
            return None
        d = await self._check_paused(d)
        if (d.get("spec") or {}).get("paused") or await self._scaling_event(d, rss):
            return await self._scale_and_sync(d, rss)
        if ((d.get("spec") or {}).get("strategy") or {}).get("type") == "Recreate":
            return await self._recreate(d, rss)
        return await self._rolling(d, rss)

    # -- the ReplicaSets --------------------------------------------------------------------

    async def _new_and_old(self, d: Obj, rss: list[Obj], *, create: bool
                           ) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (made if ``create``)
        and the old ones. ``d`` is brought up to date with what this writes."""
        existing = next((rs for rs in rss if util.equal_ignoring_hash(
            _template(rs), _template(d))), None)
        old = [rs for rs in rss if rs is not existing]
        new_revision = max((util.revision(rs) for rs in old), default=0) + 1
        if existing is not None:
            return await self._update_new(d, existing, new_revision), old
        if not create:
            return None, old
        return await self._create_new(d, old, new_revision), old

    async def _update_new(self, d: Obj, rs: Obj, new_revision: int) -> Obj:
        rs = copy.deepcopy(rs)
        spec = d.get("spec") or {}
        changed = util.set_new_rs_annotations(d, rs, new_revision, exists=True)
        min_ready = spec.get("minReadySeconds", 0) or 0
        if changed or (rs["spec"].get("minReadySeconds", 0) or 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return await self._write_rs(rs)
        needs_update = self._set_revision(d, rs)
        if util.has_progress_deadline(d) and util.condition(d.get("status") or {},
                                                            "Progressing") is None:
            util.set_condition(d.setdefault("status", {}), util.new_condition(
                "Progressing", "True", "FoundNewReplicaSet",
                f'Found new replica set "{rs["metadata"]["name"]}"', self.ctx.clock.time()))
            needs_update = True
        if needs_update:
            await self._write_status(d)
        return rs

    async def _create_new(self, d: Obj, old: list[Obj], new_revision: int) -> Obj | None:
        meta, spec = d["metadata"], d.get("spec") or {}
        status = d.setdefault("status", {})
        template = copy.deepcopy(_template(d))
        hash_ = util.template_hash(template, status.get("collisionCount"))
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), util.HASH_LABEL: hash_}
        selector = copy.deepcopy(spec.get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), util.HASH_LABEL: hash_}
        name = f"{meta['name']}-{hash_}"
        rs: Obj = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": name, "namespace": meta["namespace"],
                                "labels": dict(tmeta["labels"]),
                                "ownerReferences": [owner_reference(d)]},
                   "spec": {"replicas": 0, "minReadySeconds": spec.get("minReadySeconds", 0) or 0,
                            "selector": selector, "template": template}}
        count = util.new_rs_replicas(d, [*old, rs], rs)
        rs["spec"]["replicas"] = count
        util.set_new_rs_annotations(d, rs, new_revision, exists=False)
        try:
            made = await self.ctx.api.request(
                "POST", f"/apis/apps/v1/namespaces/{meta['namespace']}/replicasets", rs)
        except LoopbackError as err:
            if err.status != 409:
                raise
            taken = self.ctx.objects("apps", "replicasets").get((meta["namespace"], name))
            if taken is not None and controller_of(taken) is not None and (
                    controller_of(taken) or {}).get("uid") == meta["uid"] and (
                    util.equal_ignoring_hash(_template(taken), _template(d))):
                return taken
            status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
            await self._write_status(d)
            raise
        if count > 0:
            self.ctx.event(d, "Normal", "ScalingReplicaSet",
                           f"Scaled up replica set {name} to {count}", COMPONENT)
        self._set_revision(d, made)
        if util.has_progress_deadline(d):
            util.set_condition(status, util.new_condition(
                "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{name}"',
                self.ctx.clock.time()))
        await self._write_status(d)
        return made

    @staticmethod
    def _set_revision(d: Obj, rs: Obj) -> bool:
        value = (rs["metadata"].get("annotations") or {}).get(util.REVISION)
        annotations = d["metadata"].setdefault("annotations", {})
        if value is None or annotations.get(util.REVISION) == value:
            return False
        annotations[util.REVISION] = value
        return True

    async def _scale(self, d: Obj, rs: Obj, count: int) -> tuple[bool, Obj]:
        """``scaleReplicaSetAndRecordEvent``: the size and replica annotations."""
        most = util.replicas(d) + util.max_surge(d)
        resize = util.replicas(rs) != count
        copy_ = copy.deepcopy(rs)
        annotate = util.set_replicas_annotations(copy_, util.replicas(d), most)
        if not resize and not annotate:
            return False, rs
        copy_["spec"]["replicas"] = count
        written = await self._write_rs(copy_)
        if resize:
            direction = "up" if util.replicas(rs) < count else "down"
            self.ctx.event(d, "Normal", "ScalingReplicaSet",
                           f"Scaled {direction} replica set {rs['metadata']['name']} to {count} "
                           f"from {util.replicas(rs)}", COMPONENT)
        return resize, written

    # -- strategies -----------------------------------------------------------------------

    async def _rolling(self, d: Obj, rss: list[Obj]) -> float | None:
        new_rs, old_rss = await self._new_and_old(d, rss, create=True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        # reconcileNewReplicaSet
        want = util.replicas(d)
        if util.replicas(new_rs) != want:
            count = want if util.replicas(new_rs) > want else util.new_rs_replicas(
                d, all_rss, new_rs)
            scaled, new_rs = await self._scale(d, new_rs, count)
            if scaled:
                return await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)
        if await self._scale_down_old(d, old_rss, new_rs):
            return await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)
        if util.complete(d, d.get("status") or {}):
            await self._cleanup(d, old_rss)
        return await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)

    async def _scale_down_old(self, d: Obj, old_rss: list[Obj], new_rs: Obj) -> bool:
        """``reconcileOldReplicaSets``; ``old_rss`` updated in place."""
        if sum(util.replicas(rs) for rs in old_rss) == 0:
            return False
        all_count = sum(util.replicas(rs) for rs in [*old_rss, new_rs])
        min_available = util.replicas(d) - util.max_unavailable(d)
        new_unavailable = util.replicas(new_rs) - _status(new_rs, "availableReplicas")
        most = all_count - min_available - new_unavailable
        if most <= 0:
            return False
        done = 0
        order = sorted(range(len(old_rss)), key=lambda i: _created(old_rss[i]))
        for i in order:  # cleanupUnhealthyReplicas
            rs = old_rss[i]
            if done >= most:
                break
            unhealthy = util.replicas(rs) - _status(rs, "availableReplicas")
            if util.replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(most - done, unhealthy)
            _, old_rss[i] = await self._scale(d, rs, util.replicas(rs) - down)
            done += down
        available = sum(_status(rs, "availableReplicas") for rs in [*old_rss, new_rs])
        total_down = available - min_available
        scaled = 0
        for i in order:  # scaleDownOldReplicaSetsForRollingUpdate
            rs = old_rss[i]
            if total_down <= 0 or scaled >= total_down:
                break
            if util.replicas(rs) == 0:
                continue
            down = min(util.replicas(rs), total_down - scaled)
            _, old_rss[i] = await self._scale(d, rs, util.replicas(rs) - down)
            scaled += down
        return done + scaled > 0

    async def _recreate(self, d: Obj, rss: list[Obj]) -> float | None:
        new_rs, old_rss = await self._new_and_old(d, rss, create=False)
        scaled = False
        for i, rs in enumerate(old_rss):
            if util.replicas(rs) > 0:
                changed, old_rss[i] = await self._scale(d, rs, 0)
                scaled = scaled or changed
        if scaled or self._old_pods_running(new_rs, old_rss):
            return await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)
        if new_rs is None:
            new_rs, old_rss = await self._new_and_old(d, [*old_rss], create=True)
            assert new_rs is not None
        if util.replicas(new_rs) != util.replicas(d):
            _, new_rs = await self._scale(d, new_rs, util.replicas(d))
        if util.complete(d, d.get("status") or {}):
            await self._cleanup(d, old_rss)
        return await self._sync_rollout_status(d, [*old_rss, new_rs], new_rs)

    def _old_pods_running(self, new_rs: Obj | None, old_rss: list[Obj]) -> bool:
        if any(_status(rs, "replicas") > 0 for rs in old_rss):
            return True
        uids = {rs["metadata"]["uid"] for rs in old_rss}
        for pod in self.ctx.objects("", "pods").values():
            ref = controller_of(pod)
            if ref is not None and ref.get("uid") in uids and (
                    (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded")):
                return True
        return False

    # -- scaling (paused, or replicas changed) ----------------------------------------------

    async def _scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        new_rs, old_rss = await self._new_and_old(d, rss, create=False)
        for rs in _active([*old_rss, new_rs]):
            desired = (rs["metadata"].get("annotations") or {}).get(util.DESIRED_REPLICAS)
            if desired is not None and desired.isdigit() and int(desired) != util.replicas(d):
                return True
        return False

    async def _scale_and_sync(self, d: Obj, rss: list[Obj]) -> float | None:
        new_rs, old_rss = await self._new_and_old(d, rss, create=False)
        new_rs, old_rss = await self._scale_all(d, new_rs, old_rss)
        if (d.get("spec") or {}).get("paused"):
            await self._cleanup(d, old_rss)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)
        return None

    async def _scale_all(self, d: Obj, new_rs: Obj | None, old_rss: list[Obj]
                         ) -> tuple[Obj | None, list[Obj]]:
        """``scale``: the one active ReplicaSet to ``spec.replicas``, or all in proportion."""
        want = util.replicas(d)
        newest_first = sorted(old_rss, key=_created, reverse=True)
        active = _active([*newest_first, new_rs])
        if len(active) <= 1:
            target = active[0] if active else (new_rs if new_rs is not None else (
                newest_first[0] if newest_first else None))
            if target is None or util.replicas(target) == want:
                return new_rs, old_rss
            _, written = await self._scale(d, target, want)
            return _replace(new_rs, old_rss, target, written)
        if new_rs is not None and _saturated(d, new_rs):
            for rs in _active(old_rss):
                _, written = await self._scale(d, rs, 0)
                new_rs, old_rss = _replace(new_rs, old_rss, rs, written)
            return new_rs, old_rss
        if (((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate")
                != "RollingUpdate"):
            return new_rs, old_rss
        all_rss = _active([*old_rss, new_rs])
        allowed = want + util.max_surge(d) if want > 0 else 0
        to_add = allowed - sum(util.replicas(rs) for rs in all_rss)
        if to_add > 0:  # ReplicaSetsBySizeNewer / BySizeOlder
            all_rss.sort(key=lambda rs: (-util.replicas(rs), -_created(rs)[0]))
        elif to_add < 0:
            all_rss.sort(key=lambda rs: (-util.replicas(rs), _created(rs)))
        sizes: list[int] = []
        added = 0
        for rs in all_rss:
            part = self._proportion(d, rs, to_add, added) if to_add else 0
            sizes.append(util.replicas(rs) + part)
            added += part
        if all_rss and to_add:
            sizes[0] = max(sizes[0] + to_add - added, 0)
        for rs, size in zip(all_rss, sizes, strict=True):
            _, written = await self._scale(d, rs, size)
            new_rs, old_rss = _replace(new_rs, old_rss, rs, written)
        return new_rs, old_rss

    @staticmethod
    def _proportion(d: Obj, rs: Obj, to_add: int, added: int) -> int:
        if util.replicas(rs) == 0 or to_add == added:
            return 0
        if util.replicas(d) == 0:
            fraction = -util.replicas(rs)
        else:
            total = util.replicas(d) + util.max_surge(d)
            annotated = (rs["metadata"].get("annotations") or {}).get(util.MAX_REPLICAS, "")
            base = int(annotated) if annotated.isdigit() else _status(d, "replicas")
            fraction = (round(util.replicas(rs) * total / base) - util.replicas(rs)
                        if base else 0)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    # -- history --------------------------------------------------------------------------

    async def _cleanup(self, d: Obj, old_rss: list[Obj]) -> None:
        """Delete the oldest unused ReplicaSets beyond ``revisionHistoryLimit``."""
        limit = (d.get("spec") or {}).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old_rss if not rs["metadata"].get("deletionTimestamp")]
        extra = len(alive) - int(limit)
        if extra <= 0:
            return
        alive.sort(key=lambda rs: (util.revision(rs), _created(rs)))
        for rs in alive[:extra]:
            meta = rs["metadata"]
            if _status(rs, "replicas") or util.replicas(rs) or (
                    meta.get("generation", 0) > _status(rs, "observedGeneration")):
                continue
            await self.ctx.api.delete(
                f"/apis/apps/v1/namespaces/{meta['namespace']}/replicasets/{meta['name']}")

    # -- status ---------------------------------------------------------------------------

    async def _check_paused(self, d: Obj) -> Obj:
        if not util.has_progress_deadline(d):
            return d
        status = d.setdefault("status", {})
        cond = util.condition(status, "Progressing")
        if cond is not None and cond.get("reason") == "ProgressDeadlineExceeded":
            return d
        paused = bool((d.get("spec") or {}).get("paused"))
        shown = cond is not None and cond.get("reason") == "DeploymentPaused"
        if paused == shown:
            return d
        reason, message = (("DeploymentPaused", "Deployment is paused") if paused else
                           ("DeploymentResumed", "Deployment is resumed"))
        util.set_condition(status, util.new_condition("Progressing", "Unknown", reason, message,
                                                      self.ctx.clock.time()))
        await self._write_status(d)
        return d

    def _calculate_status(self, d: Obj, all_rss: list[Obj | None], new_rs: Obj | None) -> Obj:
        rss = [rs for rs in all_rss if rs is not None]
        available = sum(_status(rs, "availableReplicas") for rs in rss)
        total = sum(util.replicas(rs) for rs in rss)
        old = d.get("status") or {}
        status: Obj = {
            "observedGeneration": d["metadata"].get("generation", 0),
            "replicas": sum(_status(rs, "replicas") for rs in rss),
            "updatedReplicas": _status(new_rs, "replicas") if new_rs is not None else 0,
            "readyReplicas": sum(_status(rs, "readyReplicas") for rs in rss),
            "availableReplicas": available,
            "unavailableReplicas": max(total - available, 0),
            "collisionCount": old.get("collisionCount"),
        }
        status = {k: v for k, v in status.items() if v}
        if old.get("conditions"):
            status["conditions"] = copy.deepcopy(old["conditions"])
        now = self.ctx.clock.time()
        if available >= util.replicas(d) - util.max_unavailable(d):
            util.set_condition(status, util.new_condition(
                "Available", "True", "MinimumReplicasAvailable",
                "Deployment has minimum availability.", now))
        else:
            util.set_condition(status, util.new_condition(
                "Available", "False", "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.", now))
        return status

    async def _sync_status(self, d: Obj, all_rss: list[Obj | None], new_rs: Obj | None) -> None:
        status = self._calculate_status(d, all_rss, new_rs)
        if status != (d.get("status") or {}):
            d["status"] = status
            await self._write_status(d)

    async def _sync_rollout_status(self, d: Obj, all_rss: list[Obj | None],
                                   new_rs: Obj | None) -> float | None:
        status = self._calculate_status(d, all_rss, new_rs)
        now = self.ctx.clock.time()
        deadline = util.has_progress_deadline(d)
        if not deadline:
            util.remove_condition(status, "Progressing")
        current = util.condition(d.get("status") or {}, "Progressing")
        finished = status.get("replicas", 0) == status.get("updatedReplicas", 0) and (
            current is not None and current.get("reason") == "NewReplicaSetAvailable")
        what = (f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs is not None
                else f'Deployment "{d["metadata"]["name"]}"')
        if deadline and not finished:
            if util.complete(d, status):
                util.set_condition(status, util.new_condition(
                    "Progressing", "True", "NewReplicaSetAvailable",
                    f"{what} has successfully progressed.", now))
            elif util.progressing(d, status):
                cond = util.new_condition("Progressing", "True", "ReplicaSetUpdated",
                                          f"{what} is progressing.", now)
                if current is not None:
                    if current["status"] == "True":
                        cond["lastTransitionTime"] = current["lastTransitionTime"]
                    util.remove_condition(status, "Progressing")
                util.set_condition(status, cond)
            elif util.timed_out(d, status, now):
                util.set_condition(status, util.new_condition(
                    "Progressing", "False", "ProgressDeadlineExceeded",
                    f"{what} has timed out progressing.", now))
        failures = _replica_failures(new_rs, all_rss)
        if failures:
            util.set_condition(status, failures[0])
        else:
            util.remove_condition(status, "ReplicaFailure")
        if status == (d.get("status") or {}):
            return self._stuck_after(d, status, now)
        d["status"] = status
        await self._write_status(d)
        return None

    @staticmethod
    def _stuck_after(d: Obj, status: Obj, now: float) -> float | None:
        """``requeueStuckDeployment``: when to look again for a missed progress deadline."""
        current = util.condition(d.get("status") or {}, "Progressing")
        if not util.has_progress_deadline(d) or current is None or util.complete(d, status) or (
                current.get("reason") == "ProgressDeadlineExceeded"):
            return None
        deadline = int((d.get("spec") or {})["progressDeadlineSeconds"])
        after = epoch_seconds(current["lastUpdateTime"]) + deadline - now
        return 0.0 if after < 1 else after + 1

    # -- writes ---------------------------------------------------------------------------

    async def _write_status(self, d: Obj) -> None:
        meta = d["metadata"]
        written = await self.ctx.api.request(
            "PUT", f"/apis/apps/v1/namespaces/{meta['namespace']}/deployments/{meta['name']}"
            "/status", d)
        meta["resourceVersion"] = written["metadata"]["resourceVersion"]

    async def _write_rs(self, rs: Obj) -> Obj:
        meta = rs["metadata"]
        return await self.ctx.api.request(
            "PUT", f"/apis/apps/v1/namespaces/{meta['namespace']}/replicasets/{meta['name']}", rs)


def _saturated(d: Obj, rs: Obj) -> bool:
    desired = (rs["metadata"].get("annotations") or {}).get(util.DESIRED_REPLICAS, "")
    want = util.replicas(d)
    return desired == str(want) and util.replicas(rs) == want and (
        _status(rs, "availableReplicas") == want)


def _replace(new_rs: Obj | None, old_rss: list[Obj], was: Obj, now: Obj
             ) -> tuple[Obj | None, list[Obj]]:
    if new_rs is was:
        return now, old_rss
    return new_rs, [now if rs is was else rs for rs in old_rss]


def _replica_failures(new_rs: Obj | None, all_rss: list[Obj | None]) -> list[Obj]:
    def of(rs: Obj) -> list[Obj]:
        return [{"type": "ReplicaFailure", "status": c["status"],
                 "lastUpdateTime": c.get("lastTransitionTime"),
                 "lastTransitionTime": c.get("lastTransitionTime"),
                 "reason": c.get("reason", ""), "message": c.get("message", "")}
                for c in (rs.get("status") or {}).get("conditions") or ()
                if c.get("type") == "ReplicaFailure"]
    if new_rs is not None and (found := of(new_rs)):
        return found
    return [c for rs in all_rss if rs is not None for c in of(rs)]

