"""What every part of reconcilekit shares: objects and their keys, the API's errors, the
clock, label, field and shard selectors with their grammar, structured logging, and the
HTTP endpoints a process serves. Nothing here imports another part of the library."""
