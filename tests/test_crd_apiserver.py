"""reconcilekit.crd on an API server: the CRD it makes is accepted (structural, Established),
and the server validates, defaults, prints and serves objects as the definition says.

On a real cluster the CRDs (group crd.reconcilekit.dev) are deleted when the session ends
(``Cluster.install_crd``); the objects go with the test's namespace.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired, TypedDict

from reconcilekit.crd import (
    CustomKind,
    Default,
    Format,
    Int32,
    ListType,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    Minimum,
    MinLength,
    MultipleOf,
    Pattern,
    PrinterColumn,
    Rule,
    Scale,
    Version,
)
from reconcilekit.testing import Cluster

GROUP = "crd.reconcilekit.dev"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


class Port(TypedDict):
    name: str
    number: NotRequired[Annotated[int, Minimum(1), Maximum(65535), Default(80)]]


class GizmoSpec(TypedDict):
    """What a Gizmo is."""

    image: Annotated[str, MinLength(1), MaxLength(20)]
    replicas: NotRequired[Annotated[Int32, Minimum(0), Maximum(10), Default(1)]]
    tier: NotRequired[Annotated[Literal["web", "batch"], Default("web")]]
    hosts: NotRequired[Annotated[list[Annotated[str, Pattern(r"^[a-z.]+$")]],
                                 ListType("set"), MaxItems(3)]]
    ports: NotRequired[Annotated[list[Port], ListType("map", keys=("name",))]]
    target: NotRequired[int | str]
    ratio: NotRequired[Annotated[float, Minimum(0, exclusive=True)]]
    even: NotRequired[Annotated[int, MultipleOf(2)]]
    since: NotRequired[Annotated[str, Format("date-time")]]
    labels: NotRequired[Annotated[dict[str, str], MaxProperties(2)]]
    note: NotRequired[str | None]
    extra: NotRequired[dict[str, Any]]


class GizmoStatus(TypedDict, total=False):
    replicas: Int32
    selector: str
    phase: str


class Gizmo(TypedDict):
    """A Gizmo runs an image."""

    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: Annotated[GizmoSpec, Rule("self.replicas <= 3 || self.tier == 'batch'",
                                    message="more than 3 replicas only for batch",
                                    field_path=".replicas")]
    status: NotRequired[GizmoStatus]


GIZMOS = CustomKind(
    group=GROUP, kind="Gizmo", plural="gizmos", short_names=["gz"], categories=["crdtests"],
    versions=[Version("v1", Gizmo, storage=True,
                      scale=Scale(label_selector_path=".status.selector"),
                      printer_columns=[PrinterColumn("Image", ".spec.image"),
                                       PrinterColumn("Replicas", ".spec.replicas"),
                                       PrinterColumn("Phase", ".status.phase", priority=1)])])


def gizmo(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": name},
            "spec": {"image": "nginx", **spec}}


async def _refused_fields(apiserver: Cluster, path: str, obj: dict[str, Any]) -> set[str]:
    got = await apiserver.request("POST", path, json=obj)
    assert got.status == 422, got
    assert got.body["reason"] == "Invalid"
    return {c["field"] for c in got.body["details"]["causes"]
            if "some validation rules were not checked" not in c["message"]}


async def test_the_crd_is_accepted_as_made_and_established(apiserver: Cluster) -> None:
    installed = await apiserver.install_crd(GIZMOS.crd())
    made = GIZMOS.crd()
    assert installed["spec"]["versions"][0]["schema"] == made["spec"]["versions"][0]["schema"]
    assert installed["status"]["acceptedNames"]["shortNames"] == ["gz"]
    assert installed["status"]["acceptedNames"]["categories"] == ["crdtests"]


async def test_each_kind_of_validation_refuses_with_422_naming_the_field(
        apiserver: Cluster) -> None:
    await apiserver.install_crd(GIZMOS.crd())
    path = GIZMOS.resource.path(apiserver.namespace)
    bad = {
        "spec.image": {"image": ""},
        "spec.replicas": {"replicas": 11},
        "spec.tier": {"tier": "other"},
        "spec.hosts[0]": {"hosts": ["UPPER"]},
        "spec.hosts[1]": {"hosts": ["a", "a"]},
        "spec.ports[1]": {"ports": [{"name": "a"}, {"name": "a"}]},
        "spec.ports[0].number": {"ports": [{"name": "a", "number": 0}]},
        "spec.target": {"target": 1.5},
        "spec.ratio": {"ratio": 0},
        "spec.even": {"even": 3},
        "spec.since": {"since": "yesterday"},
        "spec.labels": {"labels": {"a": "1", "b": "2", "c": "3"}},
    }
    for i, (field, spec) in enumerate(bad.items()):
        assert await _refused_fields(apiserver, path, gizmo(f"bad-{i}", **spec)) == {field}, \
            field
    missing = gizmo("missing")
    del missing["spec"]["image"]
    assert await _refused_fields(apiserver, path, missing) == {"spec.image"}
    too_long = gizmo("long", image="x" * 21)
    assert await _refused_fields(apiserver, path, too_long) == {"spec.image"}
    no_spec = {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "nospec"}}
    assert await _refused_fields(apiserver, path, no_spec) == {"spec"}


async def test_defaults_are_applied_and_a_cel_rule_refuses_with_its_message(
        apiserver: Cluster) -> None:
    await apiserver.install_crd(GIZMOS.crd())
    path = GIZMOS.resource.path(apiserver.namespace)
    got = await apiserver.request("POST", path, json=gizmo("a", ports=[{"name": "http"}],
                                                           note=None, target="80%"))
    assert got.status == 201, got
    assert got.body["spec"] == {"image": "nginx", "replicas": 1, "tier": "web",
                                "ports": [{"name": "http", "number": 80}], "note": None,
                                "target": "80%"}
    refused = await apiserver.request("POST", path, json=gizmo("b", replicas=5))
    assert refused.status == 422, refused
    assert [(c["field"], c["message"]) for c in refused.body["details"]["causes"]] == [
        ("spec.replicas", "Invalid value: \"object\": more than 3 replicas only for batch")]
    allowed = await apiserver.request("POST", path, json=gizmo("c", replicas=5, tier="batch"))
    assert allowed.status == 201, allowed


async def test_printer_columns_appear_in_the_table(apiserver: Cluster) -> None:
    await apiserver.install_crd(GIZMOS.crd())
    path = GIZMOS.resource.path(apiserver.namespace)
    assert (await apiserver.request("POST", path, json=gizmo("a", replicas=2))).status == 201
    got = await apiserver.request("GET", path, headers={"Accept": TABLE})
    assert got.status == 200, got
    assert [(c["name"], c["type"], c["priority"]) for c in got.body["columnDefinitions"]] == [
        ("Name", "string", 0), ("Image", "string", 0), ("Replicas", "integer", 0),
        ("Phase", "string", 1)]
    assert got.body["rows"][0]["cells"][:3] == ["a", "nginx", 2]


async def test_status_and_scale_subresources(apiserver: Cluster) -> None:
    await apiserver.install_crd(GIZMOS.crd())
    path = GIZMOS.resource.path(apiserver.namespace)
    made = await apiserver.request("POST", path, json={**gizmo("a"),
                                                       "status": {"phase": "ignored"}})
    assert made.status == 201, made
    assert "status" not in made.body  # the main resource leaves status alone
    status = await apiserver.request(
        "PATCH", f"{path}/a/status", json={"status": {"phase": "Running", "replicas": 1,
                                                      "selector": "app=a"},
                                           "spec": {"image": "ignored"}},
        content_type="application/merge-patch+json")
    assert status.status == 200, status
    assert status.body["status"]["phase"] == "Running"
    assert status.body["spec"]["image"] == "nginx"  # ... and /status leaves spec alone
    scale = await apiserver.request("GET", f"{path}/a/scale")
    assert scale.status == 200, scale
    assert (scale.body["spec"], scale.body["status"]) == (
        {"replicas": 1}, {"replicas": 1, "selector": "app=a"})


class GadgetV1(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[dict[str, Any]]


class GadgetV2Spec(TypedDict):
    size: NotRequired[int]


class GadgetV2(TypedDict):
    apiVersion: str
    kind: str
    metadata: dict[str, Any]
    spec: NotRequired[GadgetV2Spec]


GADGETS = CustomKind[GadgetV2](
    group=GROUP, kind="Gadget", plural="gadgets", namespaced=False,
    versions=[Version[Any]("v1", GadgetV1, deprecated=True,
                           deprecation_warning="crd.reconcilekit.dev/v1 Gadget is old"),
              Version("v2", GadgetV2, storage=True)])


async def test_two_versions_are_served_from_one_storage_version(apiserver: Cluster) -> None:
    await apiserver.install_crd(GADGETS.crd())
    v1, v2 = GADGETS.resource_for("v1"), GADGETS.resource
    name = f"g-{apiserver.namespace}"  # cluster-scoped: one name per test run
    made = await apiserver.request("POST", v1.path(), json={
        "apiVersion": v1.api_version, "kind": "Gadget", "metadata": {"name": name},
        "spec": {"size": 3}})
    assert made.status == 201, made
    assert made.headers.getall("Warning", []) == [
        '299 - "crd.reconcilekit.dev/v1 Gadget is old"']
    try:
        got = await apiserver.request("GET", v2.path(name=name))
        assert got.status == 200, got
        assert (got.body["apiVersion"], got.body["spec"]) == (v2.api_version, {"size": 3})
        old = await apiserver.request("GET", v1.path(name=name))
        assert (old.body["apiVersion"], old.body["spec"]) == (v1.api_version, {"size": 3})
    finally:
        await apiserver.request("DELETE", v2.path(name=name))
