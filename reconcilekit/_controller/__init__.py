"""From watch events to reconciles: the reconcile contract, mappers and predicates, the
controller (watches feeding a rate-limited queue drained by workers) and its builder."""
