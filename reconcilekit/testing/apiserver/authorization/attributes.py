"""A request as the authorizer reads it: k8s.io/apiserver's RequestInfo and Attributes.

kube-apiserver authorizes a request before it knows whether the resource
exists: the path alone says whether it is a resource request
(``/api/V/...`` or ``/apis/G/V/...`` with a resource) or a non-resource one
(``/api``, ``/apis/G``, ``/version``, ``/metrics``...), and the method, the
path and ``?watch`` give the verb (``get``, ``list``, ``watch``, ``create``,
``update``, ``patch``, ``delete``, ``deletecollection``; a non-resource
request's verb is its method in lower case).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..machinery.request_user import RequestUser

__all__ = ["AuthorizerAttributes", "request_attributes"]

_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
          "DELETE": "delete"}
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class AuthorizerAttributes:
    """What one request (or one access review) asks to do, and who asks."""

    user: RequestUser
    verb: str
    resource_request: bool
    namespace: str = ""
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    path: str = ""

    @property
    def shown_resource(self) -> str:
        """``resource/subresource``, as a refusal names it."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


def request_attributes(user: RequestUser, method: str, path: str, parts: list[str],
                       query: Mapping[str, str]) -> AuthorizerAttributes:
    """The attributes of a request on ``path`` (``parts``: its segments)."""
    plain = AuthorizerAttributes(user, method.lower(), False, path=path)
    if len(parts) < 3 or parts[0] not in ("api", "apis"):
        return plain
    rest = parts[1:]
    group = ""
    if parts[0] == "apis":
        if len(rest) < 3:
            return plain
        group, rest = rest[0], rest[1:]
    version, rest = rest[0], rest[1:]
    verb = _VERBS.get(method, "")
    if rest[0] == "watch":  # the legacy /watch/ prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) >= 2 else ""
    subresource = rest[2] if len(rest) >= 3 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch", "") in ("true", "1") else "list"
        selected = query.get("fieldSelector", "")
        if selected.startswith("metadata.name=") and "," not in selected:
            name = selected.removeprefix("metadata.name=")
    if not name and verb == "delete":
        verb = "deletecollection"
    return AuthorizerAttributes(user, verb, True, namespace, group, version, resource,
                                subresource, name, path)
