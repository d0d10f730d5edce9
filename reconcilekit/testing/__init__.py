"""Test doubles for controllers built with reconcilekit (public API).

* :class:`APIServer`: an in-process Kubernetes API server speaking the real
  wire protocol over HTTP, with fault injection.
* :class:`FakeClock`: a clock that only moves when the test says so.
"""

from ._fake_clock import FakeClock as FakeClock

__all__ = [
    "FakeClock",
]
