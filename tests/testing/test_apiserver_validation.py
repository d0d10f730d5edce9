"""Object metadata validation and decoding, as kube-apiserver v1.28 does them.

Messages are apimachinery's (``util/validation``: RegexError, IsQualifiedName,
IsValidLabelValue; ``api/validation``: ValidateObjectMeta), so the expected
strings below are copied from kube-apiserver's answers.
"""

from __future__ import annotations

from typing import Any

from reconcilekit.testing import Cluster

from k8s_objects import configmap

QUALIFIED = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
             "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
             "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
             "[A-Za-z0-9]')")
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
             "characters, '-' or '.', and must start and end with an alphanumeric character "
             "(e.g. 'example.com', regex used for validation is "
             r"'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def _causes(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def _refused(apiserver: Cluster, path: str, obj: dict[str, Any]) -> dict[str, Any]:
    got = await apiserver.request("POST", path, json=obj)
    assert got.status == 422 and got.body["reason"] == "Invalid", got
    body: dict[str, Any] = got.body
    return body


async def test_label_keys_and_values_are_validated(apiserver: Cluster, configmaps: str
                                                   ) -> None:
    ok = await apiserver.request("POST", configmaps, json=configmap(
        "ok", labels={"example.com/x": "v", "a" * 63: "b" * 63, "empty": ""}))
    assert ok.status == 201, ok
    bad = await _refused(apiserver, configmaps, configmap("a", labels={"bad key!": "v"}))
    assert _causes(bad) == [("metadata.labels",
                             f'Invalid value: "bad key!": name part {QUALIFIED}')]
    assert bad["message"] == (f'ConfigMap "a" is invalid: metadata.labels: Invalid value: '
                              f'"bad key!": name part {QUALIFIED}')
    bad = await _refused(apiserver, configmaps, configmap("b", labels={"k": "v" * 64}))
    assert _causes(bad) == [("metadata.labels",
                             f'Invalid value: "{"v" * 64}": must be no more than 63 characters')]
    bad = await _refused(apiserver, configmaps, configmap("c", labels={"Bad_Prefix/x": "v"}))
    assert _causes(bad) == [("metadata.labels",
                             f'Invalid value: "Bad_Prefix/x": prefix part {SUBDOMAIN}')]
    bad = await _refused(apiserver, configmaps, configmap("d", labels={"/x": "v"}))
    assert _causes(bad) == [("metadata.labels", 'Invalid value: "/x": prefix part must be '
                                                "non-empty")]


async def test_annotation_keys_and_total_size_are_validated(apiserver: Cluster,
                                                            configmaps: str) -> None:
    # Annotation keys are qualified names checked in lower case; all of them
    # together hold at most 256 KiB.
    ok = await apiserver.request("POST", configmaps, json=configmap(
        "ok", annotations={"Example.com/Upper": "any value at all, even spaces"}))
    assert ok.status == 201, ok
    bad = await _refused(apiserver, configmaps, configmap("a", annotations={"a/b/c": "v"}))
    assert _causes(bad) == [("metadata.annotations", f'Invalid value: "a/b/c": a qualified '
                             f"name {QUALIFIED} with an optional DNS subdomain prefix and '/' "
                             "(e.g. 'example.com/MyName')")]
    big = await _refused(apiserver, configmaps, configmap("b", annotations={"x": "y" * 262144}))
    assert big["details"]["causes"] == [{"reason": "FieldValueTooLong", "field":
                                         "metadata.annotations", "message":
                                         "Too long: must have at most 262144 bytes"}]


async def test_owner_references_need_every_field_and_one_controller(
        apiserver: Cluster, configmaps: str) -> None:
    empty = await _refused(apiserver, configmaps, configmap("a", ownerReferences=[
        {"apiVersion": "", "kind": "", "name": "", "uid": ""}]))
    assert _causes(empty) == [
        ("metadata.ownerReferences.apiVersion", 'Invalid value: "": version must not be empty'),
        ("metadata.ownerReferences.kind", 'Invalid value: "": kind must not be empty'),
        ("metadata.ownerReferences.name", 'Invalid value: "": name must not be empty'),
        ("metadata.ownerReferences.uid", 'Invalid value: "": uid must not be empty')]
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "controller": True}
    two = await _refused(apiserver, configmaps, configmap("b", ownerReferences=[
        dict(ref, name="x", uid="u1"), dict(ref, name="y", uid="u2")]))
    (field, message), = _causes(two)
    assert field == "metadata.ownerReferences"
    # The value is Go's %#v of the references (pointer addresses on kube-apiserver).
    assert message.startswith("Invalid value: []v1.OwnerReference{")
    assert message.endswith('Only one reference can have Controller set to true. Found "true" '
                            "in references for ConfigMap/x and ConfigMap/y")
    event = await _refused(apiserver, configmaps, configmap("c", ownerReferences=[
        {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u"}]))
    assert _causes(event)[0][1].endswith("/v1, Kind=Event is disallowed from being an owner")


async def test_repeated_owner_references_are_dropped(apiserver: Cluster,
                                                     configmaps: str) -> None:
    # The registry drops an entry equal to an earlier one (with a Warning header);
    # entries that only share a UID are all kept.
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u1"}
    made = await apiserver.request("POST", configmaps, json=configmap(
        "a", ownerReferences=[ref, dict(ref, name="y"), ref]))
    assert made.status == 201
    assert made.body["metadata"]["ownerReferences"] == [ref, dict(ref, name="y")]


async def test_finalizers_are_qualified_names(apiserver: Cluster, configmaps: str,
                                             widgets: str) -> None:
    bad = await _refused(apiserver, configmaps, configmap("a", finalizers=["ok/one", "no way"]))
    assert _causes(bad) == [
        ("metadata.finalizers", f'Invalid value: "no way": name part {QUALIFIED}'),
        ("metadata.finalizers[1]", 'Invalid value: "no way": name is neither a standard '
                                   "finalizer name nor is it fully qualified")]
    # Built-in kinds want a prefix (or a standard name); custom resources do not.
    short = await _refused(apiserver, configmaps, configmap("b", finalizers=["short"]))
    assert [field for field, _ in _causes(short)] == ["metadata.finalizers[0]"]
    standard = await apiserver.request("POST", configmaps, json=configmap(
        "c", finalizers=["orphan"]))
    assert standard.status == 201, standard
    await apiserver.request("PATCH", f"{configmaps}/c", json={"metadata": {"finalizers": None}},
                            content_type="application/merge-patch+json")
    widget = await apiserver.request("POST", widgets, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget",
        "metadata": {"name": "w", "finalizers": ["short"]}})
    assert widget.status == 201, widget
    both = await _refused(apiserver, configmaps, configmap(
        "b", finalizers=["orphan", "foregroundDeletion"]))
    assert _causes(both) == [("metadata.finalizers", 'Invalid value: []string{"orphan", '
                              '"foregroundDeletion"}: finalizer orphan and foregroundDeletion '
                              "cannot be both set")]


async def test_generate_name_is_checked_with_the_name_made_from_it(
        apiserver: Cluster, configmaps: str) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "Bad_"}
    bad = await _refused(apiserver, configmaps, body)
    name = bad["details"]["name"]
    assert name.startswith("Bad_") and len(name) == 9
    assert _causes(bad) == [("metadata.generateName", f'Invalid value: "Bad_": {SUBDOMAIN}'),
                            ("metadata.name", f'Invalid value: "{name}": {SUBDOMAIN}')]


async def test_values_of_the_wrong_json_type_do_not_decode(apiserver: Cluster,
                                                           configmaps: str) -> None:
    # The JSON decoder's errors, answered with 400 before any validation.
    cases = [
        (configmap("a", labels={"k": 1}), "json: cannot unmarshal number into Go struct field "
         "ObjectMeta.metadata.labels of type string"),
        (configmap("a", labels=["k"]), "json: cannot unmarshal array into Go struct field "
         "ObjectMeta.metadata.labels of type map[string]string"),
        (dict(configmap("a"), data={"k": True}), "json: cannot unmarshal bool into Go struct "
         "field ConfigMap.data of type string"),
        (dict(configmap("a"), binaryData={"k": "not base64"}),
         "illegal base64 data at input byte 3"),
    ]
    for body, why in cases:
        got = await apiserver.request("POST", configmaps, json=body)
        assert got.status == 400, (body, got)
        assert got.body["message"] == (
            f'ConfigMap in version "v1" cannot be handled as a ConfigMap: {why}')
    patched = await apiserver.request("POST", configmaps, json=configmap("p"))
    assert patched.status == 201
    # A patch whose result does not decode is a 422 on the field "patch".
    got = await apiserver.request("PATCH", f"{configmaps}/p", json={"data": {"k": 1}},
                                  content_type="application/merge-patch+json")
    assert got.status == 422 and got.body["reason"] == "Invalid"
    (cause,) = got.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith("json: cannot unmarshal number into Go struct field "
                                     "ConfigMap.data of type string")
