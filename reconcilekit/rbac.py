"""RBAC: the permissions an operator needs, inferred from its Manager or declared by its code.

``python -m reconcilekit manifests`` (docs/manifests.md) writes a ClusterRole
(or Roles) from :func:`required_permissions`, which holds two kinds of grant:

Inferred from the manager, because reconcilekit itself sends the requests:
  * every resource the cache holds (a controller's ``for_``, ``owns`` and
    ``watches``, an index, a handler): ``list`` and ``watch``, in the
    namespaces it is cached in (the cache never GETs: reads are answered
    from its store);
  * leader election (:class:`~reconcilekit.LeaderElection`): ``get``,
    ``create`` and ``update`` of the Lease, by name (``create`` cannot be
    limited to a name), in its namespace;
  * sharding (:class:`~reconcilekit.Sharding`): ``get``, ``list``,
    ``create`` and ``update`` of Leases in the ring's namespace (the member
    Leases are named after each replica's identity: not limited by name);
  * a webhook server that writes its own configurations
    (``install_configurations=True``): ``get``, ``create`` and ``patch`` of
    its Validating/MutatingWebhookConfiguration (``get`` and ``patch`` by
    name), ``delete`` by name with ``remove_configurations_on_exit``; for a
    conversion webhook, ``get`` and ``patch`` of the CRD by name and
    ``list`` of the converted kind.

Declared next to the code that sends the requests, because only that code
knows them (kubebuilder's ``+kubebuilder:rbac`` markers are the precedent): a
reconciler's own reads and writes, in a class attribute ``permissions``::

    class PoolReconciler(Reconciler):
        permissions = (
            Permission(PODS, "create", "delete"),
            Permission(CNPOOLS, "patch", subresource="status"),
            blocks_owner_deletion(CNPOOLS),  # its Pods' controller references
            RECORDS_EVENTS,
        )

That includes what the library helpers a reconciler calls send on its behalf:
:data:`RECORDS_EVENTS` for the manager's ``EventRecorder``, :func:`applies`
for ``Client.apply`` (server-side apply creates a missing object: ``create``
as well as ``patch``), ``patch`` (and ``get``: they read again after a
conflict) for the finalizer helpers of :mod:`reconcilekit.finalizers`,
``get`` plus ``create`` and ``patch`` (or ``update``) for
:mod:`reconcilekit.upsert`. And what the OwnerReferencesPermissionEnforcement
admission plugin asks of a write that sets owner references (kube-apiserver's
rule; the requests themselves name neither grant):
:func:`blocks_owner_deletion` for an owner reference with
``blockOwnerDeletion: true`` (``set_controller_reference``'s default), on a
create as on an update, and :func:`changes_owner_references` for an update,
patch or apply that sets or changes the owner references of an object that
exists (adopting it). ``owns(X)`` grants only what the cache needs of ``X``
(list and watch): whether the reconciler creates, patches or deletes its
children, and whether it adopts them, is the reconciler's to declare, so that
no verb is granted that nothing sends.

Guarantees: the result is deterministic (sorted) and minimal in the sense the
example's tests prove on kube-apiserver: every grant is one that some request
of the operator needs, as long as the declarations are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ._cache.scope import ALL_NAMESPACES
from ._coordination.leader_election import LeaderElection
from ._coordination.sharded_controllers import Sharding
from ._foundations.objects import Resource
from .kinds import CUSTOM_RESOURCE_DEFINITIONS, EVENTS, LEASES

if TYPE_CHECKING:
    from ._manager.manager import Manager

__all__ = [
    "Grant",
    "InvalidPermission",
    "Permission",
    "RECORDS_EVENTS",
    "VERBS",
    "applies",
    "blocks_owner_deletion",
    "changes_owner_references",
    "required_permissions",
]

VERBS: Final = ("get", "list", "watch", "create", "update", "patch", "delete",
                "deletecollection")
"""kube-apiserver's resource verbs, in the order the generated rules list them."""


class InvalidPermission(ValueError):
    """A declaration that cannot be a grant: an unknown verb, a reconciler's
    ``permissions`` that is not a sequence of :class:`Permission`."""


@dataclass(frozen=True, slots=True, init=False)
class Permission:
    """``verbs`` on ``resource`` (or its ``subresource``), which some code sends.

    ``resource_names`` limits the grant to those objects (not possible for
    ``create``, ``list``, ``watch`` and ``deletecollection``: kube-apiserver
    does not know the name then). ``namespace``: where; None (the default) is
    wherever the manager works (its namespace, or every namespace); a name
    puts the grant in a Role of that namespace. Cluster-scoped resources
    take no namespace. Raises :class:`InvalidPermission` for a verb that is not
    one of :data:`VERBS`, no verb at all, or a namespace or names that cannot
    apply.
    """

    resource: Resource
    verbs: tuple[str, ...]
    subresource: str
    resource_names: tuple[str, ...]
    namespace: str | None

    def __init__(self, resource: Resource, *verbs: str, subresource: str = "",
                 resource_names: Iterable[str] = (), namespace: str | None = None) -> None:
        if not isinstance(resource, Resource):
            raise InvalidPermission(f"Permission needs a Resource, not {resource!r}")
        unknown = [v for v in verbs if v not in VERBS]
        if not verbs or unknown:
            raise InvalidPermission(
                f"Permission on {resource.plural}: verbs must be among {', '.join(VERBS)}; "
                f"got {', '.join(map(repr, verbs)) or 'none'}")
        names = tuple(sorted(set(resource_names)))
        unnamed = sorted({"create", "list", "watch", "deletecollection"} & set(verbs))
        if names and unnamed:
            raise InvalidPermission(
                f"Permission on {resource.plural}: {', '.join(unnamed)} cannot be limited to "
                "resource_names (the API server does not know the name); declare them apart")
        if namespace is not None and not resource.namespaced:
            raise InvalidPermission(f"Permission on {resource.plural}: a cluster-scoped "
                                  f"resource takes no namespace (got {namespace!r})")
        object.__setattr__(self, "resource", resource)
        object.__setattr__(self, "verbs", tuple(v for v in VERBS if v in verbs))
        object.__setattr__(self, "subresource", subresource)
        object.__setattr__(self, "resource_names", names)
        object.__setattr__(self, "namespace", namespace)

    @property
    def rbac_resource(self) -> str:
        """The resource as an RBAC rule names it: ``pods``, ``cnpools/status``."""
        plural = self.resource.plural
        return f"{plural}/{self.subresource}" if self.subresource else plural


RECORDS_EVENTS: Final = Permission(EVENTS, "create", "patch")
"""What the manager's :class:`~reconcilekit.EventRecorder` sends for a reconciler
that records events: it creates an Event, and patches it (its count) when the same
event repeats. Declare it in each reconciler that calls ``events.event``."""


def applies(resource: Resource, *, subresource: str = "") -> Permission:
    """What ``Client.apply`` (server-side apply) of ``resource`` sends: a PATCH, which
    kube-apiserver authorizes as ``patch``, and, when the object does not exist yet
    and the apply creates it, as ``create`` too. Applying a ``subresource``
    (``status``) never creates: ``patch`` of it only."""
    if subresource:
        return Permission(resource, "patch", subresource=subresource)
    return Permission(resource, "create", "patch")


def blocks_owner_deletion(owner: Resource) -> Permission:
    """``update`` of ``owner``'s ``finalizers`` subresource: needed to write an owner
    reference to an ``owner`` object with ``blockOwnerDeletion: true``
    (:func:`reconcilekit.ownership.set_controller_reference`'s default), by a create
    or by a write that turns it on, where the API server runs the
    OwnerReferencesPermissionEnforcement admission plugin (OpenShift, and many
    hardened clusters). Declare it in the reconciler that writes the owned objects,
    naming the owner's kind."""
    return Permission(owner, "update", subresource="finalizers")


def changes_owner_references(resource: Resource) -> Permission:
    """``delete`` of ``resource``: what the OwnerReferencesPermissionEnforcement
    admission plugin asks of an update, patch or apply that sets or changes the owner
    references of an object of ``resource`` that exists (adopting an orphan; a
    ``create_or_patch`` or an apply meeting an object made without them). A create
    needs nothing of it (its creator could have not created it), and neither does a
    write that leaves the references as they are. Declare it in the reconciler that
    adopts, naming the owned kind."""
    return Permission(resource, "delete")


@dataclass(frozen=True, slots=True)
class Grant:
    """One permission as the manager needs it: cluster-wide (``namespace`` None) or in
    ``namespace``, in the role ``role`` (``""``: the operator's; ``"leader-election"``);
    ``why`` says where it comes from."""

    permission: Permission
    namespace: str | None
    role: str
    why: str


def required_permissions(manager: Manager) -> list[Grant]:
    """Every grant ``manager`` needs: inferred, and declared by its reconcilers (see the
    module docstring). Raises :class:`InvalidPermission` naming a reconciler whose
    ``permissions`` is not a sequence of :class:`Permission`."""
    grants: list[Grant] = []
    cache = manager.cache
    for resource in sorted({i.resource for i in cache.informers()}, key=_order):
        scope = cache.scope_of(resource)
        every = not resource.namespaced or scope.all_namespaces
        namespaces = None if every else sorted(scope.namespaces or ())
        grants += _placed(Permission(resource, "list", "watch"), namespaces, "",
                          "the cache lists and watches it")
    grants += _coordination(manager)
    grants += _webhooks(manager)
    working = (None if cache.default_namespaces is None
               else sorted(cache.default_namespaces))
    for controller in manager.controllers:
        reconciler = controller.reconciler
        declared = getattr(reconciler, "permissions", ())
        owner = f"{type(reconciler).__name__}.permissions"
        if isinstance(declared, str | bytes) or not isinstance(declared, Iterable):
            raise InvalidPermission(f"{owner} must be a sequence of Permission, "
                                  f"not {type(declared).__name__}")
        for permission in declared:
            if not isinstance(permission, Permission):
                raise InvalidPermission(f"{owner} holds {permission!r}, not a Permission")
            if permission.namespace is not None:
                where: list[str] | None = [permission.namespace]
            else:
                where = working if permission.resource.namespaced else None
            grants += _placed(permission, where, "", f"declared by {owner}")
    return grants


def _placed(permission: Permission, namespaces: list[str] | None, role: str,
            why: str) -> list[Grant]:
    if namespaces is None or ALL_NAMESPACES in namespaces:
        return [Grant(permission, None, role, why)]
    return [Grant(permission, ns, role, why) for ns in namespaces]


def _coordination(manager: Manager) -> list[Grant]:
    match manager.coordination:
        case LeaderElection() as election:
            namespace = election.namespace or manager.namespace or "default"
            why = f"leader election on Lease {namespace}/{election.name}"
            return [Grant(Permission(LEASES, "create"), namespace, "leader-election", why),
                    Grant(Permission(LEASES, "get", "update", resource_names=[election.name]),
                          namespace, "leader-election", why)]
        case Sharding() as sharding:
            why = f"the shard ring {sharding.namespace}/{sharding.name}"
            return [Grant(Permission(LEASES, "get", "list", "create", "update"),
                          sharding.namespace, "sharding", why)]
    return []


def _webhooks(manager: Manager) -> list[Grant]:
    server = manager.webhook_server
    if server is None or not server.install_configurations:
        return []
    grants = []
    why = f"the webhook server {server.name} writes its configurations"
    for resource, _ in server.configurations():
        grants.append(Grant(Permission(resource, "create"), None, "", why))
        verbs = ("get", "patch", *(("delete",) if server.remove_configurations_on_exit else ()))
        grants.append(Grant(Permission(resource, *verbs, resource_names=[server.name]),
                            None, "", why))
    conversions = sorted(server.crd_conversions())
    if conversions:
        why = f"the webhook server {server.name} writes the CRDs' conversion"
        grants.append(Grant(Permission(CUSTOM_RESOURCE_DEFINITIONS, "get", "patch",
                                       resource_names=conversions), None, "", why))
        for resource, _ in sorted(server.conversions.values(), key=lambda c: _order(c[0])):
            grants.append(Grant(Permission(resource, "list"), None, "",
                                f"{why}, then lists the kind until it is served"))
    return grants


def _order(resource: Resource) -> tuple[str, str]:
    return resource.group, resource.plural
