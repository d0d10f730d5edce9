"""A manager's controllers as one member of a :class:`~reconcilekit.sharding.ShardRing`.

``Manager(coordination=Sharding(name="my-operator"))`` runs the manager's
controllers on the keys of the shards this replica holds, instead of on
every key with one leader (the two are exclusive). A request's shard key is
the 64-bit FNV-1a hash of its namespace (``key="namespace"``, the default:
a namespace's objects stay together, and every resource can be sharded) or
of the uid of its primary object in the cache (``key="uid"``: finer, but
only the primary resource is sharded).

What the manager does with the ring (:class:`ShardedControllers`):
  * with ``key="namespace"`` the cache holds only the replica's shards (it
    is made with a :class:`NamespaceShards` filter): every informer admits
    only objects whose namespace falls in a held shard, right after
    decoding, before the store and the handlers. The cache syncs empty,
    before the replica holds anything. With ``key="uid"`` the cache is not
    filtered: one controller's primary objects are often another's
    secondaries (a set's claims), which must be seen whole;
  * each controller runs with a gate: a key whose shard this replica does
    not hold when a worker takes it is dropped (its owner reconciles it);
  * ``start_shard``: the filtered informers list again (the shard's objects
    arrive, and their handlers queue them), then every cached primary object
    of the shard is queued, as after a resync;
  * ``stop_shard``: new keys of the shard are already refused (the ring
    drops it from the held set first); in-flight reconciles of it finish,
    or are cancelled after the time the ring allows (the manager's
    ``graceful_shutdown_timeout`` when handing over, the Lease margin when
    the Lease was lost); then the shard's objects leave the cache, no
    handler told (they were not deleted).

What cannot be sharded: with ``key="uid"``, the cache (only the work is
split); cluster-scoped objects hash an empty namespace, so with
``key="namespace"`` they all fall in one shard.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from .._cache.cache import Cache
from .._cache.informer import Informer
from .._controller.controller import Controller
from .._controller.reconciler import Request
from .._foundations.objects import ObjectKey
from .._foundations.shard_selector import fnv1a64
from .leader_election import check_lease_timing
from .shard_ring import ShardRing

__all__ = ["NamespaceShards", "ShardMetricsCollector", "ShardedControllers", "Sharding"]

_FIELDS: Final = {"namespace": "object.metadata.namespace", "uid": "object.metadata.uid"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Sharding:
    """Run a manager's controllers as a member of the ring ``name`` (Leases in ``namespace``).

    ``shards``: how many equal ranges the key space is cut into (every
    replica must use the same number; more shards balance more finely and
    cost more Lease renewals). ``key``: ``"namespace"`` or ``"uid"``.
    ``lease_duration``, ``renew_deadline``, ``retry_period``: the member and
    shard Leases' timings, as :class:`~reconcilekit.LeaderElection`'s.
    """

    name: str
    namespace: str = "default"
    shards: int = 16
    key: Literal["namespace", "uid"] = "namespace"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("Sharding needs the ring's name (the Leases are named after it)")
        if self.key not in _FIELDS:
            raise ValueError(f"Sharding key must be 'namespace' or 'uid', not {self.key!r}")
        if not 1 <= self.shards <= 1024:
            raise ValueError(f"shards must be 1 to 1024, got {self.shards}")
        check_lease_timing(self.lease_duration, self.renew_deadline, self.retry_period)

    @property
    def field(self) -> str:
        """The field the key hashes, as a shard selector names it."""
        return _FIELDS[self.key]


@dataclass(frozen=True, slots=True)
class NamespaceShards:
    """The objects of the shards ``ring`` holds, by the hash of their namespace: what the
    cache of a ring keyed by namespace is made with. Each answer is the ring's at the
    time of asking, so it follows the shards as they are taken and handed over."""

    ring: ShardRing

    def admits(self, obj: Mapping[str, Any]) -> bool:
        """Whether ``obj``'s namespace falls in a held shard (a cache's ``admit``)."""
        return self.ring.owns(fnv1a64((obj.get("metadata") or {}).get("namespace") or ""))

    def selector(self) -> str | None:
        """The held shards as a shard selector of the namespace (a cache's
        ``shard_selector``); None while none is held."""
        held = self.ring.selector(_FIELDS["namespace"])
        return str(held) if held is not None else None


class ShardMetricsCollector(Collector):
    """``reconcilekit_shard_ring_*``: members, shards held, rebalances, the last handover's
    time, and the cached primary objects of each held shard (namespace sharding)."""

    def __init__(self, registry: CollectorRegistry, ring: ShardRing, sharding: Sharding,
                 controllers: Sequence[Controller]) -> None:
        self.ring, self.sharding, self.controllers = ring, sharding, controllers
        registry.register(self)

    def describe(self) -> Iterable[Metric]:
        return []

    def collect(self) -> Iterable[Metric]:
        stats, ring = self.ring.statistics(), self.ring.name
        for name, kind, help_, value in (
                ("members", GaugeMetricFamily, "Live members of the ring, as last seen",
                 len(stats.members)),
                ("shards_held", GaugeMetricFamily, "Shards whose Lease this replica holds",
                 len(stats.held)),
                ("rebalances", CounterMetricFamily, "Changes of the ring's membership or "
                 "assignment seen by this replica", stats.rebalances)):
            family = kind(f"reconcilekit_shard_ring_{name}", help_, labels=["ring"])
            family.add_metric([ring], value)
            yield family
        if stats.last_handover_seconds is not None:
            handover = GaugeMetricFamily(
                "reconcilekit_shard_ring_last_handover_seconds", "How long the last shard "
                "this replica took waited from its assignment to holding its Lease",
                labels=["ring"])
            handover.add_metric([ring], stats.last_handover_seconds)
            yield handover
        if self.sharding.key == "namespace":
            objects = GaugeMetricFamily("reconcilekit_shard_objects", "Cached objects of "
                                        "each controller's primary resource per held shard",
                                        labels=["ring", "controller", "shard"])
            for controller in self.controllers:
                if controller.primary is None:
                    continue
                counts: Counter[int] = Counter()
                for key in controller.cache.informer_for(controller.primary).store:
                    counts[self.ring.shard_of(fnv1a64(key.namespace))] += 1
                for shard in stats.held:
                    objects.add_metric([ring, controller.name, str(shard)], counts[shard])
            yield objects


class ShardedControllers:
    """The ring's :class:`~reconcilekit.sharding.ShardOwner` for a manager's controllers."""

    def __init__(self, ring: ShardRing, sharding: Sharding,
                 controllers: Sequence[Controller], cache: Cache) -> None:
        """Work on ``controllers`` (the manager's: the sequence is read when shards are
        taken and handed over, so controllers added to it later count) as a member of
        ``ring``, keyed as ``sharding`` says. ``cache`` is the manager's: with
        ``key="namespace"`` it must have been made with this ring's
        :class:`NamespaceShards` filter, and its informers are listed again when a
        shard is taken and forget a shard's objects when it is handed over."""
        self.ring, self.sharding = ring, sharding
        self.controllers = controllers
        self._cache = cache

    @property
    def filtered(self) -> list[Informer]:
        """The informers holding only this replica's shards (made so far)."""
        return self._cache.informers() if self.sharding.key == "namespace" else []

    def _shard_of_key(self, key: ObjectKey) -> int:
        return self.ring.shard_of(fnv1a64(key.namespace))

    def key_of(self, controller: Controller, request: Request) -> int | None:
        """The shard key of ``request``: None when it cannot be known (a uid-sharded key
        whose object is not in the cache: gone, or not ours)."""
        if self.sharding.key == "namespace":
            return fnv1a64(request.namespace)
        if controller.primary is None:
            return None
        obj = controller.cache.informer_for(controller.primary).store.get(
            ObjectKey(request.namespace, request.name))
        uid = (obj or {}).get("metadata", {}).get("uid")
        return fnv1a64(str(uid)) if uid else None

    def gate(self, controller: Controller) -> Callable[[Request], bool]:
        """What ``controller`` runs with: whether a key's shard is held when a worker
        takes it (a key whose shard cannot be known is not)."""
        def admits(request: Request) -> bool:
            key = self.key_of(controller, request)
            return key is not None and self.ring.owns(key)
        return admits

    def _in(self, controller: Controller, shard: int) -> Callable[[Request], bool]:
        def selects(request: Request) -> bool:
            key = self.key_of(controller, request)
            return key is not None and self.ring.shard_of(key) == shard
        return selects

    async def start_shard(self, shard: int) -> None:
        async with anyio.create_task_group() as tg:  # concurrent starts share their lists
            for informer in self.filtered:
                tg.start_soon(informer.reshard)
        for controller in self.controllers:
            controller.enqueue_matching(self._in(controller, shard))

    async def stop_shard(self, shard: int, within: float) -> None:
        async with anyio.create_task_group() as tg:
            for controller in self.controllers:
                tg.start_soon(controller.drain, self._in(controller, shard), within)
        for informer in self.filtered:
            informer.forget(functools.partial(self._key_in, shard))

    def _key_in(self, shard: int, key: ObjectKey) -> bool:
        return self._shard_of_key(key) == shard
