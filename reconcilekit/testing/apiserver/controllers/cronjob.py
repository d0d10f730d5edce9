"""kube-controller-manager's cronjob controller, on the server's clock.

At each scheduled time of its ``schedule`` (in its ``timeZone``, UTC by
default) a CronJob that is not suspended makes a Job from its
``jobTemplate`` named ``<cronjob>-<scheduled time in minutes since the
epoch>`` and lists it in ``status.active``, with ``lastScheduleTime``. Only
the most recent missed time runs; one older than ``startingDeadlineSeconds``
is missed (``MissSchedule``). ``concurrencyPolicy`` ``Forbid`` skips a run
while one is active (``JobAlreadyActive``), ``Replace`` deletes the active
ones first. A finished Job leaves ``active`` (``SawCompletedJob``), sets
``lastSuccessfulTime`` when it completed, and the oldest finished Jobs beyond
``successfulJobsHistoryLimit`` and ``failedJobsHistoryLimit`` are deleted.
The controller sleeps on the server's clock until the next scheduled time,
so a :class:`~reconcilekit.testing.FakeClock` fires a CronJob when advanced.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from ..machinery.unstructured import epoch_seconds, timestamp
from ..registry.cron_schedule import next_run
from ..storage.versioned_store import ObjKey, TableKey
from .controller_manager import KeysOf, Loop
from .controller_refs import controlled_by, controller_of, own_key, owner_reference
from .job import job_finished
from .loopback import LoopbackError

__all__ = ["CronJobController"]

Obj = dict[str, Any]
COMPONENT = "cronjob-controller"
_MAX_MISSED = 100



class CronJobController(Loop):
    name = "cronjob"

    def watches(self) -> Mapping[TableKey, KeysOf]:
        return {("batch", "cronjobs"): own_key, ("batch", "jobs"): controlled_by("CronJob")}

    async def sync(self, key: ObjKey) -> float | None:
        stored = self.ctx.objects("batch", "cronjobs").get(key)
        if stored is None:
            return None
        cj = copy.deepcopy(stored)
        ns, name = key
        uid = cj["metadata"]["uid"]
        jobs = [j for (jns, _), j in sorted(self.ctx.objects("batch", "jobs").items())
                if jns == ns and (controller_of(j) or {}).get("uid") == uid]
        status = cj.setdefault("status", {})
        before = copy.deepcopy(status)
        active = list(status.get("active") or [])
        listed = {ref.get("uid") for ref in active}
        for job in jobs:
            done = job_finished(job)
            juid = job["metadata"]["uid"]
            if juid not in listed and done is None:
                active.append(_reference(job))
            elif juid in listed and done is not None:
                active = [ref for ref in active if ref.get("uid") != juid]
                self.ctx.event(cj, "Normal", "SawCompletedJob",
                               f"Saw completed job: {job['metadata']['name']}, status: {done}",
                               COMPONENT)
            completed = (job.get("status") or {}).get("completionTime")
            if done == "Complete" and completed and (
                    not status.get("lastSuccessfulTime")
                    or epoch_seconds(completed) > epoch_seconds(status["lastSuccessfulTime"])):
                status["lastSuccessfulTime"] = completed
        uids = {j["metadata"]["uid"] for j in jobs}
        for ref in [r for r in active if r.get("uid") not in uids]:
            self.ctx.event(cj, "Warning", "MissingJob",
                           f"Active job went missing: {ref.get('name')}", COMPONENT)
            active.remove(ref)
        status["active"] = active
        after = None
        spec = cj.get("spec") or {}
        if not cj["metadata"].get("deletionTimestamp") and not spec.get("suspend"):
            after = await self._schedule(cj, status, jobs)
        await self._cleanup(cj, jobs)
        if not status["active"]:
            status.pop("active")
        if status != before:
            await self.ctx.api.request(
                "PUT", f"/apis/batch/v1/namespaces/{ns}/cronjobs/{name}/status",
                {**cj, "status": {k: status[k] for k in (
                    "active", "lastScheduleTime", "lastSuccessfulTime") if k in status}})
        return after

    async def _schedule(self, cj: Obj, status: Obj, jobs: list[Obj]) -> float | None:
        """Run the most recent missed time, if any; the seconds until the next one."""
        spec, meta = cj.get("spec") or {}, cj["metadata"]
        schedule, zone = str(spec.get("schedule", "")), spec.get("timeZone")
        now = self.ctx.clock.time()
        earliest = epoch_seconds(status.get("lastScheduleTime") or meta["creationTimestamp"])
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - int(deadline))
        latest, missed, t = None, 0, next_run(schedule, zone, earliest)
        while t is not None and t <= now:
            latest, missed = t, missed + 1
            t = next_run(schedule, zone, t)
        if missed > _MAX_MISSED:
            self.ctx.event(cj, "Warning", "TooManyMissedTimes",
                           "too many missed start times. Set or decrease "
                           ".spec.startingDeadlineSeconds or check clock skew", COMPONENT)
        until_next = None if t is None else max(t - now, 0.0) + 0.1
        if latest is None:
            return until_next
        job_name = f"{meta['name']}-{int(latest) // 60}"
        if any(ref.get("name") == job_name for ref in status["active"]) or (
                status.get("lastScheduleTime") == timestamp(latest)):
            return until_next
        if spec.get("concurrencyPolicy") == "Forbid" and status["active"]:
            self.ctx.event(cj, "Normal", "JobAlreadyActive", "Not starting job because prior "
                           "execution is running and concurrency policy is Forbid", COMPONENT)
            return until_next
        if spec.get("concurrencyPolicy") == "Replace":
            for ref in list(status["active"]):
                await self._delete_job(cj, str(ref.get("name")))
                status["active"].remove(ref)
        template = copy.deepcopy(spec.get("jobTemplate") or {})
        tmeta = template.get("metadata") or {}
        job_meta: Obj = {"name": job_name, "namespace": meta["namespace"],
                         "ownerReferences": [owner_reference(cj)]}
        for field in ("labels", "annotations"):
            if tmeta.get(field):
                job_meta[field] = tmeta[field]
        try:
            made = await self.ctx.api.request(
                "POST", f"/apis/batch/v1/namespaces/{meta['namespace']}/jobs",
                {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_meta,
                 "spec": template.get("spec") or {}})
        except LoopbackError as err:
            if err.status != 409:
                message = err.body.get("message", "") if isinstance(err.body, dict) else ""
                self.ctx.event(cj, "Warning", "FailedCreate", f"Error creating job: {message}",
                               COMPONENT)
                raise
            taken = next((j for j in jobs if j["metadata"]["name"] == job_name), None)
            if taken is None:
                return until_next
            made = taken
        else:
            self.ctx.event(cj, "Normal", "SuccessfulCreate", f"Created job {job_name}",
                           COMPONENT)
        status["active"].append(_reference(made))
        status["lastScheduleTime"] = timestamp(latest)
        return until_next

    async def _cleanup(self, cj: Obj, jobs: list[Obj]) -> None:
        """Delete the oldest finished Jobs beyond the history limits."""
        spec = cj.get("spec") or {}
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit", 3)),
                            ("Failed", spec.get("failedJobsHistoryLimit", 1))):
            if limit is None:
                continue
            done = sorted((j for j in jobs if job_finished(j) == kind),
                          key=lambda j: ((j.get("status") or {}).get("startTime") or "",
                                         j["metadata"]["name"]))
            for job in done[:max(len(done) - int(limit), 0)]:
                await self._delete_job(cj, job["metadata"]["name"])

    async def _delete_job(self, cj: Obj, name: str) -> None:
        if not await self.ctx.api.delete(
                f"/apis/batch/v1/namespaces/{cj['metadata']['namespace']}/jobs/{name}",
                {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"}):
            return
        self.ctx.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {name}", COMPONENT)


def _reference(job: Obj) -> Obj:
    meta = job["metadata"]
    return {"kind": "Job", "namespace": meta["namespace"], "name": meta["name"],
            "uid": meta["uid"], "apiVersion": "batch/v1",
            "resourceVersion": meta.get("resourceVersion", "")}
