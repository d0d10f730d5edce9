"""The manifests of an operator, generated from its Manager: RBAC, webhooks, CRDs.

``python -m reconcilekit manifests MODULE:CALLABLE --out DIR`` (:mod:`reconcilekit.__main__`)
calls ``CALLABLE(client)`` with a :class:`Client` that is never connected (a
client connects on its first request; building a manager sends none) and
writes what :func:`manifests` returns:

* ``rbac.yaml``: the Namespace and ServiceAccount the operator runs as, a
  ClusterRole and its binding for the grants that apply everywhere, a Role
  and RoleBinding per namespace for the others (a manager with a namespace
  gets only Roles), and one for the Leases of leader election or sharding
  (:func:`reconcilekit.rbac.required_permissions` says which grants);
* ``webhook.yaml`` when the manager serves webhooks: the Validating and
  MutatingWebhookConfigurations its :class:`~reconcilekit.webhook.WebhookServer`
  serves (``caBundle`` left out), and when the server names a Service, that
  Service and a cert-manager Issuer and Certificate for it, the
  configurations annotated for cert-manager's CA injector;
* ``crds.yaml`` when a resource the manager uses has a ``definition`` with a
  ``crd()`` method: each such CustomResourceDefinition (with the server's
  conversion webhook, if it converts the kind).

Guarantees: the output depends only on the manager (and the names given):
documents and rules are sorted, the YAML is PyYAML's with keys in a fixed
order, so generating twice gives the same bytes, and a test can compare the
committed files with a fresh generation.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._foundations.objects import Obj, Resource
from .rbac import VERBS, Grant, required_permissions

if TYPE_CHECKING:
    from ._manager.manager import Manager

__all__ = ["ManifestError", "ManifestNames", "manifests", "render"]

RBAC: Final = "rbac.authorization.k8s.io"
_CA_INJECTION: Final = "cert-manager.io/inject-ca-from"


class ManifestError(ValueError):
    """The manager cannot be written as manifests; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class ManifestNames:
    """Who the operator is on the cluster: ``name`` (its roles, bindings, Service labels),
    the ServiceAccount ``service_account`` in ``namespace``."""

    name: str
    namespace: str
    service_account: str


def manifests(manager: Manager, names: ManifestNames) -> dict[str, list[Obj]]:
    """File name -> its documents: ``rbac.yaml``, and ``webhook.yaml``, ``crds.yaml`` when
    there is something to put in them."""
    out = {"rbac.yaml": rbac_documents(required_permissions(manager), names)}
    webhooks = webhook_documents(manager, names)
    if webhooks:
        out["webhook.yaml"] = webhooks
    crds = crd_documents(manager)
    if crds:
        out["crds.yaml"] = crds
    return out


def default_namespace(manager: Manager) -> str | None:
    """Where the operator itself runs, as its manager says: its Leases' namespace, else its
    webhook Service's. None when it says nothing; ManifestError when those differ."""
    found = {g.namespace for g in required_permissions(manager)
             if g.role and g.namespace is not None}
    server = manager.webhook_server
    if server is not None and server.service is not None:
        found.add(server.service.namespace)
    if len(found) > 1:
        raise ManifestError(f"the manager's Leases and webhook Service are in different "
                            f"namespaces ({', '.join(sorted(found))}): say which one the "
                            "operator runs in with --namespace")
    return next(iter(found), None)


# -- RBAC ------------------------------------------------------------------------------------

def rbac_documents(grants: Iterable[Grant], names: ManifestNames) -> list[Obj]:
    """The Namespace, ServiceAccount, roles and bindings for ``grants``."""
    buckets: dict[tuple[str, str | None], list[Grant]] = defaultdict(list)
    for grant in grants:
        buckets[(grant.role, grant.namespace)].append(grant)
    subject = {"kind": "ServiceAccount", "name": names.service_account,
               "namespace": names.namespace}
    docs: list[Obj] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": names.namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": names.service_account, "namespace": names.namespace}}]
    cluster = sorted(k for k in buckets if k[1] is None)
    spaced = sorted((k for k in buckets if k[1] is not None), key=lambda k: (k[1], k[0]))
    for role, namespace in [*cluster, *spaced]:
        name = f"{names.name}-{role}" if role else names.name
        kind = "ClusterRole" if namespace is None else "Role"
        meta: Obj = {"name": name, **({"namespace": namespace} if namespace else {})}
        docs.append({"apiVersion": f"{RBAC}/v1", "kind": kind, "metadata": meta,
                     "rules": rules(buckets[(role, namespace)])})
        docs.append({"apiVersion": f"{RBAC}/v1", "kind": f"{kind}Binding",
                     "metadata": dict(meta),
                     "roleRef": {"apiGroup": RBAC, "kind": kind, "name": name},
                     "subjects": [dict(subject)]})
    return docs


def rules(grants: Iterable[Grant]) -> list[Obj]:
    """PolicyRules granting exactly ``grants``: one per API group, resource names and set
    of verbs, its resources sorted; the rules sorted by group, then resources."""
    verbs: dict[tuple[str, tuple[str, ...], str], set[str]] = defaultdict(set)
    for grant in grants:
        p = grant.permission
        verbs[(p.resource.group, p.resource_names, p.rbac_resource)].update(p.verbs)
    merged: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = defaultdict(list)
    for (group, names, resource), wanted in verbs.items():
        merged[(group, names, tuple(v for v in VERBS if v in wanted))].append(resource)
    out = []
    for (group, names, ordered), resources in sorted(
            merged.items(), key=lambda kv: (kv[0][0], sorted(kv[1]), kv[0][1], kv[0][2])):
        rule: Obj = {"apiGroups": [group], "resources": sorted(resources),
                     "verbs": list(ordered)}
        if names:
            rule["resourceNames"] = list(names)
        out.append(rule)
    return out


# -- webhooks --------------------------------------------------------------------------------

def webhook_documents(manager: Manager, names: ManifestNames) -> list[Obj]:
    """The configurations of the manager's webhook server, and its Service and certificate
    when it names a Service; empty when the manager serves no admission webhook."""
    server = manager.webhook_server
    if server is None or not server.hooks:
        return []
    docs: list[Obj] = []
    annotations: Obj = {}
    if server.service is not None:
        service, labels = server.service, {"app.kubernetes.io/name": names.name}
        certificate = {"name": service.name, "namespace": service.namespace}
        annotations = {_CA_INJECTION: f"{service.namespace}/{service.name}"}
        docs += [
            {"apiVersion": "v1", "kind": "Service",
             "metadata": {**certificate, "labels": dict(labels)},
             "spec": {"selector": dict(labels), "ports": [
                 {"name": "webhook", "port": service.port, "targetPort": server.port}]}},
            {"apiVersion": "cert-manager.io/v1", "kind": "Issuer",
             "metadata": {"name": f"{names.name}-selfsigned", "namespace": service.namespace},
             "spec": {"selfSigned": {}}},
            {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
             "metadata": dict(certificate),
             "spec": {"secretName": f"{service.name}-tls", "dnsNames": list(service.hosts),
                      "issuerRef": {"kind": "Issuer", "name": f"{names.name}-selfsigned"},
                      "privateKey": {"algorithm": "ECDSA", "size": 256,
                                     "rotationPolicy": "Always"}}}]
    for _, configuration in server.configurations():
        configuration = copy.deepcopy(configuration)
        for webhook in configuration["webhooks"]:
            webhook["clientConfig"].pop("caBundle", None)
        if annotations:
            configuration["metadata"]["annotations"] = dict(annotations)
        docs.append(configuration)
    return docs


# -- CRDs ------------------------------------------------------------------------------------

def crd_documents(manager: Manager) -> list[Obj]:
    """The CRD of each resource the manager uses whose ``definition`` has ``crd()``."""
    used: set[Resource] = {i.resource for i in manager.cache.informers()}
    for controller in manager.controllers:
        if controller.primary is not None:
            used.add(controller.primary)
        for permission in getattr(controller.reconciler, "permissions", ()) or ():
            used.add(permission.resource)
    server = manager.webhook_server
    if server is not None:
        used.update(h.resource for h in server.hooks.values())
        used.update(r for r, _ in server.conversions.values())
    crds: dict[str, Obj] = {}
    for resource in used:
        definition = getattr(resource, "definition", None)
        make = getattr(definition, "crd", None)
        if not callable(make):
            continue
        crd = make()
        if not isinstance(crd, Mapping) or not (crd.get("metadata") or {}).get("name"):
            raise ManifestError(f"{resource.plural}.{resource.group}: definition.crd() gave "
                                f"{type(crd).__name__}, not a CustomResourceDefinition")
        name = str(crd["metadata"]["name"])
        if name in crds and crds[name] != crd:
            raise ManifestError(f"two different definitions of CustomResourceDefinition "
                                f"{name}: one resource per kind, please")
        crds[name] = dict(crd)
    if server is not None:
        for name, conversion in server.crd_conversions().items():
            if name in crds:
                crds[name] = _with_conversion(crds[name], conversion, server.service is not None
                                              and f"{server.service.namespace}/"
                                                  f"{server.service.name}")
    return [crds[name] for name in sorted(crds)]


def _with_conversion(crd: Obj, conversion: Obj, ca_from: str | bool) -> Obj:
    crd = copy.deepcopy(crd)
    conversion = copy.deepcopy(conversion)
    conversion["webhook"]["clientConfig"].pop("caBundle", None)
    crd.setdefault("spec", {})["conversion"] = conversion
    if ca_from:
        crd["metadata"].setdefault("annotations", {})[_CA_INJECTION] = ca_from
    return crd


# -- YAML ------------------------------------------------------------------------------------

def render(documents: list[Obj], header: str) -> str:
    """``documents`` as YAML (PyYAML: ``pip install 'reconcilekit[manifests]'``), after
    ``header`` as comment lines. Raises ManifestError when PyYAML is missing."""
    try:
        import yaml
    except ImportError:
        raise ManifestError("writing manifests needs PyYAML: pip install "
                            "'reconcilekit[manifests]'") from None
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    body = yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False,
                              width=100, explicit_start=False)
    return comment + body


def manifest_names(manager: Manager, *, name: str | None, namespace: str | None,
                   service_account: str | None) -> ManifestNames:
    """The names to write, defaulting to the manager's (its name; the namespace of its
    Leases or webhook Service). ManifestError when no namespace can be found."""
    namespace = namespace or default_namespace(manager)
    if not namespace:
        raise ManifestError("the manager says nothing of the namespace the operator runs in "
                            "(no leader election, sharding or webhook Service): give "
                            "--namespace")
    name = name or manager.name
    return ManifestNames(name=name, namespace=namespace,
                         service_account=service_account or name)


def with_header(files: Mapping[str, list[Obj]], command: str) -> dict[str, str]:
    """Each file's YAML, headed by the command that generated it."""
    header = (f"Generated by: {command}\n"
              "Do not edit: change the operator's code (a reconciler declares its own "
              "permissions)\nand run the command again.")
    return {name: render(docs, header) for name, docs in files.items()}
