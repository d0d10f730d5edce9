"""Who made a request (k8s.io/apiserver's authentication ``user.Info``), as the
authentication filter finds it and admission reviews and SelfSubjectReviews show it."""

from __future__ import annotations

from dataclasses import dataclass

from .unstructured import Obj

__all__ = ["ADMIN", "RequestUser"]


@dataclass(frozen=True, slots=True)
class RequestUser:
    """Who made the request, as ``request.userInfo`` names them."""

    username: str
    groups: tuple[str, ...] = ("system:authenticated",)

    def review(self) -> Obj:
        return {"username": self.username, "groups": list(self.groups)}


ADMIN = RequestUser("admin", ("system:masters", "system:authenticated"))
"""The user of a request with the server's own token (``system:masters``)."""
