"""A ``Website`` operator: each Website runs as a Deployment behind a Service.

``build(client)`` gives a :class:`reconcilekit.Manager` running one
controller, :class:`WebsiteReconciler`. The kind is defined once, in Python
(:data:`WEBSITES_KIND`, objects shaped :class:`Website`); ``WEBSITE_CRD`` is
the CRD to install, made from it.
"""

from .operator import WEBSITE_CRD as WEBSITE_CRD
from .operator import WEBSITES as WEBSITES
from .operator import WEBSITES_KIND as WEBSITES_KIND
from .operator import Website as Website
from .operator import WebsiteReconciler as WebsiteReconciler
from .operator import WebsiteSpec as WebsiteSpec
from .operator import build as build

__all__ = ["WEBSITES", "WEBSITES_KIND", "WEBSITE_CRD", "Website", "WebsiteReconciler",
           "WebsiteSpec", "build"]
