"""The tutorial's operator (docs/tutorial.md): a Secret beside every ConfigMap, same data.

``build(client)`` gives a :class:`reconcilekit.Manager` running one
controller, :class:`CopyToSecret`; ``python -m examples.configmap_to_secret``
runs it against a kubeconfig or in a Pod until SIGTERM.
"""

from .operator import CopyToSecret as CopyToSecret
from .operator import build as build

__all__ = ["CopyToSecret", "build"]
