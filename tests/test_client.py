"""Client: every verb on built-in and custom resources, typed errors, retries, own writes.

Tests talk to the ``apiserver`` fixture, so they also run against a real
cluster (RECONCILEKIT_TEST_KUBECONFIG); fault-injection tests skip there.
Backoff sleeps go through a clock that records what was asked and returns at
once: the HTTP is real, the waiting is not.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import logging
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from reconcilekit import (
    AlreadyExists,
    APIConnectionError,
    APITimeoutError,
    BadRequest,
    Client,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    Invalid,
    MethodNotAllowed,
    NotFound,
    RequestRecord,
    Resource,
    RetryPolicy,
    ServerError,
    TooManyRequests,
    Unauthorized,
    UnsupportedMediaType,
    WriteRecord,
)
from reconcilekit._client.transport import request_labels
from reconcilekit.kinds import CONFIG_MAPS, LEASES, PODS
from reconcilekit.lowlevel import error_from_status
from reconcilekit.testing import Cluster, TCPProxy

GIZMOS = Resource("client.reconcilekit.dev", "v1", "Gizmo", "gizmos")
GIZMO_CLASSES = Resource("client.reconcilekit.dev", "v1", "GizmoClass", "gizmoclasses",
                         namespaced=False)


def _crd(plural: str, kind: str, scope: str, status: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1", "served": True, "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object",
                                       "x-kubernetes-preserve-unknown-fields": True}}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.client.reconcilekit.dev"},
            "spec": {"group": "client.reconcilekit.dev", "scope": scope,
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind},
                     "versions": [version]}}


class RecordingClock:
    """A Clock whose ``sleep`` returns at once, moving time on and recording the request."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0 + self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(seconds, 0.0)
        await anyio.lowlevel.checkpoint()


@pytest.fixture
def clock() -> RecordingClock:
    return RecordingClock()


@pytest.fixture
async def client(apiserver: Cluster, clock: RecordingClock) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration, clock=clock,
                      retry=RetryPolicy(jitter=0.0)) as c:
        yield c


@pytest.fixture
async def gizmos(apiserver: Cluster) -> Resource:
    await apiserver.install_crd(_crd("gizmos", "Gizmo", "Namespaced", status=True))
    return GIZMOS


@pytest.fixture
async def gizmo_classes(apiserver: Cluster) -> Resource:
    await apiserver.install_crd(_crd("gizmoclasses", "GizmoClass", "Cluster", status=False))
    return GIZMO_CLASSES


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


# -- verbs ------------------------------------------------------------------------------------


async def test_configmap_create_get_update_patch_delete(client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    created = await client.create(CONFIG_MAPS, cm("a", x="1"), ns)
    assert created["metadata"]["namespace"] == ns and created["data"] == {"x": "1"}
    got = await client.get(CONFIG_MAPS, "a", ns)
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    got["data"]["x"] = "2"
    updated = await client.update(CONFIG_MAPS, got)
    assert updated["data"] == {"x": "2"} and rv(updated) > rv(created)
    merged = await client.patch(CONFIG_MAPS, "a", {"data": {"y": "3"}}, ns)
    assert merged["data"] == {"x": "2", "y": "3"}
    jsoned = await client.patch(CONFIG_MAPS, "a", [{"op": "remove", "path": "/data/x"}], ns,
                                type="json")
    assert jsoned["data"] == {"y": "3"}
    strategic = await client.patch(CONFIG_MAPS, "a", {"metadata": {"labels": {"l": "v"}}}, ns,
                                   type="strategic")
    assert strategic["metadata"]["labels"] == {"l": "v"}
    applied = await client.patch(CONFIG_MAPS, "a", {"metadata": {"name": "a"}, "data": {"z": "4"}},
                                 ns, type="apply", field_manager="test-apply", force=True)
    assert applied["data"]["z"] == "4"
    await client.delete(CONFIG_MAPS, "a", ns)
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAPS, "a", ns)


async def test_create_fills_in_api_version_and_kind_and_takes_the_namespace_from_metadata(
        client: Client, apiserver: Cluster) -> None:
    body = {"metadata": {"name": "bare", "namespace": apiserver.namespace}, "data": {"k": "v"}}
    created = await client.create(CONFIG_MAPS, body)
    assert created["kind"] == "ConfigMap" and "apiVersion" not in body


async def test_pod_delete_answers_with_the_object(client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    pod = {"metadata": {"name": "p"},
           "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
    created = await client.create(PODS, pod, ns)
    answer = await client.delete(PODS, "p", ns, uid=created["metadata"]["uid"],
                                 grace_period_seconds=0)
    assert answer["kind"] == "Pod" and answer["metadata"]["name"] == "p"


async def test_custom_resource_every_verb(client: Client, apiserver: Cluster,
                                          gizmos: Resource) -> None:
    ns = apiserver.namespace
    created = await client.create(gizmos, {"metadata": {"name": "g"}, "spec": {"size": 1}}, ns)
    assert created["apiVersion"] == "client.reconcilekit.dev/v1" and created["kind"] == "Gizmo"
    listed = await client.list(gizmos, ns)
    assert [i["metadata"]["name"] for i in listed["items"]] == ["g"]
    created["spec"]["size"] = 2
    updated = await client.update(gizmos, created)
    merged = await client.patch(gizmos, "g", {"spec": {"color": "red"}}, ns)
    assert merged["spec"] == {"size": 2, "color": "red"}
    jsoned = await client.patch(gizmos, "g", [{"op": "replace", "path": "/spec/size",
                                               "value": 3}], ns, type="json")
    applied = await client.patch(gizmos, "g", {"metadata": {"name": "g"},
                                               "spec": {"shape": "round"}},
                                 ns, type="apply", field_manager="test-apply")
    assert applied["spec"]["shape"] == "round"
    assert rv(created) < rv(updated) < rv(merged) < rv(jsoned) < rv(applied)
    with pytest.raises(UnsupportedMediaType) as info:
        await client.patch(gizmos, "g", {"spec": {"size": 4}}, ns, type="strategic")
    assert info.value.status == 415
    applied["status"] = {"phase": "Ready"}
    status = await client.update_status(gizmos, applied)
    assert status["status"] == {"phase": "Ready"} and status["spec"] == applied["spec"]
    patched = await client.patch_status(gizmos, "g", {"status": {"count": 1}}, ns)
    assert patched["status"] == {"phase": "Ready", "count": 1}
    assert (await client.get_status(gizmos, "g", ns))["status"]["count"] == 1
    ignored = await client.patch_status(gizmos, "g", {"spec": {"size": 99}}, ns)
    assert ignored["spec"]["size"] == 3  # the status subresource ignores spec
    await client.delete(gizmos, "g", ns)
    with pytest.raises(NotFound, match=r'gizmos\.client\.reconcilekit\.dev "g" not found'):
        await client.get(gizmos, "g", ns)


async def test_cluster_scoped_custom_resource(client: Client, gizmo_classes: Resource) -> None:
    created = await client.create(gizmo_classes, {"metadata": {"name": "rk-fast"}})
    try:
        assert "namespace" not in created["metadata"]
        assert (await client.get(gizmo_classes, "rk-fast"))["metadata"]["name"] == "rk-fast"
        names = [i["metadata"]["name"] async for i in client.iter_list(gizmo_classes)]
        assert "rk-fast" in names
        assert client.last_written_rv(gizmo_classes, None, "rk-fast") == (
            created["metadata"]["resourceVersion"])
    finally:
        await client.delete(gizmo_classes, "rk-fast")


async def test_list_with_selectors(client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for name, tier in (("web", "front"), ("db", "back"), ("cache", "back")):
        await client.create(CONFIG_MAPS, {**cm(name), "metadata": {
            "name": name, "labels": {"tier": tier}}}, ns)

    async def names(**selectors: Any) -> list[str]:
        listed = await client.list(CONFIG_MAPS, ns, **selectors)
        return sorted(i["metadata"]["name"] for i in listed["items"])

    assert await names(label_selector="tier=back") == ["cache", "db"]
    assert await names(label_selector={"tier": "front"}) == ["web"]
    assert await names(label_selector="tier in (back),tier!=back") == []
    assert await names(field_selector={"metadata.name": "db"}) == ["db"]
    with pytest.raises(BadRequest):
        await client.list(CONFIG_MAPS, ns, label_selector="tier in (")


async def test_pagination_follows_continue_tokens(client: Client, apiserver: Cluster) -> None:
    ns, mine = apiserver.namespace, "paged=yes"  # a real namespace holds kube-root-ca.crt too
    for i in range(5):
        await client.create(CONFIG_MAPS, {**cm(f"c{i}"), "metadata": {
            "name": f"c{i}", "labels": {"paged": "yes"}}}, ns)
    first = await client.list(CONFIG_MAPS, ns, limit=2, label_selector=mine)
    assert len(first["items"]) == 2 and first["metadata"]["continue"]
    second = await client.list(CONFIG_MAPS, ns, limit=2, label_selector=mine,
                               continue_=first["metadata"]["continue"])
    assert {i["metadata"]["name"] for i in first["items"]}.isdisjoint(
        i["metadata"]["name"] for i in second["items"])

    before = client.statistics().requests.get(("list", "configmaps"), 0)
    everything = await client.list_all(CONFIG_MAPS, ns, limit=2, label_selector=mine)
    assert client.statistics().requests[("list", "configmaps")] - before == 3
    assert sorted(i["metadata"]["name"] for i in everything["items"]) == [
        f"c{i}" for i in range(5)]
    assert everything["metadata"]["resourceVersion"] and "continue" not in everything["metadata"]
    assert all(i["kind"] == "ConfigMap" and i["apiVersion"] == "v1" for i in everything["items"])
    assert len([i async for i in client.iter_list(CONFIG_MAPS, ns, limit=2,
                                                  label_selector=mine)]) == 5


async def test_a_paged_list_is_one_snapshot(client: Client, apiserver: Cluster) -> None:
    """Pages after the first show the objects as they were when it was read: one
    deleted, one changed and one created since do not change what the list says."""
    ns = apiserver.namespace
    for i in range(4):
        await client.create(CONFIG_MAPS, cm(f"c{i}", v="1"), ns)
    first = await client.list(CONFIG_MAPS, ns, limit=2)
    await client.delete(CONFIG_MAPS, "c3", ns)
    await client.patch(CONFIG_MAPS, "c2", {"data": {"v": "2"}}, ns)
    await client.create(CONFIG_MAPS, cm("c4"), ns)
    items, token = list(first["items"]), first["metadata"]["continue"]
    while token:
        page = await client.list(CONFIG_MAPS, ns, limit=2, continue_=token)
        assert page["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
        items.extend(page["items"])
        token = page["metadata"].get("continue")
    seen = {i["metadata"]["name"]: (i.get("data") or {}).get("v") for i in items}
    assert seen == {"c0": "1", "c1": "1", "c2": "1", "c3": "1", "kube-root-ca.crt": None}


@pytest.mark.in_process_only
async def test_list_all_starts_over_when_the_continue_token_expires(
        client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for i in range(4):
        await client.create(CONFIG_MAPS, dict(cm(f"c{i}"), metadata={
            "name": f"c{i}", "labels": {"page": "me"}}), ns)
    lists: list[RequestRecord] = []

    def expire_after_first_page(record: RequestRecord) -> None:
        if record.verb == "list":
            lists.append(record)
            if len(lists) == 1:
                apiserver.faults.fail_next(1, status=410, verb="list")

    client.add_request_observer(expire_after_first_page)
    everything = await client.list_all(CONFIG_MAPS, ns, limit=2, label_selector="page=me")
    assert sorted(i["metadata"]["name"] for i in everything["items"]) == [
        f"c{i}" for i in range(4)]
    # the restarted list's second page is full and kube-root-ca.crt follows it, so a
    # third, empty page is asked for (as kube-apiserver pages a filtered list)
    assert [r.status for r in lists] == [200, 410, 200, 200, 200]


@pytest.mark.in_process_only
async def test_list_restarts_are_bounded_and_iter_list_does_not_restart(
        client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for i in range(3):
        await client.create(CONFIG_MAPS, cm(f"c{i}"), ns)

    def expire_every_continue(record: RequestRecord) -> None:
        if record.verb == "list" and record.status == 200:
            apiserver.faults.fail_next(1, status=410, verb="list")

    client.add_request_observer(expire_every_continue)
    with pytest.raises(Gone):
        await client.list_all(CONFIG_MAPS, ns, limit=2)
    assert client.statistics().requests[("list", "configmaps")] == 8  # 4 x (page, 410)
    apiserver.faults.clear()
    seen = []
    with pytest.raises(Gone):
        async for item in client.iter_list(CONFIG_MAPS, ns, limit=2):
            seen.append(item["metadata"]["name"])
    assert seen == ["c0", "c1"]


async def test_delete_collection_deletes_what_matches(client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    for name, keep in (("a", "no"), ("b", "no"), ("c", "yes")):
        await client.create(CONFIG_MAPS, {**cm(name), "metadata": {
            "name": name, "labels": {"keep": keep}}}, ns)
    deleted = await client.delete_collection(CONFIG_MAPS, ns, label_selector="keep=no")
    assert sorted(i["metadata"]["name"] for i in deleted["items"]) == ["a", "b"]
    remaining = await client.list(CONFIG_MAPS, ns, label_selector="keep")
    assert [i["metadata"]["name"] for i in remaining["items"]] == ["c"]


async def test_low_level_request_and_stream(client: Client, apiserver: Cluster) -> None:
    version = await client.request("GET", "/version")
    assert version["major"] and version["gitVersion"]
    path = CONFIG_MAPS.path(apiserver.namespace)
    start = await client.list(CONFIG_MAPS, apiserver.namespace)
    response = await client.open_stream(path, {
        "watch": True, "resourceVersion": start["metadata"]["resourceVersion"],
        "timeoutSeconds": 30}, inactivity_timeout=30)
    async with response:
        await client.create(CONFIG_MAPS, cm("watched"), apiserver.namespace)
        line = await response.content.readline()
    assert b'"ADDED"' in line and b'"watched"' in line
    assert client.statistics().requests[("watch", "configmaps")] == 1
    with pytest.raises(NotFound):
        await client.open_stream("/api/v1/namespaces/default/nonsense", {"watch": True})


@pytest.mark.in_process_only
async def test_an_expired_watch_reports_an_in_band_status(client: Client,
                                                          apiserver: Cluster) -> None:
    ns = apiserver.namespace
    old = await client.create(CONFIG_MAPS, cm("a"), ns)
    await client.create(CONFIG_MAPS, cm("b"), ns)
    apiserver.faults.compact()
    response = await client.open_stream(CONFIG_MAPS.path(ns), {
        "watch": True, "resourceVersion": old["metadata"]["resourceVersion"]})
    async with response:
        import orjson

        event = orjson.loads(await response.content.readline())
    assert event["type"] == "ERROR"
    err = error_from_status(event["object"])
    assert isinstance(err, Expired) and isinstance(err, Gone) and err.status == 410


def test_request_labels_follow_kube_apiserver_verbs() -> None:
    assert request_labels("GET", "/api/v1/namespaces/ns/pods/p") == ("get", "pods")
    assert request_labels("GET", "/api/v1/namespaces/ns/pods") == ("list", "pods")
    assert request_labels("GET", "/api/v1/pods", {"watch": "true"}) == ("watch", "pods")
    assert request_labels("GET", "/api/v1/namespaces/ns") == ("get", "namespaces")
    assert request_labels("PUT", "/api/v1/namespaces/ns/finalize") == (
        "update", "namespaces/finalize")
    assert request_labels("PATCH", "/apis/g.io/v1/namespaces/ns/ws/w/status") == (
        "patch", "ws.g.io/status")
    assert request_labels("DELETE", "/apis/g.io/v1/things") == ("deletecollection", "things.g.io")
    assert request_labels("POST", "/apis/g.io/v1/things") == ("create", "things.g.io")
    assert request_labels("GET", "/version") == ("get", "/version")


async def test_arguments_that_cannot_make_a_request_raise_value_error(client: Client) -> None:
    with pytest.raises(ValueError, match="configmaps is namespaced"):
        await client.get(CONFIG_MAPS, "a")
    with pytest.raises(ValueError, match="invalid object name"):
        await client.get(CONFIG_MAPS, "a/b", "ns")
    with pytest.raises(ValueError, match="field_manager"):
        await client.patch(CONFIG_MAPS, "a", {}, "ns", type="apply")
    with pytest.raises(ValueError, match="force"):
        await client.patch(CONFIG_MAPS, "a", {}, "ns", force=True)
    with pytest.raises(ValueError, match="unknown patch type"):
        await client.patch(CONFIG_MAPS, "a", {}, "ns", type="yaml")
    with pytest.raises(ValueError, match=r"no metadata\.namespace"):
        await client.update(CONFIG_MAPS, cm("a"))
    with pytest.raises(ValueError, match="does not match"):
        await client.create(CONFIG_MAPS, {**cm("a"), "metadata": {"name": "a", "namespace": "x"}},
                            "y")
    assert client.statistics().total_requests == 0


# -- typed errors -----------------------------------------------------------------------------


async def test_typed_errors_name_the_problem(client: Client, apiserver: Cluster) -> None:
    ns = apiserver.namespace
    with pytest.raises(NotFound) as missing:
        await client.get(CONFIG_MAPS, "missing", ns)
    assert str(missing.value) == '404 NotFound: configmaps "missing" not found'
    assert missing.value.details["name"] == "missing"
    first = await client.create(CONFIG_MAPS, cm("a"), ns)
    with pytest.raises(AlreadyExists, match='configmaps "a" already exists'):
        await client.create(CONFIG_MAPS, cm("a"), ns)
    await client.patch(CONFIG_MAPS, "a", {"data": {"changed": "yes"}}, ns)
    with pytest.raises(Conflict, match="the object has been modified") as stale:
        await client.update(CONFIG_MAPS, first)
    assert stale.value.reason == "Conflict" and not isinstance(stale.value, AlreadyExists)
    with pytest.raises(Conflict, match="the ResourceVersion in the precondition"):
        await client.delete(CONFIG_MAPS, "a", ns, resource_version=first["metadata"][
            "resourceVersion"])
    with pytest.raises(Invalid) as invalid:
        await client.create(CONFIG_MAPS, cm("Not_Valid"), ns)
    assert invalid.value.causes and invalid.value.causes[0]["field"] == "metadata.name"
    with pytest.raises(MethodNotAllowed):
        await client.request("POST", CONFIG_MAPS.path(ns, "a"), body=cm("a"))


@pytest.mark.in_process_only
async def test_anonymous_requests_are_forbidden(apiserver: Cluster) -> None:
    from kubernetes_asyncio.client import Configuration

    cfg = Configuration(host=apiserver.configuration.host)  # no token, the server's CA
    cfg.ssl_ca_cert = apiserver.configuration.ssl_ca_cert
    async with Client(cfg) as anonymous:
        with pytest.raises(Forbidden, match='User "system:anonymous" cannot get'):
            await anonymous.get(CONFIG_MAPS, "a", apiserver.namespace)


async def test_a_wrong_token_is_unauthorized(apiserver: Cluster) -> None:
    cfg = copy.copy(apiserver.configuration)
    cfg.cert_file = cfg.key_file = None
    cfg.refresh_api_key_hook = None
    cfg.api_key = {"BearerToken": "not-a-valid-token"}
    cfg.api_key_prefix = {"BearerToken": "Bearer"}
    async with Client(cfg, retry=RetryPolicy(max_retries=0)) as wrong:
        with pytest.raises(Unauthorized) as info:
            await wrong.get(CONFIG_MAPS, "a", apiserver.namespace)
    assert info.value.status == 401


# -- retries ----------------------------------------------------------------------------------


async def test_get_is_retried_on_500_with_backoff_and_counted(
        client: Client, apiserver: Cluster, clock: RecordingClock) -> None:
    await client.create(CONFIG_MAPS, cm("a"), apiserver.namespace)
    apiserver.faults.fail_next(2, status=500, verb="get")
    got = await client.get(CONFIG_MAPS, "a", apiserver.namespace)
    assert got["metadata"]["name"] == "a"
    assert clock.sleeps == [0.2, 0.4]
    stats = client.statistics()
    assert stats.retries == {("get", "configmaps"): 2}
    assert stats.requests[("get", "configmaps")] == 3 and stats.errors[("get", "configmaps")] == 2


async def test_429_is_retried_for_writes_after_retry_after(
        client: Client, apiserver: Cluster, clock: RecordingClock) -> None:
    apiserver.faults.fail_next(1, status=429, verb="create", retry_after=7)
    await client.create(CONFIG_MAPS, cm("a"), apiserver.namespace)
    assert clock.sleeps == [7.0]
    assert client.statistics().retries == {("create", "configmaps"): 1}


async def test_a_retry_after_beyond_the_limit_is_raised_not_waited(
        apiserver: Cluster, clock: RecordingClock) -> None:
    apiserver.faults.fail_next(1, status=429, verb="list", retry_after=600)
    async with Client(apiserver.configuration, clock=clock) as client:
        with pytest.raises(TooManyRequests) as info:
            await client.list(CONFIG_MAPS, apiserver.namespace)
    assert info.value.retry_after == 600 and clock.sleeps == []


@pytest.mark.parametrize(("verb", "status"), [("create", 500), ("update", 504),
                                              ("patch", 503), ("delete", 500)])
async def test_writes_are_not_retried_on_server_errors(
        client: Client, apiserver: Cluster, clock: RecordingClock, verb: str,
        status: int) -> None:
    ns = apiserver.namespace
    obj = await client.create(CONFIG_MAPS, cm("a"), ns)
    apiserver.faults.fail_next(1, status=status, verb=verb)
    with pytest.raises(ServerError) as info:
        match verb:
            case "create":
                await client.create(CONFIG_MAPS, cm("b"), ns)
            case "update":
                await client.update(CONFIG_MAPS, obj)
            case "patch":
                await client.patch(CONFIG_MAPS, "a", {"data": {"k": "v"}}, ns)
            case _:
                await client.delete(CONFIG_MAPS, "a", ns)
    assert info.value.status == status
    assert clock.sleeps == [] and client.statistics().total_retries == 0
    assert apiserver.require_server().request_count(verb, "configmaps") == (
        2 if verb == "create" else 1)


async def test_retries_are_bounded(apiserver: Cluster, clock: RecordingClock) -> None:
    apiserver.faults.fail_next(10, status=503, verb="get")
    policy = RetryPolicy(max_retries=3, initial_delay=1.0, max_delay=3.0, jitter=0.5)
    async with Client(apiserver.configuration, clock=clock, retry=policy) as client:
        with pytest.raises(ServerError) as info:
            await client.get(CONFIG_MAPS, "a", apiserver.namespace)
    assert info.value.reason == "ServiceUnavailable"
    assert "(after 3 retries)" in info.value.__notes__
    assert len(clock.sleeps) == 3
    for got, base in zip(clock.sleeps, [1.0, 2.0, 3.0], strict=True):
        assert base <= got <= base * 1.5


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


async def test_connection_refused_is_retried_for_every_verb(clock: RecordingClock) -> None:
    from kubernetes_asyncio.client import Configuration

    cfg = Configuration(host=f"http://127.0.0.1:{_closed_port()}")
    async with Client(cfg, clock=clock, retry=RetryPolicy(max_retries=2, jitter=0)) as client:
        with pytest.raises(APIConnectionError, match="cannot connect") as info:
            await client.create(CONFIG_MAPS, cm("a"), "default")
    assert info.value.sent is False
    assert clock.sleeps == [0.2, 0.4]


async def test_a_timed_out_write_is_not_retried_and_a_read_is(
        apiserver: Cluster, clock: RecordingClock) -> None:
    # A timeout of a microsecond expires before any answer can arrive: no real waiting.
    async with Client(apiserver.configuration, clock=clock, timeout=1e-6,
                      retry=RetryPolicy(max_retries=2, jitter=0)) as client:
        with pytest.raises(APITimeoutError) as write:
            await client.create(CONFIG_MAPS, cm("a"), apiserver.namespace)
        assert clock.sleeps == [] and write.value.sent
        with pytest.raises(TimeoutError):
            await client.get(CONFIG_MAPS, "a", apiserver.namespace)
        assert clock.sleeps == [0.2, 0.4]
        assert client.statistics().retries == {("get", "configmaps"): 2}


def test_retry_policy_delays() -> None:
    policy = RetryPolicy(max_retries=4, initial_delay=0.5, multiplier=3, max_delay=5,
                         jitter=0.1)
    throttled = TooManyRequests(retry_after=2)
    assert policy.delay("POST", throttled, 0, 0.0) == 2.0
    assert policy.delay("POST", throttled, 0, 0.5) == pytest.approx(2.1)
    assert [policy.delay("GET", ServerError(), n, 0.0) for n in range(5)] == [
        0.5, 1.5, 4.5, 5.0, None]
    assert policy.delay("PUT", ServerError(), 0, 0.0) is None
    assert policy.delay("GET", NotFound(), 0, 0.0) is None
    assert policy.delay("DELETE", APIConnectionError("reset", sent=True), 0, 0.0) is None
    assert policy.delay("DELETE", APIConnectionError("refused", sent=False), 0, 0.0) == 0.5
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2)


# -- read-your-own-writes and observers -------------------------------------------------------


async def test_write_observers_see_every_write_with_its_resource_version(
        client: Client, apiserver: Cluster, gizmos: Resource) -> None:
    ns = apiserver.namespace
    records: list[WriteRecord] = []
    remove = client.add_write_observer(records.append)
    created = await client.create(gizmos, {"metadata": {"name": "g"}}, ns)
    patched = await client.patch(gizmos, "g", {"metadata": {"finalizers": ["x.io/hold"]}}, ns)
    status = await client.patch_status(gizmos, "g", {"status": {"ok": True}}, ns)
    assert client.last_written_rv(gizmos, ns, "g") == status["metadata"]["resourceVersion"]
    held = await client.delete(gizmos, "g", ns)
    assert held["metadata"]["deletionTimestamp"]
    released = await client.patch(gizmos, "g", {"metadata": {"finalizers": None}}, ns)
    with pytest.raises(NotFound):
        await client.get(gizmos, "g", ns)
    cmap = await client.create(CONFIG_MAPS, cm("c"), ns)
    await client.delete(CONFIG_MAPS, "c", ns)
    remove()
    await client.create(CONFIG_MAPS, cm("unobserved"), ns)

    assert [(r.verb, r.key.name, r.resource_version, r.deleted) for r in records] == [
        ("create", "g", created["metadata"]["resourceVersion"], False),
        ("patch", "g", patched["metadata"]["resourceVersion"], False),
        ("patch_status", "g", status["metadata"]["resourceVersion"], False),
        ("delete", "g", held["metadata"]["resourceVersion"], False),
        ("patch", "g", released["metadata"]["resourceVersion"], False),
        ("create", "c", cmap["metadata"]["resourceVersion"], False),
        ("delete", "c", None, True),
    ]
    assert records[0].uid == created["metadata"]["uid"] == records[3].uid
    assert records[-1].uid == cmap["metadata"]["uid"] and records[-1].key.namespace == ns
    assert client.last_written_rv(CONFIG_MAPS, ns, "c") is None
    assert client.last_written_rv(CONFIG_MAPS, ns, "unobserved") is not None


async def test_a_failing_observer_does_not_fail_the_write(
        client: Client, apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    def broken(record: WriteRecord) -> None:
        raise RuntimeError("observer bug")

    client.add_write_observer(broken)
    client.add_request_observer(lambda record: 1 / 0)  # type: ignore[func-returns-value]
    with caplog.at_level(logging.ERROR, logger="reconcilekit.client"):
        created = await client.create(CONFIG_MAPS, cm("a"), apiserver.namespace)
    assert created["metadata"]["name"] == "a"
    assert {r.getMessage().split(" ")[0] for r in caplog.records} == {"write", "request"}


async def test_request_observers_see_each_attempt(client: Client, apiserver: Cluster) -> None:
    records: list[RequestRecord] = []
    client.add_request_observer(records.append)
    apiserver.faults.fail_next(1, status=503, verb="list")
    await client.list(CONFIG_MAPS, apiserver.namespace)
    assert [(r.verb, r.resource, r.method, r.status, r.retried) for r in records] == [
        ("list", "configmaps", "GET", 503, True), ("list", "configmaps", "GET", 200, False)]


# -- construction -----------------------------------------------------------------------------


def _kubeconfig(apiserver: Cluster, tmp_path: Path) -> Path:
    if apiserver.server is not None:
        return apiserver.server.write_kubeconfig(tmp_path / "kubeconfig")
    assert apiserver.kubeconfig_path is not None
    return apiserver.kubeconfig_path


async def test_from_kubeconfig(apiserver: Cluster, tmp_path: Path) -> None:
    path = _kubeconfig(apiserver, tmp_path)
    async with await Client.from_kubeconfig(path) as client:
        assert (await client.list(CONFIG_MAPS, apiserver.namespace))["kind"] == "ConfigMapList"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        await Client.from_kubeconfig(tmp_path / "missing")


async def test_from_environment_reads_kubeconfig_at_call_time(
        apiserver: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(_kubeconfig(apiserver, tmp_path)))
    async with await Client.from_environment(timeout=5) as client:
        assert (await client.request("GET", "/version"))["major"]
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nothing-here"))
    with pytest.raises(FileNotFoundError, match="KUBECONFIG"):
        await Client.from_environment()


async def test_a_closed_client_refuses_requests(apiserver: Cluster) -> None:
    client = Client(apiserver.configuration)
    async with client:
        await client.list(CONFIG_MAPS, apiserver.namespace)
    with pytest.raises(RuntimeError, match="closed"):
        await client.list(CONFIG_MAPS, apiserver.namespace)
    await client.close()


class ConnectProxy:
    """An HTTP CONNECT proxy on a free local port that counts the tunnels it opens."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []
        self.url = ""
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> ConnectProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()

    async def _serve(self, reader: Any, writer: Any) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, target, _ = head.split(" ", 2)
        assert method == "CONNECT", head
        self.tunnels.append(target)
        host, port = target.rsplit(":", 1)
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: Any, dst: Any) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def test_the_proxy_comes_from_the_configuration_or_the_environment(
        apiserver: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """As client-go: HTTPS_PROXY is honoured unless NO_PROXY exempts the host; the
    configuration's proxy wins. TLS to the API server goes through the tunnel."""
    if not apiserver.configuration.host.startswith("https://127.0.0.1:"):
        pytest.skip("needs an API server on 127.0.0.1 over HTTPS")
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY",
                 "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    port = apiserver.configuration.host.rsplit(":", 1)[1]
    async with ConnectProxy() as from_env, ConnectProxy() as configured:
        monkeypatch.setenv("HTTPS_PROXY", from_env.url)
        async with Client(apiserver.configuration) as client:
            await client.list(CONFIG_MAPS, "default")
            await client.list(CONFIG_MAPS, "kube-system")
        assert from_env.tunnels == [f"127.0.0.1:{port}"]  # one tunnel, kept alive

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with Client(apiserver.configuration) as client:
            await client.list(CONFIG_MAPS, "default")
        assert len(from_env.tunnels) == 1

        cfg = copy.copy(apiserver.configuration)
        cfg.proxy = configured.url
        async with Client(cfg) as client:
            await client.list(CONFIG_MAPS, "default")
        assert configured.tunnels == [f"127.0.0.1:{port}"] and len(from_env.tunnels) == 1


async def test_in_flight_counts_requests_waiting_on_the_server(apiserver: Cluster) -> None:
    """``statistics().in_flight`` is the number of requests sent and not yet answered:
    one while a GET waits on a connection that carries nothing, none once it is given up."""
    async with TCPProxy(apiserver.configuration.host) as proxy:
        configuration = copy.copy(apiserver.configuration)
        configuration.host = proxy.url
        async with Client(configuration) as via_proxy:
            await via_proxy.list(CONFIG_MAPS, apiserver.namespace)  # a pooled connection
            assert via_proxy.statistics().in_flight == 0
            proxy.stall()
            async with anyio.create_task_group() as tg:
                tg.start_soon(via_proxy.list, CONFIG_MAPS, apiserver.namespace)
                while via_proxy.statistics().in_flight == 0:
                    await anyio.lowlevel.checkpoint()
                assert via_proxy.statistics().in_flight == 1
                tg.cancel_scope.cancel()
            assert via_proxy.statistics().in_flight == 0


async def test_lease_requests_never_wait_for_a_connection_behind_the_work(
        apiserver: Cluster) -> None:
    """With every pooled connection held (here by two watches, pool of 2), a Lease request
    still goes through: Leases have connections of their own. Before, it queued for the
    pool, and under latency a leader's renewals waited behind the work the Lease guards
    (a Lease lost to 1 s of latency on kube-apiserver, docs/reliability.md)."""
    configuration = copy.copy(apiserver.configuration)
    configuration.connection_pool_maxsize = 2
    ns = apiserver.namespace
    async with Client(configuration, timeout=60) as client:
        streams = [await client.open_stream(CONFIG_MAPS.path(ns), {"watch": True})
                   for _ in range(2)]
        try:
            with anyio.fail_after(30):  # it waited for a watch to end before: 60 s, an error
                with pytest.raises(NotFound):
                    await client.get(LEASES, "nobody", ns)
                with anyio.move_on_after(0.5) as waited:  # the pool is full indeed
                    await client.get(CONFIG_MAPS, "nothing", ns)
            assert waited.cancelled_caught
        finally:
            for stream in streams:
                stream.release()


async def test_watches_of_leases_leave_the_lease_connections_to_requests(
        apiserver: Cluster) -> None:
    """Lease connections are for requests: watches of Leases (as a controller of Leases
    opens) go over the pool, so even two of them leave a renewal a connection."""
    ns = apiserver.namespace
    async with Client(apiserver.configuration, timeout=60) as client:
        streams = [await client.open_stream(LEASES.path(ns), {"watch": True})
                   for _ in range(2)]
        try:
            with anyio.fail_after(30):  # both Lease connections held: 60 s, an error
                with pytest.raises(NotFound):
                    await client.get(LEASES, "nobody", ns)
        finally:
            for stream in streams:
                stream.release()


async def test_a_client_closed_in_a_cancelled_scope_closes_its_lease_connections_too(
        apiserver: Cluster) -> None:
    """A manager killed by cancellation closes its client from a cancelled scope: both
    sessions (the Leases' and the rest's) are closed all the same (the second was left
    open, an unclosed-session warning, when the first close raised the cancellation)."""
    ns = apiserver.namespace
    client = Client(apiserver.configuration)
    with pytest.raises(NotFound):
        await client.get(CONFIG_MAPS, "nothing", ns)
    with pytest.raises(NotFound):
        await client.get(LEASES, "nobody", ns)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await client.close()
    gc.collect()  # an open session would warn here (an error under filterwarnings)
    with pytest.raises(RuntimeError, match="closed"):
        await client.get(CONFIG_MAPS, "nothing", ns)


_PAUSED_DECODE_CHECK = """
import gc

import orjson

from reconcilekit._client.transport import _QUIET_DECODE_BYTES, _loads

page = orjson.dumps({"items": [{"metadata": {"name": f"o{i}"}, "data": {"k": "v"}}
                               for i in range(20_000)]})
assert len(page) > _QUIET_DECODE_BYTES
starts = []


def count(phase, info):
    if phase == "start":
        starts.append(info["generation"])


gc.collect()
gc.callbacks.append(count)
try:
    decoded = _loads(page)  # 60,000 dicts: some 85 collections with the collector on
    during = len(starts)  # at most the one deferred until the collector is on again
    orjson.loads(page)
    unpaused = len(starts) - during
finally:
    gc.callbacks.remove(count)
assert during <= 1 and unpaused > 10, (during, unpaused)
assert len(decoded["items"]) == 20_000 and gc.isenabled()
try:
    _loads(page[:-1])
except orjson.JSONDecodeError:
    pass
else:
    raise AssertionError("a truncated page decoded")
assert gc.isenabled()
gc.disable()
_loads(page)
assert not gc.isenabled()
print("ok")
"""


def test_a_large_answer_is_decoded_with_the_collector_paused() -> None:
    """A list page's thousands of containers start no garbage collection while they are
    decoded (each would walk them all again); the collector is on again afterwards, also
    when the answer is not JSON, and one that was off stays off.

    The collector is the process's: the check runs in an interpreter of its own, where
    no other thread (a server a test left running, say) pauses or restarts it meanwhile.
    """
    done = subprocess.run([sys.executable, "-c", _PAUSED_DECODE_CHECK], capture_output=True,
                          text=True, check=False, timeout=120)
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
