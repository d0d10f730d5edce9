"""The rate-limited work queue: a key is never processed by two workers at once, never
lost while queued, and delayed keys wake their getters without polling. It knows nothing
of the client or the cache."""
