"""What an API server serves, from its discovery documents, for the tests' cleanup.

Both the namespace release (every namespaced kind a test may have left in its
namespace) and the session's leftover check (every cluster-scoped kind a test
may have created) need the list of resources a cluster serves, custom
resources and aggregated APIs included, as kube-controller-manager's
namespace controller reads it (client-go's ``ServerPreferredResources``):
``/api/v1``, and each group of ``/apis`` in its preferred version, with the
resources that only another version of the group serves (a CRD whose only
version is not the group's preferred one: another CRD of the group has a
higher one) from the first version that serves them.

Guarantees: subresources (``pods/status``) are left out; a group version
whose discovery fails (an aggregated API whose backend is down) is named in
``failed`` rather than silently skipped. A group version that answers 404
serves nothing: its last CRD was deleted, and ``/apis`` still named it (seen
on kube-apiserver a moment after such a deletion).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._requests import Requests

__all__ = ["ServedResource", "Served", "served_resources"]


@dataclass(frozen=True)
class ServedResource:
    """One resource of one group version: ``path(namespace)`` is its collection."""

    group_version: str
    name: str
    kind: str
    namespaced: bool
    verbs: frozenset[str]

    def path(self, namespace: str | None = None) -> str:
        base = "/api/v1" if self.group_version == "v1" else f"/apis/{self.group_version}"
        if namespace is not None and self.namespaced:
            return f"{base}/namespaces/{namespace}/{self.name}"
        return f"{base}/{self.name}"

    def __str__(self) -> str:
        group = self.group_version.rpartition("/")[0]
        return f"{self.name}.{group}" if group else self.name


@dataclass
class Served:
    """The resources found, and the group versions whose discovery failed (with why)."""

    resources: list[ServedResource] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


async def served_resources(cluster: Requests) -> Served:
    """Every resource the cluster serves, each once: in ``v1``, or its group's preferred
    version, or else the first of the group's versions that serves it."""
    served = Served()
    versions = ["v1"]
    groups = await cluster.request("GET", "/apis")
    if groups.status != 200:
        served.failed["/apis"] = f"{groups.status} {groups.body}"
    else:
        for group in (groups.body or {}).get("groups") or ():
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            others = [v.get("groupVersion") for v in group.get("versions") or ()]
            versions += [gv for gv in (preferred, *others) if gv and gv not in versions]
    seen: set[tuple[str, str]] = set()  # (group, resource): its first version wins
    for gv in versions:
        got = await cluster.request("GET", "/api/v1" if gv == "v1" else f"/apis/{gv}")
        if got.status == 404:  # removed since /apis named it (its last CRD just deleted)
            continue
        if got.status != 200:
            served.failed[gv] = f"{got.status} {got.body}"
            continue
        for r in (got.body or {}).get("resources") or ():
            key = (gv.rpartition("/")[0], r.get("name", "/"))
            if "/" in key[1] or key in seen:
                continue
            seen.add(key)
            served.resources.append(ServedResource(
                gv, r["name"], r.get("kind", ""), bool(r.get("namespaced")),
                frozenset(r.get("verbs") or ())))
    return served
