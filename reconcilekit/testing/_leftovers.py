"""What a test session left behind in a cluster, outside its namespaces.

A test's namespace is removed with everything in it, but what a test
creates outside namespaces (CustomResourceDefinitions, webhook
configurations, APIServices, ClusterRoles and their bindings, Nodes, other
namespaces) stays unless the test deletes it. :func:`snapshot` records every
cluster-scoped object (by kind and name, of every listable cluster-scoped
resource discovery names) when a session first uses the cluster;
:func:`leftovers` lists the ones present at the end that were not there at
the start, each with the tests that ran when it was created (by its
``creationTimestamp``, which has whole seconds: every test running during
that second is named).

Guarantees: an object is a leftover if its (resource, name) was not in the
first snapshot, whoever made it; a resource whose listing fails at the end
is reported rather than skipped. Objects the cluster itself creates while a
session runs would be reported too: a bare control plane creates none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

import anyio

from ._discovery import served_resources
from ._requests import Requests

__all__ = ["Leftover", "Snapshot", "RunWindow", "leftovers", "settled_leftovers", "snapshot"]

METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass(frozen=True)
class RunWindow:
    """A test's node id and when it ran (seconds since the epoch, setup to teardown)."""

    nodeid: str
    start: float
    stop: float


@dataclass
class Snapshot:
    """Cluster-scoped objects by (resource, name), with their creation times; failed listings."""

    objects: dict[tuple[str, str], str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    deleting: set[tuple[str, str]] = field(default_factory=set)


@dataclass(frozen=True)
class Leftover:
    """A cluster-scoped object created during the session and still there."""

    resource: str
    kind: str
    name: str
    created: str
    tests: tuple[str, ...]
    deleting: bool = False

    def __str__(self) -> str:
        made = (f"made by {' or '.join(self.tests)}" if self.tests
                else "made while no test ran")
        state = ", being deleted" if self.deleting else ""
        return (f"{self.kind} {self.name} ({self.resource}; created {self.created}, "
                f"{made}{state})")


async def snapshot(cluster: Requests) -> Snapshot:
    """Every cluster-scoped object the cluster serves a list of."""
    served = await served_resources(cluster)
    shot = Snapshot(failed=dict(served.failed))
    for resource in served.resources:
        if resource.namespaced or "list" not in resource.verbs:
            continue
        listed = await cluster.request("GET", resource.path(), headers={
            "Accept": METADATA_LIST})
        if listed.status == 404:  # its CRD deleted since discovery: nothing left of it
            continue
        if listed.status != 200:
            shot.failed[str(resource)] = f"{listed.status}"
            continue
        for item in (listed.body or {}).get("items") or ():
            meta = item.get("metadata") or {}
            key = (f"{resource}|{resource.kind}", str(meta.get("name")))
            shot.objects[key] = str(meta.get("creationTimestamp", ""))
            if meta.get("deletionTimestamp"):
                shot.deleting.add(key)
    return shot


async def settled_leftovers(cluster: Requests, before: Snapshot, windows: list[RunWindow], *,
                            stuck: frozenset[str] = frozenset(), within: float = 30.0
                            ) -> tuple[list[Leftover], Snapshot]:
    """:func:`leftovers` now, or, while some are being deleted (a namespace a test
    deleted a moment ago), once they are gone or ``within`` seconds passed; the
    namespaces named in ``stuck`` (already reported as held) are not waited for."""
    with anyio.move_on_after(within):
        while True:
            after = await snapshot(cluster)
            found = leftovers(before, after, windows)
            if not any(left.deleting and not (left.kind == "Namespace" and left.name in stuck)
                       for left in found):
                return found, after
            await anyio.sleep(1.0)
    after = await snapshot(cluster)
    return leftovers(before, after, windows), after


def _when(timestamp: str) -> float | None:
    try:
        return datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=UTC).timestamp()
    except ValueError:
        return None


def leftovers(before: Snapshot, after: Snapshot,
              windows: list[RunWindow]) -> list[Leftover]:
    """The objects of ``after`` not in ``before``, each with the tests running at its creation."""
    found: list[Leftover] = []
    for key, created in sorted(after.objects.items()):
        if key in before.objects:
            continue
        at = _when(created)
        tests = () if at is None else tuple(
            w.nodeid for w in windows if int(w.start) <= at <= w.stop)
        resource, _, kind = key[0].partition("|")
        found.append(Leftover(resource, kind, key[1], created, tests, key in after.deleting))
    return found
