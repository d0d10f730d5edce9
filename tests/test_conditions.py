"""Status conditions: one per type, transition time moved by status changes only."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from reconcilekit import Client, Resource
from reconcilekit.conditions import (
    find_status_condition,
    is_status_condition_false,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)
from reconcilekit.testing import Cluster

T0 = datetime.datetime(2026, 11, 25, 10, 0, 0, tzinfo=datetime.UTC)
T1 = T0 + datetime.timedelta(minutes=5)


def bound(status: str, reason: str = "PodBound", **more: Any) -> dict[str, Any]:
    return {"type": "Bound", "status": status, "reason": reason, **more}


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    conditions: list[dict[str, Any]] = []
    assert set_status_condition(conditions, bound("False", "NoPod"), now=T0)
    assert conditions == [{"type": "Bound", "status": "False", "reason": "NoPod",
                           "message": "", "lastTransitionTime": "2026-11-25T10:00:00Z"}]
    # Same status, new reason and generation: changed, but still False since T0.
    assert set_status_condition(conditions, bound("False", "Waiting", observedGeneration=2),
                                now=T1)
    assert conditions[0]["lastTransitionTime"] == "2026-11-25T10:00:00Z"
    assert (conditions[0]["reason"], conditions[0]["observedGeneration"]) == ("Waiting", 2)
    assert not set_status_condition(conditions, bound("False", "Waiting",
                                                      observedGeneration=2), now=T1)
    assert set_status_condition(conditions, bound("True", message="cn-7"), now=T1)
    assert conditions[0]["lastTransitionTime"] == "2026-11-25T10:05:00Z"
    assert "observedGeneration" not in conditions[0]  # replaced as a whole, as in Go
    assert is_status_condition_true(conditions, "Bound")
    assert not is_status_condition_false(conditions, "Bound")


def test_one_condition_per_type_in_the_order_they_came() -> None:
    conditions: list[dict[str, Any]] = []
    set_status_condition(conditions, {"type": "Ready", "status": "Unknown", "reason": "Init"})
    set_status_condition(conditions, bound("True"))
    set_status_condition(conditions, {"type": "Ready", "status": "True", "reason": "Done"})
    assert [c["type"] for c in conditions] == ["Ready", "Bound"]
    found = find_status_condition(conditions, "Ready")
    assert found is not None and found["status"] == "True"
    assert find_status_condition(None, "Ready") is None
    assert remove_status_condition(conditions, "Ready")
    assert not remove_status_condition(conditions, "Ready")
    assert [c["type"] for c in conditions] == ["Bound"]
    assert not is_status_condition_true(conditions, "Ready")


@pytest.mark.parametrize(("condition", "names"), [
    ({"type": "", "status": "True", "reason": "R"}, "condition type ''"),
    ({"type": "has space", "status": "True", "reason": "R"}, "not a qualified name"),
    ({"type": "Bound", "status": "true", "reason": "R"}, "status must be one of"),
    ({"type": "Bound", "status": "True"}, "reason None must be CamelCase"),
    ({"type": "Bound", "status": "True", "reason": "not-camel"}, "reason 'not-camel'"),
    ({"type": "Bound", "status": "True", "reason": "R", "message": "x" * 40_000},
     "at most 32768"),
    ({"type": "Bound", "status": "True", "reason": "R", "observedGeneration": -1},
     "observedGeneration must be an integer >= 0"),
])
def test_a_condition_kube_apiserver_would_refuse_is_refused_first(
        condition: dict[str, Any], names: str) -> None:
    conditions: list[dict[str, Any]] = []
    with pytest.raises(ValueError, match=names.replace("(", r"\(")):
        set_status_condition(conditions, condition)
    assert conditions == []


WIDGETS = Resource("conditions.test.reconcilekit.dev", "v1", "Widget", "widgets")


async def test_kube_apiserver_accepts_what_the_helpers_write(apiserver: Cluster,
                                                              client: Client) -> None:
    """The conditions written here pass a CRD schema holding metav1.Condition's own
    validation (as kubebuilder generates it), on both backends."""
    condition_schema = {
        "type": "object", "required": ["type", "status", "lastTransitionTime", "reason",
                                       "message"],
        "properties": {
            "type": {"type": "string", "maxLength": 316, "pattern": (
                r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
            "reason": {"type": "string", "maxLength": 1024, "minLength": 1,
                       "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"},
            "message": {"type": "string", "maxLength": 32768}}}
    await apiserver.install_crd({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.conditions.test.reconcilekit.dev"},
        "spec": {"group": "conditions.test.reconcilekit.dev", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "status": {"type": "object", "properties": {
                                       "conditions": {"type": "array",
                                                      "items": condition_schema}}}}}}}]}})
    ns = apiserver.namespace
    made = await client.create(WIDGETS, {"metadata": {"name": "w"}}, ns)
    conditions: list[dict[str, Any]] = []
    set_status_condition(conditions, bound("True", message="bound to cn-7",
                                           observedGeneration=made["metadata"]["generation"]))
    written = await client.patch_status(WIDGETS, "w", {"status": {"conditions": conditions}},
                                        ns)
    assert is_status_condition_true(written["status"]["conditions"], "Bound")
    assert written["status"]["conditions"] == conditions
