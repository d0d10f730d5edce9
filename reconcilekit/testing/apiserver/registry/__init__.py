"""The generic store and the kinds' strategies it applies (k8s.io/apiserver/pkg/registry)."""
