"""``rbac.yaml``: the Namespace and ServiceAccount the operator runs as, its roles and bindings.

A ClusterRole and its binding for the grants that apply everywhere, a Role
and RoleBinding per namespace for the others (a manager with a namespace
gets only Roles), and one for the Leases of leader election or sharding;
:func:`reconcilekit.rbac.required_permissions` says which grants. Rules are
merged and sorted: the same grants always give the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Final

from .._foundations.objects import Obj
from ..rbac import VERBS, Grant
from .deploy_options import ManifestNames

__all__ = ["rbac_documents", "rules"]

RBAC: Final = "rbac.authorization.k8s.io"


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
