"""SelfSubjectReview (``kubectl auth whoami``), as kube-apiserver 1.28 serves it: create-only,
never stored, the caller's user in ``status.userInfo``."""

from __future__ import annotations

from reconcilekit.testing import Cluster

PATH = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


async def test_a_self_subject_review_names_the_caller(apiserver: Cluster) -> None:
    got = await apiserver.request("POST", PATH, json=REVIEW)
    assert got.status == 201, got
    assert (got.body["kind"], got.body["apiVersion"]) == ("SelfSubjectReview",
                                                          "authentication.k8s.io/v1")
    assert got.body["metadata"]["creationTimestamp"]
    user = got.body["status"]["userInfo"]
    assert user["username"] and "system:authenticated" in user["groups"]
    # what the body claims changes nothing; a dry run answers the same
    claimed = dict(REVIEW, status={"userInfo": {"username": "someone-else"}})
    dry = await apiserver.request("POST", PATH, params={"dryRun": "All"}, json=claimed)
    assert dry.status == 201 and dry.body["status"]["userInfo"] == user


async def test_it_is_create_only_and_listed_as_such(apiserver: Cluster) -> None:
    assert (await apiserver.request("GET", PATH)).status == 405
    for method, path in (("GET", f"{PATH}/x"), ("DELETE", f"{PATH}/x"),
                         ("POST", "/apis/authentication.k8s.io/v1/namespaces/default/"
                                  "selfsubjectreviews")):
        got = await apiserver.request(method, path, json=REVIEW if method == "POST" else None)
        assert got.status == 404, (method, path, got)
    listed = await apiserver.request("GET", "/apis/authentication.k8s.io/v1")
    assert {"name": "selfsubjectreviews", "singularName": "selfsubjectreview",
            "namespaced": False, "kind": "SelfSubjectReview",
            "verbs": ["create"]} in listed.body["resources"]
    groups = await apiserver.request("GET", "/apis")
    assert "authentication.k8s.io" in [g["name"] for g in groups.body["groups"]]
