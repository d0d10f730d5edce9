"""How the API server reaches the operator's webhook server in the cluster, and trusts it.

The server must name the Service in front of it
(``WebhookServer(service=ServiceReference(NAMESPACE, NAME))``) in the
operator's namespace, and listen on every interface on a fixed port. Its
certificate comes one of two ways (``--certificates``):

* ``cert-manager``: a self-signed Issuer and a Certificate for the Service's
  DNS names, whose Secret the Deployment mounts where the server's
  :class:`~reconcilekit.webhook.CertificateFiles` reads it (by default
  controller-runtime's ``/tmp/k8s-webhook-server/serving-certs``); the
  configurations and the converted CRDs carry ``cert-manager.io/inject-ca-from``
  and cert-manager's CA injector fills their ``caBundle``. The manager must not
  write the configurations itself (``install_configurations``): it would write
  another CA over the injected one.
* ``self-signed``: what the server does with no certificate given: it makes a
  CA and a serving certificate for the Service's DNS names at start, and the
  manager (``install_configurations=True``, required) writes the
  configurations and the CRDs' conversion with that CA as ``caBundle``. So
  the manifests hold the Service only, and one replica at a time may serve
  (each start makes a new CA): one replica, replaced with ``Recreate``.

Either way the server writes its key pair to a private temporary directory
while loading it (``ssl`` reads files only): the Deployment gives it a
writable ``/tmp`` under its read-only root file system.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from .._foundations.objects import Obj
from ..webhook import CertificateFiles, WebhookServer
from .deploy_options import DeploymentOptions, ManifestError, ManifestNames

if TYPE_CHECKING:
    from .._manager.manager import Manager

__all__ = ["CERT_DIR", "WebhookWiring", "webhook_wiring"]

CERT_DIR: Final = "/tmp/k8s-webhook-server/serving-certs"
"""Where the Secret is mounted when the manager's server does not say (controller-runtime's
default): build the server in the Pod with ``CertificateFiles(CERT_DIR)``."""
CA_INJECTION: Final = "cert-manager.io/inject-ca-from"
_ALL_INTERFACES: Final = ("", "0.0.0.0", "::")


@dataclass(frozen=True, slots=True)
class WebhookWiring:
    """What the manifests hold for the webhook server: ``documents`` (webhook.yaml), the
    container ``port`` it serves on, the Pod's ``volumes`` and the container's
    ``mounts`` for its certificate, ``ca_from`` (the cert-manager Certificate whose CA is
    injected, or None), and whether only ``one_replica`` may serve at a time."""

    documents: list[Obj]
    port: int
    ca_from: str | None
    one_replica: bool
    volumes: list[Obj] = field(default_factory=list)
    mounts: list[Obj] = field(default_factory=list)


def webhook_wiring(manager: Manager, names: ManifestNames,
                   options: DeploymentOptions) -> WebhookWiring | None:
    """The wiring of the manager's webhook server; None when it serves no webhook.
    ManifestError when the server cannot be reached or trusted as it is built."""
    server = manager.webhook_server
    if server is None or not (server.hooks or server.conversions):
        return None
    service = server.service
    if service is None:
        raise ManifestError(
            f"the webhook server {server.name} names no Service: in a cluster the API "
            "server reaches it through one; build it with WebhookServer(service="
            f"ServiceReference({names.namespace!r}, {f'{names.name}-webhook'!r}))")
    if service.namespace != names.namespace:
        raise ManifestError(
            f"the webhook Service {service.namespace}/{service.name} must be in the "
            f"operator's namespace {names.namespace} to select its Pods: name that "
            "namespace in the ServiceReference, or give it as --namespace")
    if server.host not in _ALL_INTERFACES or not server.port:
        raise ManifestError(
            f"the webhook server listens on {server.host}:{server.port}; behind a Service "
            "it must listen on every interface on a fixed port (host='0.0.0.0', "
            "port=9443)")
    labels = names.labels
    docs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": service.name, "namespace": service.namespace,
                      "labels": dict(labels)},
         "spec": {"selector": dict(labels), "ports": [
             {"name": "webhook", "port": service.port, "targetPort": server.port}]}}]
    if options.certificates == "self-signed":
        return _self_signed(server, docs)
    return _cert_manager(server, names, docs)


def _self_signed(server: WebhookServer, docs: list[Obj]) -> WebhookWiring:
    if not server.install_configurations:
        raise ManifestError(
            f"--certificates self-signed: the webhook server {server.name} makes its "
            "certificate at start and only the manager can give its CA to the API server: "
            "build it with install_configurations=True (or use --certificates cert-manager)")
    if isinstance(server.certificate, CertificateFiles):
        raise ManifestError(
            f"--certificates self-signed: the webhook server {server.name} reads its "
            f"certificate from {server.certificate.cert_file}, which nothing writes: give "
            "it no certificate (it makes its own), or use --certificates cert-manager")
    return WebhookWiring(docs, server.port, None, one_replica=True)


def _cert_manager(server: WebhookServer, names: ManifestNames,
                  docs: list[Obj]) -> WebhookWiring:
    assert server.service is not None
    if server.install_configurations:
        raise ManifestError(
            f"--certificates cert-manager: the configurations come from the manifests and "
            f"cert-manager injects their caBundle, which the webhook server {server.name} "
            "would overwrite with its own CA: build it without install_configurations (or "
            "use --certificates self-signed)")
    service, issuer = server.service, f"{names.name}-selfsigned"
    secret = f"{service.name}-tls"
    ca_from = f"{service.namespace}/{service.name}"
    docs += [
        {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
         "metadata": {"name": issuer, "namespace": service.namespace},
         "spec": {"selfSigned": {}}},
        {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
         "metadata": {"name": service.name, "namespace": service.namespace},
         "spec": {"secretName": secret, "dnsNames": list(service.hosts),
                  "issuerRef": {"kind": "Issuer", "name": issuer},
                  "privateKey": {"algorithm": "ECDSA", "size": 256,
                                 "rotationPolicy": "Always"}}}]
    for _, configuration in server.configurations():
        configuration = copy.deepcopy(configuration)
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"].pop("caBundle", None)
        configuration["metadata"]["annotations"] = {CA_INJECTION: ca_from}
        docs.append(configuration)
    return WebhookWiring(
        docs, server.port, ca_from, one_replica=False,
        volumes=[{"name": "webhook-certs", "secret": {"secretName": secret}}],
        mounts=[{"name": "webhook-certs", "mountPath": _cert_dir(server), "readOnly": True}])


def _cert_dir(server: WebhookServer) -> str:
    """Where the server reads cert-manager's Secret (``tls.crt``, ``tls.key``, ``ca.crt``)."""
    files = server.certificate
    if not isinstance(files, CertificateFiles):
        return CERT_DIR
    directory = files.cert_file.parent
    expected = {files.cert_file: "tls.crt", files.key_file: "tls.key"}
    if files.ca_file is not None:
        expected[files.ca_file] = "ca.crt"
    if any(path != directory / name for path, name in expected.items()):
        raise ManifestError(
            f"the webhook server {server.name} reads {', '.join(map(str, expected))}: "
            "cert-manager's Secret holds tls.crt, tls.key and ca.crt, mounted as one "
            f"directory: read them with CertificateFiles({str(directory)!r})")
    return str(Path(directory))
