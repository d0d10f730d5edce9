"""The sessions whose results differ today, each with the difference found.

``NOT_YET_MATCHED`` maps a session's name to what the in-process server does
differently from kube-apiserver; :mod:`test_sessions` marks those sessions
``xfail(strict=True)``, so a session that starts matching fails until its entry
goes. docs/testing.md lists the same names ("Differential testing against
kube-apiserver"), which ``test_known_differences`` checks.
"""

from __future__ import annotations

NOT_YET_MATCHED: dict[str, str] = {
    "auth-can-i": (
        "no authorization.k8s.io SelfSubjectAccessReview: `kubectl auth can-i` gets 404 and "
        "exits 1 where kube-apiserver answers yes"),
    "cluster-scoped-reads": (
        "a CRD's spec.names.listKind is not defaulted (kube-apiserver sets WidgetList)"),
    "configmap-diff": (
        "`kubectl diff --server-side` after a client-side apply: the in-process server answers "
        "Conflict with kubectl-client-side-apply on .data.a (kube-apiserver lets the server-"
        "side apply take over fields last applied client-side) and kubectl warns the object "
        "keeps changing"),
    "create-token": (
        "no TokenRequest (serviceaccounts/token): `kubectl create token` fails with 404"),
    "cronjob": (
        "CronJob validation missing: a schedule of the wrong form (`not a schedule`) is "
        "accepted"),
    "cronjob-table": (
        "CronJob Table has only NAME and CREATED AT (kube-apiserver: SCHEDULE, SUSPEND, ACTIVE,"
        " LAST SCHEDULE, AGE)"),
    "daemonset": (
        "strategic merge patch with $setElementOrder refused: `kubectl set image daemonset/...`"
        " fails with 'The order in patch list ... doesn't match $setElementOrder list'"),
    "deployment-apply-update": (
        "client-side apply removing a container (a patch with $patch: delete and "
        "$setElementOrder) refused: 'The order in patch list ... doesn't match $setElementOrder"
        " list'"),
    "deployment-scale": (
        "`kubectl scale --current-replicas` (an update of the scale subresource) answered 415 "
        "Unsupported Media Type"),
    "deployment-set": (
        "strategic merge patch with $setElementOrder refused: `kubectl set image` of one "
        "container of two fails"),
    "deployment-set-single-container": (
        "strategic merge patch with $setElementOrder refused: `kubectl set env` fails"),
    "deployment-strategic-merge": (
        "strategic merge patch replaces a Deployment's containers list instead of merging by "
        "name (the sidecar container is lost)"),
    "deployment-table": (
        "Deployment Table has only NAME and CREATED AT (kube-apiserver: READY, UP-TO-DATE, "
        "AVAILABLE, AGE)"),
    "deployment-validation": (
        "Deployment validation missing: a pod template with no containers is accepted (kube-"
        "apiserver: spec.template.spec.containers: Required value)"),
    "explain": (
        "no OpenAPI schemas for built-in kinds: `kubectl explain configmap` prints DESCRIPTION "
        "<empty> and no FIELDS"),
    "explain-crd": (
        "a CRD's published OpenAPI schema lacks apiVersion, kind and metadata, so `kubectl "
        "explain widgets` does not list them"),
    "hpa": (
        "an HPA created in autoscaling/v1 (`kubectl autoscale`) is served in autoscaling/v2 "
        "unconverted: patching it warns 'unknown field spec.targetCPUUtilizationPercentage'"),
    "hpa-defaults": (
        "HPA defaults missing: spec.minReplicas 1, status.currentMetrics null, "
        "status.desiredReplicas 0"),
    "ingress": (
        "an Ingress has no status (kube-apiserver: status.loadBalancer {})"),
    "ingress-table": (
        "Ingress Table has only NAME and CREATED AT (kube-apiserver: CLASS, HOSTS, ADDRESS, "
        "PORTS, AGE)"),
    "job": (
        "a Job's spec.template is mutable (kube-apiserver: field is immutable)"),
    "pdb": (
        "PodDisruptionBudget validation missing: minAvailable and maxUnavailable both set is "
        "accepted"),
    "pvc": (
        "PVC defaults missing: spec.volumeMode Filesystem"),
    "pvc-defaults": (
        "PVC defaults missing: the kubernetes.io/pvc-protection finalizer, spec.volumeMode "
        "Filesystem, status.phase Pending"),
    "rbac-tables": (
        "RoleBinding Table (-o wide) has only NAME and CREATED AT (kube-apiserver: ROLE, AGE, "
        "USERS, GROUPS, SERVICEACCOUNTS)"),
    "service-apply-and-patch": (
        "strategic merge patch replaces a Service's ports list instead of merging by port (the "
        "http port is lost)"),
    "service-basics": (
        "a NodePort already allocated to another Service is accepted (kube-apiserver: provided "
        "port is already allocated)"),
    "service-table": (
        "Service Table has only NAME and CREATED AT (kube-apiserver: TYPE, CLUSTER-IP, "
        "EXTERNAL-IP, PORT(S), AGE)"),
    "statefulset": (
        "StatefulSet defaults missing in volumeClaimTemplates: apiVersion v1, kind "
        "PersistentVolumeClaim, creationTimestamp null, spec.volumeMode Filesystem, "
        "status.phase Pending"),
    "statefulset-operations": (
        "strategic merge patch with $setElementOrder refused: `kubectl set image "
        "statefulset/...` fails"),
    "widget-validation": (
        "a custom resource's validation errors come in another order, and the scale "
        "subresource's check of .spec.replicas ('should be a non-negative integer') is missing"),
}
