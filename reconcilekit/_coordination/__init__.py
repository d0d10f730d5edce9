"""How replicas of an operator share the work: leader election on a Lease, or a ring of
shard Leases with each replica's controllers and cache limited to its shards."""
