"""Sharding: replicas that each reconcile their own shards of the key space.

:class:`Sharding` is the option a :class:`~reconcilekit.Manager` takes
(``coordination=Sharding(name=...)``); :class:`ShardRing` is the ring of
Leases behind it, usable on its own; :func:`shard_of` and :func:`shard_key`
say which shard a key falls in (FNV-1a, :func:`fnv1a64`), and
:class:`ShardSelector` is the ``shardRange()`` selector a list or watch
sends for a shard (KEP-5866).
"""

from ._coordination.shard_ring import ShardOwner as ShardOwner
from ._coordination.shard_ring import ShardRing as ShardRing
from ._coordination.sharded_controllers import Sharding as Sharding
from ._foundations.shard_selector import ShardSelector as ShardSelector
from ._foundations.shard_selector import ShardSelectorError as ShardSelectorError
from ._foundations.shard_selector import fnv1a64 as fnv1a64
from ._foundations.shard_selector import shard_key as shard_key
from ._foundations.shard_selector import shard_of as shard_of

__all__ = [
    "ShardOwner",
    "ShardRing",
    "ShardSelector",
    "ShardSelectorError",
    "Sharding",
    "fnv1a64",
    "shard_key",
    "shard_of",
]
