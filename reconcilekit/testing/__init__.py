"""Test doubles for controllers built with reconcilekit (public API).

* :class:`APIServer`: an in-process Kubernetes API server speaking the real
  wire protocol over HTTP, with fault injection.
* :class:`FakeClock`: a clock that only moves when the test says so.
"""

from ._apiserver import APIServer as APIServer
from ._cluster import Cluster as Cluster
from ._cluster import HTTPResult as HTTPResult
from ._eventually import eventually as eventually
from ._fake_clock import FakeClock as FakeClock
from ._faults import Faults as Faults

__all__ = [
    "APIServer",
    "Cluster",
    "FakeClock",
    "Faults",
    "HTTPResult",
    "eventually",
]
