"""An operator's manifests generated from its Manager: the RBAC it needs, its Deployment
with its ServiceAccount and metrics Service, its webhooks' Service, certificate and
configurations, its CRDs, and a kustomization.yaml listing them
(``python -m reconcilekit manifests``)."""
