"""Pod priority as kube-apiserver v1.28 admits it: PriorityClasses and the Priority plugin.

Every expected answer, message included, is kube-apiserver's to the same
request. PriorityClasses are cluster-scoped: each test names its own after
its namespace and deletes them, the global default one at once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from reconcilekit.testing import Cluster, eventually

CLASSES = "/apis/scheduling.k8s.io/v1/priorityclasses"


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "app", "image": "nginx"}], **spec}}


def priority_class(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": name}, **fields}


@pytest.fixture
async def made(apiserver: Cluster) -> AsyncIterator[list[str]]:
    """Names of the PriorityClasses a test made, deleted when it ends."""
    names: list[str] = []
    yield names
    for name in names:
        await apiserver.request("DELETE", f"{CLASSES}/{name}")


async def _create_class(apiserver: Cluster, made: list[str], name: str, **fields: Any
                        ) -> Any:
    got = await apiserver.request("POST", CLASSES, json=priority_class(name, **fields))
    if got.status == 201:
        made.append(name)
    return got


async def _seen_by_admission(apiserver: Cluster, pods: str, want: str | None,
                             **spec: Any) -> None:
    """Wait until a dry run of a Pod with ``spec`` is given the PriorityClass ``want``:
    kube-apiserver's Priority plugin reads classes from an informer, which sees a class a
    moment after its create (or delete) is answered."""
    async def seen() -> bool:
        got = await apiserver.request("POST", pods, json=pod("probe", **spec),
                                      params={"dryRun": "All"})
        if got.status == 403 and "no PriorityClass with name" in got.body["message"]:
            return False
        assert got.status == 201, got
        return got.body["spec"].get("priorityClassName") == want
    await eventually(seen, within=30.0, interval=0.05,
                     what=f"the Priority plugin giving Pods {want or 'no class'}")


def _priority(spec: dict[str, Any]) -> tuple[Any, Any, Any]:
    return spec.get("priorityClassName"), spec.get("priority"), spec.get("preemptionPolicy")


async def test_the_system_classes_are_there_from_the_start(apiserver: Cluster) -> None:
    for name, value, description in (
            ("system-cluster-critical", 2000000000, "Used for system critical pods that must "
             "run in the cluster, but can be moved to another node if necessary."),
            ("system-node-critical", 2000001000, "Used for system critical pods that must not "
             "be moved from their current node.")):
        got = await apiserver.request("GET", f"{CLASSES}/{name}")
        assert got.status == 200, got
        body = got.body
        assert {k: v for k, v in body.items() if k != "metadata"} == {
            "kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1", "value": value,
            "description": description, "preemptionPolicy": "PreemptLowerPriority"}
        assert "labels" not in body["metadata"] and body["metadata"]["generation"] == 1
        gone = await apiserver.request("DELETE", f"{CLASSES}/{name}")
        assert (gone.status, gone.body["message"]) == (
            403, f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: this is a system '
            "priority class and cannot be deleted")


async def test_a_pod_takes_its_classs_priority_and_preemption_policy(
        apiserver: Cluster, pods: str, made: list[str]) -> None:
    low, never = f"low-{apiserver.namespace}", f"never-{apiserver.namespace}"
    got = await _create_class(apiserver, made, low, value=1000)
    assert got.status == 201, got
    assert got.body["preemptionPolicy"] == "PreemptLowerPriority"
    assert (await _create_class(apiserver, made, never, value=10,
                                preemptionPolicy="Never")).status == 201
    await _seen_by_admission(apiserver, pods, never, priorityClassName=never)  # low before it
    for name, spec, expected in (
            ("a", {"priorityClassName": low}, (low, 1000, "PreemptLowerPriority")),
            ("b", {"priorityClassName": low, "priority": 1000},
             (low, 1000, "PreemptLowerPriority")),
            ("c", {"priorityClassName": never}, (never, 10, "Never")),
            ("d", {"priorityClassName": "system-node-critical"},
             ("system-node-critical", 2000001000, "PreemptLowerPriority")),
            ("e", {}, (None, 0, "PreemptLowerPriority")),
            ("f", {"priority": 0}, (None, 0, "PreemptLowerPriority"))):
        got = await apiserver.request("POST", pods, json=pod(name, **spec))
        assert got.status == 201, (name, got)
        assert _priority(got.body["spec"]) == expected, name


async def test_a_pod_naming_an_unknown_class_or_another_priority_is_refused(
        apiserver: Cluster, pods: str, made: list[str]) -> None:
    never = f"never-{apiserver.namespace}"
    assert (await _create_class(apiserver, made, never, value=10,
                                preemptionPolicy="Never")).status == 201
    await _seen_by_admission(apiserver, pods, never, priorityClassName=never)
    computed = "priority admission controller computed"
    for name, spec, message in (
            ("x", {"priorityClassName": "nope"}, "no PriorityClass with name nope was found"),
            ("y", {"priority": 5}, "the integer value of priority (5) must not be provided in "
             f"pod spec; {computed} 0 from the given PriorityClass name"),
            ("z", {"priorityClassName": never, "priority": 7}, "the integer value of priority "
             f"(7) must not be provided in pod spec; {computed} 10 from the given "
             "PriorityClass name"),
            ("w", {"priorityClassName": never, "preemptionPolicy": "PreemptLowerPriority"},
             "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided "
             f"in pod spec; {computed} Never from the given PriorityClass name")):
        got = await apiserver.request("POST", pods, json=pod(name, **spec))
        assert (got.status, got.body["reason"], got.body["message"]) == (
            403, "Forbidden", f'pods "{name}" is forbidden: {message}'), got
        assert got.body["details"] == {"name": name, "kind": "pods"}


async def test_the_global_default_class_is_the_one_of_pods_naming_none(
        apiserver: Cluster, pods: str, made: list[str]) -> None:
    default, other = f"default-{apiserver.namespace}", f"other-{apiserver.namespace}"
    try:
        got = await _create_class(apiserver, made, default, value=50, globalDefault=True)
        assert got.status == 201, got
        await _seen_by_admission(apiserver, pods, default)
        second = await _create_class(apiserver, made, other, value=60, globalDefault=True)
        refused = (f'is forbidden: PriorityClass {default} is already marked as default. '
                   "Only one default can exist")
        assert (second.status, second.body["message"]) == (
            403, f'priorityclasses.scheduling.k8s.io "{other}" {refused}')
        assert (await _create_class(apiserver, made, other, value=60)).status == 201
        patched = await apiserver.request(
            "PATCH", f"{CLASSES}/{other}", json={"globalDefault": True},
            content_type="application/merge-patch+json")
        assert (patched.status, patched.body["message"]) == (
            403, f'priorityclasses.scheduling.k8s.io "{other}" {refused}')
        described = await apiserver.request(
            "PATCH", f"{CLASSES}/{default}", json={"description": "the default"},
            content_type="application/merge-patch+json")
        assert described.status == 200, described
        got = await apiserver.request("POST", pods, json=pod("p"))
        assert got.status == 201, got
        assert _priority(got.body["spec"]) == (default, 50, "PreemptLowerPriority")
        refused_pod = await apiserver.request("POST", pods, json=pod("q", priority=3))
        assert (refused_pod.status, refused_pod.body["message"]) == (
            403, 'pods "q" is forbidden: the integer value of priority (3) must not be provided'
            " in pod spec; priority admission controller computed 50 from the given "
            "PriorityClass name")
    finally:
        await apiserver.request("DELETE", f"{CLASSES}/{default}")
        await _seen_by_admission(apiserver, pods, None)  # gone for the tests that follow


async def test_priority_classes_are_validated(apiserver: Cluster, made: list[str]) -> None:
    name = f"top-{apiserver.namespace}"
    assert (await _create_class(apiserver, made, name, value=1000000000)).status == 201
    for spec, field, message in (
            ({"metadata": {"name": f"big-{apiserver.namespace}"}, "value": 1000000001},
             "value", "value: Forbidden: maximum allowed value of a user defined priority is "
             "1000000000"),
            ({"metadata": {"name": "system-foo"}, "value": 10}, "metadata.name",
             "metadata.name: Forbidden: priority class names with 'system-' prefix are "
             "reserved for system use only. error: system-foo is not a known system "
             "priority class"),
            ({"metadata": {"name": "system-cluster-critical"}, "value": 5}, "metadata.name",
             "metadata.name: Forbidden: priority class names with 'system-' prefix are "
             "reserved for system use only. error: value of system-cluster-critical "
             "PriorityClass must be 2000000000"),
            ({"metadata": {"name": f"odd-{apiserver.namespace}"}, "value": 1,
              "preemptionPolicy": "Sometimes"}, "preemptionPolicy",
             'preemptionPolicy: Unsupported value: "Sometimes": supported values: '
             '"PreemptLowerPriority", "Never"')):
        got = await apiserver.request("POST", CLASSES, json={
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", **spec})
        shown = spec["metadata"]["name"]
        assert (got.status, got.body["message"]) == (
            422, f'PriorityClass.scheduling.k8s.io "{shown}" is invalid: {message}'), got
        assert [c["field"] for c in got.body["details"]["causes"]] == [field]
    for change, message in (
            ({"value": 5}, "value: Forbidden: may not be changed in an update."),
            ({"preemptionPolicy": "Never"},
             'preemptionPolicy: Invalid value: "Never": field is immutable')):
        got = await apiserver.request("PATCH", f"{CLASSES}/{name}", json=change,
                                      content_type="application/merge-patch+json")
        assert (got.status, got.body["message"]) == (
            422, f'PriorityClass.scheduling.k8s.io "{name}" is invalid: {message}'), got
