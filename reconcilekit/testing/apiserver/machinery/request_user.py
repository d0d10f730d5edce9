"""Who made a request (k8s.io/apiserver's authentication ``user.Info``), as the
authentication filter finds it and admission reviews, SelfSubjectReviews and the
authorizer see it."""

from __future__ import annotations

from dataclasses import dataclass

from .unstructured import Obj

__all__ = ["ADMIN", "ANONYMOUS", "RequestUser", "service_account_user", "user_named"]

_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class RequestUser:
    """Who made the request, as ``request.userInfo`` names them."""

    username: str
    groups: tuple[str, ...] = ("system:authenticated",)
    uid: str = ""

    @property
    def anonymous(self) -> bool:
        return self.username == "system:anonymous"

    def review(self) -> Obj:
        shown: Obj = {"username": self.username}
        if self.uid:
            shown["uid"] = self.uid
        shown["groups"] = list(self.groups)
        return shown


ADMIN = RequestUser("admin", ("system:masters", "system:authenticated"))
"""The user of a request with the server's own token (``system:masters``)."""

ANONYMOUS = RequestUser("system:anonymous", ("system:unauthenticated",))
"""The user of a request with no credentials."""


def service_account_user(namespace: str, name: str, uid: str = "") -> RequestUser:
    """A ServiceAccount's user: ``system:serviceaccount:NS:NAME`` in the service account
    groups."""
    return RequestUser(f"{_SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                       ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                        "system:authenticated"), uid)


def user_named(username: str) -> RequestUser:
    """The user a static token names: an administrator (``system:masters``), as every
    user of the test control plane's token file is."""
    return ADMIN if username == "admin" else RequestUser(
        username, ("system:masters", "system:authenticated"))
