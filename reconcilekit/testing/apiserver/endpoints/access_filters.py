"""Authentication, impersonation and authorization: the filters that decide who a
request comes from and whether that user may make it (k8s.io/apiserver's
WithAuthentication, WithImpersonation and WithAuthorization, in that order).

A bearer token names a user (:class:`~..machinery.token_authenticator.TokenAuthenticator`;
an unknown or expired one is a 401); a request without credentials is
``system:anonymous``. ``Impersonate-User`` (``Impersonate-Group``,
``Impersonate-Uid``, ``Impersonate-Extra-*``) makes the request act as another
user when its own user may ``impersonate`` that user, those groups, that uid
and those extras (403 otherwise); a ServiceAccount's username brings its
groups. Then the RBAC authorizer (:mod:`..authorization.rbac_authorizer`) allows the
request or refuses it with kube-apiserver's 403, before anything else is
looked at: an unknown resource is a 403 to a user who may not read it.
"""

from __future__ import annotations

from dataclasses import replace

from aiohttp import web

from ..authorization.attributes import AuthorizerAttributes, request_attributes
from ..authorization.rbac_authorizer import RBACAuthorizer
from ..machinery.request_user import ANONYMOUS, RequestUser, service_account_user
from ..machinery.status import StatusError
from ..machinery.token_authenticator import UidLookup
from ..registry.generic_store import Storage
from .filters import Next, Scope, ServerContext

__all__ = ["authenticate", "authorize", "forbidden", "impersonate", "uid_lookup"]

_SERVICE_ACCOUNT = "system:serviceaccount:"
_EXTRA = "impersonate-extra-"


def uid_lookup(storage: Storage) -> UidLookup:
    """The uid of a stored core object (None: none, or being deleted) by resource,
    namespace and name: what keeps an issued token good."""
    def uid(resource: str, namespace: str, name: str) -> str | None:
        table = storage.tables.get(("", resource))
        found = table.objects.get((namespace, name)) if table is not None else None
        if found is None or found["metadata"].get("deletionTimestamp"):
            return None
        return str(found["metadata"].get("uid", ""))
    return uid


async def authenticate(ctx: ServerContext, request: web.Request, scope: Scope,
                       next_: Next) -> web.StreamResponse:
    """A bearer token names the user (401 for one the server does not accept); no
    header: ``system:anonymous``."""
    header = request.headers.get("Authorization", "").strip()
    user = ANONYMOUS
    if header:
        kind, _, token = header.partition(" ")
        found = ctx.settings.tokens.authenticate(
            token.strip(), ctx.storage.now(), uid_lookup(ctx.storage)
        ) if kind.lower() == "bearer" else None
        if found is None:
            raise StatusError.unauthorized()
        user = found[0]
    path = request.path.rstrip("/") or "/"
    return await next_(request, replace(scope, user=user, path=path,
                                        parts=[p for p in path.split("/") if p]))


def forbidden(attrs: AuthorizerAttributes, reason: str = "") -> StatusError:
    """``ForbiddenStatusError``: the 403 of a refused request (``reason``: why, if said)."""
    if not attrs.resource_request:
        err = StatusError.forbidden_path(attrs.user.username, attrs.path, attrs.verb)
    else:
        err = StatusError.forbidden(attrs.user.username, attrs.verb, attrs.resource,
                                    attrs.api_group, attrs.namespace or None,
                                    attrs.name or None, attrs.subresource)
    return replace(err, message=f"{err.message}: {reason}") if reason else err


def _reference(kind: str, name: str, api_version: str = "", field_path: str = "") -> str:
    """Go's ``%v`` of the v1.ObjectReference an impersonation header asks for."""
    return f"{{{kind}  {name}  {api_version}  {field_path}}}"


def _acting_as(requester: RequestUser, verb_target: tuple[str, str, str, str, str]
               ) -> AuthorizerAttributes:
    group, resource, subresource, namespace, name = verb_target
    return AuthorizerAttributes(requester, "impersonate", True, namespace, group, "v1",
                                resource, subresource, name)


async def impersonate(ctx: ServerContext, request: web.Request, scope: Scope,
                      next_: Next) -> web.StreamResponse:
    """The user the request acts as, when its user may impersonate them."""
    headers = request.headers
    username = headers.get("Impersonate-User", "")
    groups = headers.getall("Impersonate-Group", [])
    uid = headers.get("Impersonate-Uid", "")
    extras = [(k[len(_EXTRA):].lower(), v) for k, v in headers.items()
              if k.lower().startswith(_EXTRA)]
    if not username:
        if groups or uid or extras:  # kube-apiserver's responsewriters.InternalError
            asked = [_reference("Group", g) for g in groups] + [
                _reference("UserExtra", v, "authentication.k8s.io/v1", k) for k, v in extras]
            if uid:
                asked.append(_reference("UID", uid, "authentication.k8s.io/v1"))
            return web.Response(status=500, content_type="text/plain", text=(
                f'Internal Server Error: "{request.path}": requested [{" ".join(asked)}] '
                "without impersonating a user\n"))
        return await next_(request, scope)
    targets: list[tuple[str, str, str, str, str]] = []
    user_groups: list[str] = list(groups)
    account = username.removeprefix(_SERVICE_ACCOUNT).split(":") if username.startswith(
        _SERVICE_ACCOUNT) else []
    if len(account) == 2:
        targets.append(("", "serviceaccounts", "", account[0], account[1]))
        if not groups:
            user_groups = list(service_account_user(*account).groups[:2])
    else:
        targets.append(("", "users", "", "", username))
    targets += [("", "groups", "", "", g) for g in groups]
    targets += [("authentication.k8s.io", "userextras", key, "", value) for key, value in extras]
    if uid:
        targets.append(("authentication.k8s.io", "uids", "", "", uid))
    authorizer = RBACAuthorizer(ctx.storage.tables)
    for target in targets:
        attrs = _acting_as(scope.user, target)
        decision = authorizer.authorize(attrs)
        if not decision.allowed:
            raise forbidden(attrs, decision.reason)
    if username == ANONYMOUS.username:
        if "system:unauthenticated" not in user_groups:
            user_groups.append("system:unauthenticated")
    elif not {"system:authenticated", "system:unauthenticated"} & set(user_groups):
        user_groups.append("system:authenticated")
    acting = RequestUser(username, tuple(user_groups), uid)
    return await next_(request, replace(scope, user=acting))


async def authorize(ctx: ServerContext, request: web.Request, scope: Scope,
                    next_: Next) -> web.StreamResponse:
    """RBAC's decision on the request: on to the next filter, or its 403."""
    attrs = request_attributes(scope.user, request.method, scope.path, scope.parts,
                               request.query)
    decision = RBACAuthorizer(ctx.storage.tables).authorize(attrs)
    if not decision.allowed:
        raise forbidden(attrs, decision.reason)
    return await next_(request, scope)
