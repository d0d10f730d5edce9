"""kube-apiserver's RBAC authorizer over the stored roles and bindings.

A request is allowed when the user is in ``system:masters`` (kube-apiserver's
privileged group, allowed before RBAC is asked) or when a rule of a role bound
to the user allows it: every ClusterRoleBinding is visited, then the
RoleBindings of the request's namespace, each applying to a user by name, a
group the user is in, or a ServiceAccount (its username
``system:serviceaccount:NS:NAME``). A rule allows a resource request when its
verbs, API groups, resources (``*``, ``resource/subresource`` or
``*/subresource``) and resource names (none: any) match, and a non-resource
request when its verbs and URLs (``*`` or a ``prefix*``) match. The reason of
an allowed request names the binding, the role and the subject, as
kube-apiserver words it. A denied request has a reason only when a binding
that applies to the user names a role that does not exist: ``RBAC:`` and
each such role's not-found error (``clusterrole.rbac.authorization.k8s.io
"NAME" not found``; several in brackets, comma-separated), which the 403's
message and an access review's ``reason`` carry.

Invariant: deciding reads the stored objects at that moment (no cache that
could lag a write, where kube-apiserver's informers lag by milliseconds).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..machinery.request_user import RequestUser
from ..storage.versioned_store import Table
from .attributes import AuthorizerAttributes

__all__ = ["PRIVILEGED_GROUP", "Decision", "RBACAuthorizer", "rule_allows"]

PRIVILEGED_GROUP = "system:masters"
_GROUP = "rbac.authorization.k8s.io"

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str = ""


def _has(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _resource_matches(rule: Obj, attrs: AuthorizerAttributes) -> bool:
    for resource in rule.get("resources") or ():
        if resource in ("*", attrs.shown_resource):
            return True
        if attrs.subresource and resource == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(rule: Obj, path: str) -> bool:
    for url in rule.get("nonResourceURLs") or ():
        if url in ("*", path) or (url.endswith("*") and path.startswith(url[:-1])):
            return True
    return False


def rule_allows(rule: Obj, attrs: AuthorizerAttributes) -> bool:
    """Whether one PolicyRule allows the request."""
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule, attrs.path)
    names = rule.get("resourceNames") or ()
    return (_has(rule.get("apiGroups"), attrs.api_group) and _resource_matches(rule, attrs)
            and (not names or attrs.name in names))


def _subject(subject: Obj, user: RequestUser, namespace: str) -> str | None:
    """How ``subject`` names the user (``User "ann"``), or None if it does not."""
    kind, name = subject.get("kind"), str(subject.get("name", ""))
    match kind:
        case "User" if name == user.username:
            return f'User "{name}"'
        case "Group" if name in user.groups:
            return f'Group "{name}"'
        case "ServiceAccount":
            account_namespace = str(subject.get("namespace") or namespace)
            if account_namespace and user.username == (
                    f"system:serviceaccount:{account_namespace}:{name}"):
                return f'ServiceAccount "{name}/{account_namespace}"'
    return None


class RBACAuthorizer:
    """Decides on :class:`AuthorizerAttributes` from the roles and bindings in ``tables``
    (the storage's tables by (group, resource))."""

    def __init__(self, tables: Mapping[tuple[str, str], Table]) -> None:
        self._tables = tables

    def _objects(self, plural: str, namespace: str | None = None) -> list[Obj]:
        table = self._tables.get((_GROUP, plural))
        if table is None:
            return []
        return [o for (ns, _), o in sorted(table.objects.items())
                if namespace is None or ns == namespace]

    def _role(self, ref: Obj, namespace: str) -> Obj | None:
        kind, name = ref.get("kind"), str(ref.get("name", ""))
        table = self._tables.get((_GROUP, "clusterroles" if kind == "ClusterRole" else "roles"))
        if table is None or kind not in ("ClusterRole", "Role"):
            return None
        return table.objects.get(("" if kind == "ClusterRole" else namespace, name))

    def _bound_rules(self, user: RequestUser, namespace: str,
                     missing: list[str] | None = None) -> Iterator[tuple[str, Sequence[Obj]]]:
        """(where the rules come from, the rules) of every binding that applies; the
        not-found error of each role such a binding names and that does not exist is
        added to ``missing``."""
        scopes: list[tuple[str, str, list[Obj]]] = [
            ("ClusterRoleBinding", "", self._objects("clusterrolebindings"))]
        if namespace:
            scopes.append(("RoleBinding", namespace, self._objects("rolebindings", namespace)))
        for kind, ns, bindings in scopes:
            for binding in bindings:
                for subject in binding.get("subjects") or ():
                    named = _subject(subject, user, ns)
                    if named is None:
                        continue
                    ref = binding.get("roleRef") or {}
                    role = self._role(ref, ns)
                    if role is not None:
                        shown = binding["metadata"]["name"] + (f"/{ns}" if ns else "")
                        yield (f'{kind} "{shown}" of {ref.get("kind")} "{ref.get("name")}" '
                               f"to {named}", role.get("rules") or ())
                    elif missing is not None:
                        missing.append(f'{str(ref.get("kind", "")).lower()}.{_GROUP} '
                                       f'"{ref.get("name", "")}" not found')
                    break

    def authorize(self, attrs: AuthorizerAttributes) -> Decision:
        """Allowed (and by what), or denied (and the roles missing, if any)."""
        if PRIVILEGED_GROUP in attrs.user.groups:
            return Decision(True)
        missing: list[str] = []
        for source, rules in self._bound_rules(attrs.user, attrs.namespace, missing):
            if any(rule_allows(rule, attrs) for rule in rules):
                return Decision(True, f"RBAC: allowed by {source}")
        if not missing:
            return Decision(False)
        return Decision(False, "RBAC: " + (missing[0] if len(missing) == 1
                                           else "[" + ", ".join(missing) + "]"))

    def rules_for(self, user: RequestUser, namespace: str) -> list[Obj]:
        """Every rule that applies to ``user`` in ``namespace`` (a rules review's), the
        privileged group's all-allowing rules first."""
        rules: list[Obj] = []
        if PRIVILEGED_GROUP in user.groups:
            rules += [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
                      {"verbs": ["*"], "nonResourceURLs": ["*"]}]
        for _, bound in self._bound_rules(user, namespace):
            rules.extend(bound)
        return rules
