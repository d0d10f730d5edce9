"""List (selectors, pagination, resourceVersion) and watch semantics."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from apiserver_helpers import ANYTHING, crd

from reconcilekit.lowlevel import PARTIAL_OBJECT_METADATA, PARTIAL_OBJECT_METADATA_LIST
from reconcilekit.testing import Cluster, eventually

from k8s_objects import configmap


async def _make(apiserver: Cluster, path: str, items: list[tuple[str, dict[str, str]]]) -> str:
    rv = ""
    for name, labels in items:
        got = await apiserver.request("POST", path, json=configmap(name, labels=labels))
        rv = got.body["metadata"]["resourceVersion"]
    return rv


def _names(body: dict[str, object]) -> list[str]:
    """The items' names, less what a real namespace holds from the start."""
    items = body["items"]
    assert isinstance(items, list)
    return [name for i in items if (name := i["metadata"]["name"]) != "kube-root-ca.crt"]


async def test_list_shape_and_label_selectors(apiserver: Cluster, configmaps: str) -> None:
    # Grammar of k8s.io/apimachinery/pkg/labels/selector.go; list items of built-in
    # kinds are encoded without kind/apiVersion (runtime list encoding).
    await _make(apiserver, configmaps, [("a", {"env": "prod", "tier": "web"}),
                                        ("b", {"env": "dev"}), ("c", {"tier": "db"})])
    listed = await apiserver.request("GET", configmaps)
    assert listed.body["kind"] == "ConfigMapList" and listed.body["apiVersion"] == "v1"
    assert listed.body["metadata"]["resourceVersion"].isdigit()
    # Items of built-in lists carry no kind/apiVersion on the wire.
    assert "kind" not in listed.body["items"][0]
    cases = {"env=prod": ["a"], "env==prod": ["a"], "env!=prod": ["b", "c"],
             "env in (prod,dev)": ["a", "b"], "env notin (prod)": ["b", "c"],
             "tier": ["a", "c"], "!tier": ["b"], "env=prod,tier=web": ["a"]}
    for selector, expected in cases.items():
        got = await apiserver.request("GET", configmaps, params={"labelSelector": selector})
        assert _names(got.body) == expected, selector
    bad = await apiserver.request("GET", configmaps, params={"labelSelector": "a in (b"})
    assert bad.status == 400 and bad.body["reason"] == "BadRequest"


async def test_field_selectors_on_name_and_namespace(apiserver: Cluster, configmaps: str
                                                     ) -> None:
    # Unsupported labels: a kind with only the generic fields names them (ConfigMaps);
    # one with field labels of its own says "field label not supported: <label>" (Pods).
    await _make(apiserver, configmaps, [("a", {}), ("b", {})])
    got = await apiserver.request("GET", configmaps, params={"fieldSelector": "metadata.name=b"})
    assert _names(got.body) == ["b"]
    got = await apiserver.request("GET", "/api/v1/configmaps", params={
        "fieldSelector": f"metadata.namespace={apiserver.namespace},metadata.name!=b"})
    assert "a" in _names(got.body) and "b" not in _names(got.body)
    bad = await apiserver.request("GET", configmaps, params={"fieldSelector": "data.x=y"})
    assert bad.status == 400
    assert bad.body["message"] == ('"data.x" is not a known field selector: only '
                                   '"metadata.name", "metadata.namespace"')
    pods = configmaps.replace("/configmaps", "/pods")
    bad = await apiserver.request("GET", pods, params={"fieldSelector": "spec.foo=y"})
    assert bad.status == 400
    assert bad.body["message"] == "field label not supported: spec.foo"


async def test_limit_and_continue_page_through_a_consistent_snapshot(
        apiserver: Cluster, configmaps: str) -> None:
    # API concepts, "Retrieving large results sets in chunks": every page is served
    # from the first page's resourceVersion, so later writes do not show up.
    await _make(apiserver, configmaps, [(f"cm{i:02}", {"page": "y"}) for i in range(7)])
    seen: list[str] = []
    token = None
    pages = 0
    first_rv = None
    while True:
        params = {"limit": "3", "labelSelector": "page=y"}
        if token:
            params["continue"] = token
        page = await apiserver.request("GET", configmaps, params=params)
        assert page.status == 200, page.body
        first_rv = first_rv or page.body["metadata"]["resourceVersion"]
        assert page.body["metadata"]["resourceVersion"] == first_rv
        seen += _names(page.body)
        pages += 1
        if pages == 1:  # a write between pages must not show up in later pages
            await apiserver.request("POST", configmaps,
                                    json=configmap("cm99", labels={"page": "y"}))
        token = page.body["metadata"].get("continue")
        if not token:
            break
    assert seen == [f"cm{i:02}" for i in range(7)]
    assert pages == 3


async def test_watch_from_a_resource_version_replays_later_events(
        apiserver: Cluster, configmaps: str) -> None:
    # API concepts, "Efficient detection of changes": a watch from resourceVersion R
    # delivers every change after R.
    rv = await _make(apiserver, configmaps, [("a", {})])
    await apiserver.request("PATCH", f"{configmaps}/a", json={"data": {"x": "1"}},
                            content_type="application/merge-patch+json")
    await apiserver.request("DELETE", f"{configmaps}/a")
    async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
        got = [await anext(events), await anext(events)]
    assert [e["type"] for e in got] == ["MODIFIED", "DELETED"]
    assert got[0]["object"]["kind"] == "ConfigMap"  # watch objects carry kind


async def test_watch_without_resource_version_starts_with_current_state(
        apiserver: Cluster, configmaps: str) -> None:
    # API concepts, "Semantics for watch": unset resourceVersion is "Get State and
    # Start at Most Recent": synthetic ADDED events for the current objects first.
    await _make(apiserver, configmaps, [("a", {}), ("b", {})])
    async with apiserver.watch(configmaps) as events:
        got = [await anext(events), await anext(events)]
    assert {(e["type"], e["object"]["metadata"]["name"]) for e in got} == {
        ("ADDED", "a"), ("ADDED", "b")}


async def test_selector_watch_sees_objects_move_in_and_out(apiserver: Cluster, configmaps: str
                                                           ) -> None:
    # storage/cacher filtering (watch_cache + cacheWatcher.convertToWatchEvent): an
    # object that stops matching arrives as DELETED (the object as it last matched,
    # with the new resourceVersion), one that starts as ADDED.
    rv = await _make(apiserver, configmaps, [("a", {"app": "x"})])
    merge = "application/merge-patch+json"
    async with apiserver.watch(configmaps, {"resourceVersion": rv,
                                            "labelSelector": "app=x"}) as events:
        moved = await apiserver.request("PATCH", f"{configmaps}/a", json={
            "metadata": {"labels": {"app": "y"}}}, content_type=merge)
        left = await anext(events)
        await apiserver.request("PATCH", f"{configmaps}/a",
                                json={"metadata": {"labels": {"app": "x"}}}, content_type=merge)
        came = await anext(events)
    assert left["type"] == "DELETED" and left["object"]["metadata"]["labels"] == {"app": "x"}
    assert left["object"]["metadata"]["resourceVersion"] == (
        moved.body["metadata"]["resourceVersion"])
    assert came["type"] == "ADDED"


async def test_watch_timeout_seconds_ends_the_stream(apiserver: Cluster, configmaps: str
                                                     ) -> None:
    # timeoutSeconds bounds the watch call (endpoints/handlers/get.go ListResource).
    rv = await _make(apiserver, configmaps, [("a", {})])
    async with apiserver.watch(configmaps, {"resourceVersion": rv,
                                            "timeoutSeconds": "1"}) as events:
        got = [e async for e in events  # (kube-controller-manager may add its root CA)
               if e["object"]["metadata"]["name"] != "kube-root-ca.crt"]
    assert got == []


async def test_initial_events_end_bookmark_for_watch_list(apiserver: Cluster, configmaps: str
                                                          ) -> None:
    # KEP-3157 watch-list: sendInitialEvents ends with a BOOKMARK annotated
    # k8s.io/initial-events-end=true.
    if not apiserver.in_process:
        pytest.skip("watch-list (sendInitialEvents) is alpha in kube-apiserver 1.28, behind "
                    "the WatchList feature gate, off by default")
    await _make(apiserver, configmaps, [("a", {})])
    params = {"sendInitialEvents": "true", "allowWatchBookmarks": "true",
              "resourceVersionMatch": "NotOlderThan"}
    async with apiserver.watch(configmaps, params) as events:
        initial = []
        while (event := await anext(events))["type"] == "ADDED":
            initial.append(event["object"]["metadata"]["name"])
        bookmark = event
    assert "a" in initial  # with the namespace's kube-root-ca.crt, as on a cluster
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_concurrent_watchers_see_the_same_order(apiserver: Cluster, configmaps: str
                                                      ) -> None:
    rv = await _make(apiserver, configmaps, [("seed", {})])

    async def collect(n: int) -> list[str]:
        async with apiserver.watch(configmaps, {"resourceVersion": rv}) as events:
            return [(await anext(events))["object"]["metadata"]["resourceVersion"]
                    for _ in range(n)]

    tasks = [asyncio.ensure_future(collect(5)) for _ in range(3)]
    await _make(apiserver, configmaps, [(f"n{i}", {}) for i in range(5)])
    results = await asyncio.gather(*tasks)
    assert results[0] == results[1] == results[2]
    assert [int(r) for r in results[0]] == sorted(int(r) for r in results[0])


async def test_a_filtered_page_continues_while_anything_follows_and_counts_nothing(
        apiserver: Cluster, configmaps: str) -> None:
    # The etcd3 store's GetList (kube-apiserver 1.28): a page that fills up gets a continue
    # token when any object follows it, matching the selector or not, so the next page
    # may be empty; remainingItemCount only when there is no selector (etcd's count
    # would include objects the selector leaves out).
    await eventually(lambda: apiserver.request("GET", f"{configmaps}/kube-root-ca.crt"),
                     within=30, interval=0.05, what="the namespace's root CA ConfigMap")
    await _make(apiserver, configmaps, [("a0", {"x": "y"}), ("a1", {"x": "y"}), ("a2", {}),
                                        ("a3", {})])
    filtered = {"limit": "2", "labelSelector": "x=y"}
    page = await apiserver.request("GET", configmaps, params=filtered)
    assert _names(page.body) == ["a0", "a1"]
    assert "remainingItemCount" not in page.body["metadata"]
    last = await apiserver.request("GET", configmaps, params={
        **filtered, "continue": page.body["metadata"]["continue"]})
    assert last.status == 200 and last.body["items"] == []
    assert "continue" not in last.body["metadata"]
    everything = await apiserver.request("GET", configmaps)
    page = await apiserver.request("GET", configmaps, params={"limit": "2"})
    assert page.body["metadata"]["remainingItemCount"] == len(everything.body["items"]) - 2
    # Filled by the last object there is: nothing follows, no token.
    page = await apiserver.request("GET", configmaps, params={
        "limit": "1", "fieldSelector": "metadata.name=kube-root-ca.crt"})
    assert len(page.body["items"]) == 1 and "continue" not in page.body["metadata"]


async def test_where_a_list_is_served_from_decides_its_limit_and_revision(
        apiserver: Cluster, configmaps: str) -> None:
    # kube-apiserver 1.28's cacher (shouldDelegateList) and etcd3 store: resourceVersion
    # "0" is answered by the watch cache, which ignores the limit; a resourceVersion with
    # a limit and no resourceVersionMatch (the legacy form) is listed by etcd at exactly
    # that revision; with NotOlderThan, or without a limit, at the newest.
    older = await _make(apiserver, configmaps, [("a0", {}), ("a1", {})])
    newest = await _make(apiserver, configmaps, [("a2", {})])

    async def cached_list() -> Any:
        # "0" means any state: the watch cache trails etcd, so the newest write may come
        # a moment later (a loaded kube-apiserver showed it); every answer ignores the limit
        got = await apiserver.request("GET", configmaps, params={"resourceVersion": "0",
                                                                 "limit": "1"})
        names = _names(got.body)
        assert names == ["a0", "a1", "a2"][:len(names)], got.body  # a state, never a page
        assert "continue" not in got.body["metadata"]
        return names == ["a0", "a1", "a2"]

    await eventually(cached_list, what="the watch cache's list to show every object")
    legacy = await apiserver.request("GET", configmaps, params={"resourceVersion": older,
                                                                "limit": "10"})
    assert _names(legacy.body) == ["a0", "a1"]
    assert legacy.body["metadata"]["resourceVersion"] == older
    for params in ({"resourceVersionMatch": "NotOlderThan", "limit": "10"}, {}):
        latest = await apiserver.request("GET", configmaps, params={
            "resourceVersion": older, **params})
        assert _names(latest.body) == ["a0", "a1", "a2"], params
        assert int(latest.body["metadata"]["resourceVersion"]) >= int(newest), params
    # A revision not yet written: etcd's error, passed on as a 500; the watch cache (no
    # limit) and etcd's not-older-than check (a limit) time out, only the first with a
    # retryAfterSeconds.
    future = str(int(newest) + 1_000_000)
    for params in ({"limit": "10"}, {"resourceVersionMatch": "Exact"}):
        got = await apiserver.request("GET", configmaps, params={"resourceVersion": future,
                                                                 **params})
        assert (got.status, got.body["message"]) == (
            500, "etcdserver: mvcc: required revision is a future revision"), params
    for params, retry in (({}, True), ({"limit": "10",
                                        "resourceVersionMatch": "NotOlderThan"}, False)):
        got = await apiserver.request("GET", configmaps, params={"resourceVersion": future,
                                                                 **params})
        assert (got.status, got.body["reason"]) == (504, "Timeout"), params
        assert ("retryAfterSeconds" in got.body["details"]) is retry, params


async def test_list_options_are_checked_as_kube_apiserver_checks_them(
        apiserver: Cluster, configmaps: str) -> None:
    rv = await _make(apiserver, configmaps, [("a", {})])
    lonely = await apiserver.request("GET", configmaps, params={"resourceVersionMatch": "Exact"})
    assert lonely.status == 422
    assert lonely.body["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden unless resourceVersion is provided")
    assert lonely.body["details"]["kind"] == "ListOptions"
    bogus = await apiserver.request("GET", configmaps, params={
        "resourceVersion": rv, "resourceVersionMatch": "Bogus"})
    assert bogus.status == 422 and 'Unsupported value: "Bogus"' in bogus.body["message"]
    # A negative limit means no limit; integers are parsed as Go does.
    unlimited = await apiserver.request("GET", configmaps, params={"limit": "-1"})
    assert unlimited.status == 200 and "continue" not in unlimited.body["metadata"]
    for name in ("limit", "timeoutSeconds"):
        bad = await apiserver.request("GET", configmaps, params={name: "many"})
        assert bad.status == 400
        assert bad.body["message"] == 'strconv.ParseInt: parsing "many": invalid syntax'
    # An unparsable resourceVersion reaches the storage layer: a 500.
    malformed = await apiserver.request("GET", configmaps, params={"resourceVersion": "abc"})
    assert malformed.status == 500
    assert malformed.body["message"] == ('resourceVersion: Invalid value: "abc": '
                                         'strconv.ParseUint: parsing "abc": invalid syntax')
    future = await apiserver.request("GET", configmaps, params={
        "resourceVersion": str(int(rv) + 1_000_000)})
    assert future.status == 504 and future.body["reason"] == "Timeout"
    assert future.body["message"].startswith(
        f"Timeout: Too large resource version: {int(rv) + 1_000_000}, current: ")
    assert future.body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                                 "message": "Too large resource version"}]


async def test_a_malformed_continue_token_is_a_bad_request(apiserver: Cluster,
                                                           configmaps: str) -> None:
    # storage.DecodeContinue: unpadded URL-safe base64 of a JSON token.
    got = await apiserver.request("GET", configmaps, params={"continue": "garbage!"})
    assert got.status == 400
    assert got.body["message"] == ("invalid continue token: continue key is not valid: "
                                   "illegal base64 data at input byte 7")
    await _make(apiserver, configmaps, [("x1", {"t": "c"}), ("x2", {"t": "c"})])
    page = await apiserver.request("GET", configmaps, params={"limit": "1",
                                                              "labelSelector": "t=c"})
    token = page.body["metadata"]["continue"]
    assert "=" not in token


async def test_bookmarks_follow_the_watch_cache_rules(apiserver: Cluster) -> None:
    """kube-apiserver 1.28's watch cache offers a BOOKMARK every minute and 2 s before a
    watch's timeout, carrying the resource's last event, and only when that event is newer
    than the watch's start and than what it replayed on opening: never on a resource with
    no event since the server started, never on a watch that saw no event after it opened.
    Silence is not a dead watch. The watches here last 3-8 s on the server's clock
    (nothing on the client side to fake).
    """
    plural = f"quiets{apiserver.namespace.rsplit('-', 1)[-1]}"  # a resource of this test's own
    group = "bookmarks.test.reconcilekit.dev"
    definition = crd("Quiet", ANYTHING)
    definition["metadata"]["name"] = f"{plural}.{group}"
    definition["spec"].update(group=group, names={"plural": plural, "kind": "Quiet"})
    await apiserver.install_crd(definition)
    path = f"/apis/{group}/v1/namespaces/{apiserver.namespace}/{plural}"

    async def watch(rv: str, seconds: int, **params: str) -> list[dict[str, Any]]:
        async with apiserver.watch(path, {"resourceVersion": rv, "allowWatchBookmarks": "true",
                                          "timeoutSeconds": str(seconds), **params}) as events:
            return [e async for e in events]

    async def make(name: str, labels: dict[str, str]) -> str:
        made = await apiserver.request("POST", path, json={
            "apiVersion": f"{group}/v1", "kind": "Quiet",
            "metadata": {"name": name, "labels": labels}})
        assert made.status == 201, made
        return str(made.body["metadata"]["resourceVersion"])

    try:
        start = (await apiserver.request("GET", path)).body["metadata"]["resourceVersion"]
        assert await watch(start, 3) == []  # no event of the resource yet: no bookmark
        await make("shown", {"show": "yes"})
        hidden = await make("hidden", {})
        # Both replayed on opening (one filtered out), none after: no bookmark.
        replayed = await watch(start, 3, labelSelector="show=yes")
        assert [e["type"] for e in replayed] == ["ADDED"], replayed
        # An event after the watch opened, filtered out by its selector: bookmarks carry it.
        # 8 s: the bookmark comes 2 s before the end, so the write below has 6 s to land
        # in the watch cache first, even on a loaded machine (with 4 s it once did not)
        async with apiserver.watch(path, {"resourceVersion": hidden, "timeoutSeconds": "8",
                                          "allowWatchBookmarks": "true",
                                          "labelSelector": "show=yes"}) as events:
            late = await make("late", {})  # the watch is open: its answer has begun
            marked = [e async for e in events]
        assert marked and {e["type"] for e in marked} == {"BOOKMARK"}, marked
        assert {e["object"]["metadata"]["resourceVersion"] for e in marked} == {late}
        assert marked[0]["object"]["kind"] == "Quiet"
    finally:
        await apiserver.request(
            "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.{group}")


async def test_partial_object_metadata_on_get_list_and_watch(apiserver: Cluster,
                                                             configmaps: str) -> None:
    """What metadata informers ask for: the metadata alone, as PartialObjectMetadata."""
    made = await apiserver.request("POST", configmaps, json=configmap(
        "a", {"big": "x" * 1000}, labels={"app": "x"}))
    one = {"Accept": PARTIAL_OBJECT_METADATA}
    many = {"Accept": PARTIAL_OBJECT_METADATA_LIST}
    got = await apiserver.request("GET", f"{configmaps}/a", headers=one)
    assert got.status == 200, got
    assert (got.body["kind"], got.body["apiVersion"]) == ("PartialObjectMetadata",
                                                          "meta.k8s.io/v1")
    assert set(got.body) == {"kind", "apiVersion", "metadata"}
    assert got.body["metadata"]["labels"] == {"app": "x"}
    assert got.body["metadata"]["uid"] == made.body["metadata"]["uid"]
    listed = await apiserver.request("GET", configmaps, headers=many,
                                     params={"labelSelector": "app=x"})
    assert (listed.body["kind"], listed.body["apiVersion"]) == ("PartialObjectMetadataList",
                                                                "meta.k8s.io/v1")
    assert listed.body["metadata"]["resourceVersion"].isdigit()
    [item] = listed.body["items"]
    assert set(item) == {"kind", "apiVersion", "metadata"}
    assert item["kind"] == "PartialObjectMetadata" and item["metadata"]["name"] == "a"
    older = await apiserver.request("GET", configmaps, headers={
        "Accept": "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1"})
    assert older.body["apiVersion"] == "meta.k8s.io/v1beta1"
    # The object form for a list, or the list form for an object: 406, whatever follows.
    for path, accept in ((configmaps, PARTIAL_OBJECT_METADATA),
                         (f"{configmaps}/a", PARTIAL_OBJECT_METADATA_LIST)):
        refused = await apiserver.request("GET", path, headers={"Accept": accept})
        assert (refused.status, refused.body["reason"]) == (406, "NotAcceptable"), refused
        assert "you requested PartialObjectMetadata" in refused.body["message"]
    rv = made.body["metadata"]["resourceVersion"]
    async with apiserver.watch(configmaps, {"resourceVersion": rv, "timeoutSeconds": "5"},
                               headers=one) as events:
        await apiserver.request("PATCH", f"{configmaps}/a", json={"data": {"big": "y"}},
                                content_type="application/merge-patch+json")
        event = await anext(events)
    assert event["type"] == "MODIFIED"
    assert set(event["object"]) == {"kind", "apiVersion", "metadata"}
    assert event["object"]["kind"] == "PartialObjectMetadata"


async def test_large_answers_are_gzipped_for_a_client_that_accepts_it(
        apiserver: Cluster, configmaps: str) -> None:
    """Over 128 KiB kube-apiserver gzips (APIResponseCompression); never a small answer,
    never for a client that does not accept gzip. (aiohttp asks for it and inflates.)"""
    for i in range(40):  # 40 x 4 KiB: a list of about 160 KiB
        await apiserver.request("POST", configmaps, json=configmap(f"big-{i}",
                                                                   {"d": "x" * 4096}))
    big = await apiserver.request("GET", configmaps, headers={"Accept-Encoding": "gzip"})
    assert big.headers.get("Content-Encoding") == "gzip"
    assert len([i for i in big.body["items"] if i["metadata"]["name"].startswith("big-")]) == 40
    plain = await apiserver.request("GET", configmaps, headers={"Accept-Encoding": "identity"})
    assert "Content-Encoding" not in plain.headers
    small = await apiserver.request("GET", f"{configmaps}/big-0",
                                    headers={"Accept-Encoding": "gzip"})
    assert "Content-Encoding" not in small.headers
