"""``NodeSimulator``: the scheduler's and the kubelet's part, for a cluster with no nodes.

Neither reconcilekit's in-process API server nor a bare control plane (etcd,
kube-apiserver, kube-controller-manager) runs Pods: a new Pod stays Pending
and a deleted Pod bound to a node stays Terminating for ever. The simulator
plays what a scheduler and a kubelet would, over the API like them:

1. a Pod with no ``spec.nodeName`` is bound (``pods/NAME/binding``, as the
   scheduler does) to the least loaded of ``nodes`` simulated node names;
2. a bound Pod that is not Running gets the status a kubelet reports:
   phase Running, Ready and ContainersReady conditions, a start time and a
   Pod IP (stable per Pod name); a Pod the ``ready`` predicate refuses is
   Running but not Ready (its containers started, not ready), and becomes
   Ready, or unready again, when the predicate changes its mind and
   :meth:`NodeSimulator.refresh` is called;
3. a bound Pod being deleted (``deletionTimestamp`` set) is deleted for good
   with a grace period of 0 and its UID as precondition, as the kubelet does
   once the containers stopped.

Guarantees: every Pod in scope is handled within one pass of a work queue
after its event (level-triggered: a failed write is retried with backoff,
and a Pod changed meanwhile is looked at again); a Pod it did not bind is
still marked Running when bound by someone else (``spec.nodeName`` set at
creation, as tests and operators may do). Node objects are not created:
kube-apiserver binds to a node name whether or not a Node exists (the
Pod garbage collector, which would delete such Pods, must stay off).
"""

from __future__ import annotations

import contextlib
import logging
import zlib
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

import anyio
import anyio.abc

from reconcilekit.kinds import PODS

from .._cache.informer import EventHandler, Informer
from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import APIConnectionError, APIError, Conflict, NotFound, describe_error
from .._foundations.objects import ObjectKey
from .._workqueue.queue import QueueShutDown, WorkQueue

__all__ = ["NodeSimulator"]

logger = logging.getLogger("reconcilekit.testing.nodes")


Obj = dict[str, Any]


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pod_ip(name: str) -> str:
    h = zlib.crc32(name.encode())
    return f"10.{(h >> 16) & 255}.{(h >> 8) & 255}.{h & 255 or 1}"


class NodeSimulator:
    """Schedules, runs and finishes deleting the Pods of ``namespace`` (all if None).

    Use as ``async with NodeSimulator(client, nodes=3, namespace=ns):`` or run
    :meth:`run` in a task group. ``node_prefix`` names the nodes
    (``sim-node-0`` ...); ``workers`` Pods are handled at once;
    ``relist_period`` (seconds) lists the Pods again that often, so that a
    Pod whose watch event was lost (fault injection drops events) is still
    handled; ``clock`` times the relists and the status's timestamps (a
    :class:`FakeClock` in tests, the API server's own in-process);
    ``ready(pod)`` says whether a running Pod is Ready (by default all are).
    """

    def __init__(self, client: Client, *, nodes: int = 3, namespace: str | None = None,
                 node_prefix: str = "sim-node-", workers: int = 4,
                 relist_period: float | None = None, clock: Clock | None = None,
                 ready: Callable[[Obj], bool] | None = None) -> None:
        if nodes < 1:
            raise ValueError(f"a node simulator needs at least one node, got {nodes}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.client = client
        self.nodes = [f"{node_prefix}{i}" for i in range(nodes)]
        self.namespace = namespace
        self.workers = workers
        self.ready = ready or (lambda _pod: True)
        self.clock = clock or SystemClock()
        self.informer = Informer(client, PODS, namespace=namespace,
                                 relist_period=relist_period, clock=self.clock)
        self._queue: WorkQueue[ObjectKey] = WorkQueue(name="node-simulator")
        self._tg: anyio.abc.TaskGroup | None = None
        self.bound = self.started = self.finished = 0

    # -- running ----------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Watch Pods and play the nodes' part until cancelled; started once the Pods are listed."""
        self.informer.add_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new),
            on_delete=None))
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.informer.run)
                for _ in range(self.workers):
                    tg.start_soon(self._work)
                await self.informer.synced.wait()
                task_status.started()
        finally:
            self._queue.shutdown()

    async def __aenter__(self) -> NodeSimulator:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        await self._tg.start(self.run)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        assert self._tg is not None
        tg, self._tg = self._tg, None
        tg.cancel_scope.cancel()
        # The block's own exception is not the simulator's: let it through unwrapped.
        await tg.__aexit__(None, None, None)

    def refresh(self) -> None:
        """Look at every Pod again: call after ``ready``'s answer for one changed."""
        for pod in self.informer.store.list():
            self._enqueue(pod)

    def _enqueue(self, pod: Obj) -> None:
        meta = pod.get("metadata") or {}
        self._queue.add(ObjectKey(meta.get("namespace") or "", meta.get("name") or ""))

    async def _work(self) -> None:
        queue = self._queue
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            try:
                await self._handle(key)
            except Conflict:
                queue.add(key)  # changed since read: its event brings the new version
            except (APIError, APIConnectionError) as err:  # an outage is retried, as a kubelet
                logger.warning("node simulator: %s/%s: %s; retrying", key.namespace, key.name,
                               describe_error(err))
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)

    # -- what the scheduler and the kubelet do ----------------------------------------------

    async def _handle(self, key: ObjectKey) -> None:
        pod = self.informer.store.get(key)
        if pod is None:
            return
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node = spec.get("nodeName")
        if meta.get("deletionTimestamp"):
            if node:
                with contextlib.suppress(NotFound):
                    await self.client.delete(PODS, key.name, key.namespace, uid=meta.get("uid"),
                                             grace_period_seconds=0)
                    self.finished += 1
            return
        phase = (pod.get("status") or {}).get("phase")
        if not node:
            await self._bind(pod, key)
        elif phase not in ("Running", "Succeeded", "Failed"):
            await self._start(pod, key)
        elif phase == "Running" and _is_ready(pod) != self.ready(pod):
            await self._set_ready(pod, key, not _is_ready(pod))

    async def _bind(self, pod: Obj, key: ObjectKey) -> None:
        load = Counter(dict.fromkeys(self.nodes, 0))
        load.update(str(node) for p in self.informer.store.list()
                    if (node := (p.get("spec") or {}).get("nodeName")) in load)
        node = min(self.nodes, key=lambda n: (load[n], n))
        with contextlib.suppress(NotFound):
            await self.client.request(
                "POST", f"/api/v1/namespaces/{key.namespace}/pods/{key.name}/binding",
                body={"apiVersion": "v1", "kind": "Binding",
                      "metadata": {"name": key.name, "uid": pod["metadata"].get("uid")},
                      "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
            self.bound += 1

    async def _start(self, pod: Obj, key: ObjectKey) -> None:
        now = _timestamp(self.clock.time())
        ready = self.ready(pod)
        containers = (pod.get("spec") or {}).get("containers") or []
        status = {
            "phase": "Running", "startTime": now, "podIP": _pod_ip(key.name),
            "podIPs": [{"ip": _pod_ip(key.name)}], "hostIP": "10.255.0.1",
            "conditions": [{"type": t, "status": "True" if ready or t in (
                "Initialized", "PodScheduled") else "False", "lastTransitionTime": now}
                           for t in ("Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{
                "name": c.get("name", ""), "image": c.get("image", ""), "imageID": "",
                "ready": ready, "started": True, "restartCount": 0,
                "state": {"running": {"startedAt": now}}} for c in containers],
        }
        with contextlib.suppress(NotFound):
            await self.client.patch_status(PODS, key.name, {"status": status}, key.namespace)
            self.started += 1

    async def _set_ready(self, pod: Obj, key: ObjectKey, ready: bool) -> None:
        """The readiness probe's answer changed: Ready and ContainersReady follow."""
        now, value = _timestamp(self.clock.time()), "True" if ready else "False"
        status = pod.get("status") or {}
        conditions = [dict(c, status=value, lastTransitionTime=now)
                      if c.get("type") in ("Ready", "ContainersReady") else c
                      for c in status.get("conditions") or ()]
        containers = [dict(c, ready=ready) for c in status.get("containerStatuses") or ()]
        with contextlib.suppress(NotFound):
            await self.client.patch_status(PODS, key.name, {"status": {
                "conditions": conditions, "containerStatuses": containers}}, key.namespace)


def _is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())
