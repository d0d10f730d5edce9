"""Every built-in resource of kube-apiserver, from its captured discovery.

``data/kube-apiserver-1.28-discovery.json`` holds kube-apiserver v1.28.7's
discovery documents as ``tools/capture_builtin_api.py`` captured them. The
file is read once, by the first :class:`~.resources.Registry` made (never at
import), and gives each resource its scope, verbs, short names, categories,
storage version hash and subresources; discovery answers with the captured
entries themselves, so that it is kube-apiserver's word for word.

What discovery does not say, measured on kube-apiserver v1.28.7 and kept
here per resource: which kinds keep ``metadata.generation``
(:data:`GENERATION`), which refuse an update without a resourceVersion, and
which field selectors each kind supports.

A deprecated version's warning (``v1 ComponentStatus is deprecated in
v1.19+``), which kube-apiserver sends with every answer about the resource
and no document publishes, is read from
``data/kube-apiserver-1.28-deprecations.json`` (``tools/capture_deprecations.py``
captured the ``Warning`` headers of kube-apiserver's lists).

Guarantees: the served types are those of the capture but for
:data:`LEFT_OUT` (resources that are not stored objects, with the reason in
docs/testing.md); a ``status`` subresource in the capture is a status
subresource here, a ``scale`` subresource a scale subresource.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...._foundations.objects import Resource
from .resources import COMMON_FIELDS, ResourceType

__all__ = ["DATA_FILE", "DEPRECATIONS_FILE", "GENERATION", "LEFT_OUT", "NOT_STORED", "BuiltinAPI",
           "builtin_api"]

DATA_FILE = "kube-apiserver-1.28-discovery.json"
DEPRECATIONS_FILE = "kube-apiserver-1.28-deprecations.json"

# Served by kube-apiserver but not here (docs/testing.md says why): the streaming and
# proxying subresources (nothing runs a Pod or a Service here).
LEFT_OUT: frozenset[tuple[str, str]] = frozenset({
    ("", "pods/attach"), ("", "pods/exec"), ("", "pods/log"), ("", "pods/portforward"),
    ("", "pods/proxy"), ("", "pods/eviction"), ("", "nodes/proxy"), ("", "services/proxy"),
    ("certificates.k8s.io", "certificatesigningrequests/approval"),
})
# Answered from the request and the server's state, never stored: the reviews
# (..endpoints.handlers.reviews), bindings and component statuses
NOT_STORED = frozenset({
    ("", "bindings"), ("", "componentstatuses"),
    ("authentication.k8s.io", "selfsubjectreviews"), ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews")})

# metadata.generation is kept (set to 1, bumped by spec changes): measured on v1.28.7
GENERATION: frozenset[tuple[str, str]] = frozenset({
    ("", "replicationcontrollers"), ("", "podtemplates"),
    ("apps", "deployments"), ("apps", "statefulsets"), ("apps", "daemonsets"),
    ("apps", "replicasets"), ("batch", "jobs"), ("batch", "cronjobs"),
    ("policy", "poddisruptionbudgets"), ("networking.k8s.io", "ingresses"),
    ("networking.k8s.io", "ingressclasses"), ("networking.k8s.io", "networkpolicies"),
    ("discovery.k8s.io", "endpointslices"), ("scheduling.k8s.io", "priorityclasses"),
    ("flowcontrol.apiserver.k8s.io", "flowschemas"),
    ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
})
# An update without metadata.resourceVersion is refused (AllowUnconditionalUpdate false)
_CONDITIONAL_UPDATE = frozenset({("coordination.k8s.io", "leases")})
# Field selectors beyond metadata.name and metadata.namespace (the kinds' GetAttrs)
_FIELD_LABELS: Mapping[tuple[str, str], frozenset[str]] = {
    ("", "namespaces"): frozenset({"status.phase"}),
    ("", "pods"): frozenset({
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
        "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
        "status.nominatedNodeName"}),
    ("", "secrets"): frozenset({"type"}),
    ("", "events"): frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
        "involvedObject.uid", "involvedObject.apiVersion", "involvedObject.resourceVersion",
        "involvedObject.fieldPath", "reason", "reportingComponent", "source", "type"}),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "replicationcontrollers"): frozenset({"status.replicas"}),
    ("apps", "replicasets"): frozenset({"status.replicas"}),
    ("batch", "jobs"): frozenset({"status.successful"}),
}


@dataclass(frozen=True, slots=True)
class BuiltinAPI:
    """The captured discovery: the groups in kube-apiserver's order and the types."""

    git_version: str
    group_order: tuple[str, ...]
    types: tuple[ResourceType, ...]


def _group_version(gv: str) -> tuple[str, str]:
    group, _, version = gv.rpartition("/")
    return group, version


def _served(group: str, entry: Mapping[str, Any]) -> bool:
    return (group, entry["name"]) not in LEFT_OUT


def _types(gv: str, entries: list[dict[str, Any]], deprecations: Mapping[str, str]
           ) -> list[ResourceType]:
    group, version = _group_version(gv)
    subresources: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        plural, _, sub = entry["name"].partition("/")
        if sub and _served(group, entry):
            subresources.setdefault(plural, []).append(entry)
    out = []
    for entry in entries:
        plural = entry["name"]
        key = (group, plural)
        if "/" in plural or not _served(group, entry):
            continue
        subs = subresources.get(plural, [])
        names = {s["name"].partition("/")[2] for s in subs}
        out.append(ResourceType(
            Resource(group, version, entry["kind"], plural, entry["namespaced"]),
            entry["singularName"], short_names=tuple(entry.get("shortNames", ())),
            status_subresource="status" in names, scale_subresource="scale" in names,
            generation=key in GENERATION, unconditional_update=key not in _CONDITIONAL_UPDATE,
            field_labels=COMMON_FIELDS | _FIELD_LABELS.get(key, frozenset()),
            categories=tuple(entry.get("categories", ())), stored=key not in NOT_STORED,
            discovery=(entry, *subs), deprecation_warning=deprecations.get(f"{gv}/{plural}")))
    return out


@functools.cache
def builtin_api() -> BuiltinAPI:
    """The built-in types, read from the package data on the first call."""
    package = (__package__ or "").rpartition(".")[0]  # reconcilekit.testing.apiserver
    data_dir = importlib.resources.files(package) / "data"
    data = json.loads((data_dir / DATA_FILE).read_text())
    deprecations = json.loads((data_dir / DEPRECATIONS_FILE).read_text())["warnings"]
    types = [t for gv, entries in data["resources"].items()
             for t in _types(gv, entries, deprecations)]
    order = tuple(g["name"] for g in data["groups"])
    return BuiltinAPI(data["gitVersion"], order, tuple(types))
