"""A ``Website`` operator: each Website runs as a Deployment behind a Service.

``build(client)`` gives a :class:`reconcilekit.Manager` running one
controller, :class:`WebsiteReconciler`; ``WEBSITE_CRD`` is the CRD to install.
"""

from .operator import DEPLOYMENTS as DEPLOYMENTS
from .operator import SERVICES as SERVICES
from .operator import WEBSITE_CRD as WEBSITE_CRD
from .operator import WEBSITES as WEBSITES
from .operator import WebsiteReconciler as WebsiteReconciler
from .operator import build as build

__all__ = ["DEPLOYMENTS", "SERVICES", "WEBSITES", "WEBSITE_CRD", "WebsiteReconciler", "build"]
