"""reconcilekit: a controller-runtime-style framework for Kubernetes controllers in Python."""

from ._clock import Clock as Clock
from ._clock import SystemClock as SystemClock

__all__ = [
    "Clock",
    "SystemClock",
]
