"""What kube-apiserver v1.28 answers on the wire where a request is off the beaten path:
media types of bodies, paths nobody serves, and Go's own words for a body that does not
decode. The expected values are kube-apiserver's answers to the same requests."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from reconcilekit.testing import Cluster

from k8s_objects import configmap

UNRECOGNIZED = "the object provided is unrecognized (must be of type ConfigMap): "
TYPE_META = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
             'Kind string "json:\\"kind,omitempty\\"" }')
ACCEPTED = ("the body of the request was in an unknown format - accepted media types include: "
            "application/json, application/yaml, application/vnd.kubernetes.protobuf")


def status(code: int, reason: str, message: str, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "reason": reason,
                            "code": code}
    if details:
        body["details"] = details.get("details")
    return body


async def test_yaml_bodies_create_and_update(apiserver: Cluster, configmaps: str) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: '1'\n"
    made = await apiserver.request("POST", configmaps, body=text,
                                   content_type="application/yaml")
    assert made.status == 201 and made.body["data"] == {"a": "1"}, made
    put = await apiserver.request("PUT", f"{configmaps}/c", body=text.replace("'1'", "'2'"),
                                  content_type="application/yaml; charset=utf-8")
    assert put.status == 200 and put.body["data"] == {"a": "2"}, put
    # sigs.k8s.io/yaml reads YAML 1.1: yes (and y, on) is true, not a string
    got = await apiserver.request("POST", configmaps, body=text.replace("'1'", "yes"),
                                  content_type="application/yaml")
    assert got.status == 400 and got.body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "bool into Go struct field ConfigMap.data of type string")
    listed = await apiserver.request("POST", configmaps, body="- a\n- b\n",
                                     content_type="application/yaml")
    assert listed.body == status(400, "BadRequest", UNRECOGNIZED + "couldn't get version/kind; "
                                 f"json parse error: json: cannot unmarshal array into Go value "
                                 f"of type {TYPE_META} (2d20610a2d20620a)")
    bad = await apiserver.request("POST", configmaps, body="a: [",
                                  content_type="application/yaml")
    assert bad.status == 400 and bad.body["message"].startswith(UNRECOGNIZED + "yaml: line 1: ")
    assert bad.body["message"].endswith(" (613a205b)")


@pytest.mark.parametrize("content_type", ["text/plain", "application/xml", "text/yaml",
                                          "application/x-yaml",
                                          None])  # aiohttp: application/octet-stream
async def test_bodies_of_other_media_types_are_415(apiserver: Cluster, configmaps: str,
                                                   content_type: str | None) -> None:
    await apiserver.request("POST", configmaps, json=configmap("c"))
    for method, path in (("POST", configmaps), ("PUT", f"{configmaps}/c")):
        got = await apiserver.request(method, path, body=b'{"kind": "ConfigMap"}',
                                      content_type=content_type)
        assert got.body == status(415, "UnsupportedMediaType", ACCEPTED), (method, got)


async def test_patches_of_other_media_types_are_415(apiserver: Cluster, configmaps: str,
                                                    widgets: str) -> None:
    await apiserver.request("POST", configmaps, json=configmap("c"))
    got = await apiserver.request("PATCH", f"{configmaps}/c", body=b"{}",
                                  content_type="text/plain")
    assert got.body == status(415, "UnsupportedMediaType", "415: Unsupported Media Type",
                              details={})
    await apiserver.request("POST", widgets, json={
        "apiVersion": "test.reconcilekit.dev/v1", "kind": "Widget", "metadata": {"name": "w"}})
    custom = status(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                    "format - accepted media types include: application/json-patch+json, "
                    "application/merge-patch+json, application/apply-patch+yaml")
    for content_type in ("text/plain", "application/strategic-merge-patch+json"):
        got = await apiserver.request("PATCH", f"{widgets}/w", body=b"{}",
                                      content_type=content_type)
        assert got.body == custom, content_type


PAGE_NOT_FOUND = "404 page not found\n"


async def test_paths_no_group_serves_are_go_s_page_not_found(apiserver: Cluster,
                                                             widgets: str) -> None:
    ns = apiserver.namespace
    for method, path in (
            ("GET", "/apis/nope.example.com/v1/things"),
            ("POST", "/apis/nope.example.com/v1/things"),
            ("GET", "/apis/nope.example.com/v1/namespaces/default/things/x"),
            ("GET", "/apis/nope.example.com/v1"), ("GET", "/apis/nope.example.com"),
            ("GET", "/apis/test.reconcilekit.dev/v9/widgets"),
            ("GET", "/apis/test.reconcilekit.dev/v9"),
            ("GET", "/apis/test.reconcilekit.dev/v1/nonsense"),
            ("GET", f"/apis/test.reconcilekit.dev/v1/namespaces/{ns}/nonsense"),
            ("GET", "/apis/test.reconcilekit.dev/v1/widgets/x"),
            ("GET", "/nothing"), ("DELETE", "/nothing")):
        got = await apiserver.request(method, path)
        assert (got.status, got.body) == (404, PAGE_NOT_FOUND), (method, path, got)
        assert got.headers["Content-Type"] == "text/plain; charset=utf-8"
    # the groups kube-apiserver serves itself answer a Status
    not_found = status(404, "NotFound", "the server could not find the requested resource",
                       details={})
    for path in ("/apis/apps/v1/nonsense", "/apis/apps/v9/deployments", "/api/v9/pods",
                 f"/api/v1/namespaces/{ns}/nonsense", f"/api/v1/namespaces/{ns}/nodes",
                 f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/clusterroles",
                 "/apis/apiextensions.k8s.io/v1/nonsense"):
        got = await apiserver.request("GET", path)
        assert got.body == not_found, (path, got)


async def test_405_carries_empty_details(apiserver: Cluster, configmaps: str) -> None:
    for method, path in (("POST", f"{configmaps}/a"), ("PUT", configmaps)):
        got = await apiserver.request(method, path, json=configmap("a"))
        assert got.body == status(405, "MethodNotAllowed", "the server does not allow this "
                                  "method on the requested resource", details={}), method


# (body, Go's error, the body as the message summarizes it)
MALFORMED = [
    (b'{"apiVersion":', "unexpected end of JSON input", '{"apiVersion":'),
    (b"", "unexpected end of JSON input", "<empty>"),
    (b"{not json", "invalid character 'n' looking for beginning of object key string",
     "{not json"),
    (b"nul", "invalid character ' ' in literal null (expecting 'l')", "6e756c"),
    (b'{"a": nox}', "invalid character 'o' in literal null (expecting 'u')", '{"a": nox}'),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')", '{"a":tru}'),
    (b'{"a":1}}', "invalid character '}' after top-level value", '{"a":1}}'),
    (b'{"a" 1}', "invalid character '1' after object key", '{"a" 1}'),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string",
     '{"a":1,}'),
    (b'  \n {"a":\n 01}', "invalid character '1' after object key:value pair",
     "20200a207b2261223a0a2030317d"),
    (b'{"a":"\x01"}', "invalid character '\\x01' in string literal", '{"a":"\x01"}'),
    (b'{"a":1e}', "invalid character '}' in exponent of numeric literal", '{"a":1e}'),
    (b'{"a":-}', "invalid character '}' in numeric literal", '{"a":-}'),
    (b'{"a":"\\q"}', "invalid character 'q' in string escape code", '{"a":"\\q"}'),
    (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"zz"}} x',
     "invalid character 'x' after top-level value", '{"apiVersion":"v1","kind":"Con ...'),
    (b"[1]", f"json: cannot unmarshal array into Go value of type {TYPE_META}", "5b315d"),
    (b"42", f"json: cannot unmarshal number into Go value of type {TYPE_META}", "3432"),
]


@pytest.mark.parametrize(("body", "error", "summary"), MALFORMED)
async def test_malformed_json_is_worded_as_go_words_it(apiserver: Cluster, configmaps: str,
                                                       body: bytes, error: str,
                                                       summary: str) -> None:
    await apiserver.request("POST", configmaps, json=configmap("a"))
    expected = status(400, "BadRequest", f"{UNRECOGNIZED}couldn't get version/kind; json parse "
                      f"error: {error} ({summary})")
    for method, path in (("POST", configmaps), ("PUT", f"{configmaps}/a")):
        got = await apiserver.request(method, path, body=body,
                                      content_type="application/json")
        assert got.body == expected, method
    if error.startswith("json:"):
        return
    for content_type, prefix in (("application/merge-patch+json", "error decoding patch: "),
                                 ("application/json-patch+json", "error decoding patch: "),
                                 ("application/strategic-merge-patch+json", "")):
        got = await apiserver.request("PATCH", f"{configmaps}/a", body=body,
                                      content_type=content_type)
        assert got.body == status(400, "BadRequest", prefix + error), content_type


async def test_a_null_body_is_an_empty_object(apiserver: Cluster, configmaps: str) -> None:
    got = await apiserver.request("POST", configmaps, body=b"null",
                                  content_type="application/json")
    assert got.status == 422 and got.body["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is '
        "required")


async def _without_content_type(apiserver: Cluster, method: str, path: str,
                                body: bytes) -> tuple[int, Any]:
    """A request whose body goes without a ``Content-Type`` header, as the official
    Python client and client-go's scale client send it."""
    api = await apiserver._client()
    headers = await apiserver._headers(None)
    async with api.rest_client.pool_manager.request(
            method, apiserver.configuration.host + path, data=body, headers=headers,
            skip_auto_headers=["Content-Type"]) as resp:
        return resp.status, orjson.loads(await resp.read())


async def test_a_body_without_content_type_is_json(apiserver: Cluster,
                                                   configmaps: str) -> None:
    cm = b'{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": '
    code, made = await _without_content_type(apiserver, "POST", configmaps,
                                             cm + b'{"a": "1"}}')
    assert code == 201 and made["data"] == {"a": "1"}, made
    code, put = await _without_content_type(apiserver, "PUT", f"{configmaps}/c",
                                            cm + b'{"a": "2"}}')
    assert code == 200 and put["data"] == {"a": "2"}, put
    # a PATCH names its patch type by its media type: none is no type at all
    code, patched = await _without_content_type(apiserver, "PATCH", f"{configmaps}/c",
                                                b'{"data": {"a": "3"}}')
    assert patched == status(415, "UnsupportedMediaType", "415: Unsupported Media Type",
                             details={})
    code, bad = await _without_content_type(apiserver, "POST", configmaps, b"a: b")
    assert bad == status(400, "BadRequest", UNRECOGNIZED + "couldn't get version/kind; json "
                         "parse error: invalid character 'a' looking for beginning of value "
                         "(613a2062)")
    code, empty = await _without_content_type(apiserver, "POST", configmaps, b"")
    assert empty == status(400, "BadRequest", UNRECOGNIZED + "couldn't get version/kind; "
                           "json parse error: unexpected end of JSON input (<empty>)")
