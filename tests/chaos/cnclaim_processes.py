"""The CNClaim operator as real processes against a real control plane, and its referee.

Shared by the chaos tests that inject faults from outside the operator
(tests/chaos/test_chaos_control_plane.py, tests/chaos/test_outside_faults.py):

* :class:`Replicas`: operator processes (``python -m examples.cnclaim``, each an
  :class:`~reconcilekit.testing.OperatorProcess`) in slots, each restarted when it
  exits, as a kubelet restarts a container; every one is SIGTERMed (then
  SIGKILLed) and reaped when its task ends;
* :class:`Referee`: watches claims and Pods through the test's informers (what
  kube-apiserver says, not the operator's word) and records any Pod named by
  two live claims at once, or whose claimed-by label moves straight from one
  claim to another;
* :func:`until_converged`, :func:`lease_holder`, :func:`log_lines`.
"""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from examples.cnclaim.demo.scenario import converged
from examples.cnclaim.resources import CLAIMED_BY_LABEL, claimed_by, name_of, spec_of
from reconcilekit import APIConnectionError, APIError, Client, EventHandler
from reconcilekit.kinds import LEASES
from reconcilekit.lowlevel import Informer
from reconcilekit.testing import OperatorProcess

ROOT = Path(__file__).resolve().parents[2]
Obj = dict[str, Any]


@dataclass
class Referee:
    """Sees what kube-apiserver says through watches; records broken invariants."""

    violations: list[str] = field(default_factory=list)
    events: int = 0

    def handlers(self, claims: Informer) -> tuple[EventHandler, EventHandler]:
        """The handlers to add to the test's claim and Pod informers, in that order."""
        def on_claim(*objs: Obj) -> None:
            self.events += 1
            holders: dict[str, str] = {}
            for claim in claims.store.list():
                if claim["metadata"].get("deletionTimestamp"):
                    continue
                pod = str(spec_of(claim).get("podName") or "")
                if pod and holders.setdefault(pod, name_of(claim)) != name_of(claim):
                    self.violations.append(f"Pod {pod} named by claims {holders[pod]} and "
                                           f"{name_of(claim)}")

        def on_pod_update(old: Obj, new: Obj) -> None:
            self.events += 1
            before, after = claimed_by(old), claimed_by(new)
            if before and after and before != after:
                self.violations.append(f"Pod {name_of(new)}: {CLAIMED_BY_LABEL} {before} -> "
                                       f"{after}")

        return (EventHandler(on_add=on_claim, on_update=on_claim),
                EventHandler(on_update=on_pod_update))


class Replicas:
    """Operator processes in slots, each restarted when it exits (as a kubelet would).

    ``args(slot, start)``: the arguments after ``python -m examples.cnclaim``
    of the ``start``-th process (0 first) of ``slot``. Each slot's processes
    append to one log, :meth:`log`. A process that exits with a code other
    than 0 or 1 (1: it lost its Lease) without being :meth:`kill`\\ ed fails
    the test. ``exits`` lists ``(slot, code, time.time())`` of every exit.
    """

    def __init__(self, logs: Path, args: Callable[[int, int], Sequence[str]]) -> None:
        self.logs, self._args = logs, args
        self.procs: dict[int, OperatorProcess] = {}
        self.starts: dict[int, int] = {}
        self.exits: list[tuple[int, int | None, float]] = []
        self.kills = 0
        self._killed: set[int] = set()

    def log(self, slot: int) -> Path:
        return self.logs / f"operator-{slot}.log"

    async def run(self, slot: int, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Keep a process running in ``slot`` until cancelled (``tg.start(replicas.run, slot)``)."""
        started = False
        while True:
            start = self.starts.get(slot, 0)
            self.starts[slot] = start + 1
            proc = await OperatorProcess(
                sys.executable, "-m", "examples.cnclaim", *self._args(slot, start), cwd=ROOT,
                log=self.log(slot), name=f"operator {slot}").start()
            self.procs[slot] = proc
            if not started:
                task_status.started()
                started = True
            try:
                code = await proc.wait()
            finally:
                with anyio.CancelScope(shield=True):
                    await proc.stop(grace=30)
            self.exits.append((slot, code, time.time()))
            if slot not in self._killed and code not in (0, 1):
                raise AssertionError(f"operator {slot} exited with {code}: see {self.log(slot)}")
            self._killed.discard(slot)
            await anyio.sleep(1)  # a kubelet's restart, without its backoff

    def kill(self, slot: int) -> None:
        """SIGKILL the process in ``slot`` (no shutdown, no Lease release); it is restarted."""
        self.kills += 1
        self._killed.add(slot)
        self.procs[slot].kill()

    def slot_of(self, identity: str) -> int | None:
        """The slot whose log names ``identity`` (a Lease holder), if any."""
        for slot in self.procs:
            if identity and identity in self.log(slot).read_text(errors="replace"):
                return slot
        return None


async def until_converged(client: Client, namespace: str, *, pool: str, claimset: str,
                          claims: int, idle: int, within: float,
                          since: float | None = None) -> float:
    """Wait until the claim set's ``claims`` claims are all Bound and the pool has ``idle``
    Idle Running Pods and none Draining (:func:`converged`); the seconds from ``since``
    (a ``time.monotonic()``, default now) to then. Errors reaching the server while a
    fault lasts are retried."""
    since = time.monotonic() if since is None else since
    seen: str | None = "not looked yet"
    with anyio.move_on_after(within):
        while True:
            with contextlib.suppress(APIError, APIConnectionError):  # faults in progress
                seen = await converged(client, namespace, pool=pool, claimset=claimset,
                                       claims=claims, idle=idle)
                if seen is None:
                    return time.monotonic() - since
            await anyio.sleep(0.25)
    raise AssertionError(f"not converged within {within:g}s: {seen}")


async def lease_holder(client: Client, name: str, namespace: str) -> str:
    """The ``holderIdentity`` of Lease ``namespace/name`` ("" for none)."""
    lease = await client.get(LEASES, name, namespace)
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def log_lines(path: Path, pattern: str) -> list[str]:
    """The lines of the log at ``path`` matching the regular expression ``pattern``."""
    return re.findall(f"^.*{pattern}.*$", path.read_text(errors="replace"), re.M)
