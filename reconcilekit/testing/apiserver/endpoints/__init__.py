"""The HTTP front of the server (k8s.io/apiserver/pkg/endpoints): filters, then handlers."""
