"""Admission and conversion webhooks: validate, default and convert objects for the API server.

A :class:`WebhookServer` serves them over HTTPS; give it to the
:class:`~reconcilekit.Manager` (``Manager(client, webhook_server=server)``)
and it runs in the manager's lifecycle. Handlers are registered with
decorators::

    server = WebhookServer(install_configurations=True)

    @server.validator(WIDGETS)
    async def validate(request: AdmissionRequest) -> Verdict:
        if request.object["spec"].get("size", 0) > 10:
            return Verdict.deny("spec.size: must be at most 10")
        return Verdict.allow()

See the webhooks page of the documentation for certificates, configurations
and the production path (a Service and cert-manager).
"""

from ._admission_review import AdmissionDenied as AdmissionDenied
from ._admission_review import AdmissionRequest as AdmissionRequest
from ._admission_review import MalformedReview as MalformedReview
from ._admission_review import UserInfo as UserInfo
from ._admission_review import Verdict as Verdict
from ._admission_review import json_patch as json_patch
from ._certificates import CertificateFiles as CertificateFiles
from ._certificates import CertificateSource as CertificateSource
from ._certificates import ServingCertificate as ServingCertificate
from ._conversion import Conversion as Conversion
from ._conversion import ConversionFailed as ConversionFailed
from ._conversion import ConvertFunction as ConvertFunction
from ._hooks import Defaulter as Defaulter
from ._hooks import Hook as Hook
from ._hooks import ServiceReference as ServiceReference
from ._hooks import Validator as Validator
from ._hooks import exclude_users as exclude_users
from ._install import WebhookSetupError as WebhookSetupError
from ._install import install_configurations as install_configurations
from ._install import remove_configurations as remove_configurations
from ._server import WebhookServer as WebhookServer

__all__ = [
    "AdmissionDenied",
    "AdmissionRequest",
    "CertificateFiles",
    "CertificateSource",
    "Conversion",
    "ConversionFailed",
    "ConvertFunction",
    "Defaulter",
    "Hook",
    "MalformedReview",
    "ServiceReference",
    "ServingCertificate",
    "UserInfo",
    "Validator",
    "Verdict",
    "WebhookServer",
    "WebhookSetupError",
    "exclude_users",
    "install_configurations",
    "json_patch",
    "remove_configurations",
]
