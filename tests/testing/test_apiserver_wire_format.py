"""How kube-apiserver v1.28.7 writes its answers, byte for byte where clients could tell:
JSON bodies and their final newline, ``/version``, the warnings of deprecated built-in
versions, the component statuses' Table and a TokenReview's error. Every expectation
was recorded on kube-apiserver v1.28.7; the tests run on both backends."""

from __future__ import annotations

import base64
import json
from typing import Any

from reconcilekit.testing import Cluster, eventually

from k8s_objects import configmap

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


async def _raw(apiserver: Cluster, method: str, path: str, *, data: bytes | None = None,
               accept: str = "application/json",
               content_type: str = "application/json") -> tuple[int, Any, bytes]:
    """(status, headers, body bytes) of one request, as the server wrote them."""
    api = await apiserver._client()
    headers = await apiserver._headers({"Accept": accept, "Content-Type": content_type})
    async with api.rest_client.pool_manager.request(
            method, apiserver.configuration.host + path, data=data, headers=headers) as resp:
        return resp.status, resp.headers, await resp.read()


async def test_json_answers_end_with_a_newline_but_version_and_openapi(
        apiserver: Cluster) -> None:
    configmaps = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    created = await _raw(apiserver, "POST", configmaps,
                         data=b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}')
    assert created[0] == 201 and created[2].endswith(b"}\n"), created
    for path, accept in ((f"{configmaps}/c", "application/json"),
                         (configmaps, "application/json"), (configmaps, TABLE),
                         (f"{configmaps}/missing", "application/json"),
                         ("/api/v1", "application/json"), ("/apis/apps", "application/json")):
        status, _, body = await _raw(apiserver, "GET", path, accept=accept)
        assert body.endswith(b"}\n") and not body.endswith(b"\n\n"), (path, status, body[-20:])
    status, _, body = await _raw(apiserver, "GET", "/version")
    assert status == 200 and body.startswith(b'{\n  "major": "1",\n  "minor": "28",\n')
    assert body.endswith(b'"\n}'), body[-20:]
    status, _, body = await _raw(apiserver, "GET", "/openapi/v3/api/v1")
    assert status == 200 and body.endswith(b"}") and not body.endswith(b"\n"), body[-20:]


async def test_deprecated_builtin_versions_answer_with_kube_apiservers_warning(
        apiserver: Cluster) -> None:
    status, headers, _ = await _raw(apiserver, "GET", "/api/v1/componentstatuses/etcd-0")
    assert status == 200
    assert headers.getall("Warning") == ['299 - "v1 ComponentStatus is deprecated in v1.19+"']
    flowschemas = "/apis/flowcontrol.apiserver.k8s.io/{}/flowschemas"
    status, headers, _ = await _raw(apiserver, "GET", flowschemas.format("v1beta2"))
    assert status == 200
    assert headers.getall("Warning") == [
        '299 - "flowcontrol.apiserver.k8s.io/v1beta2 FlowSchema is deprecated in v1.26+, '
        'unavailable in v1.29+; use flowcontrol.apiserver.k8s.io/v1beta3 FlowSchema"']
    status, headers, _ = await _raw(apiserver, "GET", flowschemas.format("v1beta3"))
    assert status == 200 and "Warning" not in headers
    status, headers, body = await _raw(apiserver, "GET", "/api/v1/componentstatuses/nothing")
    assert status == 500 and len(headers.getall("Warning")) == 1  # on errors too
    assert body == (b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
                    b'"message":"Component not found: nothing","code":500}\n')


async def test_component_statuses_print_their_health_in_a_table(apiserver: Cluster) -> None:
    got = await apiserver.request("GET", "/api/v1/componentstatuses/etcd-0",
                                  headers={"Accept": TABLE})
    assert got.status == 200, got
    assert [c["name"] for c in got.body["columnDefinitions"]] == [
        "Name", "Status", "Message", "Error"]
    assert got.body["metadata"] == {}
    assert got.body["rows"] == [{"cells": ["etcd-0", "Healthy", "ok", ""], "object": {
        "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"name": "etcd-0", "creationTimestamp": None}}}]
    listed = await apiserver.request("GET", "/api/v1/componentstatuses",
                                     headers={"Accept": TABLE})
    rows = {r["cells"][0]: r["cells"][1:] for r in listed.body["rows"]}
    assert rows["etcd-0"] == ["Healthy", "ok", ""]
    # no scheduler listens on either backend; kube-controller-manager serves no health port
    assert rows["scheduler"] == [
        "Unhealthy", 'Get "https://127.0.0.1:10259/healthz": dial tcp 127.0.0.1:10259: '
        "connect: connection refused", ""]


async def test_a_token_review_of_a_token_no_authenticator_claims_says_invalid_bearer_token(
        apiserver: Cluster) -> None:
    def review(token: str) -> dict[str, Any]:
        return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": token}}
    # not a JWT; a JWT of another issuer: no authenticator's
    other_issuer = "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJvdGhlciJ9.c2ln"
    for token in ("not-a-jwt", "a.b.c", other_issuer):
        got = await apiserver.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                      json=review(token))
        assert got.status == 201, got
        assert got.body["status"] == {"user": {}, "error": "invalid bearer token"}, token
    # a JWT of the server's issuer that its key did not sign
    forged = ".".join(base64.urlsafe_b64encode(json.dumps(part).encode()).decode().rstrip("=")
                      for part in ({"alg": "RS256", "kid": "x"}, {
                          "iss": "https://kubernetes.default.svc",
                          "sub": "system:serviceaccount:default:x"})) + ".c2ln"
    got = await apiserver.request("POST", "/apis/authentication.k8s.io/v1/tokenreviews",
                                  json=review(forged))
    assert got.body["status"] == {"user": {}, "error": "[invalid bearer token, square/go-jose: "
                                                       "error in cryptographic primitive]"}


async def test_a_token_review_of_a_deleted_accounts_token_names_the_account(
        apiserver: Cluster) -> None:
    ns = apiserver.namespace
    made = await apiserver.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                                   json={"metadata": {"name": "gone"}})
    assert made.status == 201, made
    issued = await apiserver.request(
        "POST", f"/api/v1/namespaces/{ns}/serviceaccounts/gone/token",
        json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    token = issued.body["status"]["token"]
    deleted = await apiserver.request("DELETE", f"/api/v1/namespaces/{ns}/serviceaccounts/gone")
    assert deleted.status == 200, deleted

    async def reviewed() -> Any:  # the authenticator finds accounts in an informer first
        got = await apiserver.request(
            "POST", "/apis/authentication.k8s.io/v1/tokenreviews",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                  "spec": {"token": token}})
        assert got.status == 201, got
        return None if got.body["status"].get("authenticated") else got.body["status"]
    status = await eventually(reviewed, within=30.0, interval=0.05,
                              what="the deleted account's token no longer authenticated")
    assert status == {
        "user": {}, "error": '[invalid bearer token, serviceaccounts "gone" not found]'}


async def test_empty_maps_of_builtin_kinds_are_not_kept(apiserver: Cluster) -> None:
    configmaps = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    created = await apiserver.request("POST", configmaps, json={
        **configmap("e"), "metadata": {"name": "e", "labels": {}, "annotations": {}},
        "data": {}})
    assert created.status == 201, created
    assert {"labels", "annotations"} & set(created.body["metadata"]) == set()
    assert "data" not in created.body
    await apiserver.request("PATCH", f"{configmaps}/e", json={"metadata": {"labels": {"a": "b"}}},
                            content_type="application/strategic-merge-patch+json")
    emptied = await apiserver.request(
        "PATCH", f"{configmaps}/e", json={"metadata": {"labels": {"$patch": "delete"}}},
        content_type="application/strategic-merge-patch+json")
    assert emptied.status == 200, emptied
    assert "labels" not in emptied.body["metadata"]
