"""Who may do what: RBAC, impersonation, ServiceAccount tokens and the reviews that ask.

Every expectation was recorded on kube-apiserver v1.28.7 (``--authorization-mode=RBAC``);
the tests run on both backends. The test's own user is an administrator
(``system:masters``), as every user of the test control plane is; the other
users are a ServiceAccount with a token of its own (a TokenRequest) and users
the administrator impersonates.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from reconcilekit.testing import APIServer, Cluster, eventually
from reconcilekit.testing.apiserver.machinery.token_authenticator import TokenAuthenticator

RBAC = "rbac.authorization.k8s.io"
AUTHZ = "/apis/authorization.k8s.io/v1"


async def _account_with_a_role(apiserver: Cluster) -> str:
    """A ServiceAccount ``bot`` bound to a Role that reads ConfigMaps and scales one
    Deployment, once RBAC sees the binding; its username."""
    ns = apiserver.namespace
    for path, body in (
            (f"/api/v1/namespaces/{ns}/serviceaccounts",
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}),
            (f"/apis/{RBAC}/v1/namespaces/{ns}/roles",
             {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "cm-reader"},
              "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                         "verbs": ["get", "list"]},
                        {"apiGroups": ["apps"], "resources": ["deployments/scale"],
                         "resourceNames": ["web"], "verbs": ["update"]}]}),
            (f"/apis/{RBAC}/v1/namespaces/{ns}/rolebindings",
             {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
              "metadata": {"name": "bot-reads"},
              "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "cm-reader"},
              "subjects": [{"kind": "ServiceAccount", "name": "bot", "namespace": ns}]})):
        made = await apiserver.request("POST", path, json=body)
        assert made.status == 201, made
    bot = f"system:serviceaccount:{ns}:bot"
    await apiserver.until_allowed(bot, "list", "configmaps", namespace=ns,
                                  groups=["system:serviceaccounts"])
    return bot


async def _token(apiserver: Cluster, account: str = "bot", **spec: Any) -> str:
    made = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/serviceaccounts/{account}/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    assert made.status == 201, made
    return str(made.body["status"]["token"])


def _as(user: str, *groups: str) -> dict[str, str]:
    headers = {"Impersonate-User": user}
    if groups:
        headers["Impersonate-Group"] = groups[0]
    return headers


async def _access(apiserver: Cluster, attributes: dict[str, Any],
                  headers: dict[str, str] | None = None) -> dict[str, Any]:
    key = "resourceAttributes" if "resource" in attributes else "nonResourceAttributes"
    got = await apiserver.request("POST", f"{AUTHZ}/selfsubjectaccessreviews", json={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {key: attributes}}, headers=headers)
    assert got.status == 201, got
    assert got.body["metadata"]["creationTimestamp"] is None
    return dict(got.body["status"])


async def test_an_access_review_answers_with_rbac_s_decision_and_reason(
        apiserver: Cluster) -> None:
    bot = await _account_with_a_role(apiserver)
    ns = apiserver.namespace
    assert await _access(apiserver, {"verb": "create", "group": "apps",
                                     "resource": "deployments", "namespace": ns}) \
        == {"allowed": True}  # system:masters: allowed before RBAC is asked
    assert await _access(apiserver, {"verb": "list", "resource": "configmaps",
                                     "namespace": ns}, _as(bot)) == {
        "allowed": True, "reason": f'RBAC: allowed by RoleBinding "bot-reads/{ns}" of Role '
                                   f'"cm-reader" to ServiceAccount "bot/{ns}"'}
    assert await _access(apiserver, {"verb": "delete", "resource": "configmaps",
                                     "namespace": ns}, _as(bot)) == {"allowed": False}
    assert await _access(apiserver, {"verb": "update", "group": "apps",
                                     "resource": "deployments", "subresource": "scale",
                                     "name": "other", "namespace": ns}, _as(bot)) \
        == {"allowed": False}
    assert await _access(apiserver, {"verb": "get", "path": "/api"}, _as(bot)) == {
        "allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" '
                                   'of ClusterRole "system:discovery" to Group '
                                   '"system:authenticated"'}


async def test_a_denial_names_the_missing_roles_a_binding_of_the_user_refers_to(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", f"/apis/{RBAC}/v1/namespaces/{ns}/rolebindings", json={
        "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding", "metadata": {"name": "dangling"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "nowhere"},
        "subjects": [{"kind": "User", "name": "jane"}]})
    assert made.status == 201, made
    dangling = {"allowed": False, "reason": f'RBAC: role.{RBAC} "nowhere" not found'}

    async def judged_by_the_binding() -> bool:  # RBAC reads bindings from an informer
        return await _access(apiserver, {"verb": "list", "resource": "configmaps",
                                         "namespace": ns}, _as("jane")) == dangling
    await eventually(judged_by_the_binding, within=30.0, interval=0.05,
                     what="the denial naming the binding's missing role")
    refused = await apiserver.request("GET", f"/api/v1/namespaces/{ns}/configmaps",
                                      headers=_as("jane"))
    assert refused.status == 403, refused
    assert refused.body["message"] == (
        f'configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group '
        f'"" in the namespace "{ns}": RBAC: role.{RBAC} "nowhere" not found')
    # a binding of someone else refers to no role of hers: no reason
    assert await _access(apiserver, {"verb": "list", "resource": "configmaps",
                                     "namespace": ns}, _as("joe")) == {"allowed": False}


@pytest.mark.parametrize(("method", "path", "message", "details"), [
    ("GET", "/api/v1/namespaces/{ns}/secrets",
     'secrets is forbidden: User "{bot}" cannot list resource "secrets" in API group "" in '
     'the namespace "{ns}"', {"kind": "secrets"}),
    ("GET", "/api/v1/namespaces/{ns}/secrets/x",
     'secrets "x" is forbidden: User "{bot}" cannot get resource "secrets" in API group "" '
     'in the namespace "{ns}"', {"name": "x", "kind": "secrets"}),
    ("GET", "/api/v1/secrets?watch=true",
     'secrets is forbidden: User "{bot}" cannot watch resource "secrets" in API group "" at '
     "the cluster scope", {"kind": "secrets"}),
    ("GET", "/apis/apps/v1/namespaces/{ns}/deployments/web/scale",
     'deployments.apps "web" is forbidden: User "{bot}" cannot get resource '
     '"deployments/scale" in API group "apps" in the namespace "{ns}"',
     {"name": "web", "group": "apps", "kind": "deployments"}),
    ("DELETE", "/apis/example.com/v1/namespaces/{ns}/nothings",
     'nothings.example.com is forbidden: User "{bot}" cannot deletecollection resource '
     '"nothings" in API group "example.com" in the namespace "{ns}"',
     {"group": "example.com", "kind": "nothings"}),
    ("GET", "/metrics", 'forbidden: User "{bot}" cannot get path "/metrics"', {}),
])
async def test_a_request_rbac_does_not_allow_is_refused_before_anything_else(
        apiserver: Cluster, method: str, path: str, message: str,
        details: dict[str, str]) -> None:
    bot = await _account_with_a_role(apiserver)
    ns = apiserver.namespace
    token = await _token(apiserver)
    refused = await apiserver.request(method, path.format(ns=ns),
                                      headers={"Authorization": f"Bearer {token}"})
    assert refused.status == 403, refused
    assert refused.body["message"] == message.format(ns=ns, bot=bot)
    assert refused.body["details"] == details
    allowed = await apiserver.request("GET", f"/api/v1/namespaces/{ns}/configmaps",
                                      headers={"Authorization": f"Bearer {token}"})
    assert allowed.status == 200, allowed


async def test_a_service_account_token_names_its_account_until_the_account_goes(
        apiserver: Cluster) -> None:
    bot = await _account_with_a_role(apiserver)
    ns = apiserver.namespace
    made = await apiserver.request(
        "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/bot/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 3600}})
    assert made.status == 201, made
    assert made.body["metadata"]["name"] == "bot"
    assert made.body["spec"] == {"audiences": ["https://kubernetes.default.svc"],
                                 "expirationSeconds": 3600, "boundObjectRef": None}
    assert made.body["status"]["expirationTimestamp"].endswith("Z")
    token = made.body["status"]["token"]
    who = await apiserver.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        headers={"Authorization": f"Bearer {token}"})
    assert who.status == 201, who
    info = who.body["status"]["userInfo"]
    assert info["username"] == bot
    assert info["groups"] == ["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                              "system:authenticated"]
    reviewed = await apiserver.request(
        "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
              "spec": {"token": token}})
    assert reviewed.status == 201, reviewed
    assert reviewed.body["status"]["authenticated"] is True
    assert reviewed.body["status"]["user"]["username"] == bot
    assert reviewed.body["status"]["audiences"] == ["https://kubernetes.default.svc"]

    too_short = await apiserver.request(
        "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/bot/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
              "spec": {"expirationSeconds": 10}})
    assert too_short.status == 422, too_short
    assert too_short.body["details"]["causes"][0]["message"] == (
        "Invalid value: 10: may not specify a duration less than 10 minutes")
    missing = await apiserver.request(
        "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/nobody/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert missing.status == 404, missing
    assert missing.body["message"] == 'serviceaccounts "nobody" not found'

    gone = await apiserver.request("DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/bot")
    assert gone.status == 200, gone

    async def refused() -> bool:
        got = await apiserver.request("GET", f"/api/v1/namespaces/{ns}/configmaps",
                                      headers={"Authorization": f"Bearer {token}"})
        return got.status == 401
    # kube-apiserver caches authenticated tokens for a few seconds and learns of the
    # deletion from its informer: a bound on that, not a timing
    await eventually(refused, within=60.0, what="the deleted account's token refused")


def test_an_issued_token_stops_at_its_expiry_or_when_what_it_is_bound_to_goes() -> None:
    tokens = TokenAuthenticator({"admin-token": "admin"})
    stored = {("serviceaccounts", "ns", "bot"): "uid-1", ("secrets", "ns", "s"): "uid-s"}

    def uid_of(resource: str, namespace: str, name: str) -> str | None:
        return stored.get((resource, namespace, name))
    token = tokens.issue("ns", "bot", "uid-1", now=400.0, expires=1000.0,
                         audiences=("api",), bound=("secrets", "s", "uid-s"))
    header, claims, _ = (json.loads(base64.urlsafe_b64decode(part + "==")) if i < 2 else part
                         for i, part in enumerate(token.split(".")))
    assert header["alg"] == "ES256"
    assert claims == {"aud": ["api"], "exp": 1000, "iat": 400, "nbf": 400,
                      "iss": "https://kubernetes.default.svc",
                      "sub": "system:serviceaccount:ns:bot", "kubernetes.io": {
                          "namespace": "ns", "serviceaccount": {"name": "bot", "uid": "uid-1"},
                          "secret": {"name": "s", "uid": "uid-s"}}}
    found = tokens.authenticate(token, 999.0, uid_of)
    assert found is not None and found[0].username == "system:serviceaccount:ns:bot"
    assert found[1] == ("api",)
    stored[("secrets", "ns", "s")] = "uid-other"  # the Secret recreated: revoked
    assert tokens.authenticate(token, 999.0, uid_of) is None
    token = tokens.issue("ns", "bot", "uid-1", now=400.0, expires=1000.0,
                         audiences=("api",))
    assert tokens.authenticate(token, 1000.0, uid_of) is None  # expired
    token = tokens.issue("ns", "bot", "uid-1", now=400.0, expires=1000.0,
                         audiences=("api",))
    del stored[("serviceaccounts", "ns", "bot")]  # the account deleted
    assert tokens.authenticate(token, 0.0, uid_of) is None
    assert tokens.authenticate("nothing", 0.0, uid_of) is None
    found = tokens.authenticate("admin-token", 0.0, uid_of)
    assert found is not None and "system:masters" in found[0].groups


async def test_impersonation_needs_the_right_to_impersonate(apiserver: Cluster) -> None:
    bot = await _account_with_a_role(apiserver)
    token = await _token(apiserver)
    refused = await apiserver.request(
        "GET", "/api", headers={"Authorization": f"Bearer {token}", **_as("bob")})
    assert refused.status == 403, refused
    assert refused.body["message"] == (
        f'users "bob" is forbidden: User "{bot}" cannot impersonate resource "users" in API '
        'group "" at the cluster scope')
    # the administrator may: an impersonated user gets system:authenticated beside the
    # groups asked for
    who = await apiserver.request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
        headers=_as("bob", "devs"))
    assert who.status == 201, who
    assert who.body["status"]["userInfo"] == {"username": "bob",
                                              "groups": ["devs", "system:authenticated"]}
    path = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    groups_alone = await apiserver.request("GET", path, headers={"Impersonate-Group": "devs"})
    assert groups_alone.status == 500, groups_alone
    assert groups_alone.body == (f'Internal Server Error: "{path}": requested '
                                 "[{Group  devs    }] without impersonating a user\n")


async def test_subject_and_rules_reviews(apiserver: Cluster) -> None:
    bot = await _account_with_a_role(apiserver)
    ns = apiserver.namespace
    subject = await apiserver.request("POST", f"{AUTHZ}/subjectaccessreviews", json={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": bot, "groups": ["system:serviceaccounts"], "resourceAttributes": {
            "verb": "get", "resource": "configmaps", "namespace": ns, "name": "x"}}})
    assert subject.status == 201, subject
    assert subject.body["status"]["allowed"] is True
    local = await apiserver.request(
        "POST", f"{AUTHZ}/namespaces/{ns}/localsubjectaccessreviews", json={
            "apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
            "spec": {"user": "bob", "resourceAttributes": {
                "verb": "get", "resource": "configmaps", "namespace": ns}}})
    assert local.status == 201, local
    assert local.body["metadata"]["namespace"] == ns
    assert local.body["status"] == {"allowed": False}
    nobody = await apiserver.request("POST", f"{AUTHZ}/subjectaccessreviews", json={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "get", "resource": "pods"}}})
    assert nobody.status == 422, nobody

    rules = await apiserver.request(
        "POST", f"{AUTHZ}/selfsubjectrulesreviews", headers=_as(bot), json={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": ns}})
    assert rules.status == 201, rules
    assert rules.body["spec"] == {}
    status = rules.body["status"]
    assert status["incomplete"] is False
    shown = sorted(str(r) for r in status["resourceRules"])
    assert shown == sorted(str(r) for r in [
        {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
         "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
        {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
         "resources": ["selfsubjectreviews"]},
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]},
        {"verbs": ["update"], "apiGroups": ["apps"], "resources": ["deployments/scale"],
         "resourceNames": ["web"]}])
    urls = {u for r in status["nonResourceRules"] for u in r["nonResourceURLs"]}
    assert {"/api", "/apis/*", "/healthz", "/version", "/openid/v1/jwks"} <= urls


async def test_an_aggregated_cluster_role_gathers_the_roles_it_selects(
        apiserver: Cluster) -> None:
    name = f"{apiserver.namespace}-widgets-view"
    path = f"/apis/{RBAC}/v1/clusterroles"
    rule = {"verbs": ["get", "list", "watch"], "apiGroups": ["example.com"],
            "resources": ["widgets"]}
    made = await apiserver.request("POST", path, json={
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
        "metadata": {"name": name, "labels": {f"{RBAC}/aggregate-to-view": "true"}},
        "rules": [rule]})
    assert made.status == 201, made
    try:
        async def rules_of(role: str, present: bool) -> bool:
            got = await apiserver.request("GET", f"{path}/{role}")
            return (rule in got.body["rules"]) is present
        for role in ("view", "edit", "admin"):  # edit and admin aggregate view's picks
            await eventually(lambda r=role: rules_of(r, True),  # type: ignore[misc]
                             what=f"{role} holding the widget rule")
        view = await apiserver.request("GET", f"{path}/view")
        assert any(f["manager"] == "clusterrole-aggregation-controller"
                   for f in view.body["metadata"]["managedFields"])
    finally:
        gone = await apiserver.request("DELETE", f"{path}/{name}")
        assert gone.status == 200, gone
    await eventually(lambda: rules_of("view", False), what="view without the widget rule")


async def test_anonymous_requests_read_only_public_information(apiserver: Cluster) -> None:
    anonymous = {"Authorization": ""}
    version = await apiserver.request("GET", "/version", headers=anonymous)
    assert version.status == 200, version
    for path in ("/api", "/apis/apps/v1", "/openapi/v2"):
        refused = await apiserver.request("GET", path, headers=anonymous)
        assert refused.status == 403, refused
        assert refused.body["message"] == (
            f'forbidden: User "system:anonymous" cannot get path "{path}"')
    listed = await apiserver.request("GET", "/api/v1/namespaces", headers=anonymous)
    assert listed.status == 403, listed
    assert listed.body["message"] == (
        'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" '
        'in API group "" at the cluster scope')


@pytest.mark.admission_plugin("OwnerReferencesPermissionEnforcement", required=False)
async def test_owner_references_need_delete_permission_only_where_the_plugin_is_on(
        apiserver: Cluster, admission_plugin_enabled: Callable[[str], Awaitable[bool]]
) -> None:
    """OwnerReferencesPermissionEnforcement, on in the pytest plugin's servers (the session's
    control plane and in-process), off in kube-apiserver's defaults: where it runs, setting
    an owner reference needs ``delete`` on the object; elsewhere ``patch`` is enough."""
    ns = apiserver.namespace
    made = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", json={
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "writer"}})
    assert made.status == 201, made
    for path, body in (
            (f"/apis/{RBAC}/v1/namespaces/{ns}/roles",
             {"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "cm-writer"},
              "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                         "verbs": ["get", "create", "update", "patch"]}]}),
            (f"/apis/{RBAC}/v1/namespaces/{ns}/rolebindings",
             {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
              "metadata": {"name": "writer-writes"},
              "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "cm-writer"},
              "subjects": [{"kind": "ServiceAccount", "name": "writer", "namespace": ns}]})):
        assert (await apiserver.request("POST", path, json=body)).status == 201
    await apiserver.until_allowed(f"system:serviceaccount:{ns}:writer", "create", "configmaps",
                                  namespace=ns, groups=["system:serviceaccounts"])
    headers = {"Authorization": f"Bearer {await _token(apiserver, 'writer')}"}
    configmaps = f"/api/v1/namespaces/{ns}/configmaps"
    created = await apiserver.request("POST", configmaps, headers=headers, json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "child"}})
    assert created.status == 201, created
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
             "uid": "6c1e3c1e-0000-4000-8000-000000000001"}
    answer = await apiserver.request(
        "PATCH", f"{configmaps}/child", headers=headers,
        json={"metadata": {"ownerReferences": [owner]}},
        content_type="application/merge-patch+json")
    if await admission_plugin_enabled("OwnerReferencesPermissionEnforcement"):
        assert (answer.status, answer.body["message"]) == (
            403, 'configmaps "child" is forbidden: cannot set an ownerRef on a resource you '
            "can't delete: , <nil>")
    else:
        assert answer.status == 200, answer
        assert [{key: ref[key] for key in owner}
                for ref in answer.body["metadata"]["ownerReferences"]] == [owner]


async def test_owner_reference_enforcement_is_off_by_default_as_in_kube_apiserver() -> None:
    async with APIServer() as server:
        cluster = Cluster(server.configuration(), server=server)
        try:
            await cluster.request("POST", "/api/v1/namespaces/default/serviceaccounts", json={
                "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "w"}})
            await cluster.request("POST", f"/apis/{RBAC}/v1/namespaces/default/rolebindings",
                                  json={"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                                        "metadata": {"name": "w-edits"},
                                        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                                                    "name": "edit"},
                                        "subjects": [{"kind": "ServiceAccount", "name": "w",
                                                      "namespace": "default"}]})
            made = await cluster.request(
                "POST", "/api/v1/namespaces/default/serviceaccounts/w/token",
                json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                      "spec": {}})
            headers = {"Authorization": f"Bearer {made.body['status']['token']}"}
            owned = await cluster.request(
                "POST", "/api/v1/namespaces/default/configmaps", headers=headers, json={
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                        "name": "c", "ownerReferences": [{
                            "apiVersion": "v1", "kind": "ConfigMap", "name": "p",
                            "uid": "6c1e3c1e-0000-4000-8000-000000000002",
                            "blockOwnerDeletion": True}]}})
            assert owned.status == 201, owned  # no finalizers permission asked
        finally:
            await cluster.close()
    with pytest.raises(ValueError, match=r"unknown admission plugin\(s\) PodSecurityPolicy"):
        APIServer(enable_admission_plugins=("PodSecurityPolicy",))
