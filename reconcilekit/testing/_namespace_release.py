"""Removing a test's namespace from a real cluster, and saying what holds it when it stays.

Deleting a namespace starts kube-controller-manager's namespace controller:
it deletes every object in it and removes the namespace once they are gone
(about 5 seconds on kube-apiserver with kube-controller-manager, whatever
the namespace held). An object whose finalizer nobody removes holds the
namespace Terminating for ever: a custom resource whose operator stopped
with the test, a Pod bound to a node when no kubelet runs. So once a deleted
namespace has lingered ``release_after`` seconds and kube-controller-manager
reports content it could not delete, :func:`release_namespace` removes the
finalizers of every object still in it (every namespaced
resource the cluster serves, found through discovery, custom resources
included) and force-deletes its Pods (``gracePeriodSeconds: 0``); it does
so again every ``release_every`` seconds until the namespace is gone.

Guarantees: :func:`remove_namespace` returns once the namespace is gone
(404), or, ``timeout`` seconds after it started, with a message naming what
holds it: each object still in it with its finalizers (and why a release
failed, say a webhook refusing the patch), the namespace's own finalizers
when it has any but ``kubernetes``, and the namespace's status conditions
that are True (kube-controller-manager's ``NamespaceContentRemaining``,
``NamespaceFinalizersRemaining``, ...). The namespace's own finalizers are
never removed: only what is in it is released.

Without kube-controller-manager (envtest's binaries: etcd, kube-apiserver
and kubectl) nothing deletes a deleted namespace's content nor removes its
``kubernetes`` finalizer, so :func:`remove_namespace` told
``namespace_controller=False`` does the namespace controller's work itself
(:func:`empty_namespace`): at once, then every ``release_every`` seconds
while the namespace stays.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from ._discovery import served_resources
from ._requests import Requests

__all__ = ["TIMEOUT_ENV", "Held", "Observe", "Removal", "RemovalTiming", "empty_namespace",
           "release_namespace", "remove_namespace", "reports_content_left"]

TIMEOUT_ENV = "RECONCILEKIT_TEST_NAMESPACE_TIMEOUT"
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
Observe = Callable[[float], Awaitable[dict[str, Any] | None]]
"""``await observe(seconds)``: None once the namespace is gone (waiting at most
``seconds`` for that), else the namespace as last seen."""


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


async def release_namespace(cluster: Requests, namespace: str) -> list[Held]:
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
            name, finalizers = str(meta.get("name")), list(meta.get("finalizers") or ())
            problem = ""
            if finalizers:
                patched = await cluster.request(
                    "PATCH", f"{path}/{name}", json={"metadata": {"finalizers": None}},
                    content_type="application/merge-patch+json")
                if patched.status not in (200, 404):
                    problem = (f"removing its finalizers answered {patched.status}: "
                               f"{_message(patched.body)}")
            if resource.group_version == "v1" and resource.name == "pods":
                deleted = await cluster.request("DELETE", f"{path}/{name}", json={
                    "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0})
                if deleted.status not in (200, 202, 404):
                    problem = (f"force-deleting it answered {deleted.status}: "
                               f"{_message(deleted.body)}")
            found.append(Held(resource.kind, name, finalizers, problem))
    return found


async def empty_namespace(cluster: Requests, namespace: str) -> list[Held]:
    """What kube-controller-manager's namespace controller does for the deleted
    ``namespace``, for a control plane that runs none: its content released
    (:func:`release_namespace`), every namespaced collection deleted, then its
    ``kubernetes`` finalizer removed and the namespace deleted again, which
    removes it. Returns what :func:`release_namespace` found, and any collection
    or step refused."""
    found = await release_namespace(cluster, namespace)
    for resource in (await served_resources(cluster)).resources:
        if resource.namespaced and "deletecollection" in resource.verbs:
            deleted = await cluster.request("DELETE", resource.path(namespace))
            if deleted.status not in (200, 404, 405):
                found.append(Held(str(resource), "*", problem=(
                    f"deleting the collection answered {deleted.status}: "
                    f"{_message(deleted.body)}")))
    path = f"/api/v1/namespaces/{namespace}"
    got = await cluster.request("GET", path)
    if got.status != 200 or not isinstance(got.body, dict):
        return found  # gone already
    ns = got.body
    spec = ns.get("spec") or {}
    ns["spec"] = {**spec, "finalizers": [f for f in spec.get("finalizers") or ()
                                         if f != "kubernetes"]}
    finalized = await cluster.request("PUT", f"{path}/finalize", json=ns)
    deleted = await cluster.request("DELETE", path)
    for step, answer in (("finalizing it", finalized), ("deleting it", deleted)):
        if answer.status not in (200, 202, 404, 409):
            found.append(Held("Namespace", namespace, problem=(
                f"{step} answered {answer.status}: {_message(answer.body)}")))
    return found


@dataclass(frozen=True)
class Removal:
    """How a namespace went: ``message`` is None once gone, else what holds it;
    ``releases`` counts the release passes made, ``seconds`` the time it took."""

    message: str | None
    releases: int
    seconds: float


def reports_content_left(namespace: dict[str, Any]) -> bool:
    """Whether kube-controller-manager found content it could not delete (yet)."""
    return any(c.get("type") in ("NamespaceContentRemaining", "NamespaceFinalizersRemaining")
               and c.get("status") == "True"
               for c in namespace.get("status", {}).get("conditions") or ())


async def remove_namespace(cluster: Requests, namespace: str, observe: Observe,
                           timing: RemovalTiming, *, owner: str = "",
                           namespace_controller: bool = True) -> Removal:
    """Wait for the deleted ``namespace`` to go, releasing its content when it lingers.

    A release pass is made when the namespace is still there ``release_after``
    seconds after this started and kube-controller-manager reports content left
    in it (``NamespaceContentRemaining`` or ``NamespaceFinalizersRemaining``),
    at most every ``release_every`` seconds, and once more at the timeout to
    name what holds it (``owner``, the test it was made for, named first).
    With ``namespace_controller=False`` (no kube-controller-manager runs) the
    pass is :func:`empty_namespace`, made at once and every ``release_every``
    seconds while the namespace stays.
    """
    start = anyio.current_time()
    deadline = start + timing.timeout
    releases = 0
    last_release = float("-inf")
    release = release_namespace if namespace_controller else empty_namespace
    seen = await observe(min(timing.release_after, timing.timeout)) if namespace_controller \
        else {}
    while seen is not None:
        now = anyio.current_time()
        timed_out = now >= deadline
        lingers = reports_content_left(seen) or not namespace_controller
        if timed_out or (lingers and now - last_release >= timing.release_every):
            held = await _quietly(release, cluster, namespace)
            releases += 1
            last_release = anyio.current_time()
            if timed_out:  # asked directly: the freshest conditions, or gone after all
                got = await cluster.request("GET", f"/api/v1/namespaces/{namespace}")
                message = None if got.status == 404 else _describe(
                    namespace, got.body if isinstance(got.body, dict) else {}, held,
                    timing.timeout, owner)
                return Removal(message, releases, anyio.current_time() - start)
        seen = await observe(max(0.0, min(1.0, deadline - anyio.current_time())))
    return Removal(None, releases, anyio.current_time() - start)


async def _quietly(release: Callable[[Requests, str], Awaitable[list[Held]]],
                   cluster: Requests, namespace: str) -> list[Held]:
    try:
        return await release(cluster, namespace)
    except Exception as e:  # a transport error: said in the message if it is the last
        return [Held("release", "*", problem=f"{type(e).__name__}: {e}")]


def _describe(namespace: str, ns: dict[str, Any], held: list[Held], after: float,
              owner: str) -> str:
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
