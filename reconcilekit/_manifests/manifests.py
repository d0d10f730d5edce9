"""The manifests of an operator, generated from its Manager: what ``kubectl apply -k`` deploys.

``python -m reconcilekit manifests MODULE:CALLABLE --out DIR`` (:mod:`reconcilekit.__main__`)
calls ``CALLABLE(client)`` with a :class:`Client` that is never connected (a
client connects on its first request; building a manager sends none) and
writes what :func:`manifests` returns, each file headed by the command:

* ``rbac.yaml`` (:mod:`.roles`): the Namespace, the ServiceAccount, the roles
  and bindings of :func:`reconcilekit.rbac.required_permissions`;
* ``deployment.yaml`` (:mod:`.workload`): the Deployment and its metrics Service;
* ``webhook.yaml`` when the manager serves webhooks (:mod:`.webhook_wiring`):
  their Service, and with cert-manager the Issuer, the Certificate and the
  configurations;
* ``crds.yaml`` (:mod:`.crds`) when the manager uses kinds defined in Python;
* ``kustomization.yaml``: the files, and their namespace when every
  namespaced object is in it (kustomize would move a Role of another
  namespace into it).

Guarantees: the output depends only on the manager and the options:
documents and rules are sorted, the YAML is PyYAML's with keys in a fixed
order, so generating twice gives the same bytes, and a test can compare the
committed files with a fresh generation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from .._foundations.objects import Obj
from ..rbac import required_permissions
from .crds import crd_documents
from .deploy_options import DeploymentOptions, ManifestError, ManifestNames
from .roles import rbac_documents
from .webhook_wiring import webhook_wiring
from .workload import deployment_documents

if TYPE_CHECKING:
    from .._manager.manager import Manager

__all__ = ["KUSTOMIZATION", "default_namespace", "manifest_names", "manifests", "render",
           "with_header"]

KUSTOMIZATION: Final = "kustomization.yaml"
_ORDER: Final = ("crds.yaml", "rbac.yaml", "webhook.yaml", "deployment.yaml")


def manifests(manager: Manager, names: ManifestNames,
              options: DeploymentOptions | None = None) -> dict[str, list[Obj]]:
    """File name -> its documents: ``rbac.yaml``, ``deployment.yaml`` and
    ``kustomization.yaml``, and ``webhook.yaml``, ``crds.yaml`` when there is something
    to put in them. ManifestError when the manager cannot be deployed as asked."""
    options = options if options is not None else DeploymentOptions()
    wiring = webhook_wiring(manager, names, options)
    out = {"rbac.yaml": rbac_documents(required_permissions(manager), names),
           "deployment.yaml": deployment_documents(manager, names, options, wiring)}
    if wiring is not None:
        out["webhook.yaml"] = wiring.documents
    crds = crd_documents(manager, wiring)
    if crds:
        out["crds.yaml"] = crds
    out[KUSTOMIZATION] = [kustomization(out, names.namespace)]
    return out


def kustomization(files: Mapping[str, list[Obj]], namespace: str) -> Obj:
    """The Kustomization of ``files``, with ``namespace`` when it moves nothing."""
    elsewhere = {str(doc["metadata"]["namespace"]) for docs in files.values() for doc in docs
                 if doc.get("metadata", {}).get("namespace") not in (None, namespace)}
    out: Obj = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
    if not elsewhere:
        out["namespace"] = namespace
    out["resources"] = [name for name in _ORDER if name in files]
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


def with_header(files: Mapping[str, list[Obj]], command: str) -> dict[str, str]:
    """Each file's YAML, headed by the command that generated it."""
    header = (f"Generated by: {command}\n"
              "Do not edit: change the operator's code (a reconciler declares its own "
              "permissions)\nor the command's options, and run the command again.")
    return {name: render(docs, header) for name, docs in files.items()}
