"""The cache's indexes: which claims a Pod event concerns, and more.

A Pod event reconciles:
  * the claim its ``claimed-by`` label names;
  * every claim whose ``spec.podName`` or ``spec.sourcePod.podName`` names
    it, found through a field index: once the label is gone (released as
    stale, or removed by hand) a Pod's deletion still reaches the claim
    bound to it (the CNClaim incident, docs/reliability.md, bug 4), without
    listing every claim on every Pod event;
  * for an Idle Pod that can be bound: the claims of its pool waiting for one.

Every lookup costs O(matches), independent of the number of claims. So do
the reconcilers' reads of a pool's Pods, a claim's Pods and a set's claims,
through field indexes on the pool label, the claim label and the set label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from reconcilekit import Cache, Request
from reconcilekit.kinds import PODS

from .bindable import BindablePods
from .resources import (
    CLAIMED_BY_LABEL,
    CLAIMSET_LABEL,
    CNCLAIMS,
    POOL_LABEL,
    claimed_by,
    deleting,
    labels,
    name_of,
    namespace_of,
    source_pod,
    spec_of,
)

__all__ = ["POD_NAME_FIELD", "SOURCE_POD_FIELD", "Indexes"]

Obj = Mapping[str, Any]

POD_NAME_FIELD: Final = "spec.podName"
SOURCE_POD_FIELD: Final = "spec.sourcePod.podName"
_POOL_FIELD: Final = "pool"
_CLAIMED_BY_FIELD: Final = "claimed-by"
_CLAIMSET_FIELD: Final = "claimset"
_NAMES_POD: Final = "cnclaim/names-pod"
_WAITING: Final = "cnclaim/waiting-in-pool"
_ANY_POOL: Final = "*"


def pod_name_of(claim: Obj) -> list[str]:
    pod = str(spec_of(claim).get("podName") or "")
    return [pod] if pod else []


def source_pod_of(claim: Obj) -> list[str]:
    pod = source_pod(claim)
    return [pod] if pod else []


def pods_named(claim: Obj) -> list[str]:
    return sorted({*pod_name_of(claim), *source_pod_of(claim)})


def _label(name: str) -> Callable[[Obj], list[str]]:
    def values(obj: Obj) -> list[str]:
        value = labels(obj).get(name)
        return [value] if value else []

    return values


def waiting_pool(claim: Obj) -> list[str]:
    """``namespace/pool`` a claim waits in for an Idle Pod: it has none, or migrates off the
    one it has (the namespace is in the value so a lookup needs no filtering)."""
    if deleting(claim):
        return []
    spec = spec_of(claim)
    pod = str(spec.get("podName") or "")
    if pod and pod != source_pod(claim):
        return []
    return [f"{namespace_of(claim)}/{str(spec.get('poolName') or '') or _ANY_POOL}"]


class Indexes:
    """The cache's indexes, for reconcilers (async) and for the Pod event mapper (sync).

    Reconcilers ask through ``cache.list(CNCLAIMS, ns, field=...)`` over the
    field indexes ``spec.podName`` and ``spec.sourcePod.podName`` registered
    with ``cache.index_field``. A mapper cannot await (reconcilekit calls it
    inside the informer's event dispatch), so :meth:`pod_to_claims` asks
    ``cache.lookup_keys``, which reads an index synchronously and decodes
    nothing.
    """

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        cache.index_field(CNCLAIMS, POD_NAME_FIELD, pod_name_of)
        cache.index_field(CNCLAIMS, SOURCE_POD_FIELD, source_pod_of)
        cache.index_field(CNCLAIMS, _CLAIMSET_FIELD, _label(CLAIMSET_LABEL))
        cache.index_field(PODS, _POOL_FIELD, _label(POOL_LABEL))
        cache.index_field(PODS, _CLAIMED_BY_FIELD, _label(CLAIMED_BY_LABEL))
        cache.index_field(CNCLAIMS, _NAMES_POD, pods_named)
        cache.index_field(CNCLAIMS, _WAITING, waiting_pool)
        self.bindable = BindablePods()
        cache.add_handler(PODS, self.bindable.handler())
        self._pods = cache.informer_for(PODS)

    # The reads below are shared (the cache's own objects, no copy): their callers only
    # read them, and write through patches built apart. The pytest plugin's mutation
    # detector would fail a test in which one changed them.

    async def claims_naming(self, namespace: str, pod: str) -> list[dict[str, Any]]:
        """Claims whose ``spec.podName`` or ``spec.sourcePod.podName`` is ``pod`` (shared)."""
        found: dict[str, dict[str, Any]] = {}
        for field in (POD_NAME_FIELD, SOURCE_POD_FIELD):
            for claim in await self.cache.list(CNCLAIMS, namespace, field=(field, pod),
                                               shared=True):
                found[name_of(claim)] = claim
        return [found[k] for k in sorted(found)]

    async def pool_pods(self, namespace: str, pool: str) -> list[dict[str, Any]]:
        """The Pods labelled with ``pool`` (shared)."""
        return await self.cache.list(PODS, namespace, field=(_POOL_FIELD, pool), shared=True)

    async def pods_claimed_by(self, namespace: str, claim: str) -> list[dict[str, Any]]:
        """The Pods labelled as claimed by ``claim`` (shared)."""
        return await self.cache.list(PODS, namespace, field=(_CLAIMED_BY_FIELD, claim),
                                     shared=True)

    async def set_claims(self, namespace: str, claimset: str) -> list[dict[str, Any]]:
        """The claims labelled as made by ``claimset`` (shared)."""
        return await self.cache.list(CNCLAIMS, namespace, field=(_CLAIMSET_FIELD, claimset),
                                     shared=True)

    def _keys(self, index: str, value: str, namespace: str) -> Iterable[Request]:
        for key in self.cache.lookup_keys(CNCLAIMS, (index, value), namespace=namespace):
            yield Request(key.namespace, key.name)

    def _waiting(self, namespace: str, pool: str, wanted: int) -> Iterable[Request]:
        """Up to ``wanted`` claims waiting in ``pool``, in O(wanted)."""
        value = f"{namespace}/{pool}"
        for key in self.cache.lookup_keys(CNCLAIMS, (_WAITING, value), limit=wanted):
            yield Request(key.namespace, key.name)

    def claim_to_pools(self, claim: Obj) -> list[Request]:
        """The pools of the Pods a deleted claim's label still names: their pool releases
        them (a claim binds its Pod before the write that adds its finalizer, so a
        claim deleted in between leaves its Pod to the pool; claim.py)."""
        namespace = namespace_of(claim)
        pools = {str(spec_of(claim).get("poolName") or "")}
        for key in self.cache.lookup_keys(PODS, (_CLAIMED_BY_FIELD, name_of(claim)),
                                          namespace=namespace):
            pod = self._pods.store.get(key)
            if pod is not None:
                pools.add(labels(pod).get(POOL_LABEL, ""))
        return [Request(namespace, pool) for pool in sorted(pools) if pool]

    def pod_to_claims(self, pod: Obj) -> list[Request]:
        """The claims to reconcile for an event of ``pod`` (see the module docstring)."""
        namespace, name = namespace_of(pod), name_of(pod)
        requests = set(self._keys(_NAMES_POD, name, namespace))
        owner = claimed_by(pod)
        if owner:
            requests.add(Request(namespace, owner))
        pool = labels(pod).get(POOL_LABEL, "")
        # The tracker holds the Pod's current state: an update is mapped for its old
        # object too, and an old Idle state must not wake anyone.
        # Before the Pod informer has synced, the controllers have not started: every
        # claim will be reconciled from its own initial event anyway.
        if pool and self._pods.has_synced and self.bindable.holds(namespace, pool, name):
            # About as many waiting claims as the pool has bindable Pods: each woken
            # claim takes one (or finds none left). Twice that, plus a few, because the
            # first waiting claims in key order may have just bound a Pod that the claim
            # index does not show yet. Waking every waiting claim on every Pod event
            # would be O(claims) per event, O(N^2) in a claim storm. Claims still
            # Pending also look again on their own (claim.py).
            wanted = 2 * self.bindable.count(namespace, pool) + 4
            requests.update(self._waiting(namespace, pool, wanted))
            requests.update(self._waiting(namespace, _ANY_POOL, wanted))
        return sorted(requests)
