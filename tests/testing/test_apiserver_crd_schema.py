"""Custom resources checked against their CRD's schema, as kube-apiserver v1.28 checks them.

Pruning (with a warning per unknown field, or 400 under
``fieldValidation=Strict``), defaulting, OpenAPI validation with
go-openapi's messages, list-type uniqueness and CEL rules
(``x-kubernetes-validations``, transition rules included). The expected
messages are kube-apiserver's answers; causes are compared as sets because
kube-apiserver lists schema errors in Go map order.
"""

from __future__ import annotations

from typing import Any

import pytest
from apiserver_helpers import PROBE_CRD, crd

from reconcilekit.testing import Cluster

NOT_CHECKED = ("<nil>", 'Invalid value: "null": some validation rules were not checked '
               "because the object was invalid; correct the existing errors to complete "
               "validation")

PLAIN_CRD = crd("Plain", {"type": "object", "properties": {"spec": {
    "type": "object", "properties": {
        "a": {"type": "integer"}, "n": {"type": "string"},
        "m": {"type": "object", "additionalProperties": {"type": "integer"}}}}}})


def probe(name: str, spec: Any, **rest: Any) -> dict[str, Any]:
    return {"apiVersion": "test.reconcilekit.dev/v1", "kind": "Probe",
            "metadata": {"name": name}, "spec": spec, **rest}


def causes(body: dict[str, Any]) -> set[tuple[str, str]]:
    return {(c["field"], c["message"]) for c in body["details"]["causes"]}


async def refused(apiserver: Cluster, method: str, path: str, obj: Any, *,
                  content_type: str | None = None) -> set[tuple[str, str]]:
    got = await apiserver.request(method, path, json=obj, content_type=content_type)
    assert got.status == 422 and got.body["reason"] == "Invalid", got
    assert got.body["details"]["kind"] == "Probe"
    assert got.body["details"]["group"] == "test.reconcilekit.dev"
    return causes(got.body)


def warnings(headers: Any) -> list[str]:
    return sorted(headers.getall("Warning", []))


async def test_a_spec_of_the_wrong_type_is_refused_and_rules_are_not_run(
        apiserver: Cluster, probes: str) -> None:
    assert await refused(apiserver, "POST", probes, probe("a", "text")) == {
        ("spec", 'Invalid value: "string": spec in body must be of type object: "string"'),
        NOT_CHECKED}
    assert await refused(apiserver, "POST", probes, probe("b", {})) == {
        ("spec.size", "Required value"), NOT_CHECKED}


async def test_every_field_error_is_named_in_go_openapis_words(apiserver: Cluster,
                                                               probes: str) -> None:
    spec = {"size": "x", "maxSize": 1.5, "mode": "no", "name": "A", "ratio": "r", "flag": 1,
            "port": [1], "tags": ["a", "a", "b"], "labels": {"a": "1", "b": 2, "c": "3"},
            "created": "yesterday"}
    assert await refused(apiserver, "POST", probes, probe("a", spec)) == {
        ("spec.size", 'Invalid value: "string": spec.size in body must be of type integer: '
                      '"string"'),
        ("spec.maxSize", 'Invalid value: "number": spec.maxSize in body must be of type '
                         'integer: "number"'),
        ("spec.mode", 'Unsupported value: "no": supported values: "fast", "slow", "bad", '
                      '"resize"'),
        ("spec.name", 'Invalid value: "A": spec.name in body should be at least 2 chars long'),
        ("spec.ratio", 'Invalid value: "string": spec.ratio in body must be of type number: '
                       '"string"'),
        ("spec.flag", 'Invalid value: "integer": spec.flag in body must be of type boolean: '
                      '"integer"'),
        ("spec.port", 'Invalid value: "array": spec.port in body must be of type '
                      'integer,string: "array"'),
        ("spec.tags", "Too many: 3: must have at most 2 items"),
        ("spec.tags[1]", 'Duplicate value: "a"'),
        ("spec.labels", "Too many: 3: must have at most 2 items"),
        ("spec.labels.b", 'Invalid value: "integer": spec.labels.b in body must be of type '
                          'string: "integer"'),
        ("spec.created", 'Invalid value: "yesterday": spec.created in body must be of type '
                         'date-time: "yesterday"'),
        NOT_CHECKED}


async def test_bounds_lengths_patterns_and_multiples(apiserver: Cluster, probes: str) -> None:
    spec = {"size": 500, "name": "ABCDEF", "ratio": 10, "even": 3, "tags": []}
    assert await refused(apiserver, "POST", probes, probe("a", spec)) == {
        ("spec.size", "Invalid value: 500: spec.size in body should be less than or equal to "
                      "100"),
        ("spec.name", "Too long: may not be longer than 5"),
        ("spec.ratio", "Invalid value: 10: spec.ratio in body should be less than 10"),
        ("spec.even", "Invalid value: 3: spec.even in body should be a multiple of 2"),
        ("spec.tags", "Invalid value: 0: spec.tags in body should have at least 1 items"),
        NOT_CHECKED}
    # no blocking error: the rules run, and say what they say
    assert await refused(apiserver, "POST", probes, probe("b", {"size": 0, "name": "Ab"})) == {
        ("spec.size", "Invalid value: 0: spec.size in body should be greater than or equal "
                      "to 1"),
        ("spec.name", "Invalid value: \"Ab\": spec.name in body should match '^[a-z]+$'")}


async def test_unknown_fields_are_pruned_with_a_warning_each(apiserver: Cluster,
                                                             probes: str) -> None:
    spec = {"size": 5, "unknown": 1, "free": {"x": {"y": 1}}, "items": [{"key": "k"}],
            "nested": {"deep": 1, "other": 2}, "port": "80", "note": None, "nullable": None,
            "maxSize": None}
    got = await apiserver.request("POST", probes, json=probe("a", spec, extra=1))
    assert got.status == 201, got
    assert warnings(got.headers) == ['299 - "unknown field \\"extra\\""',
                                     '299 - "unknown field \\"spec.nested.other\\""',
                                     '299 - "unknown field \\"spec.unknown\\""']
    assert "extra" not in got.body
    assert got.body["spec"] == {
        "size": 5, "maxSize": 50, "free": {"x": {"y": 1}}, "items": [{"key": "k", "v": "dv"}],
        "nested": {"deep": 1, "level": "info"}, "port": "80", "nullable": None}
    stored = await apiserver.request("GET", f"{probes}/a")
    assert stored.body["spec"] == got.body["spec"]


async def test_a_null_is_dropped_silently_unless_nullable(
        apiserver: Cluster) -> None:
    await apiserver.install_crd(PLAIN_CRD)
    path = f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/plains"
    got = await apiserver.request("POST", path, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Plain", "metadata": {"name": "a"},
        "spec": {"a": 2, "n": None, "m": {"k": None, "j": 1}}})
    assert got.status == 201, got
    assert warnings(got.headers) == []
    assert got.body["spec"] == {"a": 2, "m": {"j": 1}}


async def test_field_validation_strict_refuses_and_ignore_is_silent(apiserver: Cluster,
                                                                    probes: str) -> None:
    body = probe("a", {"size": 5, "zz": 1, "nested": {"q": 1}}, extra=1)
    strict = await apiserver.request("POST", probes, json=body,
                                     params={"fieldValidation": "Strict"})
    assert strict.status == 400, strict
    assert strict.body["message"] == (
        'Probe in version "v1" cannot be handled as a Probe: strict decoding error: '
        'unknown field "extra", unknown field "spec.nested.q", unknown field "spec.zz"')
    ignored = await apiserver.request("POST", probes, json=body,
                                      params={"fieldValidation": "Ignore"})
    assert ignored.status == 201 and warnings(ignored.headers) == [], ignored
    assert ignored.body["spec"] == {"size": 5, "maxSize": 50, "nested": {"level": "info"}}
    bogus = await apiserver.request("POST", probes, json=probe("b", {"size": 5}),
                                    params={"fieldValidation": "Bogus"})
    assert bogus.status == 422, bogus
    assert bogus.body["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: '
        '"Bogus": supported values: "", "Ignore", "Strict", "Warn"')


async def test_list_map_keys_are_unique(apiserver: Cluster, probes: str) -> None:
    spec = {"size": 5, "items": [{"key": "k"}, {"key": "k"}]}
    assert await refused(apiserver, "POST", probes, probe("a", spec)) == {
        ("spec.items[1]", 'Duplicate value: map[string]interface {}{"key":"k"}')}


async def test_cel_rules_give_their_message_expression_and_field_path(apiserver: Cluster,
                                                                      probes: str) -> None:
    assert await refused(apiserver, "POST", probes, probe("a", {"size": 60})) == {
        ("spec", 'Invalid value: "object": size must not exceed maxSize')}
    assert await refused(apiserver, "POST", probes, probe("b", {"size": 5, "mode": "bad"})) == {
        ("spec.mode", 'Invalid value: "object": mode bad is bad')}
    assert await refused(apiserver, "POST", probes, probe("c", {"size": 5, "name": "root"})) == {
        ("spec", "Invalid value: \"object\": failed rule: !has(self.name) || "
                 "self.name.lowerAscii() != 'root'")}


async def test_transition_rules_run_on_updates_only(apiserver: Cluster, probes: str) -> None:
    created = await apiserver.request("POST", probes, json=probe("a", {"size": 5,
                                                                       "immut": "x"}))
    assert created.status == 201, created  # oldSelf rules do not run on create
    patch = {"spec": {"size": 7, "immut": "y"}}
    assert await refused(apiserver, "PATCH", f"{probes}/a", patch,
                         content_type="application/merge-patch+json") == {
        ("spec", 'Invalid value: "object": no such key: mode evaluating rule: size is '
                 "immutable unless resizing"),
        ("spec.immut", 'Invalid value: "string": immut is immutable')}
    resized = await apiserver.request("PATCH", f"{probes}/a", json={
        "spec": {"size": 7, "mode": "resize"}}, content_type="application/merge-patch+json")
    assert resized.status == 200, resized
    assert resized.body["spec"]["size"] == 7


async def test_status_is_checked_against_the_status_schema(apiserver: Cluster,
                                                           probes: str) -> None:
    created = await apiserver.request("POST", probes, json=probe("a", {"size": 5}))
    assert created.status == 201, created
    status = f"{probes}/a/status"
    # kube-apiserver 1.28 names status fields from the status, without "status."
    assert await refused(apiserver, "PATCH", status, {"status": {"phase": 1}},
                         content_type="application/merge-patch+json") == {
        ("phase", 'Invalid value: "integer": phase in body must be of type string: '
                  '"integer"'), NOT_CHECKED}
    ok = await apiserver.request("PATCH", status, json={"status": {"phase": "ok", "bogus": 1}},
                                 content_type="application/merge-patch+json")
    assert ok.status == 200, ok
    assert warnings(ok.headers) == ['299 - "unknown field \\"status.bogus\\""']
    assert ok.body["status"] == {"phase": "ok"}


@pytest.mark.parametrize(("rule", "error"), [
    ("self.a ==", "ERROR: <input>:1:10: Syntax error: mismatched input '<EOF>' expecting"),
    ("self.a.nope() == 1", "ERROR: <input>:1:12: undeclared reference to 'nope' (in "
                           "container '')\n | self.a.nope() == 1\n | ...........^"),
])
async def test_a_crd_whose_rule_does_not_compile_is_refused(apiserver: Cluster, rule: str,
                                                            error: str) -> None:
    crd = {**PROBE_CRD, "metadata": {"name": "badrules.test.reconcilekit.dev"}}
    crd["spec"] = {**PROBE_CRD["spec"], "names": {"plural": "badrules", "kind": "BadRule"}}
    crd["spec"]["versions"] = [{
        "name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {
                "type": "object", "properties": {"a": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": rule}]}}}}}]
    got = await apiserver.request(
        "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert got.status == 422, got
    [cause] = got.body["details"]["causes"]
    assert cause["field"] == ("spec.validation.openAPIV3Schema.properties[spec]."
                              "x-kubernetes-validations[0].rule")
    assert cause["message"].startswith(
        f'Invalid value: apiextensions.ValidationRule{{Rule:"{rule}", Message:"", '
        'MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
        f'FieldPath:""}}: compilation failed: {error}')


async def test_a_kind_without_rules_is_refused_without_the_rules_cause(
        apiserver: Cluster) -> None:
    """kube-apiserver adds "some validation rules were not checked" only when the schema
    has CEL rules it skipped; a kind without any gets the schema's causes alone."""
    await apiserver.install_crd(PLAIN_CRD)
    path = f"/apis/test.reconcilekit.dev/v1/namespaces/{apiserver.namespace}/plains"
    got = await apiserver.request("POST", path, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Plain", "metadata": {"name": "a"},
        "spec": {"a": "x"}})
    assert got.status == 422, got
    assert causes(got.body) == {
        ("spec.a", 'Invalid value: "string": spec.a in body must be of type integer: '
                   '"string"')}
