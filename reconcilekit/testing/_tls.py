"""Certificates for test servers: a throwaway CA and a serving certificate signed by it.

The in-process API server serves HTTPS like kube-apiserver, so that kubectl and
every client-go client (which send a bearer token only over TLS) work against
it; :class:`ControlPlane` gives kube-apiserver one too. Both use
:class:`reconcilekit.webhook.ServingCertificate`, the same generator the
webhook server uses for its development certificate.
"""

from __future__ import annotations

from ..webhook._certificates import ServingCertificate

__all__ = ["ServingCertificate"]
