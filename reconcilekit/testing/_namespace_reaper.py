"""``NamespaceReaper``: the test namespaces of a session removed in the background.

kube-controller-manager takes about 5 seconds to remove a namespace, so a
teardown that waited for it would add more than an hour to a suite of a
thousand tests. A test's teardown deletes its namespace (one request) and
hands it to the reaper, which waits for it on a thread and event loop of its
own (:func:`remove_namespace`: the content released when it lingers) while
the next tests run.

Guarantees: every namespace handed over is either seen gone or reported as a
:class:`Failure` naming it, the test it was made for and what holds it,
within the timing's ``timeout`` of its hand-over; :meth:`finish` returns
once every one is settled. Pending namespaces are found gone by one list of
the session's namespaces (by its label) every half second, however many
there are. :meth:`call` runs other work against the cluster on the
reaper's loop (the session-end checks).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import queue
import secrets
import threading
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from ._cluster import Cluster
from ._namespace_release import Removal, RemovalTiming, remove_namespace

__all__ = ["SESSION_LABEL", "Failure", "NamespaceReaper", "RemovalStatistics"]

SESSION_LABEL = "testing.reconcilekit.dev/session"
POLL_SECONDS = 0.5
T = TypeVar("T")


@dataclass(frozen=True)
class Failure:
    """A namespace that did not go: its name, the test it was made for, and what holds it."""

    namespace: str
    owner: str
    message: str


@dataclass
class RemovalStatistics:
    """How the namespaces went: how many, how many needed releasing, the longest wait."""

    removed: int = 0
    released: int = 0
    held: int = 0
    longest: float = 0.0

    def add(self, removal: Removal) -> None:
        self.removed += removal.message is None
        self.held += removal.message is not None
        self.released += removal.releases > 0 and removal.message is None
        self.longest = max(self.longest, removal.seconds)

    def __str__(self) -> str:
        return (f"{self.removed} test namespaces removed ({self.released} released from "
                f"what held them), {self.held} held; the longest took {self.longest:.1f}s")


class NamespaceReaper:
    """Waits for deleted test namespaces on its own thread; see the module docstring."""

    def __init__(self, configuration: Any, timing: RemovalTiming | None = None, *,
                 namespace_controller: bool = True) -> None:
        """``namespace_controller=False``: no kube-controller-manager runs, so the reaper
        empties and finalizes each namespace itself (see :func:`remove_namespace`)."""
        self.session = secrets.token_hex(4)
        self.timing = timing or RemovalTiming.from_env()
        self.namespace_controller = namespace_controller
        self._configuration = copy.copy(configuration)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="reconcilekit-namespace-reaper", daemon=True)
        self._failures: queue.SimpleQueue[Failure] = queue.SimpleQueue()
        self._stuck: set[str] = set()
        # Touched on the reaper's loop only:
        self._cluster: Cluster | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._gone: dict[str, asyncio.Event] = {}
        self._seen: dict[str, dict[str, Any]] = {}
        self.statistics = RemovalStatistics()
        self._poller: asyncio.Task[None] | None = None
        self._thread.start()

    @property
    def labels(self) -> dict[str, str]:
        """The labels a namespace handed to this reaper must carry."""
        return {SESSION_LABEL: self.session}

    def submit(self, namespace: str, owner: str) -> None:
        """Wait in the background for ``namespace`` (already deleted) to go (thread-safe)."""
        self._loop.call_soon_threadsafe(self._begin, namespace, owner)

    def failures(self) -> list[Failure]:
        """The namespaces reported as not gone since the last call (thread-safe)."""
        out: list[Failure] = []
        while True:
            try:
                out.append(self._failures.get_nowait())
            except queue.Empty:
                return out

    @property
    def stuck(self) -> frozenset[str]:
        """Every namespace reported as not gone so far."""
        return frozenset(self._stuck)

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the reaper's loop and return its result (blocking; not on that loop)."""
        return asyncio.run_coroutine_threadsafe(work, self._loop).result()

    def finish(self) -> list[Failure]:
        """Wait until every namespace handed over is settled; the failures not yet taken."""
        self.call(self._settled())
        return self.failures()

    def close(self) -> None:
        """Settle every namespace, close the reaper's client and stop its thread."""
        if not self._thread.is_alive():
            return
        self.finish()
        self.call(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def cluster(self) -> Cluster:
        """The reaper's own client for the cluster (use on the reaper's loop only)."""
        if self._cluster is None:
            self._cluster = Cluster(self._configuration, trust_env=False)
        return self._cluster

    # -- on the reaper's loop -------------------------------------------------------------

    def _begin(self, namespace: str, owner: str) -> None:
        self._gone[namespace] = asyncio.Event()
        task = asyncio.get_running_loop().create_task(self._reap(namespace, owner))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    async def _reap(self, namespace: str, owner: str) -> None:
        event = self._gone[namespace]

        async def observe(seconds: float) -> dict[str, Any] | None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), seconds)
            return None if event.is_set() else self._seen.get(namespace, {})

        try:
            removal = await remove_namespace(
                self.cluster(), namespace, observe, self.timing, owner=owner,
                namespace_controller=self.namespace_controller)
            message = removal.message
            self.statistics.add(removal)
        except Exception as e:  # the cluster went away: still the owner's failure
            message = (f"namespace {namespace} (made for {owner}) could not be waited for: "
                       f"{type(e).__name__}: {e}")
        finally:
            self._gone.pop(namespace, None)
            self._seen.pop(namespace, None)
        if message is not None:
            self._stuck.add(namespace)
            self._failures.put(Failure(namespace, owner, message))

    async def _poll(self) -> None:
        """List the session's namespaces while any is pending; mark the absent ones gone."""
        path = f"/api/v1/namespaces?labelSelector={SESSION_LABEL}%3D{self.session}"
        while self._gone:
            try:
                listed = await self.cluster().request("GET", path)
            except Exception:  # retried; a lasting outage ends in the timeout
                listed = None
            if listed is not None and listed.status == 200:
                present = {i["metadata"]["name"]: i for i in listed.body.get("items") or ()}
                for name, event in list(self._gone.items()):
                    if name in present:
                        self._seen[name] = present[name]
                    else:
                        event.set()
            await asyncio.sleep(POLL_SECONDS)

    async def _settled(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks))

    async def _close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)
        if self._cluster is not None:
            await self._cluster.close()
