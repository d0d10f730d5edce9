"""Built-in kinds decoded as kube-apiserver v1.28 decodes them: from its OpenAPI v3 schemas.

Unknown fields are dropped and named (a warning each, in the decoder's
order; 400 or, for a patched object, 422 under ``fieldValidation=Strict``;
nothing under ``Ignore``); a value of the wrong JSON type refuses the body
with encoding/json's message. The expected strings are kube-apiserver's
answers.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from reconcilekit.testing import Cluster

from k8s_objects import configmap, pod

MERGE = "application/merge-patch+json"


def warned(headers: Any) -> list[str]:
    """The unknown fields' paths, in the order of the Warning headers."""
    return [w.removeprefix('299 - "unknown field \\"').removesuffix('\\""')
            for w in headers.getall("Warning", [])]


def strict(*paths: str) -> str:
    return "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in paths)


async def test_unknown_fields_warn_in_document_order_and_are_dropped(
        apiserver: Cluster, configmaps: str) -> None:
    body = ('{"zzz":1,"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u1",'
            '"bogus":{"x":1}},"data":{"k":"v"},"aaa":[1],"Data":{"x":"y"}}')
    got = await apiserver.request("POST", configmaps, body=body,
                                  content_type="application/json")
    assert got.status == 201, got
    assert warned(got.headers) == ["zzz", "metadata.bogus", "aaa", "Data"]
    stored = (await apiserver.request("GET", f"{configmaps}/u1")).body
    assert stored["data"] == {"k": "v"}
    assert not {"zzz", "aaa", "Data"} & stored.keys() and "bogus" not in stored["metadata"]

    got = await apiserver.request("POST", configmaps, body=body.replace("u1", "u2"),
                                  content_type="application/json",
                                  params={"fieldValidation": "Strict"})
    assert got.status == 400 and got.body["reason"] == "BadRequest", got
    assert got.body["message"] == ('ConfigMap in version "v1" cannot be handled as a ConfigMap: '
                                   + strict("zzz", "metadata.bogus", "aaa", "Data"))
    got = await apiserver.request("POST", configmaps, body=body.replace("u1", "u3"),
                                  content_type="application/json",
                                  params={"fieldValidation": "Ignore"})
    assert got.status == 201 and not got.headers.getall("Warning", []), got
    assert "zzz" not in got.body and "bogus" not in got.body["metadata"]


async def test_unknown_fields_in_lists_are_named_with_their_index(apiserver: Cluster,
                                                                  pods: str) -> None:
    obj = pod("p")
    obj["spec"]["containers"][0]["foo"] = 1
    obj["spec"]["containers"].append({"name": "d", "image": "i", "ports": [
        {"containerPort": 80, "bar": 2}]})
    obj["spec"]["bogus"] = True
    obj["status"] = {"what": 1}
    paths = ["spec.containers[0].foo", "spec.containers[1].ports[0].bar", "spec.bogus",
             "status.what"]
    got = await apiserver.request("POST", pods, json=obj, params={"fieldValidation": "Strict"})
    assert got.status == 400, got
    assert got.body["message"] == 'Pod in version "v1" cannot be handled as a Pod: ' + strict(
        *paths)
    got = await apiserver.request("POST", pods, json=obj)
    assert got.status == 201, got
    assert warned(got.headers) == paths
    assert "foo" not in got.body["spec"]["containers"][0]
    assert got.body["spec"]["containers"][1]["ports"] == [{"containerPort": 80,
                                                          "protocol": "TCP"}]


async def test_values_of_the_wrong_type_are_named_by_go_struct_and_field(
        apiserver: Cluster, pods: str) -> None:
    def spec(**change: Any) -> dict[str, Any]:
        obj = pod("t")
        obj["spec"].update(change)
        return obj

    def container(**change: Any) -> dict[str, Any]:
        return spec(containers=[{"name": "c", "image": "i", **change}])

    go = "json: cannot unmarshal "
    cases = [
        (container(name=1), go + "number into Go struct field Container.spec.containers.name "
         "of type string"),
        (container(ports=[{"containerPort": "80"}]), go + "string into Go struct field "
         "ContainerPort.spec.containers.ports.containerPort of type int32"),
        (container(command="ls"), go + "string into Go struct field Container.spec.containers."
         "command of type []string"),
        (container(readinessProbe={"httpGet": {"port": True}}), go + "bool into Go struct field "
         "HTTPGetAction.spec.containers.readinessProbe.httpGet.port of type int32"),
        (container(resources={"limits": {"cpu": True}}), "quantities must match the regular "
         "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
        (spec(containers={"name": "c"}), go + "object into Go struct field PodSpec.spec."
         "containers of type []v1.Container"),
        (spec(terminationGracePeriodSeconds=1.5), go + "number 1.5 into Go struct field "
         "PodSpec.spec.terminationGracePeriodSeconds of type int64"),
        (spec(priority=3000000000), go + "number 3000000000 into Go struct field "
         "PodSpec.spec.priority of type int32"),
        (spec(nodeSelector={"a": 1}), go + "number into Go struct field PodSpec.spec."
         "nodeSelector of type string"),
        (spec(hostNetwork="yes"), go + "string into Go struct field PodSpec.spec.hostNetwork "
         "of type bool"),
        (dict(pod("t"), spec=[1]), go + "array into Go struct field Pod.spec of type "
         "v1.PodSpec"),
        # The first value that does not decode, in the document's order; unknown fields
        # before it do not matter.
        (spec(bogus=1, hostNetwork="yes", priority="x"), go + "string into Go struct field "
         "PodSpec.spec.hostNetwork of type bool"),
    ]
    for body, why in cases:
        got = await apiserver.request("POST", pods, json=body)
        assert got.status == 400, (body, got)
        assert got.body["message"] == f'Pod in version "v1" cannot be handled as a Pod: {why}'


async def test_a_patched_object_is_read_in_sorted_key_order(apiserver: Cluster,
                                                            configmaps: str) -> None:
    assert (await apiserver.request("POST", configmaps, json=configmap(
        "p", {"k": "v"}))).status == 201
    patch = {"zz": 1, "data": {"x": "y"}, "aa": {"b": 1}, "metadata": {"q": 1}}
    for content_type in (MERGE, "application/strategic-merge-patch+json"):
        got = await apiserver.request("PATCH", f"{configmaps}/p", json=patch,
                                      content_type=content_type)
        assert got.status == 200, got
        assert warned(got.headers) == ["aa", "metadata.q", "zz"]
        assert got.body["data"] == {"k": "v", "x": "y"} and "zz" not in got.body
    got = await apiserver.request("PATCH", f"{configmaps}/p", json=patch, content_type=MERGE,
                                  params={"fieldValidation": "Strict"})
    assert got.status == 422 and got.body["reason"] == "Invalid", got
    (cause,) = got.body["details"]["causes"]
    assert cause["field"] == "patch"
    assert cause["message"].endswith(strict("aa", "metadata.q", "zz"))
    json_patch = [{"op": "add", "path": "/zz", "value": 1},
                  {"op": "add", "path": "/aa", "value": 2}]
    got = await apiserver.request("PATCH", f"{configmaps}/p", json=json_patch,
                                  content_type="application/json-patch+json")
    assert got.status == 200 and warned(got.headers) == ["aa", "zz"], got
    stored = (await apiserver.request("GET", f"{configmaps}/p")).body
    assert not {"aa", "zz"} & stored.keys() and "q" not in stored["metadata"]


async def test_an_update_and_a_status_patch_drop_unknown_fields_too(
        apiserver: Cluster, configmaps: str, pods: str) -> None:
    created = await apiserver.request("POST", configmaps, json=configmap("u", {"k": "v"}))
    assert created.status == 201
    body = dict(created.body, zz=1, aa=2)
    got = await apiserver.request("PUT", f"{configmaps}/u", json=body,
                                  params={"fieldValidation": "Strict"})
    assert got.status == 400, got
    assert got.body["message"].endswith(strict("zz", "aa"))
    got = await apiserver.request("PUT", f"{configmaps}/u", json=body)
    assert got.status == 200 and warned(got.headers) == ["zz", "aa"], got
    assert "zz" not in got.body

    assert (await apiserver.request("POST", pods, json=pod("s"))).status == 201
    status = {"status": {"bogus": 1, "conditions": [
        {"type": "Example", "status": "True", "what": 1}]}}
    got = await apiserver.request("PATCH", f"{pods}/s/status", json=status, content_type=MERGE)
    assert got.status == 200, got
    assert warned(got.headers) == ["status.bogus", "status.conditions[0].what"]
    (condition,) = [c for c in got.body["status"]["conditions"] if c["type"] == "Example"]
    assert "what" not in condition and "bogus" not in got.body["status"]
    got = await apiserver.request("PATCH", f"{pods}/s/status", json={"status": {"bogus": 1}},
                                  content_type=MERGE, params={"fieldValidation": "Strict"})
    assert got.status == 422, got
    assert got.body["details"]["causes"][0]["message"].endswith(strict("status.bogus"))


async def test_an_applied_configuration_with_an_unknown_field_is_refused(
        apiserver: Cluster, configmaps: str) -> None:
    config = '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"zz":1}'
    for validation in ("Warn", "Strict", "Ignore"):
        got = await apiserver.request("PATCH", f"{configmaps}/a", body=config,
                                      content_type="application/apply-patch+yaml",
                                      params={"fieldManager": "m",
                                              "fieldValidation": validation})
        assert got.status == 500, got
        assert got.body["message"] == ("failed to create typed patch object (/a; /v1, "
                                       "Kind=ConfigMap): .zz: field not declared in schema")


def test_the_schemas_are_read_at_the_first_write_that_needs_them() -> None:
    probe = ("import reconcilekit, reconcilekit.testing\n"
             "from reconcilekit.testing.apiserver.machinery import builtin_schema as b\n"
             "print(b._schemas.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "0"
