"""Test doubles for controllers built with reconcilekit (public API).

* :class:`APIServer`: an in-process Kubernetes API server speaking the real
  wire protocol over HTTPS (its own CA), with fault injection.
* :class:`ControlPlane`: a real etcd, kube-apiserver and kube-controller-manager
  started from a directory of binaries (envtest's ``KUBEBUILDER_ASSETS``).
* :class:`AuditLog`: kube-apiserver's audit log of a ``ControlPlane``, read
  back as :class:`AuditEvent` objects (who wrote what, when, as the server saw it).
* :class:`NodeSimulator`: the scheduler's and kubelet's part for a cluster
  with no nodes.
* :class:`FakeClock`: a clock that only moves when the test says so.
* :class:`OperatorProcess`: an operator (or any command) as a child process, its
  output read line by line, waited on with deadlines, SIGTERMed or SIGKILLed.
* :class:`TCPProxy`: a proxy in front of a server that counts the bytes,
  delays them, and can cut or black-hole its connections.
* :func:`write_volume`: files replaced in a directory as the kubelet replaces
  a Secret or projected token volume (rotated certificates and tokens).
"""

from ._audit import AuditEvent as AuditEvent
from ._audit import AuditLog as AuditLog
from ._cluster import Cluster as Cluster
from ._cluster import HTTPResult as HTTPResult
from ._control_plane import ControlPlane as ControlPlane
from ._control_plane import ControlPlaneError as ControlPlaneError
from ._eventually import eventually as eventually
from ._fake_clock import FakeClock as FakeClock
from ._nodes import NodeSimulator as NodeSimulator
from ._operator_process import OperatorProcess as OperatorProcess
from ._tcp_proxy import TCPProxy as TCPProxy
from ._volumes import write_volume as write_volume
from ._webhook_install import installed_webhooks as installed_webhooks
from .apiserver.endpoints.faults import Faults as Faults
from .apiserver.kube_apiserver import APIServer as APIServer

__all__ = [
    "APIServer",
    "AuditEvent",
    "AuditLog",
    "Cluster",
    "ControlPlane",
    "ControlPlaneError",
    "FakeClock",
    "Faults",
    "HTTPResult",
    "NodeSimulator",
    "OperatorProcess",
    "TCPProxy",
    "eventually",
    "installed_webhooks",
    "write_volume",
]
