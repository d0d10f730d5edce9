"""``NodeSimulator``: the scheduler's and the kubelet's part, for a cluster with no nodes.

Neither reconcilekit's in-process API server nor a bare control plane (etcd,
kube-apiserver, kube-controller-manager) runs Pods: a new Pod stays Pending
and a deleted Pod bound to a node stays Terminating for ever. The simulator
plays what a scheduler and a kubelet would, over the API like them:

1. a Pod with no ``spec.nodeName`` is bound (``pods/NAME/binding``, as the
   scheduler does) to the least loaded of ``nodes`` simulated node names;
2. a bound Pod that is not Running gets the status a kubelet reports:
   phase Running, Ready and ContainersReady conditions, a start time, a
   Pod IP (stable per Pod name) and, as ``hostIP`` and ``hostIPs``, the
   InternalIP of the Node it is bound to (none for a node with no Node
   object); a Pod the ``ready`` predicate refuses is
   Running but not Ready (its containers started, not ready), and becomes
   Ready, or unready again, when the predicate changes its mind and
   :meth:`NodeSimulator.refresh` is called;
3. a bound Pod being deleted (``deletionTimestamp`` set) is deleted for good
   with a grace period of 0 and its UID as precondition, as the kubelet does
   once the containers stopped.

Each simulated node is registered as a Node object (Ready, with an internal
IP, capacity and the ``kubernetes.io/hostname`` label, without the
``not-ready`` taint kube-apiserver gives a new Node) when the simulator
starts, unless one of that name exists, and the Nodes it registered are
deleted when it stops: controllers that place or publish Pods by node (the
daemonset and endpointslice controllers) see them as a kubelet's nodes.
:meth:`NodeSimulator.set_node_ready` turns one NotReady and back.

Guarantees: every Pod in scope is handled within one pass of a work queue
after its event (level-triggered: a failed write is retried with backoff,
and a Pod changed meanwhile is looked at again); a Pod it did not bind is
still marked Running when bound by someone else (``spec.nodeName`` set at
creation, as tests and operators may do); a Pod that requires particular
nodes (``nodeSelector`` on ``kubernetes.io/hostname``, required node
affinity on ``metadata.name``, as a DaemonSet's Pods carry) is bound to the
least loaded of those that are simulated, and left Pending if none is. The
Pod garbage collector, which deletes the Pods of a node that goes, must stay
off on a real control plane.
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

from reconcilekit.kinds import NODES, PODS

from .._cache.informer import EventHandler, Informer
from .._client.client import Client
from .._foundations.clock import Clock, SystemClock
from .._foundations.errors import (
    AlreadyExists,
    APIConnectionError,
    APIError,
    Conflict,
    NotFound,
    describe_error,
)
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
    ``ready(pod)`` says whether a running Pod is Ready (by default all are);
    ``outcome(pod)`` ends a running Pod whose restart policy lets it end
    (``Never``, ``OnFailure``: a Job's) when it answers ``"Succeeded"`` (its
    containers exit 0) or ``"Failed"`` (exit 1); None (the default) keeps it
    running; ``crash(pod)`` makes a running Pod's containers crash-loop while it
    answers True: each exits 1 and is restarted after the kubelet's back-off (10 s
    doubling to 5 minutes, on ``clock``), ``restartCount`` counting, the Pod not
    Ready meanwhile (``CrashLoopBackOff``). Call :meth:`refresh` after any of them
    changes its answer. ``run_for`` (seconds on ``clock``): a Pod that may end and
    that ``outcome`` leaves running succeeds once it has run that long. A Pod
    being deleted is finished at once, its containers stopping on SIGTERM,
    unless ``stops(pod)`` says False: then it stays Terminating for its grace
    period (``deletionGracePeriodSeconds``, on ``clock``), as a kubelet waits
    before it kills what ignores SIGTERM.
    """

    def __init__(self, client: Client, *, nodes: int = 3, namespace: str | None = None,
                 node_prefix: str = "sim-node-", workers: int = 4,
                 relist_period: float | None = None, clock: Clock | None = None,
                 ready: Callable[[Obj], bool] | None = None,
                 outcome: Callable[[Obj], str | None] | None = None,
                 crash: Callable[[Obj], bool] | None = None,
                 run_for: float | None = None,
                 stops: Callable[[Obj], bool] | None = None) -> None:
        if nodes < 1:
            raise ValueError(f"a node simulator needs at least one node, got {nodes}")
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.client = client
        self.nodes = [f"{node_prefix}{i}" for i in range(nodes)]
        self.namespace = namespace
        self.workers = workers
        self.ready = ready or (lambda _pod: True)
        self.outcome = outcome or (lambda _pod: None)
        self.crash = crash or (lambda _pod: False)
        self.run_for = run_for
        self.stops = stops or (lambda _pod: True)
        self._terminating: dict[str, float] = {}  # uid -> when its deletion was first seen
        self.clock = clock or SystemClock()
        self.informer = Informer(client, PODS, namespace=namespace,
                                 relist_period=relist_period, clock=self.clock)
        self._queue: WorkQueue[ObjectKey] = WorkQueue(name="node-simulator", clock=self.clock)
        self._tg: anyio.abc.TaskGroup | None = None
        self.bound = self.started = self.finished = 0
        self._registered: list[str] = []
        self._host_ips: dict[str, str] = {}  # node name -> its InternalIP, once read

    # -- running ----------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
                  ) -> None:
        """Watch Pods and play the nodes' part until cancelled; started once the Pods are listed."""
        self.informer.add_handler(EventHandler(
            on_add=self._enqueue, on_update=lambda _, new: self._enqueue(new),
            on_delete=None))
        try:
            await self._register_nodes()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.informer.run)
                for _ in range(self.workers):
                    tg.start_soon(self._work)
                await self.informer.synced.wait()
                task_status.started()
        finally:
            self._queue.shutdown()
            with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                await self._unregister_nodes()

    # -- the Node objects -------------------------------------------------------------------

    async def _register_nodes(self) -> None:
        for i, name in enumerate(self.nodes):
            try:
                await self.client.get(NODES, name)
                continue
            except NotFound:
                pass
            with contextlib.suppress(AlreadyExists):  # made meanwhile by another simulator
                await self.client.create(NODES, {
                    "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
                        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64"}}})
                self._registered.append(name)
                await self._node_status(name, i, ready=True)
                await self._untaint(name)

    async def _node_status(self, name: str, index: int, *, ready: bool) -> None:
        now = _timestamp(self.clock.time())
        condition = ({"status": "True", "reason": "KubeletReady",
                      "message": "kubelet is posting ready status"} if ready else
                     {"status": "Unknown", "reason": "NodeStatusUnknown",
                      "message": "Kubelet stopped posting node status."})
        resources = {"cpu": "4", "memory": "16Gi", "pods": "110",
                     "ephemeral-storage": "100Gi"}
        self._host_ips[name] = address = f"10.255.0.{index + 1}"
        await self.client.patch_status(NODES, name, {"status": {
            "conditions": [{"type": "Ready", **condition, "lastHeartbeatTime": now,
                            "lastTransitionTime": now}],
            "addresses": [{"type": "InternalIP", "address": address},
                          {"type": "Hostname", "address": name}],
            "capacity": resources, "allocatable": resources,
            "nodeInfo": {"kubeletVersion": "v1.28.7", "kubeProxyVersion": "v1.28.7",
                         "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "containerd://1.7.0",
                         "osImage": "reconcilekit simulated node", "kernelVersion": "",
                         "machineID": "", "systemUUID": "", "bootID": ""}}})

    async def _untaint(self, name: str) -> None:
        """Remove the ``not-ready`` NoSchedule taint kube-apiserver gives a new Node (the
        node lifecycle controller's part once the kubelet reports Ready)."""
        node = await self.client.get(NODES, name)
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != "node.kubernetes.io/not-ready"]
        if kept != taints:
            await self.client.patch(NODES, name, {"spec": {"taints": kept or None}})

    async def set_node_ready(self, name: str, ready: bool) -> None:
        """Report the simulated node ``name`` Ready, or NotReady (its kubelet silent)."""
        if name not in self.nodes:
            raise ValueError(f"{name!r} is not one of the simulated nodes {self.nodes}")
        await self._node_status(name, self.nodes.index(name), ready=ready)

    async def _unregister_nodes(self) -> None:
        for name in self._registered:
            with contextlib.suppress(NotFound, APIError, APIConnectionError):
                await self.client.delete(NODES, name)
        self._registered.clear()

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
            if node and not self._stopping(pod, key):
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
        elif phase == "Running" and spec.get("restartPolicy", "Always") != "Always" and (
                end := self.outcome(pod) or self._ran_out(pod, key)) in ("Succeeded", "Failed"):
            await self._end(pod, key, end)
        elif phase == "Running" and spec.get("restartPolicy", "Always") != "Never" and (
                self.crash(pod)):
            await self._crash(pod, key)
        elif phase == "Running" and _crash_looping(pod):
            await self._start(pod, key)  # crash() changed its mind: running again
        elif phase == "Running" and _is_ready(pod) != self.ready(pod):
            await self._set_ready(pod, key, not _is_ready(pod))

    async def _bind(self, pod: Obj, key: ObjectKey) -> None:
        allowed = _allowed_nodes(pod, self.nodes)
        if not allowed:
            return  # no simulated node may run it: Pending, as a scheduler leaves it
        load = Counter(dict.fromkeys(allowed, 0))
        load.update(str(node) for p in self.informer.store.list()
                    if (node := (p.get("spec") or {}).get("nodeName")) in load)
        node = min(allowed, key=lambda n: (load[n], n))
        with contextlib.suppress(NotFound):
            await self.client.request(
                "POST", f"/api/v1/namespaces/{key.namespace}/pods/{key.name}/binding",
                body={"apiVersion": "v1", "kind": "Binding",
                      "metadata": {"name": key.name, "uid": pod["metadata"].get("uid")},
                      "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
            self.bound += 1

    async def _host_ip(self, node: str) -> str | None:
        """The InternalIP of the Node ``node``, as its kubelet reports it (None: no such
        Node, or one without an InternalIP)."""
        if node not in self._host_ips:
            with contextlib.suppress(NotFound):
                found = await self.client.get(NODES, node)
                for address in (found.get("status") or {}).get("addresses") or ():
                    if address.get("type") == "InternalIP" and address.get("address"):
                        self._host_ips[node] = str(address["address"])
                        break
        return self._host_ips.get(node)

    async def _start(self, pod: Obj, key: ObjectKey) -> None:
        now = _timestamp(self.clock.time())
        ready = self.ready(pod)
        containers = (pod.get("spec") or {}).get("containers") or []
        restarts = {c.get("name"): int(c.get("restartCount") or 0)
                    for c in (pod.get("status") or {}).get("containerStatuses") or ()}
        host_ip = await self._host_ip(str((pod.get("spec") or {}).get("nodeName") or ""))
        status = {
            "phase": "Running", "startTime": now, "podIP": _pod_ip(key.name),
            "podIPs": [{"ip": _pod_ip(key.name)}],
            **({"hostIP": host_ip, "hostIPs": [{"ip": host_ip}]} if host_ip else {}),
            "conditions": [{"type": t, "status": "True" if ready or t in (
                "Initialized", "PodScheduled") else "False", "lastTransitionTime": now}
                           for t in ("Initialized", "Ready", "ContainersReady",
                                     "PodScheduled")],
            "containerStatuses": [{
                "name": c.get("name", ""), "image": c.get("image", ""), "imageID": "",
                "ready": ready, "started": True, "restartCount": restarts.get(c.get("name"), 0),
                "state": {"running": {"startedAt": now}}} for c in containers],
        }
        with contextlib.suppress(NotFound):
            await self.client.patch_status(PODS, key.name, {"status": status}, key.namespace)
            self.started += 1

    def _stopping(self, pod: Obj, key: ObjectKey) -> bool:
        """Whether a Pod being deleted is still within its grace period, its containers
        ignoring SIGTERM (``stops`` said False); looked at again when the period ends."""
        uid = str(pod["metadata"].get("uid"))
        if self.stops(pod):
            self._terminating.pop(uid, None)
            return False
        seen = self._terminating.setdefault(uid, self.clock.time())
        grace = pod["metadata"].get("deletionGracePeriodSeconds")
        left = seen + float(30 if grace is None else grace) - self.clock.time()
        if left > 0:
            self._queue.add_after(key, left)
            return True
        self._terminating.pop(uid, None)
        return False

    def _ran_out(self, pod: Obj, key: ObjectKey) -> str | None:
        """``Succeeded`` once a Pod ran ``run_for`` seconds; until then, look again then."""
        started = (pod.get("status") or {}).get("startTime")
        if self.run_for is None or not started:
            return None
        left = datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp() + (
            self.run_for) - self.clock.time()
        if left > 0:
            self._queue.add_after(key, left)
            return None
        return "Succeeded"

    async def _crash(self, pod: Obj, key: ObjectKey) -> None:
        """The containers exited 1 again: restarted after the back-off, in CrashLoopBackOff
        meanwhile."""
        status = pod.get("status") or {}
        first = (status.get("containerStatuses") or [{}])[0]
        restarts = int(first.get("restartCount") or 0)
        waiting = ((first.get("state") or {}).get("waiting") or {})
        backoff = min(10.0 * 2 ** max(restarts - 1, 0), 300.0)
        if waiting.get("reason") == "CrashLoopBackOff":
            finished = ((first.get("lastState") or {}).get("terminated") or {}).get(
                "finishedAt")
            since = (datetime.fromisoformat(finished.replace("Z", "+00:00")).timestamp()
                     if finished else self.clock.time())
            left = since + backoff - self.clock.time()
            if left > 0:
                self._queue.add_after(key, left)  # not yet time to restart it
                return
        now = _timestamp(self.clock.time())
        conditions = [dict(c, status="False", lastTransitionTime=now) if c.get("type") in (
            "Ready", "ContainersReady") and c.get("status") != "False" else c
            for c in status.get("conditions") or ()]
        delay = int(min(10.0 * 2 ** restarts, 300.0))
        who = f"{key.name}_{key.namespace}({pod['metadata'].get('uid')})"
        containers = [dict(c, ready=False, started=False, restartCount=restarts + 1,
                           lastState={"terminated": {"exitCode": 1, "reason": "Error",
                                                     "startedAt": now, "finishedAt": now}},
                           state={"waiting": {
                               "reason": "CrashLoopBackOff",
                               "message": f"back-off {delay}s restarting failed container="
                                          f"{c.get('name')} pod={who}"}})
                      for c in status.get("containerStatuses") or ()]
        with contextlib.suppress(NotFound):
            await self.client.patch_status(PODS, key.name, {"status": {
                "conditions": conditions, "containerStatuses": containers}}, key.namespace)
        self._queue.add_after(key, min(10.0 * 2 ** restarts, 300.0))

    async def _end(self, pod: Obj, key: ObjectKey, phase: str) -> None:
        """The containers exited (0 for Succeeded, 1 for Failed): the Pod's end."""
        now = _timestamp(self.clock.time())
        status = pod.get("status") or {}
        ended = {"type": "", "status": "False", "lastTransitionTime": now,
                 "reason": "PodCompleted"}
        conditions = [dict(ended, type=c["type"]) if c.get("type") in (
            "Ready", "ContainersReady") else c for c in status.get("conditions") or ()]
        code, reason = (0, "Completed") if phase == "Succeeded" else (1, "Error")
        containers = [dict(c, ready=False, started=False, state={"terminated": {
            "exitCode": code, "reason": reason,
            "startedAt": ((c.get("state") or {}).get("running") or {}).get("startedAt", now),
            "finishedAt": now}}) for c in status.get("containerStatuses") or ()]
        with contextlib.suppress(NotFound):
            await self.client.patch_status(PODS, key.name, {"status": {
                "phase": phase, "conditions": conditions, "containerStatuses": containers}},
                key.namespace)

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


def _allowed_nodes(pod: Obj, nodes: list[str]) -> list[str]:
    """The simulated nodes the Pod's node selector and required node affinity allow
    (by name: the ``kubernetes.io/hostname`` label and the ``metadata.name`` field)."""
    spec = pod.get("spec") or {}
    allowed = list(nodes)
    hostname = (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname")
    if hostname is not None:
        allowed = [n for n in allowed if n == hostname]
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")
    if required:
        names: set[str] = set()
        for term in required:
            picked = set(allowed)
            for field in term.get("matchFields") or ():
                if field.get("key") == "metadata.name" and field.get("operator") == "In":
                    picked &= set(field.get("values") or ())
            names |= picked
        allowed = [n for n in allowed if n in names]
    return allowed


def _crash_looping(pod: Obj) -> bool:
    return any(((c.get("state") or {}).get("waiting") or {}).get("reason") == "CrashLoopBackOff"
               for c in (pod.get("status") or {}).get("containerStatuses") or ())


def _is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())
