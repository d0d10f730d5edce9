"""Faults from outside the operator for the soak: an operator process kept alive, a
proxy it reaches kube-apiserver through, and the faults injected on either.

* :class:`Supervisor` runs ``python -m examples.cnclaim`` (leader election on)
  as a process, restarts it a second after it exits (as a kubelet restarts a
  container), and counts its exits by code.
* :class:`FaultInjector` applies one fault at a time, for a set duration:

  ===================  ==================================================================
  ``partition``        the operator's proxy cuts the link both ways for longer than the
                       Lease (25 s > 15 s): the leader must step down, not write on
  ``latency``          every chunk of bytes either way waits 2 s, for 60 s
  ``etcd-stop``        etcd SIGSTOPped for 75 s behind a live kube-apiserver, longer than
                       any watch's timeout: requests time out, watches end
  ``operator-kill``    the operator SIGKILLed mid-work (no Lease release); the supervisor
                       starts it again, and it leads once the Lease expires
  ``apiserver-kill``   kube-apiserver SIGKILLed, started again 5 s later
  ===================  ==================================================================

Each fault returns when it has ended; the soak then times convergence.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from reconcilekit.testing import ControlPlane, OperatorProcess, TCPProxy

FAULTS = ("partition", "latency", "etcd-stop", "operator-kill", "apiserver-kill")
PARTITION_SECONDS = 25.0  # longer than the Lease (15 s)
LATENCY_SECONDS, LATENCY = 60.0, 2.0
ETCD_STOP_SECONDS = 75.0  # longer than a watch's timeoutSeconds (30-45 s)
APISERVER_DOWN_SECONDS = 5.0


class Supervisor:
    """The operator as a process (an :class:`OperatorProcess` appending to ``log``), started
    again a second after each exit."""

    def __init__(self, root: Path, kubeconfig: Path, namespace: str, log: Path) -> None:
        self._command = [sys.executable, "-m", "examples.cnclaim", "--kubeconfig",
                         str(kubeconfig), "--namespace", namespace, "--leader-elect",
                         "--metrics-addr", "127.0.0.1:0", "--webhook-addr", "127.0.0.1:0",
                         "--log-level", "INFO"]
        self._root, self._log = root, log
        self.process: OperatorProcess | None = None
        self.exits: Counter[int] = Counter()
        self.starts = 0
        self._stopping = False

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        started = False
        while not self._stopping:
            self.process = await OperatorProcess(*self._command, cwd=self._root, log=self._log,
                                                 name="the operator").start()
            self.starts += 1
            if not started:
                task_status.started()
                started = True
            code = await self.process.wait()
            if self._stopping:
                break
            self.exits[code] += 1
            await anyio.sleep(1.0)

    def kill(self) -> None:
        """SIGKILL the operator: no Lease release, no cleanup."""
        if self.process is not None:
            self.process.kill()

    async def stop(self) -> None:
        self._stopping = True
        if self.process is not None:
            await self.process.stop(grace=60)


class FaultInjector:
    """One fault at a time on the control plane, the operator's link, or the operator."""

    def __init__(self, plane: ControlPlane, proxy: TCPProxy, operator: Supervisor) -> None:
        self._plane, self._proxy, self._operator = plane, proxy, operator

    async def inject(self, kind: str) -> dict[str, Any]:
        """Apply ``kind`` and end it; what was done, and when it ended (monotonic)."""
        began = time.monotonic()
        if kind == "partition":
            self._proxy.partition()
            try:
                await anyio.sleep(PARTITION_SECONDS)
            finally:
                self._proxy.heal()
        elif kind == "latency":
            self._proxy.latency = LATENCY
            try:
                await anyio.sleep(LATENCY_SECONDS)
            finally:
                self._proxy.latency = 0.0
        elif kind == "etcd-stop":
            self._plane.pause("etcd")
            try:
                await anyio.sleep(ETCD_STOP_SECONDS)
            finally:
                self._plane.resume("etcd")
        elif kind == "operator-kill":
            self._operator.kill()
        elif kind == "apiserver-kill":
            self._plane.kill("kube-apiserver")
            await anyio.sleep(APISERVER_DOWN_SECONDS)
            await self._plane.restart("kube-apiserver")
        else:
            raise ValueError(f"unknown fault {kind!r}; known: {', '.join(FAULTS)}")
        return {"fault": kind, "began": began, "ended": time.monotonic()}
