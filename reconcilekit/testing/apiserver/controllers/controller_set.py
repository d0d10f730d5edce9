"""The controllers the in-process kube-controller-manager can run, by the names
kube-controller-manager's ``--controllers`` gives them."""

from __future__ import annotations

from .controller_manager import Loop
from .cronjob import CronJobController
from .daemonset import DaemonSetController
from .deployment import DeploymentController
from .disruption import DisruptionController
from .endpointslice import EndpointSliceController
from .job import JobController, TTLAfterFinishedController
from .quota_status import ResourceQuotaController
from .replicaset import ReplicaSetController
from .service_endpoints import EndpointsController
from .statefulset import StatefulSetController

__all__ = ["CONTROLLERS"]

CONTROLLERS: dict[str, type[Loop]] = {
    cls.name: cls for cls in (CronJobController, DaemonSetController, DeploymentController,
                              DisruptionController,
                              EndpointsController,
                              EndpointSliceController, JobController, ReplicaSetController,
                              ResourceQuotaController,
                              StatefulSetController, TTLAfterFinishedController)}
