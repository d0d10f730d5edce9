"""Parsing a Kubernetes REST request: the path, the verb and the query.

Paths follow kube-apiserver's layout::

    /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]

``/api/v1/namespaces/{name}[/status]`` addresses Namespaces themselves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from .resources import Registry, ResourceType
from .status import StatusError

_INT = re.compile(r"^[+-]?[0-9]+$")

__all__ = ["KUBE_GROUPS", "ResourceRequest", "go_int", "int_param", "not_found_in",
           "parse_resource_path", "resource_version", "verb_for"]


@dataclass(frozen=True, slots=True)
class ResourceRequest:
    rtype: ResourceType
    namespace: str | None  # None: all namespaces (or a cluster-scoped resource)
    name: str | None
    subresource: str | None

    @property
    def counter_resource(self) -> str:
        plural = self.rtype.resource.plural
        return f"{plural}/{self.subresource}" if self.subresource else plural


# The groups kube-apiserver v1.28 serves itself (its own, the aggregator's, apiextensions'):
# a path it cannot resolve in one of them is a Status; in any other group (custom resources'
# or nobody's) the apiextensions server hands it to Go's http.NotFound.
KUBE_GROUPS = frozenset((
    "", "apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
    "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io",
    "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
    "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
    "discovery.k8s.io", "flowcontrol.apiserver.k8s.io", "resource.k8s.io",
    "internal.apiserver.k8s.io"))


def not_found_in(group: str) -> StatusError:
    """The 404 for a path of ``group`` that names nothing served (see KUBE_GROUPS)."""
    return StatusError.not_found_path() if group in KUBE_GROUPS else (
        StatusError.page_not_found())


def parse_resource_path(registry: Registry, parts: list[str]) -> ResourceRequest:
    """``parts`` are the path segments after ``/api/v1`` or ``/apis/G/V``, plus the prefix.

    Raises a 404 StatusError for an unknown resource or a malformed path
    (:func:`not_found_in`: a Status, or Go's ``404 page not found``).
    """
    if parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    else:
        group, version, rest = parts[1], parts[2], parts[3:]
    if rest and rest[0] == "watch":  # legacy /watch/ prefix
        rest = rest[1:]
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        candidate = registry.lookup(group, version, rest[2])
        if candidate is not None and candidate.resource.namespaced:
            namespace, rest = rest[1], rest[2:]
        elif group not in KUBE_GROUPS:
            raise StatusError.page_not_found()
    rtype = registry.lookup(group, version, rest[0]) if rest else None
    if rtype is None:
        raise not_found_in(group)
    if len(rest) > 3:
        raise StatusError.not_found_path()
    name = rest[1] if len(rest) >= 2 else None
    sub = rest[2] if len(rest) == 3 else None
    if sub is not None and rtype.subresource_verbs(sub) is None:
        raise StatusError.not_found_path()
    if not rtype.resource.namespaced and namespace is not None:
        raise not_found_in(group)
    if rtype.resource.namespaced and name is not None and namespace is None:
        raise not_found_in(group)
    return ResourceRequest(rtype, namespace, name, sub)


def verb_for(method: str, req: ResourceRequest, watch: bool) -> str:
    """kube-apiserver's verb for an HTTP method on a resource path (405 if none)."""
    collection = req.name is None
    verbs = req.rtype.subresource_verbs(req.subresource) if req.subresource else None
    if verbs == ("create",):  # create-only, like kube-apiserver's pods/binding
        if method != "POST":
            raise StatusError.method_not_allowed()
        return "create"
    if verbs == ("update",) and method != "PUT":  # update-only, namespaces/finalize
        raise StatusError.method_not_allowed()
    if req.subresource and method not in ("GET", "PUT", "PATCH"):
        r = req.rtype.resource
        if req.rtype.builtin:
            raise StatusError.method_not_allowed()
        verb = {"POST": "create", "DELETE": "delete"}.get(method, method.lower())
        # the apiextensions server's NewMethodNotSupported, naming the custom resource
        raise StatusError(405, "MethodNotAllowed", f'{verb} is not supported on resources of '
                          f'kind "{r.group_resource}"', {"group": r.group, "kind": r.plural})
    match method, collection:
        case "GET", True:
            return "watch" if watch else "list"
        case "GET", False:
            return "watch" if watch else "get"
        case "POST", True:
            return "create"
        case "PUT", False:
            return "update"
        case "PATCH", False:
            return "patch"
        case "DELETE", True:
            return "deletecollection"
        case "DELETE", False:
            return "delete"
    raise StatusError.method_not_allowed()


def go_int(value: str) -> int:
    """Go's ``strconv.ParseInt`` of a query parameter (400 BadRequest with its error)."""
    if not _INT.match(value):
        raise StatusError.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax')
    return int(value)


def int_param(query: Mapping[str, str], name: str, default: int) -> int:
    """An integer query parameter (``limit``, ``timeoutSeconds``); below 0 counts as unset."""
    value = query.get(name)
    if value is None or value == "":
        return default
    number = go_int(value)
    return default if number < 0 else number


def resource_version(value: str) -> int:
    """A resourceVersion query parameter as an integer.

    kube-apiserver answers an unparsable one (not a decimal uint64) with a 500
    naming the parameter (the storage layer's error, passed on), on a list
    and on a get alike, before it looks for the object.
    """
    if not value.isascii() or not value.isdigit():
        raise StatusError(500, "", f'resourceVersion: Invalid value: "{value}": '
                          f'strconv.ParseUint: parsing "{value}": invalid syntax')
    if int(value) >= 2**64:
        raise StatusError(500, "", f'resourceVersion: Invalid value: "{value}": '
                          f'strconv.ParseUint: parsing "{value}": value out of range')
    return int(value)
