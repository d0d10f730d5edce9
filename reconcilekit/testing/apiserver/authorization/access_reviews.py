"""``authorization.k8s.io/v1`` access reviews: the authorizer's answer for a user.

SelfSubjectAccessReview (may I?), SubjectAccessReview (may this user?),
LocalSubjectAccessReview (the same, within the namespace of the request) and
SelfSubjectRulesReview (what may I do in this namespace?), as kube-apiserver
1.28 answers them: validated (exactly one of ``resourceAttributes`` and
``nonResourceAttributes``; a user or a group for a subject review; a local
review's namespace is its path's), then answered with ``status.allowed`` and
the reason RBAC gives, or with the rules that apply (``incomplete: false``).
"""

from __future__ import annotations

from typing import Any

from ..machinery.request_user import RequestUser
from ..machinery.status import Cause
from ..machinery.unstructured import Obj
from .attributes import AuthorizerAttributes
from .rbac_authorizer import RBACAuthorizer

__all__ = ["access_status", "rules_status", "subject", "validate_access_review"]


def _spec(review: Obj) -> Obj:
    spec = review.get("spec")
    return spec if isinstance(spec, dict) else {}


def validate_access_review(kind: str, review: Obj, namespace: str) -> list[Cause]:
    """ValidateSelfSubjectAccessReview and its kin (``namespace``: a local review's)."""
    spec = _spec(review)
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    causes: list[Cause] = []
    if resource is None and non_resource is None:
        causes.append(Cause("FieldValueRequired", "Required value: exactly one of "
                            "nonResourceAttributes or resourceAttributes must be specified",
                            "spec.resourceAttributes"))
    elif resource is not None and non_resource is not None:
        causes.append(Cause("FieldValueInvalid", "Invalid value: \"\": cannot be specified in "
                            "combination with resourceAttributes",
                            "spec.nonResourceAttributes"))
    if kind != "SelfSubjectAccessReview" and not spec.get("user") and not spec.get("groups"):
        causes.append(Cause("FieldValueInvalid", 'Invalid value: "": at least one of user or '
                            "group must be specified", "spec.user"))
    if kind == "LocalSubjectAccessReview":
        if non_resource is not None:
            causes.append(Cause("FieldValueInvalid", "Invalid value: \"\": disallowed on this "
                                "kind of request", "spec.nonResourceAttributes"))
        elif isinstance(resource, dict) and resource.get("namespace", "") != namespace:
            causes.append(Cause("FieldValueInvalid", f'Invalid value: "{namespace}": must '
                                "match metadata.namespace", "metadata.namespace"))
    return causes


def subject(review: Obj, requester: RequestUser) -> RequestUser:
    """Whom the review asks about: the requester, or the spec's user."""
    if review.get("kind") == "SelfSubjectAccessReview":
        return requester
    spec = _spec(review)
    return RequestUser(str(spec.get("user", "")), tuple(spec.get("groups") or ()),
                       str(spec.get("uid", "")))


def _attributes(spec: Obj, user: RequestUser) -> AuthorizerAttributes:
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        return AuthorizerAttributes(
            user, str(resource.get("verb", "")), True, str(resource.get("namespace", "")),
            str(resource.get("group", "")), str(resource.get("version", "")),
            str(resource.get("resource", "")), str(resource.get("subresource", "")),
            str(resource.get("name", "")))
    non_resource = spec.get("nonResourceAttributes") or {}
    return AuthorizerAttributes(user, str(non_resource.get("verb", "")), False,
                                path=str(non_resource.get("path", "")))


def access_status(review: Obj, user: RequestUser, authorizer: RBACAuthorizer
                  ) -> dict[str, Any]:
    """``status`` of an access review of ``user``: allowed, and why."""
    decision = authorizer.authorize(_attributes(_spec(review), user))
    status: dict[str, Any] = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return status


def rules_status(user: RequestUser, namespace: str, authorizer: RBACAuthorizer
                 ) -> dict[str, Any]:
    """``status`` of a SelfSubjectRulesReview: each rule that applies, split into the
    resource rules and the non-resource ones."""
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for rule in authorizer.rules_for(user, namespace):
        verbs = list(rule.get("verbs") or ())
        if rule.get("resources"):
            shown: dict[str, Any] = {"verbs": verbs, "apiGroups": list(rule.get("apiGroups")
                                                                          or ()),
                                     "resources": list(rule["resources"])}
            if rule.get("resourceNames"):
                shown["resourceNames"] = list(rule["resourceNames"])
            resource_rules.append(shown)
        if rule.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": verbs,
                                       "nonResourceURLs": list(rule["nonResourceURLs"])})
    return {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
            "incomplete": False}
