"""The kinds' strategies, their table, and the generic store that applies them
(k8s.io/apiserver/pkg/registry)."""
