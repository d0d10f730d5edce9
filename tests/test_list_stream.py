"""A List answer read item by item as it arrives (``ListSplitter``): the items are the
List's whatever the chunks, nested copies of an item's first bytes, or the fields
after the items; ``managedFields`` are cut only where that is exact."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from reconcilekit import APIError
from reconcilekit._cache import list_stream
from reconcilekit._cache.list_stream import ListSplitter


def split(body: bytes, chunk: int, *, drop: bool = False) -> tuple[list[Any], dict[str, Any]]:
    splitter = ListSplitter("list of things", drop_managed_fields=drop)
    items: list[Any] = []
    for at in range(0, len(body), chunk):
        items += splitter.feed(body[at:at + chunk])
    last, meta = splitter.finish()
    return items + last, meta


def pod(i: int, managed: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p{i}", "namespace": "ns", "resourceVersion": str(i),
                            "labels": {"app": "web", "odd": str(i % 2)}}
    if managed:
        meta["managedFields"] = [
            {"manager": "m", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}},
                                          "f:spec": {'k:{"name":"main"}': {}}}},
            {"manager": "n", "fieldsV1": {"f:status": {}}}]
    return {"metadata": meta, "spec": {"template": {"metadata": {"name": "t"}},
                                       "claims": [{"metadata": {"name": f"c{i}"}},
                                                  {"metadata": {"name": "d"}}]}}


def pod_list(items: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1",
                         "metadata": {"resourceVersion": "42"}, "items": items})


@pytest.fixture(autouse=True)
def small_slabs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(list_stream, "_SLAB", 300)  # many slabs out of a small List


@pytest.mark.parametrize("chunk", [1, 13, 256, 10**6])
def test_the_items_are_the_lists_whatever_the_chunks(chunk: int) -> None:
    objects = [pod(i) for i in range(40)]  # each with the first bytes nested twice
    items, meta = split(pod_list(objects), chunk)
    assert items == objects and meta == {"resourceVersion": "42"}


def test_the_fields_after_the_items_are_read() -> None:
    objects = [{"apiVersion": "x.io/v1", "kind": "W", "metadata": {"name": f"w{i}"},
                "spec": {"list": [1, 2, "]"]}} for i in range(20)]
    body = orjson.dumps({"apiVersion": "x.io/v1", "items": objects, "kind": "WList",
                         "metadata": {"continue": "", "resourceVersion": "7"}})
    assert split(body, 100) == (objects, {"continue": "", "resourceVersion": "7"})


@pytest.mark.parametrize("body", [b'{"kind":"PodList","metadata":{"resourceVersion":"3"},'
                                  b'"items":[]}', b'{"kind":"PodList","items":null}'])
def test_an_empty_list(body: bytes) -> None:
    items, _meta = split(body, 5)
    assert items == []


def partial(i: int, managed: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"p{i}", "labels": {"managedFields": "x"}}
    if managed is not None:
        meta["managedFields"] = managed
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": meta}


def test_managed_fields_of_metadata_alone_are_cut_before_decoding() -> None:
    objects = [partial(i, pod(i)["metadata"]["managedFields"]) for i in range(30)]
    body = orjson.dumps({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                         "metadata": {"resourceVersion": "9"}, "items": objects})
    kept, _ = split(body, 64)
    assert kept == objects
    dropped, _ = split(body, 64, drop=True)
    for item in objects:
        del item["metadata"]["managedFields"]
    assert dropped == objects


@pytest.mark.parametrize("after", [[{"x": 1}], {"x": [1]}, {"x": {}}, "s]}}", 1, None])
def test_managed_fields_that_do_not_close_the_item_are_kept(after: Any) -> None:
    item = partial(0, [{"manager": "m"}])
    item["metadata"]["after"] = after  # a field after them: nothing is cut
    bracket = partial(1, [{"manager": "m", "fieldsV1": {"f:a]": {}}}])  # a "]" in a key
    bracket_last = partial(2, [{"manager": "m]}}"}])
    not_objects = partial(3, [[{"manager": "m"}]])
    objects = [item, bracket, bracket_last, not_objects]
    body = orjson.dumps({"kind": "PartialObjectMetadataList", "items": objects,
                         "metadata": {}})
    assert split(body, 10, drop=True)[0] == objects


@pytest.mark.parametrize(("body", "message"), [
    (b'{"kind":"Status","status":"Failure"}', "is not a List (no items)"),
    (b"not json", "is not JSON"),
    (b'{"kind":"PodList","items":[{"metadata":{"name":"a"}},', "do not end in a JSON array"),
    (b'{"kind":"PodList","items":[{"metadata":{"name":""}}]}', "items[0].metadata.name"),
    (b'{"kind":"PodList","items":[1,2]}', "items[0] is not an object"),
    (b'{"kind":"PodList","metadata":{"resourceVersion":5},"items":[]}',
     "metadata.resourceVersion is not a string"),
])
def test_what_is_not_a_list_is_an_invalid_response(body: bytes, message: str) -> None:
    with pytest.raises(APIError, match="list of things") as caught:
        split(body, 7)
    assert caught.value.reason == "InvalidResponse" and message in str(caught.value)


def test_a_list_without_items_in_its_first_bytes_is_refused() -> None:
    splitter = ListSplitter("list of things")
    with pytest.raises(APIError, match="no items in its first"):
        splitter.feed(b'{"kind":"PodList","metadata":{"x":"' + b"a" * 70_000)
