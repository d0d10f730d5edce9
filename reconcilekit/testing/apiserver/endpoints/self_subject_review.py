"""``authentication.k8s.io/v1`` SelfSubjectReview: who the server says the caller is.

What ``kubectl auth whoami`` and controllers that must know their own user
(e.g. to leave their own writes unreviewed by their webhook) ask. As on
kube-apiserver 1.28: create-only and never stored; ``POST`` on the
collection answers 201 with ``status.userInfo`` whatever the body says
(dry run included); any other method there is 405; paths below it are 404.
Discovery lists the group with this one resource, where kube-apiserver lists
the group (kube-apiserver also lists ``tokenreviews``, which this server does
not serve).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..machinery.request_user import RequestUser
from ..machinery.status import StatusError

__all__ = ["GROUP", "PLURAL", "answer", "discovery"]

GROUP = "authentication.k8s.io"
VERSION = "v1"
PLURAL = "selfsubjectreviews"
_ENTRY = {"name": PLURAL, "singularName": "selfsubjectreview", "namespaced": False,
          "kind": "SelfSubjectReview", "verbs": ["create"]}
_VERSION = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}


def answer(parts: list[str], method: str, user: RequestUser, now: str) -> dict[str, Any] | None:
    """The review for a request on ``parts`` (the path's segments) if it is one on this
    resource, else None; raises the API errors kube-apiserver gives there."""
    if parts[:4] != ["apis", GROUP, VERSION, PLURAL]:
        return None
    if len(parts) > 4:
        raise StatusError.not_found_path()
    if method != "POST":
        raise StatusError.method_not_allowed()
    return {"kind": "SelfSubjectReview", "apiVersion": f"{GROUP}/{VERSION}",
            "metadata": {"creationTimestamp": now},
            "status": {"userInfo": user.review()}}


def discovery(parts: list[str], doc: dict[str, Any] | None,
              group_order: Sequence[str] = ()) -> dict[str, Any] | None:
    """``doc`` (the registry's discovery answer for ``parts``, or None) with this group,
    placed where ``group_order`` (kube-apiserver's order of groups) puts it."""
    if parts == ["apis"] and doc is not None:
        groups = doc["groups"]
        if all(g["name"] != GROUP for g in groups):
            before = set(group_order[:list(group_order).index(GROUP)]) if (
                GROUP in group_order) else {g["name"] for g in groups}
            at = sum(1 for g in groups if g["name"] in before)
            groups.insert(at, {"name": GROUP, "versions": [_VERSION],
                               "preferredVersion": _VERSION})
        return doc
    if parts == ["apis", GROUP] and doc is None:
        return {"kind": "APIGroup", "apiVersion": "v1", "name": GROUP, "versions": [_VERSION],
                "preferredVersion": _VERSION}
    if parts == ["apis", GROUP, VERSION] and doc is None:
        return {"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": f"{GROUP}/{VERSION}", "resources": [dict(_ENTRY)]}
    return doc
