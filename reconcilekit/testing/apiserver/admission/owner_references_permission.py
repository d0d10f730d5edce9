"""kube-apiserver's OwnerReferencesPermissionEnforcement admission plugin.

Off by default, as in kube-apiserver; ``APIServer(enable_admission_plugins=
("OwnerReferencesPermissionEnforcement",))`` turns it on, as the test control plane
(and hardened clusters) do, and the pytest plugin's in-process server does:
a write that changes an object's ``ownerReferences`` needs ``delete`` on the
object (a create needs nothing: its creator could have not created it), and
an owner reference that newly sets ``blockOwnerDeletion`` needs ``update``
on the owner's ``finalizers`` subresource (it delays the owner's deletion).
A refusal is a 403 in the plugin's words. ``pods/status`` is exempt.
"""

from __future__ import annotations

from typing import Any

from ..authorization.attributes import AuthorizerAttributes as Access
from ..authorization.rbac_authorizer import RBACAuthorizer
from ..machinery.resources import Registry
from ..machinery.status import StatusError
from ..machinery.unstructured import Obj

__all__ = ["check_owner_references"]


def _refs(obj: Obj | None) -> list[dict[str, Any]]:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, dict)]


def _newly_blocking(new: list[dict[str, Any]], old: list[dict[str, Any]] | None
                    ) -> list[dict[str, Any]]:
    blocking = [r for r in new if r.get("blockOwnerDeletion") is True]
    if old is None:
        return blocking
    before = {r.get("uid"): r for r in old}
    return [r for r in blocking if before.get(r.get("uid"), {}).get("blockOwnerDeletion")
            is not True]


def check_owner_references(operation: str, group: str, version: str, plural: str,
                           subresource: str, namespace: str, name: str, user: Any,
                           obj: Obj | None, old: Obj | None, registry: Registry,
                           authorizer: RBACAuthorizer) -> None:
    """Raise the plugin's 403 when ``user`` may not set ``obj``'s owner references."""
    if (group, plural, subresource) == ("", "pods", "status") or obj is None:
        return
    new_refs, old_refs = _refs(obj), (_refs(old) if old is not None else None)
    if new_refs == (old_refs or []) and (old is not None or not new_refs):
        return
    qualified = f"{plural}.{group}" if group else plural

    def refuse(reason: str) -> StatusError:
        return StatusError.forbidden_because(qualified, name, group, reason)

    if operation != "CREATE":
        decision = authorizer.authorize(Access(user, "delete", True, namespace, group, version,
                                               plural, subresource, name))
        if not decision.allowed:
            raise refuse(f"cannot set an ownerRef on a resource you can't delete: "
                         f"{decision.reason}, <nil>")
    for ref in _newly_blocking(new_refs, old_refs):
        api_version, kind = str(ref.get("apiVersion", "")), str(ref.get("kind", ""))
        owner = registry.for_kind(api_version, kind)
        if owner is None:
            raise refuse(f"cannot set blockOwnerDeletion in this case because cannot find "
                         f"RESTMapping for APIVersion {api_version} Kind {kind}: no matches "
                         f'for kind "{kind}" in version "{api_version}"')
        r = owner.resource
        decision = authorizer.authorize(Access(
            user, "update", True, namespace if r.namespaced else "", r.group, r.version,
            r.plural, "finalizers", str(ref.get("name", ""))))
        if not decision.allowed:
            raise refuse("cannot set blockOwnerDeletion if an ownerReference refers to a "
                         f"resource you can't set finalizers on: {decision.reason}, <nil>")
