"""Removing a test's namespace from a real cluster, and saying what holds it when it stays.

Deleting a namespace starts kube-controller-manager's namespace controller:
it deletes every object in it and removes the namespace once they are gone
(about 5 seconds on kube-apiserver with kube-controller-manager, whatever
the namespace held). An object whose finalizer nobody removes holds the
namespace Terminating for ever: a custom resource whose operator stopped
with the test, a Pod bound to a node when no kubelet runs. So once a deleted
namespace has lingered ``release_after`` seconds, :func:`release_namespace`
removes the finalizers of every object still in it (every namespaced
resource the cluster serves, found through discovery, custom resources
included) and force-deletes its Pods (``gracePeriodSeconds: 0``); it does
so again every ``release_every`` seconds until the namespace is gone.

Guarantees: :func:`remove_namespace` returns ``None`` once the namespace is
gone (404), or, ``timeout`` seconds after it started, a message naming what
holds it: each object still in it with its finalizers (and why a release
failed, say a webhook refusing the patch), the namespace's own finalizers
when it has any but ``kubernetes``, and the namespace's status conditions
that are True (kube-controller-manager's ``NamespaceContentRemaining``,
``NamespaceFinalizersRemaining``, ...). The namespace's own finalizers are
never removed: only what is in it is released.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from ._discovery import served_resources

if TYPE_CHECKING:
    from ._cluster import Cluster

__all__ = ["TIMEOUT_ENV", "Held", "RemovalTiming", "release_namespace", "remove_namespace"]

TIMEOUT_ENV = "RECONCILEKIT_TEST_NAMESPACE_TIMEOUT"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
WaitGone = Callable[[float], Awaitable[bool]]
"""``await gone(seconds)``: True once the namespace is gone, False if it is still there."""


@dataclass(frozen=True)
class RemovalTiming:
    """How long a namespace may take to go, and when its content is released.

    ``timeout`` defaults to 60 s or ``RECONCILEKIT_TEST_NAMESPACE_TIMEOUT``
    (kube-controller-manager looks at a namespace whose content had
    finalizers again about 8 s later); the first release comes after
    ``release_after`` (10 s, or a third of a shorter timeout), so that a
    namespace kube-controller-manager removes by itself costs no request.
    """

    timeout: float = 60.0
    release_after: float = 10.0
    release_every: float = 10.0

    @classmethod
    def from_env(cls) -> RemovalTiming:
        raw = os.environ.get(TIMEOUT_ENV, "")
        if not raw:
            return cls()
        try:
            timeout = float(raw)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r} is not a number of seconds") from None
        if not timeout > 0:
            raise ValueError(f"{TIMEOUT_ENV}={raw!r} must be positive")
        return cls(timeout, min(10.0, timeout / 3), min(10.0, timeout / 3))


@dataclass
class Held:
    """An object found in a deleted namespace: its kind, name, finalizers, what went wrong."""

    kind: str
    name: str
    finalizers: list[str] = field(default_factory=list)
    problem: str = ""

    def __str__(self) -> str:
        said = f"{self.kind} {self.name}"
        if self.finalizers:
            said += f" (finalizers: {', '.join(self.finalizers)})"
        return f"{said}: {self.problem}" if self.problem else said


def _message(body: Any) -> str:
    if isinstance(body, dict):
        return str(body.get("message") or body)
    return str(body)


async def release_namespace(cluster: Cluster, namespace: str) -> list[Held]:
    """Remove every finalizer in ``namespace`` and force-delete its Pods; returns what was there.

    Objects without finalizers are listed too (a Pod waiting for a kubelet has
    none); a resource whose listing fails is reported as a :class:`Held` named
    ``*`` with the answer.
    """
    served = await served_resources(cluster)
    found = [Held("discovery", gv, problem=why) for gv, why in served.failed.items()]
    for resource in served.resources:
        if not resource.namespaced or "list" not in resource.verbs:
            continue
        path = resource.path(namespace)
        listed = await cluster.request("GET", path, headers={"Accept": METADATA_LIST})
        if listed.status == 404:  # its CRD went meanwhile
            continue
        if listed.status != 200:
            found.append(Held(str(resource), "*", problem=f"listing answered {listed.status}: "
                                                          f"{_message(listed.body)}"))
            continue
        for item in (listed.body or {}).get("items") or ():
            meta = item.get("metadata") or {}
            held = Held(resource.kind, str(meta.get("name")), list(meta.get("finalizers") or ()))
            found.append(held)
            if held.finalizers:
                patched = await cluster.request(
                    "PATCH", f"{path}/{held.name}", json={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
                if patched.status not in (200, 404):
                    held.problem = (f"removing its finalizers answered {patched.status}: "
                                    f"{_message(patched.body)}")
            if resource.group_version == "v1" and resource.name == "pods":
                deleted = await cluster.request("DELETE", f"{path}/{held.name}", json={
                    "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
                if deleted.status not in (200, 202, 404):
                    held.problem = (f"force-deleting it answered {deleted.status}: "
                                    f"{_message(deleted.body)}")
    return found


async def remove_namespace(cluster: Cluster, namespace: str, gone: WaitGone,
                           timing: RemovalTiming, *, owner: str = "") -> str | None:
    """Wait for the deleted ``namespace`` to go, releasing its content when it lingers.

    ``None`` once it is gone; otherwise, after ``timing.timeout``, the message
    naming what holds it (``owner``, the test it was made for, named first).
    """
    deadline = anyio.current_time() + timing.timeout
    wait = min(timing.release_after, timing.timeout)
    held: list[Held] = []
    while True:
        if await gone(max(0.0, min(wait, deadline - anyio.current_time()))):
            return None
        try:
            held = await release_namespace(cluster, namespace)
        except Exception as e:  # a transport error: said in the message if it is the last
            held = [Held("release", "*", problem=f"{type(e).__name__}: {e}")]
        if anyio.current_time() >= deadline:
            break
        wait = timing.release_every
    if await gone(0.0):
        return None
    return await _describe(cluster, namespace, held, timing.timeout, owner)


async def _describe(cluster: Cluster, namespace: str, held: list[Held], after: float,
                    owner: str) -> str | None:
    got = await cluster.request("GET", f"/api/v1/namespaces/{namespace}")
    if got.status == 404:
        return None
    ns = got.body if isinstance(got.body, dict) else {}
    made_for = f" (made for {owner})" if owner else ""
    lines = [f"namespace {namespace}{made_for} is still there {after:g}s after its "
             f"deletion (phase {ns.get('status', {}).get('phase')!s}); what holds it:"]
    lines += [f"  {h}" for h in held]
    own = list(ns.get("metadata", {}).get("finalizers") or ())
    own += [f for f in ns.get("spec", {}).get("finalizers") or () if f != "kubernetes"]
    if own:
        lines.append(f"  the namespace's own finalizers: {', '.join(own)}")
    conditions = [c for c in ns.get("status", {}).get("conditions") or ()
                  if c.get("status") == "True"]
    lines += [f"  condition {c.get('type')}: {c.get('message', '')}" for c in conditions]
    if len(lines) == 1:
        lines.append("  nothing found in it, no condition True (is kube-controller-manager "
                     "running?)")
    return "\n".join(lines)
