"""The watch cache's events and watchers, and sharded list/watch (k8s.io/apiserver/pkg/storage)."""
