"""Jobs played by the cluster's job controller, on every backend (the in-process server
and kube-apiserver with kube-controller-manager), a :class:`NodeSimulator` ending their
Pods as the test says."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from reconcilekit import Client
from reconcilekit.kinds import CRON_JOBS, JOBS, PODS
from reconcilekit.testing import APIServer, Cluster, FakeClock, NodeSimulator, eventually

from cluster_events import events_of

IMAGE = "registry.k8s.io/pause:3.9"
SETTLE = 60.0  # seconds: a bound on kube-controller-manager's pace, not a timing


def _job(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                {"name": "work", "image": IMAGE}]}}, **spec}}


async def _condition(client: Client, ns: str, name: str, kind: str) -> dict[str, Any] | None:
    job = await client.get(JOBS, name, ns)
    status = job.get("status") or {}
    found = next((c for c in status.get("conditions") or () if c["type"] == kind
                  and c["status"] == "True"), None)
    return job if found is not None else None


async def test_a_job_runs_its_completions_in_parallel_to_complete(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns,
                             outcome=lambda _pod: "Succeeded"):
        await client.create(JOBS, _job("batch", completions=3, parallelism=2), ns)
        job = await eventually(lambda: _condition(client, ns, "batch", "Complete"),
                               within=SETTLE, what="the Job complete")
    status = job["status"]
    assert (status["succeeded"], status.get("failed", 0), status.get("active", 0)) == (3, 0, 0)
    assert status["uncountedTerminatedPods"] == {}
    assert status["startTime"] <= status["completionTime"]
    [complete] = [c for c in status["conditions"] if c["type"] == "Complete"]
    assert set(complete) == {"type", "status", "lastProbeTime", "lastTransitionTime"}
    pods = (await client.list(PODS, ns, label_selector="job-name=batch"))["items"]
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith("batch-")
        assert pod["status"]["phase"] == "Succeeded"
        assert "batch.kubernetes.io/job-tracking" not in (pod["metadata"].get("finalizers") or ())
        assert pod["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == job[
            "metadata"]["uid"]


async def test_an_indexed_job_runs_each_index_once(apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=2, namespace=ns,
                             outcome=lambda _pod: "Succeeded"):
        await client.create(JOBS, _job("indexed", completions=3, parallelism=3,
                                       completionMode="Indexed"), ns)
        job = await eventually(lambda: _condition(client, ns, "indexed", "Complete"),
                               within=SETTLE, what="every index complete")
    assert job["status"]["completedIndexes"] == "0-2"
    pods = (await client.list(PODS, ns, label_selector="job-name=indexed"))["items"]
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
                     for p in pods)
    assert indexes == ["0", "1", "2"]
    for pod in pods:
        index = pod["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert pod["metadata"]["name"].startswith(f"indexed-{index}-")
        assert pod["spec"]["hostname"] == f"indexed-{index}"
        assert pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == index
        assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath":
                "metadata.labels['batch.kubernetes.io/job-completion-index']"}}} in (
            pod["spec"]["containers"][0]["env"])


async def test_a_failing_job_fails_past_its_backoff_limit(apiserver: Cluster,
                                                          client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=1, namespace=ns, outcome=lambda _pod: "Failed"):
        await client.create(JOBS, _job("doomed", backoffLimit=0), ns)
        job = await eventually(lambda: _condition(client, ns, "doomed", "Failed"),
                               within=SETTLE, what="the Job failed")
    status = job["status"]
    assert (status["failed"], status.get("succeeded", 0), status.get("active", 0)) == (1, 0, 0)
    [failed] = [c for c in status["conditions"] if c["type"] == "Failed"]
    assert (failed["reason"], failed["message"]) == (
        "BackoffLimitExceeded", "Job has reached the specified backoff limit")
    assert "completionTime" not in status


async def test_a_suspended_job_runs_nothing_until_resumed(apiserver: Cluster,
                                                          client: Client) -> None:
    ns = apiserver.namespace
    finish: dict[str, str | None] = {"now": None}
    async with NodeSimulator(client, nodes=1, namespace=ns,
                             outcome=lambda _pod: finish["now"]) as nodes:
        await client.create(JOBS, _job("later", suspend=True), ns)
        job = await eventually(lambda: _condition(client, ns, "later", "Suspended"),
                               within=SETTLE, what="the Job suspended")
        [suspended] = [c for c in job["status"]["conditions"] if c["type"] == "Suspended"]
        assert (suspended["reason"], suspended["message"]) == ("JobSuspended", "Job suspended")
        assert (await client.list(PODS, ns, label_selector="job-name=later"))["items"] == []

        await client.patch(JOBS, "later", {"spec": {"suspend": False}}, ns)

        async def running() -> dict[str, Any] | None:
            got = await client.get(JOBS, "later", ns)
            status = got.get("status") or {}
            return got if status.get("active") == 1 and status.get("ready") == 1 else None
        job = await eventually(running, within=SETTLE, what="one Pod running, ready")
        [resumed] = [c for c in job["status"]["conditions"] if c["type"] == "Suspended"]
        assert (resumed["status"], resumed["reason"]) == ("False", "JobResumed")
        finish["now"] = "Succeeded"
        nodes.refresh()
        await eventually(lambda: _condition(client, ns, "later", "Complete"), within=SETTLE,
                         what="the Job complete")


# -- deadlines on the server's clock (in-process: a FakeClock drives the controllers) -------

async def test_an_active_deadline_and_a_ttl_count_on_the_servers_clock() -> None:
    clock = FakeClock()
    outcome: dict[str, str | None] = {"now": None}
    async with APIServer(clock=clock) as server, Client(server.configuration()) as client, \
            NodeSimulator(client, nodes=1, namespace="default", clock=clock,
                          outcome=lambda _pod: outcome["now"]) as nodes:
        await client.create(JOBS, _job("slow", activeDeadlineSeconds=30), "default")
        await client.create(JOBS, _job("brief", ttlSecondsAfterFinished=60), "default")

        async def active(name: str) -> bool:
            status = (await client.get(JOBS, name, "default")).get("status") or {}
            return status.get("ready") == 1
        await eventually(lambda: active("slow"), what="slow running")
        await eventually(lambda: any(d >= 30 for d in clock.deadlines()),
                         what="the deadline's wait parked")
        clock.advance(31)
        job = await eventually(lambda: _condition(client, "default", "slow", "Failed"),
                               what="the deadline exceeded")
        [failed] = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
        assert (failed["reason"], failed["message"]) == (
            "DeadlineExceeded", "Job was active longer than specified deadline")

        outcome["now"] = "Succeeded"
        nodes.refresh()
        await eventually(lambda: _condition(client, "default", "brief", "Complete"),
                         what="brief complete")
        await eventually(lambda: any(d >= clock.monotonic() + 59 for d in clock.deadlines()),
                         what="the ttl's wait parked")
        clock.advance(61)

        async def gone() -> bool:
            return not any(j["metadata"]["name"] == "brief" for j in (
                await client.list(JOBS, "default"))["items"])
        await eventually(gone, what="brief deleted after its ttl")


async def test_a_cronjob_fires_at_its_next_minute_and_sees_its_job_complete(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    async with NodeSimulator(client, nodes=1, namespace=ns, outcome=lambda _pod: "Succeeded"):
        made = await client.create(CRON_JOBS, {
            "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
            "spec": {"schedule": "* * * * *", "jobTemplate": {
                "metadata": {"labels": {"made-by": "tick"}},
                "spec": _job("")["spec"]}}}, ns)

        async def succeeded() -> dict[str, Any] | None:
            status = (await client.get(CRON_JOBS, "tick", ns)).get("status") or {}
            return status if status.get("lastSuccessfulTime") and not status.get(
                "active") else None
        # the next minute boundary is at most a minute away, on either server
        status = await eventually(succeeded, within=SETTLE + 60, what="a run completed")
    [job] = (await client.list(JOBS, ns, label_selector="made-by=tick"))["items"]
    scheduled = datetime.fromisoformat(status["lastScheduleTime"].replace("Z", "+00:00"))
    assert job["metadata"]["name"] == f"tick-{int(scheduled.timestamp()) // 60}"
    assert job["metadata"]["ownerReferences"][0]["uid"] == made["metadata"]["uid"]
    await events_of(client, ns, "tick", having=[
        f"Created job {job['metadata']['name']}",
        f"Saw completed job: {job['metadata']['name']}, status: Complete"])


async def test_cronjob_concurrency_and_history_on_the_servers_clock() -> None:
    clock = FakeClock(wall_start=1_700_000_000.0)  # 2023-11-14T22:13:20Z
    async with APIServer(clock=clock) as server, Client(server.configuration()) as client:
        for name, policy in (("forbid", "Forbid"), ("replace", "Replace")):
            await client.create(CRON_JOBS, {
                "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
                "spec": {"schedule": "*/10 * * * *", "concurrencyPolicy": policy,
                         "jobTemplate": {"spec": _job("")["spec"]}}}, "default")

        async def jobs(prefix: str) -> list[str]:
            found = (await client.list(JOBS, "default"))["items"]
            return sorted(j["metadata"]["name"] for j in found
                          if j["metadata"]["name"].startswith(prefix)
                          and not j["metadata"].get("deletionTimestamp"))

        for minutes in (28_333_340, 28_333_350):  # the next two ten-minute marks
            await eventually(lambda: len(clock.deadlines()) >= 2, what="both parked")
            clock.advance(minutes * 60 - clock.time() + 1)
            await eventually(lambda m=minutes: _has(jobs, "replace-", f"replace-{m}"),
                             what=f"replace-{minutes} made")
        # no Pod ever ends (no kubelet): Forbid kept its first run, Replace replaced it
        assert await jobs("forbid-") == ["forbid-28333340"]
        assert await jobs("replace-") == ["replace-28333350"]
        forbid = await client.get(CRON_JOBS, "forbid", "default")
        assert [r["name"] for r in forbid["status"]["active"]] == ["forbid-28333340"]


async def _has(jobs: Any, prefix: str, name: str) -> bool:
    return name in await jobs(prefix)


async def test_job_pods_succeed_after_the_time_the_simulator_gives_them(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    clock = FakeClock()  # the simulator's: it times the Pod's run
    async with NodeSimulator(client, nodes=1, namespace=ns, clock=clock, run_for=30):
        await client.create(JOBS, _job("timed"), ns)

        async def running() -> bool:
            status = (await client.get(JOBS, "timed", ns)).get("status") or {}
            return status.get("ready") == 1
        await eventually(running, within=SETTLE, what="its Pod running")
        assert await _condition(client, ns, "timed", "Complete") is None
        await eventually(lambda: any(d >= clock.monotonic() + 29 for d in clock.deadlines()),
                         what="the Pod's run parked on the clock")
        clock.advance(30)
        await eventually(lambda: _condition(client, ns, "timed", "Complete"), within=SETTLE,
                         what="complete once its Pod ran 30 s")
