"""The built-in kinds' strategies, registered in one :class:`~.strategy.StrategyTable`.

Kinds that share a strategy in kube-apiserver share one here (the Events of
both groups); the kinds above the registry (webhook configurations, CRDs)
register theirs in the same table when the server is put together.
"""

from __future__ import annotations

from .access_strategies import DisruptionBudgetStrategy, RoleBindingStrategy
from .autoscaler_strategy import HorizontalPodAutoscalerStrategy
from .claim_strategy import (
    PersistentVolumeClaimStrategy,
    PersistentVolumeStrategy,
    StorageClassStrategy,
)
from .core_printers import (
    component_status_cells,
    configmap_cells,
    endpoints_cells,
    namespace_cells,
    node_cells,
    persistent_volume_cells,
    persistent_volume_claim_cells,
    pod_cells,
    pod_template_cells,
    replication_controller_cells,
    resource_quota_cells,
    secret_cells,
    service_account_cells,
    service_cells,
)
from .core_strategies import (
    ConfigMapStrategy,
    EventStrategy,
    LeaseStrategy,
    LimitRangeStrategy,
    NamespaceStrategy,
    NodeStrategy,
    PodStrategy,
    PodTemplateStrategy,
    ReturnsDeletedStrategy,
    SecretStrategy,
)
from .group_printers import (
    controller_revision_cells,
    cron_job_cells,
    daemon_set_cells,
    deployment_cells,
    endpoint_slice_cells,
    ingress_cells,
    ingress_class_cells,
    job_cells,
    lease_cells,
    network_policy_cells,
    pdb_cells,
    priority_class_cells,
    replica_set_cells,
    role_binding_cells,
    runtime_class_cells,
    stateful_set_cells,
    storage_class_cells,
)
from .priority_classes import PriorityClassStrategy
from .service_strategy import (
    EndpointSliceStrategy,
    EndpointsStrategy,
    IngressStrategy,
    NetworkPolicyStrategy,
    ServiceStrategy,
)
from .strategy import Strategy, StrategyTable
from .workload_strategies import (
    ControllerRevisionStrategy,
    CronJobStrategy,
    DaemonSetStrategy,
    DeploymentStrategy,
    JobStrategy,
    ReplicaSetStrategy,
    ReplicationControllerStrategy,
    StatefulSetStrategy,
)

__all__ = ["builtin_strategies"]


def builtin_strategies() -> StrategyTable:
    """A table of the built-in kinds' strategies (a new one each call: the server adds
    the kinds above the registry to it)."""
    table = StrategyTable()
    for group, plural, strategy in (
            ("", "namespaces", NamespaceStrategy(cells=namespace_cells)),
            ("", "pods", PodStrategy(cells=pod_cells)),
            ("", "podtemplates", PodTemplateStrategy(cells=pod_template_cells)),
            ("", "configmaps", ConfigMapStrategy(cells=configmap_cells)),
            ("", "secrets", SecretStrategy(cells=secret_cells)),
            ("", "serviceaccounts", ReturnsDeletedStrategy(cells=service_account_cells)),
            ("", "componentstatuses", Strategy(cells=component_status_cells)),
            ("", "services", ServiceStrategy(cells=service_cells)),
            ("", "endpoints", EndpointsStrategy(cells=endpoints_cells)),
            ("", "nodes", NodeStrategy(cells=node_cells)),
            ("", "limitranges", LimitRangeStrategy()),
            ("", "persistentvolumes", PersistentVolumeStrategy(cells=persistent_volume_cells)),
            ("", "persistentvolumeclaims",
             PersistentVolumeClaimStrategy(cells=persistent_volume_claim_cells)),
            ("", "replicationcontrollers",
             ReplicationControllerStrategy(cells=replication_controller_cells)),
            ("", "resourcequotas", Strategy(cells=resource_quota_cells)),
            ("", "events", EventStrategy(strict=False)),
            ("events.k8s.io", "events", EventStrategy(strict=True)),
            ("coordination.k8s.io", "leases", LeaseStrategy(cells=lease_cells)),
            ("apps", "deployments", DeploymentStrategy(cells=deployment_cells)),
            ("apps", "statefulsets", StatefulSetStrategy(cells=stateful_set_cells)),
            ("apps", "daemonsets", DaemonSetStrategy(cells=daemon_set_cells)),
            ("apps", "replicasets", ReplicaSetStrategy(cells=replica_set_cells)),
            ("apps", "controllerrevisions",
             ControllerRevisionStrategy(cells=controller_revision_cells)),
            ("batch", "jobs", JobStrategy(cells=job_cells)),
            ("batch", "cronjobs", CronJobStrategy(cells=cron_job_cells)),
            ("autoscaling", "horizontalpodautoscalers", HorizontalPodAutoscalerStrategy()),
            ("networking.k8s.io", "ingresses", IngressStrategy(cells=ingress_cells)),
            ("networking.k8s.io", "ingressclasses", Strategy(cells=ingress_class_cells)),
            ("networking.k8s.io", "networkpolicies",
             NetworkPolicyStrategy(cells=network_policy_cells)),
            ("policy", "poddisruptionbudgets", DisruptionBudgetStrategy(cells=pdb_cells)),
            ("rbac.authorization.k8s.io", "rolebindings",
             RoleBindingStrategy(cells=role_binding_cells)),
            ("rbac.authorization.k8s.io", "clusterrolebindings",
             RoleBindingStrategy(cells=role_binding_cells)),
            ("storage.k8s.io", "storageclasses", StorageClassStrategy(cells=storage_class_cells)),
            ("scheduling.k8s.io", "priorityclasses",
             PriorityClassStrategy(cells=priority_class_cells)),
            ("node.k8s.io", "runtimeclasses", Strategy(cells=runtime_class_cells)),
            ("discovery.k8s.io", "endpointslices",
             EndpointSliceStrategy(cells=endpoint_slice_cells))):
        table.register(group, plural, strategy)
    return table
