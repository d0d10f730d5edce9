"""The CNClaim operator, built on reconcilekit: CN Pods pooled, claimed, migrated, released.

``build_operator(client, OperatorOptions(...))`` gives a :class:`reconcilekit.Manager`
running the CNPool, CNClaim and CNClaimSet controllers; ``python -m examples.cnclaim``
runs it (see README.md beside this file).
"""

from .operator import OperatorOptions as OperatorOptions
from .operator import build_operator as build_operator
from .operator import install_crds as install_crds

__all__ = ["OperatorOptions", "build_operator", "install_crds"]
