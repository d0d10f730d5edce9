"""reconcilekit.kinds: every built-in resource as the API server names it, typed shapes
the type checker enforces, and objects that stay plain dicts."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from reconcilekit import Cache, Client, Resource, TypedResource, kinds
from reconcilekit.kinds import CONFIG_MAPS, EVENTS, PODS, core_v1, events_v1
from reconcilekit.testing import Cluster

ROOT = Path(__file__).resolve().parent.parent
DISCOVERY = (ROOT / "reconcilekit" / "testing" / "apiserver" / "data"
             / "kube-apiserver-1.28-discovery.json")


def _discovered() -> list[tuple[str, str, dict[str, Any]]]:
    data = json.loads(DISCOVERY.read_text())
    return [(*_split(gv), entry) for gv, entries in data["resources"].items()
            for entry in entries if "/" not in entry["name"]]


def _split(gv: str) -> tuple[str, str]:
    group, _, version = gv.rpartition("/")
    return group, version


def _constants(module: Any) -> list[Resource]:
    return [v for v in vars(module).values() if isinstance(v, Resource)]


def test_the_committed_package_is_what_the_generator_writes() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "generate_kinds.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_every_resource_discovery_lists_has_its_constant_in_its_version_module() -> None:
    for group, version, entry in _discovered():
        module = getattr(kinds, f"{group.split('.')[0] if group else 'core'}_{version}")
        wanted = Resource(group, version, entry["kind"], entry["name"], entry["namespaced"])
        assert wanted in _constants(module), wanted


def test_the_package_exports_the_preferred_versions_and_the_core_group_first() -> None:
    assert kinds.HORIZONTAL_POD_AUTOSCALERS.version == "v2"
    assert kinds.FLOW_SCHEMAS.version == "v1beta3"
    assert EVENTS == core_v1.EVENTS and events_v1.EVENTS.group == "events.k8s.io"
    by_hand = (Resource("", "v1", "ConfigMap", "configmaps"),
               Resource("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies"),
               Resource("", "v1", "Endpoints", "endpoints"))
    assert by_hand == (kinds.CONFIG_MAPS, kinds.NETWORK_POLICIES, kinds.ENDPOINTS)
    assert not kinds.NAMESPACES.namespaced and kinds.PODS.namespaced
    assert isinstance(PODS, TypedResource)


def test_a_typed_resource_is_the_same_key_as_one_written_by_hand() -> None:
    by_hand = Resource("", "v1", "Pod", "pods")
    assert by_hand == PODS and hash(by_hand) == hash(PODS) and {by_hand: 1}[PODS] == 1
    assert Resource("", "v1", "Pod", "pods", namespaced=False) != PODS


def test_the_shapes_are_loaded_only_when_used() -> None:
    code = ("import sys, reconcilekit.kinds as k; "
            "assert 'reconcilekit.kinds.core_v1' not in sys.modules, 'loaded at import'; "
            "k.PODS; assert 'reconcilekit.kinds.core_v1' not in sys.modules, 'PODS loads it'; "
            "k.Pod; assert 'reconcilekit.kinds.core_v1' in sys.modules; "
            "from reconcilekit.kinds import Deployment; "
            "assert k.Deployment is Deployment and 'reconcilekit.kinds.apps_v1' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="has no attribute 'Podd'"):
        _ = kinds.Podd


def test_mypy_rejects_a_misspelled_field_and_accepts_the_right_ones() -> None:
    """tests/typed_kinds/kinds_fields.py marks each line mypy --strict must reject."""
    source = ROOT / "tests" / "typed_kinds" / "kinds_fields.py"
    marked = {n for n, line in enumerate(source.read_text().splitlines(), 1)
              if line.endswith("# rejected")}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--follow-imports=silent", str(source)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    errors = {int(m) for m in re.findall(r"kinds_fields\.py:(\d+): error", done.stdout)}
    assert errors == marked, done.stdout
    assert 'TypedDict "PodSpec" has no key "containres"' in done.stdout


async def test_every_exported_resource_is_one_the_api_server_serves_so(
        apiserver: Cluster) -> None:
    """On kube-apiserver this checks the generated constants against the live discovery."""
    served: dict[tuple[str, str, str], tuple[str, bool]] = {}
    groups = (await apiserver.request("GET", "/apis")).body["groups"]
    paths = ["/api/v1"] + [f"/apis/{v['groupVersion']}" for g in groups
                           for v in g["versions"]]
    for path in paths:
        answer = await apiserver.request("GET", path)
        group, version = _split(answer.body["groupVersion"])
        for entry in answer.body["resources"]:
            served[group, version, entry["name"]] = (entry["kind"], entry["namespaced"])
    exported = _constants(kinds)
    assert len(exported) > 50
    for resource in exported:
        key = (resource.group, resource.version, resource.plural)
        if key not in served and apiserver.in_process:
            continue  # not stored in-process (docs/testing.md lists them)
        assert served[key] == (resource.kind, resource.namespaced), resource


async def test_reads_through_a_typed_resource_are_the_plain_cached_dicts(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "typed"}, "data": {"a": "1"}}, ns)
    cache = Cache(client, namespace=ns)
    by_hand = Resource("", "v1", "ConfigMap", "configmaps")
    cache.informer_for(by_hand)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(30)
        typed = await cache.get(CONFIG_MAPS, "typed", ns)
        assert typed == await cache.get(by_hand, "typed", ns)
        assert len(cache.informers()) == 1  # one informer for both
        assert type(typed) is dict and typed.get("data") == {"a": "1"}
        tg.cancel_scope.cancel()
    fetched = await client.get(CONFIG_MAPS, "typed", ns)
    assert type(fetched) is dict and fetched["metadata"]["name"] == "typed"
