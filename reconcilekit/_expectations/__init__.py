"""Expectations: "do not act again until the cache has seen my own writes, or until the
timeout says the event was lost", by counts of creates and deletes or by resourceVersion;
and reservations between workers. No expectation waits forever."""
