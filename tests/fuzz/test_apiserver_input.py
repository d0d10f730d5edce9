"""Generated bad input for the API server: mutated requests of every verb, path and body.

Runs on either backend (the in-process server, or kube-apiserver with
RECONCILEKIT_TEST_ASSETS, whose 500s are the judge's and allowed). For every
request:
  * the in-process server's answer is never a 500, except where
    kube-apiserver gives one too: an applied configuration with a field the
    schema does not declare, a DELETE body that does not decode into
    DeleteOptions, a resourceVersion that is not a decimal uint64;
  * a failure (4xx) is a ``Status`` (apiVersion v1, ``status: Failure``,
    ``code`` equal to the HTTP status, a string ``reason`` and a non-empty
    ``message``), or kube-apiserver's plain-text ``404 page not found`` for
    a path no API group serves;
  * the in-process server logs no traceback and nothing above WARNING.
"""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass
from typing import Any

import pytest
from fuzz_support import JSON, Big, Deep, LogWindow, dumps, explore
from hypothesis import strategies as st

from reconcilekit.testing import APIServer, Cluster
from reconcilekit.testing._pytest_plugin import backend

GROUP = "fuzz.reconcilekit.dev"
WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": f"widgets.{GROUP}"},
    "spec": {"group": GROUP, "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                       "listKind": "WidgetList"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "size": {"type": "integer", "maximum": 10},
                                   "tags": {"type": "array", "items": {"type": "string"},
                                            "x-kubernetes-list-type": "set"}}},
                               "status": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": True}}}}}]}}

NAMES = st.sampled_from(["fuzz-a", "fuzz-b", "fuzz-c"]) | st.sampled_from([
    "", "UPPER", "a" * 254, "a" * 64, "x" * 5000, "..", ".", "a%2Fb", "a b", "ünï", "-a",
    "a_b", "a.b"])
KINDS = {  # plural path segment -> (group/version prefix, apiVersion, kind)
    "configmaps": ("/api/v1", "v1", "ConfigMap"),
    "secrets": ("/api/v1", "v1", "Secret"),
    "pods": ("/api/v1", "v1", "Pod"),
    "deployments": ("/apis/apps/v1", "apps/v1", "Deployment"),
    "widgets": (f"/apis/{GROUP}/v1", f"{GROUP}/v1", "Widget"),
}
CONTENT_TYPES = ["application/json", "application/json-patch+json",
                 "application/merge-patch+json", "application/strategic-merge-patch+json",
                 "application/apply-patch+yaml", "application/yaml", "text/plain",
                 "application/vnd.kubernetes.protobuf", None]
PARAMS = {
    "labelSelector": ["a=b", "a in (b,c)", "!!", "a=", "=b", "a==b==c", "x" * 300, "a notin"],
    "fieldSelector": ["metadata.name=fuzz-a", "spec.nope=x", "metadata.name", "a!b", ""],
    "resourceVersion": ["0", "1", "abc", "-1", "99999999999999999999", ""],
    "resourceVersionMatch": ["Exact", "NotOlderThan", "bogus"],
    "limit": ["0", "-1", "abc", "1", "99999999999999999999"],
    "continue": ["abc", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ", ""],
    "fieldManager": ["fuzz", "", "x" * 200, "ünï", "a\tb"],
    "dryRun": ["All", "bogus", ""],
    "force": ["true", "false", "maybe"],
    "fieldValidation": ["Strict", "Warn", "Ignore", "bogus"],
    "propagationPolicy": ["Orphan", "Foreground", "Background", "bogus"],
    "gracePeriodSeconds": ["0", "-5", "abc", "30"],
    "pretty": ["true", "abc"],
}


def sample_object(plural: str, name: str) -> dict[str, Any]:
    _, api_version, kind = KINDS[plural]
    obj: dict[str, Any] = {"apiVersion": api_version, "kind": kind,
                           "metadata": {"name": name, "labels": {"app": "fuzz"}}}
    if plural == "configmaps":
        obj["data"] = {"k": "v"}
    elif plural == "secrets":
        obj["stringData"] = {"k": "v"}
    elif plural == "pods":
        obj["spec"] = {"containers": [{"name": "c", "image": "busybox"}]}
    elif plural == "deployments":
        obj["spec"] = {"selector": {"matchLabels": {"app": "fuzz"}},
                       "template": {"metadata": {"labels": {"app": "fuzz"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    else:
        obj["spec"] = {"size": 3, "tags": ["a", "b"]}
    return obj


def paths_in(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            out.extend(paths_in(inner, (*prefix, key)))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            out.extend(paths_in(inner, (*prefix, index)))
    return out


@st.composite
def mutated(draw: st.DrawFn, obj: Any) -> Any:
    """``obj`` with a few fields dropped or replaced by values of another type or size."""
    for _ in range(draw(st.integers(0, 3))):
        places = paths_in(obj)
        if not places:
            break
        where = draw(st.sampled_from(places))
        parent = obj
        for step in where[:-1]:
            parent = parent[step]
        if draw(st.booleans()):
            del parent[where[-1]]
        else:
            parent[where[-1]] = draw(JSON | st.sampled_from(
                [Big(70_000), Big(1_100_000), Deep(60), Deep(300), "", -1, 2**64, None]))
    return obj


@dataclass
class Call:
    method: str
    path: str
    params: dict[str, str]
    content_type: str | None
    body: Any  # a document (serialized when sent), bytes, or None

    def raw(self) -> bytes | None:
        if self.body is None or isinstance(self.body, bytes):
            return self.body
        if self.content_type == "application/json-patch+json" and isinstance(self.body, dict):
            return dumps([{"op": "replace", "path": "/metadata/labels", "value": self.body}])
        return dumps(self.body)


PATCH_TYPES = ["application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml"]


@st.composite
def calls(draw: st.DrawFn, namespace: str) -> Call:
    """Mostly what a client sends (create, read, update, patch, delete of a few names),
    each with a few things wrong; sometimes an odd verb, path or content type."""
    plural = draw(st.sampled_from(sorted(KINDS)))
    prefix = KINDS[plural][0]
    good_name = draw(st.sampled_from(["fuzz-a", "fuzz-b", "fuzz-c"]))
    name = draw(st.sampled_from([good_name] * 4) | NAMES)
    ns = draw(st.sampled_from([namespace] * 6 + ["no-such-ns", "BAD_NS"]))
    collection = f"{prefix}/namespaces/{ns}/{plural}"
    intent = draw(st.sampled_from(["create", "create", "get", "list", "update", "status",
                                   "patch", "patch", "patch", "delete", "odd"]))
    method = {"create": "POST", "get": "GET", "list": "GET", "update": "PUT",
              "status": "PUT", "patch": "PATCH", "delete": "DELETE"}.get(intent, "")
    path = {"create": collection, "list": collection,
            "status": f"{collection}/{name}/status"}.get(intent, f"{collection}/{name}")
    content_type: str | None = "application/json"
    if intent == "patch":
        content_type = draw(st.sampled_from(PATCH_TYPES))
    if intent == "odd":
        method = draw(st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
                                       "HEAD", "PROPFIND"]))
        path = draw(st.sampled_from([
            f"{prefix}/{plural}/{name}", f"{collection}/{name}/nope",
            f"{prefix}/namespaces/{ns}/nothings/{name}", "/api/v2/pods", "/apis/nope/v1/x",
            f"{prefix}/namespaces//{plural}", f"/api/v1/namespaces/{ns}",
            f"{collection}/{name}/scale", collection, f"{collection}/{name}"]))
        content_type = draw(st.sampled_from(CONTENT_TYPES))
    keys = draw(st.lists(st.sampled_from(sorted(PARAMS)), max_size=2, unique=True))
    params = {k: draw(st.sampled_from(PARAMS[k])) for k in keys}
    if intent == "patch" and content_type == "application/apply-patch+yaml":
        params.setdefault("fieldManager", "fuzz")
    body: Any = None
    if method == "DELETE" and draw(st.booleans()):
        body = draw(mutated({"apiVersion": "v1", "kind": "DeleteOptions",
                             "gracePeriodSeconds": 0, "propagationPolicy": "Background",
                             "preconditions": {"uid": "u", "resourceVersion": "1"},
                             "dryRun": ["All"]}))
    elif method in ("POST", "PUT", "PATCH") or (method == "DELETE" and draw(st.booleans())):
        kind = draw(st.sampled_from(["object"] * 6 + ["json", "bytes"]))
        if kind == "object":
            body = draw(mutated(sample_object(plural, good_name if intent == "create"
                                              and draw(st.booleans()) else name)))
        elif kind == "json":
            body = draw(JSON)
        else:
            body = draw(st.binary(max_size=64))
    return Call(method, path, params, content_type, body)


DELETE_BODY_500S = ("couldn't get version/kind", "is registered for version",
                    "unknown conversion", "json: cannot unmarshal")


def status_problem(status: int, body: Any, call: Call, *, judge: bool = False) -> str | None:
    """What is wrong with the answer, or None. ``judge``: the answer is kube-apiserver's,
    whose 500s are what the in-process server is measured against."""
    if status == 500 and judge:
        return None
    if status == 500:
        message = str(body.get("message")) if isinstance(body, dict) else ""
        if (call.content_type == "application/apply-patch+yaml"
                and "failed to create typed patch object" in message):
            return None  # kube-apiserver's answer to an unknown field in an apply
        if call.method == "DELETE" and any(words in message for words in DELETE_BODY_500S):
            return None  # kube-apiserver's answer to a body that is not DeleteOptions
        if message.startswith("resourceVersion: Invalid value: ") and "ParseUint" in message:
            return None  # kube-apiserver's answer to an unparsable resourceVersion
        if (call.content_type == "application/strategic-merge-patch+json"
                and "does not contain declared merge key" in message):
            return None  # kube-apiserver's answer to a merged list item without its key
        return f"500: {str(body)[:300]}"
    if status < 400:
        return None
    if status == 404 and body == "404 page not found\n":
        return None
    if call.method == "HEAD" and body is None:
        return None  # no body to a HEAD
    if not isinstance(body, dict):
        return f"{status} without a Status: {str(body)[:300]}"
    shape = {"kind": body.get("kind"), "apiVersion": body.get("apiVersion"),
             "status": body.get("status"), "code": body.get("code")}
    if shape != {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}:
        return f"{status} with a Status of the wrong shape: {shape}"
    if not isinstance(body.get("reason", ""), str) or not body.get("message"):
        return f"{status} without a reason or message: {str(body)[:300]}"
    return None


async def test_mutated_requests_get_a_status_never_a_500(
        apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    await apiserver.install_crd(WIDGET_CRD)
    namespace = apiserver.namespace
    logs = LogWindow(caplog)
    seen: dict[int, int] = {}

    async def check(call: Call) -> None:
        logs.take()
        headers = {} if call.content_type is None else {"Content-Type": call.content_type}
        raw = call.raw()
        body = None if raw is None else io.BytesIO(raw)  # aiohttp streams it
        answer = await apiserver.request(call.method, call.path, body=body,  # type: ignore[arg-type]
                                         params=call.params, headers=headers)
        seen[answer.status] = seen.get(answer.status, 0) + 1
        problem = status_problem(answer.status, answer.body, call,
                                 judge=not apiserver.in_process)
        assert problem is None, problem
        for record in logs.take():
            assert record.exc_info is None, f"traceback logged: {record.getMessage()[:300]}"
            assert record.levelno <= logging.WARNING, record.getMessage()[:300]

    await explore(calls(namespace), check, max_examples=250)
    assert len(seen) > 4, seen  # the requests reach more than one kind of answer





# -- the defects the generated requests found, one example each ----------------------------------

@pytest.mark.parametrize(("body", "code", "message"), [
    ({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": "x"}, 500,
     "json: cannot unmarshal string into Go struct field DeleteOptions.preconditions of type "
     "v1.Preconditions"),
    ({"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 1.5}, 500,
     "json: cannot unmarshal number 1.5 into Go struct field DeleteOptions.gracePeriodSeconds "
     "of type int64"),
    ({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": "All"}, 500,
     "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type "
     "[]string"),
    ({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": 5}}, 500,
     "json: cannot unmarshal number into Go struct field Preconditions.preconditions.uid of "
     "type types.UID"),
    ({"apiVersion": "v1", "kind": "ConfigMap"}, 500,
     'no kind "ConfigMap" is registered for version "v1" in scheme '
     '"pkg/runtime/scheme.go:100"'),
    ({"apiVersion": "v1", "kind": "UpdateOptions"}, 500,
     "converting (v1.UpdateOptions) to (v1.DeleteOptions): unknown conversion"),
    (5, 500, 'couldn\'t get version/kind; json parse error: json: cannot unmarshal number into '
             'Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
             'Kind string "json:\\"kind,omitempty\\"" }'),
    ({"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": [None]}, 422,
     'DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{""}: '
     'supported values: "All"'),
    (None, 200, None),
])
async def test_a_delete_body_is_decoded_as_kube_apiserver_decodes_it(
        apiserver: Cluster, body: Any, code: int, message: str | None,
        caplog: pytest.LogCaptureFixture) -> None:
    """A DeleteOptions whose ``preconditions`` was not an object used to raise an
    AttributeError (a 500 with a traceback in the log); other mistyped fields and bodies
    of other kinds deleted the object, where kube-apiserver refuses them with a 500
    naming the problem and deletes nothing."""
    path = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    await apiserver.request("POST", path, json={"metadata": {"name": "fuzz-delete"}})
    logs = LogWindow(caplog)
    answer = await apiserver.request("DELETE", f"{path}/fuzz-delete", body=dumps(body),
                                     content_type="application/json")
    assert answer.status == code, answer.body
    if code == 422:
        assert answer.body["message"] == message
    elif message is not None:
        assert answer.body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                               "status": "Failure", "message": message, "code": 500}
        assert (await apiserver.request("GET", f"{path}/fuzz-delete")).status == 200
    for record in logs.take():
        assert record.exc_info is None and record.levelno <= logging.WARNING


@pytest.mark.parametrize(("name", "rv", "problem"), [
    ("fuzz-get", "abc", 'strconv.ParseUint: parsing "abc": invalid syntax'),
    ("fuzz-get", "-1", 'strconv.ParseUint: parsing "-1": invalid syntax'),
    ("no-such-object", "1.5", 'strconv.ParseUint: parsing "1.5": invalid syntax'),
    ("fuzz-get", "99999999999999999999",
     'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
    ("", "99999999999999999999",  # a list
     'strconv.ParseUint: parsing "99999999999999999999": value out of range'),
])
async def test_an_unparsable_resource_version_is_refused_on_a_get_as_on_a_list(
        apiserver: Cluster, name: str, rv: str, problem: str) -> None:
    """A get ignored its resourceVersion (200, or 404 for a missing object) and a list
    took one beyond uint64 for a future version (504), where kube-apiserver answers 500
    naming the parameter, before it looks for the object."""
    path = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    await apiserver.request("POST", path, json={"metadata": {"name": "fuzz-get"}})
    answer = await apiserver.request("GET", f"{path}/{name}" if name else path,
                                     params={"resourceVersion": rv})
    assert (answer.status, answer.body["message"]) == (
        500, f'resourceVersion: Invalid value: "{rv}": {problem}')



async def test_a_value_nested_deeper_than_orjson_writes_is_answered_not_a_500(
        apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """A JSON patch putting a value nested 300 levels into a ConfigMap's labels, and a
    custom resource whose name is such a value, are refused (422, 400 on kube-apiserver
    for the second); the in-process server used to answer 500 (orjson could not write the
    patched object into the 422, nor the value its Status quoted), with a traceback."""
    await apiserver.install_crd(WIDGET_CRD)
    cms = f"/api/v1/namespaces/{apiserver.namespace}/configmaps"
    await apiserver.request("POST", cms, json={"metadata": {"name": "fuzz-deep"}})
    logs = LogWindow(caplog)
    patched = await apiserver.request(
        "PATCH", f"{cms}/fuzz-deep", content_type="application/json-patch+json",
        body=dumps([{"op": "replace", "path": "/metadata/labels", "value": {"a": Deep(300)}}]))
    created = await apiserver.request(
        "POST", f"/apis/{GROUP}/v1/namespaces/{apiserver.namespace}/widgets",
        content_type="application/json",
        body=dumps({"apiVersion": f"{GROUP}/v1", "kind": "Widget",
                    "metadata": {"name": Deep(300)}, "spec": {}}))
    for answer in (patched, created):
        assert answer.status in (400, 422), str(answer.body)[:300]
        assert status_problem(answer.status, answer.body,
                              Call("POST", "", {}, None, None)) is None
    for record in logs.take():
        assert record.exc_info is None and record.levelno <= logging.WARNING


async def test_a_body_without_a_kind_nested_deeper_than_orjson_writes_is_a_400(
        apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """A ConfigMap whose apiVersion is a value nested 300 levels deep (so no kind can be
    read from it) is a 400 quoting the start of the body; the in-process server used to
    answer 500 with a traceback (orjson could not write the body into the message)."""
    logs = LogWindow(caplog)
    answer = await apiserver.request(
        "POST", f"/api/v1/namespaces/{apiserver.namespace}/configmaps",
        content_type="application/json",
        body=dumps({"apiVersion": Deep(300), "metadata": {"name": "fuzz-deep-kind"}}))
    assert answer.status == 400, str(answer.body)[:300]
    assert status_problem(answer.status, answer.body, Call("POST", "", {}, None, None)) is None
    for record in logs.take():
        assert record.exc_info is None and record.levelno <= logging.WARNING


def _class(status: int) -> str:
    return f"{status // 100}xx"


@pytest.mark.skipif(backend() == "in-process",
                    reason="compares the in-process server with a real API server: run with "
                           "RECONCILEKIT_TEST_ASSETS (or KUBEBUILDER_ASSETS)")
async def test_the_in_process_server_answers_generated_requests_as_kube_apiserver(
        apiserver: Cluster) -> None:
    """The same generated requests, in the same order, to kube-apiserver (the judge) and to
    a fresh in-process server with the same namespace: the class of each answer (2xx, 4xx,
    5xx) must be the same. ConfigMaps and the custom resource only: built-in kinds the
    in-process server stores without checking are listed in docs/testing.md.

    The same requests every run (see :func:`fuzz_support.explore`)."""
    async with APIServer() as server:
        local = Cluster(server.configuration(), namespace=apiserver.namespace, server=server)
        try:
            await local.request("POST", "/api/v1/namespaces", json={
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": apiserver.namespace}})
            for cluster in (apiserver, local):
                await cluster.install_crd(WIDGET_CRD)
            differences: list[str] = []

            async def check(call: Call) -> None:
                if "/configmaps" not in call.path and "/widgets" not in call.path:
                    return
                if call.content_type == "application/apply-patch+yaml":
                    return  # checks in another order: see docs/testing.md
                if call.method == "DELETE" and "resourceVersion" in call.params:
                    return  # not read from a DELETE's query: see docs/testing.md
                raw = call.raw()
                headers = {} if call.content_type is None else {
                    "Content-Type": call.content_type}
                answers = [await cluster.request(call.method, call.path,
                                                 body=None if raw is None else io.BytesIO(raw),  # type: ignore[arg-type]
                                                 params=call.params, headers=headers)
                           for cluster in (apiserver, local)]
                kube, ours = answers
                if _class(kube.status) != _class(ours.status):
                    differences.append(f"{call.method} {call.path} {call.params} "
                                       f"{call.content_type} {str(call.body)[:200]}: "
                                       f"kube-apiserver {kube.status} {str(kube.body)[:200]}; "
                                       f"in-process {ours.status} {str(ours.body)[:200]}")

            await explore(calls(apiserver.namespace), check, max_examples=150)
            assert not differences, "\n".join(differences)
        finally:
            await local.close()
