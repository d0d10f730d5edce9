"""The async ``Client``: configuration, sending and retrying, the shape of an answer, the
verbs. It knows nothing of caches, queues or expectations (the import contract says so);
a cache offers itself to the client's read-then-write helpers through ``read_caches``."""
