"""The built-in kinds' strategies, registered in one :class:`~.strategy.StrategyTable`.

Kinds that share a strategy in kube-apiserver share one here (the Events of
both groups); the kinds above the registry (webhook configurations, CRDs)
register theirs in the same table when the server is put together.
"""

from __future__ import annotations

from .autoscaler_strategy import HorizontalPodAutoscalerStrategy
from .claim_strategy import PersistentVolumeClaimStrategy
from .core_strategies import (
    ConfigMapStrategy,
    EventStrategy,
    LeaseStrategy,
    NamespaceStrategy,
    PodStrategy,
    PodTemplateStrategy,
    ReturnsDeletedStrategy,
    SecretStrategy,
)
from .service_strategy import IngressStrategy, ServiceStrategy
from .strategy import StrategyTable
from .workload_strategies import (
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
            ("", "namespaces", NamespaceStrategy()),
            ("", "pods", PodStrategy()),
            ("", "podtemplates", PodTemplateStrategy()),
            ("", "configmaps", ConfigMapStrategy()),
            ("", "secrets", SecretStrategy()),
            ("", "serviceaccounts", ReturnsDeletedStrategy()),
            ("storage.k8s.io", "storageclasses", ReturnsDeletedStrategy()),
            ("", "services", ServiceStrategy()),
            ("", "persistentvolumeclaims", PersistentVolumeClaimStrategy()),
            ("", "replicationcontrollers", ReplicationControllerStrategy()),
            ("", "events", EventStrategy(strict=False)),
            ("events.k8s.io", "events", EventStrategy(strict=True)),
            ("coordination.k8s.io", "leases", LeaseStrategy()),
            ("apps", "deployments", DeploymentStrategy()),
            ("apps", "statefulsets", StatefulSetStrategy()),
            ("apps", "daemonsets", DaemonSetStrategy()),
            ("apps", "replicasets", ReplicaSetStrategy()),
            ("batch", "jobs", JobStrategy()),
            ("batch", "cronjobs", CronJobStrategy()),
            ("autoscaling", "horizontalpodautoscalers", HorizontalPodAutoscalerStrategy()),
            ("networking.k8s.io", "ingresses", IngressStrategy())):
        table.register(group, plural, strategy)
    return table
