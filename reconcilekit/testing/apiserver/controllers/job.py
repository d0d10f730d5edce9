"""kube-controller-manager's job controller.

A Job runs Pods from its template (``<job>-<random>``; Indexed:
``<job>-<index>-<random>`` with the ``batch.kubernetes.io/job-completion-index``
annotation and label, hostname ``<job>-<index>`` and ``JOB_COMPLETION_INDEX``
in each container's environment), each carrying the
``batch.kubernetes.io/job-tracking`` finalizer until its end is counted:
first listed in ``status.uncountedTerminatedPods``, then the finalizer
removed, then moved to ``succeeded`` or ``failed``, so a Pod is counted once
whatever fails in between. At most ``parallelism`` Pods run, and no more than
the completions left need; after a failure a new Pod waits 10 s, doubling
per failure (the server's clock). The Job is ``Complete`` once
``completions`` Pods (Indexed: indexes) succeeded, or any did with no
completions set and none running; ``Failed`` when failures exceed
``backoffLimit`` (``BackoffLimitExceeded``) or it ran past
``activeDeadlineSeconds`` (``DeadlineExceeded``), its running Pods then
deleted. ``suspend`` deletes the running Pods (``Suspended``, ``JobSuspended``)
and resuming starts the clock again (``JobResumed``). ``status.ready``
counts the running Pods that are Ready.

The ttl-after-finished controller (:class:`TTLAfterFinishedController`)
deletes a finished Job ``ttlSecondsAfterFinished`` after it finished.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..machinery.unstructured import epoch_seconds, timestamp
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import Context, KeysOf, Loop
from .controller_refs import controlled_by, controller_of, own_key, owner_reference
from .loopback import LoopbackError
from .pod_control import create_pod, delete_pod
from .pod_readiness import is_ready

__all__ = ["JobController", "TTLAfterFinishedController", "job_finished"]

Obj = dict[str, Any]
COMPONENT = "job-controller"
TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
_BACKOFF, _MAX_BACKOFF = 10.0, 360.0


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def job_finished(job: Obj) -> str | None:
    """``Complete`` or ``Failed`` once the Job has that condition, else None."""
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return None


def _index(pod: Obj) -> int | None:
    value = (pod["metadata"].get("annotations") or {}).get(INDEX)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _indexes(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def _intervals(indexes: set[int]) -> str:
    """``1,3-5``: the completed indexes as kube-controller-manager writes them."""
    runs: list[str] = []
    for i in sorted(indexes):
        if runs and runs[-1].split("-")[-1] == str(i - 1):
            runs[-1] = f"{runs[-1].split('-')[0]}-{i}"
        else:
            runs.append(str(i))
    return ",".join(runs)


class JobController(Loop):
    name = "job"

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._failures: dict[str, float] = {}  # job uid -> when its last failure was counted

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("batch", "jobs"): own_key, ("", "pods"): controlled_by("Job")}

    async def sync(self, key: ObjKey) -> float | None:
        stored = self.ctx.objects("batch", "jobs").get(key)
        for pod in self._orphans(key, stored):  # their Job is gone: nothing will count them
            await self._release(pod)
        if stored is None:
            return None
        job = copy.deepcopy(stored)
        uid = job["metadata"]["uid"]
        pods = [p for (ns, _), p in sorted(self.ctx.objects("", "pods").items())
                if ns == key[0] and (controller_of(p) or {}).get("uid") == uid]
        status = job.setdefault("status", {})
        now = self.ctx.clock.time()
        if await self._count_finished(job, pods):
            return None  # the writes bring this Job back with the counts settled
        if job_finished(job):
            return None
        spec = job.get("spec") or {}
        active = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")
                  and not p["metadata"].get("deletionTimestamp")]
        old_status = copy.deepcopy(status)
        wait: float | None = None
        if spec.get("suspend"):
            await self._delete(job, active)
            active = []
            self._condition(status, "Suspended", "True", "JobSuspended", "Job suspended", now)
            status.pop("startTime", None)
        else:
            if self._condition(status, "Suspended", "False", "JobResumed", "Job resumed", now,
                               only_if_present=True) or not status.get("startTime"):
                status["startTime"] = timestamp(now)
            failure = self._failure(job, now)
            if failure is not None:
                await self._delete(job, active)
                return await self._finish(job, "Failed", *failure, now, active=0, ready=0)
            if self._complete(job, active):
                return await self._finish(job, "Complete", "", "", now, active=0,
                                          ready=sum(map(is_ready, active)))
            wait = await self._start_pods(job, pods, active, now)
            active = [p for p in self.ctx.objects("", "pods").values()
                      if (controller_of(p) or {}).get("uid") == uid
                      and _phase(p) not in ("Succeeded", "Failed")
                      and not p["metadata"].get("deletionTimestamp")]
        status["active"] = len(active)
        status["ready"] = sum(map(is_ready, active))
        if status != old_status or "ready" not in old_status:
            await self._write(job)
        if spec.get("suspend"):
            return None
        deadline = spec.get("activeDeadlineSeconds")
        later = [wait] if wait is not None else []
        if deadline is not None:
            later.append(epoch_seconds(status["startTime"]) + int(deadline) - now)
        return max(min(later), 0.0) if later else None

    # -- counting -------------------------------------------------------------------------

    async def _count_finished(self, job: Obj, pods: list[Obj]) -> bool:
        """Count the ended Pods still holding the finalizer, in three steps; whether
        anything was written."""
        status = job["status"]
        uncounted = status.setdefault("uncountedTerminatedPods", {})
        listed = {u for field in ("succeeded", "failed") for u in uncounted.get(field) or ()}
        # a Pod being deleted that did not succeed counts as failed: it may never reach the
        # Failed phase (kube-controller-manager's isPodFailed)
        ended = [p for p in pods if (_phase(p) in ("Succeeded", "Failed")
                                     or p["metadata"].get("deletionTimestamp"))
                 and TRACKING in (p["metadata"].get("finalizers") or ())]
        new = [p for p in ended if p["metadata"]["uid"] not in listed]
        for pod in new:
            field = "succeeded" if _phase(pod) == "Succeeded" else "failed"
            uncounted.setdefault(field, []).append(pod["metadata"]["uid"])
        if new:
            await self._write(job)
        for pod in ended:
            await self._release(pod)
        if not any(uncounted.get(f) for f in ("succeeded", "failed")):
            return bool(new)
        holding = {p["metadata"]["uid"] for p in self.ctx.objects("", "pods").values()
                   if TRACKING in (p["metadata"].get("finalizers") or ())}
        by_uid = {p["metadata"]["uid"]: p for p in pods}
        moved = False
        for field in ("succeeded", "failed"):
            kept = []
            for uid in uncounted.get(field) or ():
                if uid in holding:
                    kept.append(uid)
                    continue
                status[field] = int(status.get(field) or 0) + 1
                index = _index(by_uid[uid]) if uid in by_uid else None
                if field == "succeeded" and index is not None:
                    done = _indexes(status.get("completedIndexes", "")) | {index}
                    status["completedIndexes"] = _intervals(done)
                if field == "failed":
                    self._failures[job["metadata"]["uid"]] = self.ctx.clock.time()
                moved = True
            if kept:
                uncounted[field] = kept
            else:
                uncounted.pop(field, None)
        if moved:
            await self._write(job)
        return bool(new) or moved

    def _orphans(self, key: ObjKey, job: Obj | None) -> list[Obj]:
        """The Pods holding the finalizer for a Job of this name that is not ``job``."""
        uid = job["metadata"]["uid"] if job is not None else None
        out = []
        for (ns, _), pod in self.ctx.objects("", "pods").items():
            ref = controller_of(pod)
            if ns == key[0] and ref is not None and ref.get("kind") == "Job" and (
                    ref.get("name") == key[1] and ref.get("uid") != uid
                    and TRACKING in (pod["metadata"].get("finalizers") or ())):
                out.append(pod)
        return out

    async def _release(self, pod: Obj) -> None:
        meta = pod["metadata"]
        kept = [f for f in meta.get("finalizers") or () if f != TRACKING]
        try:
            await self.ctx.api.request(
                "PATCH", f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}",
                [{"op": "test", "path": "/metadata/finalizers",
                  "value": meta.get("finalizers")},
                 {"op": "replace", "path": "/metadata/finalizers", "value": kept}],
                content_type="application/json-patch+json")
        except LoopbackError as err:
            if err.status not in (404, 409, 422):
                raise

    # -- running --------------------------------------------------------------------------

    def _failure(self, job: Obj, now: float) -> tuple[str, str] | None:
        spec, status = job.get("spec") or {}, job["status"]
        if int(status.get("failed") or 0) > int(spec.get("backoffLimit", 6)):
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime") and (
                now - epoch_seconds(status["startTime"]) >= int(deadline)):
            return "DeadlineExceeded", "Job was active longer than specified deadline"
        return None

    def _complete(self, job: Obj, active: list[Obj]) -> bool:
        spec, status = job.get("spec") or {}, job["status"]
        completions = spec.get("completions")
        if spec.get("completionMode") == "Indexed":
            return len(_indexes(status.get("completedIndexes", ""))) >= int(completions or 0)
        succeeded = int(status.get("succeeded") or 0)
        if completions is None:
            return succeeded > 0 and not active
        return succeeded >= int(completions)

    async def _start_pods(self, job: Obj, pods: list[Obj], active: list[Obj],
                          now: float) -> float | None:
        """Make the Pods that may run now; the seconds until more may (a failure's backoff)."""
        spec, status = job.get("spec") or {}, job["status"]
        parallelism = int(spec.get("parallelism", 1))
        failed = int(status.get("failed") or 0)
        last = self._failures.get(job["metadata"]["uid"])
        if failed and last is not None:
            wait = float(last + min(_BACKOFF * 2 ** (failed - 1), _MAX_BACKOFF) - now)
            if wait > 0:
                return wait
        if spec.get("completionMode") == "Indexed":
            done = _indexes(status.get("completedIndexes", ""))
            running = {_index(p) for p in active}
            todo = [i for i in range(int(spec.get("completions") or 0))
                    if i not in done and i not in running]
            for index in todo[:max(parallelism - len(active), 0)]:
                await self._create(job, index)
            return None
        completions = spec.get("completions")
        succeeded = int(status.get("succeeded") or 0)
        if completions is None:
            want = 0 if succeeded else parallelism
        else:
            want = min(parallelism, int(completions) - succeeded)
        for _ in range(max(want - len(active), 0)):
            await self._create(job, None)
        return None

    async def _create(self, job: Obj, index: int | None) -> None:
        meta = job["metadata"]
        template = copy.deepcopy((job.get("spec") or {}).get("template") or {})
        tmeta = template.get("metadata") or {}
        pod_meta: Obj = {"generateName": f"{meta['name']}-" if index is None else
                         f"{meta['name']}-{index}-",
                         "finalizers": [*(tmeta.get("finalizers") or ()), TRACKING],
                         "ownerReferences": [owner_reference(job)]}
        labels, annotations = dict(tmeta.get("labels") or {}), dict(
            tmeta.get("annotations") or {})
        pod_spec = template.get("spec") or {}
        if index is not None:
            annotations[INDEX] = labels[INDEX] = str(index)
            pod_spec["hostname"] = f"{meta['name']}-{index}"
            for container in [*pod_spec.get("initContainers", ()),
                              *pod_spec.get("containers", ())]:
                container.setdefault("env", []).append({
                    "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "fieldPath": f"metadata.labels['{INDEX}']"}}})
        if labels:
            pod_meta["labels"] = labels
        if annotations:
            pod_meta["annotations"] = annotations
        await create_pod(self.ctx, job, {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
                                          "spec": pod_spec}, COMPONENT)

    async def _delete(self, job: Obj, pods: list[Obj]) -> None:
        for pod in pods:
            await delete_pod(self.ctx, job, pod, COMPONENT)

    # -- status ---------------------------------------------------------------------------

    @staticmethod
    def _condition(status: Obj, kind: str, value: str, reason: str, message: str, now: float,
                   *, only_if_present: bool = False) -> bool:
        """Set a condition; whether it changed (``only_if_present``: only an existing one)."""
        conditions = status.setdefault("conditions", [])
        current = next((c for c in conditions if c.get("type") == kind), None)
        if current is None and only_if_present:
            if not conditions:
                status.pop("conditions")
            return False
        if current is not None and current.get("status") == value:
            return False
        when = timestamp(now)
        fresh = {"type": kind, "status": value, "lastProbeTime": when,
                 "lastTransitionTime": when}
        if reason:
            fresh.update(reason=reason, message=message)
        if current is None:
            conditions.append(fresh)
        else:
            current.clear()
            current.update(fresh)
        return True

    async def _finish(self, job: Obj, kind: str, reason: str, message: str, now: float, *,
                      active: int, ready: int) -> float | None:
        status = job["status"]
        self._condition(status, kind, "True", reason, message, now)
        if kind == "Complete":
            status["completionTime"] = timestamp(now)
        status["active"], status["ready"] = active, ready
        await self._write(job)
        if kind == "Complete":
            self.ctx.event(job, "Normal", "Completed", "Job completed", COMPONENT)
        else:
            self.ctx.event(job, "Warning", reason, message, COMPONENT)
        return None

    async def _write(self, job: Obj) -> None:
        meta, status = job["metadata"], job["status"]
        order = ("conditions", "startTime", "completionTime", "active", "succeeded", "failed",
                 "completedIndexes", "uncountedTerminatedPods", "ready")
        shown = {k: status[k] for k in order if k in status and (
            k in ("uncountedTerminatedPods", "ready") or status[k])}
        written = await self.ctx.api.request(
            "PUT", f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs/{meta['name']}/status",
            {**job, "status": shown})
        meta["resourceVersion"] = written["metadata"]["resourceVersion"]


class TTLAfterFinishedController(Loop):
    name = "ttl-after-finished"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("batch", "jobs"): own_key}

    async def sync(self, key: ObjKey) -> float | None:
        job = self.ctx.objects("batch", "jobs").get(key)
        if job is None or job["metadata"].get("deletionTimestamp"):
            return None
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        kind = job_finished(job)
        if ttl is None or kind is None:
            return None
        status = job.get("status") or {}
        finished = next((c.get("lastTransitionTime") for c in status.get("conditions") or ()
                         if c.get("type") == kind), None)
        left = epoch_seconds(finished or timestamp(self.ctx.clock.time())) + int(
            ttl) - self.ctx.clock.time()
        if left > 0:
            return left
        try:
            await self.ctx.api.request(
                "DELETE", f"/apis/batch/v1/namespaces/{key[0]}/jobs/{key[1]}",
                {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground",
                 "preconditions": {"uid": job["metadata"]["uid"]}})
        except LoopbackError as err:
            if err.status not in (404, 409):
                raise
        return None
