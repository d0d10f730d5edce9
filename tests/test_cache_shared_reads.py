"""Shared reads: the cache's own objects handed out without copying, and the mutation
detector that fails a test changing one (docs/concepts/cache.md, "What a read costs")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from cache_helpers import running

from reconcilekit import Cache, Client, ObjectKey
from reconcilekit._cache import mutation_detector
from reconcilekit._cache.mutation_detector import (
    DETECTOR,
    ENV,
    CachedObjectMutated,
    MutationDetector,
    detection_default,
    first_difference,
)
from reconcilekit.kinds import CONFIG_MAPS, PODS
from reconcilekit.testing import Cluster, eventually

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]


def pod(name: str, image: str = "busybox", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": image}]}}


async def test_shared_reads_hand_out_one_object_until_it_changes(apiserver: Cluster,
                                                                 client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a", app="web"), ns)
    await client.create(PODS, pod("b", app="db"), ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(PODS)
    async with running(cache):
        first = await cache.get(PODS, "a", ns, shared=True)
        assert await cache.get(PODS, "a", ns, shared=True) is first
        listed = await cache.list(PODS, ns, label_selector="app=web", shared=True)
        assert listed == [first] and listed[0] is first
        assert cache.lookup(PODS, ns, shared=True)[0] is first
        copy = await cache.get(PODS, "a", ns)
        assert copy == first and copy is not first
        copy["metadata"]["labels"]["app"] = "changed"  # the caller's own: allowed
        await client.patch(PODS, "a", {"metadata": {"labels": {"app": "api"}}}, ns)

        async def relabelled() -> bool:
            return (await cache.get(PODS, "a", ns, shared=True))["metadata"]["labels"] == {
                "app": "api"}
        await eventually(relabelled)
        assert first["metadata"]["labels"] == {"app": "web"}  # a holder keeps what it read
    assert DETECTOR.take() == []


async def test_the_detector_names_the_object_and_the_field_a_reader_changed(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a"), ns)
    cache = Cache(client, namespace=ns)
    assert cache.mutation_detector is DETECTOR  # on by default under the pytest plugin
    cache.informer_for(PODS)
    async with running(cache):
        (shared,) = await cache.list(PODS, ns, shared=True)
        shared["spec"]["containers"][0]["image"] = "evil"
        found = DETECTOR.take()
    assert len(found) == 1
    assert f"pods/v1 {ns}/a: a shared read was mutated by its reader at " \
           ".spec.containers[0].image (was 'busybox', now 'evil')" in found[0]
    off = Cache(client, namespace=ns, detect_mutations=False)
    assert off.mutation_detector is None


def test_the_first_difference_is_named_by_its_path() -> None:
    was = {"a": {"b": [1, {"c": "x"}]}, "d": 1}
    assert first_difference(was, {"a": {"b": [1, {"c": "y"}]}, "d": 1}) == (
        ".a.b[1].c", "x", "y")
    path, old, _ = first_difference(was, {"a": {"b": [1]}, "d": 1})
    assert (path, old) == (".a.b[1]", {"c": "x"})
    path, _, new = first_difference(was, {**was, "e": True})
    assert (path, new) == (".e", True)


def test_the_environment_turns_detection_on_or_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "0")
    assert detection_default() is False
    monkeypatch.setenv(ENV, "1")
    assert detection_default() is True


def test_raise_if_mutated_raises_with_every_message() -> None:
    DETECTOR.record("pods", ObjectKey("n", "p"), b'{"a":1}', {"a": 2})
    with pytest.raises(CachedObjectMutated, match=r"pods n/p: .* at \.a \(was 1, now 2\)"):
        DETECTOR.raise_if_mutated()


INNER_TEST = '''
import anyio

from reconcilekit import Cache
from reconcilekit.kinds import CONFIG_MAPS


async def read_settings(apiserver, client, use):
    ns = apiserver.namespace
    await client.create(CONFIG_MAPS, {"metadata": {"name": "settings"},
                                      "data": {"mode": "safe"}}, ns)
    cache = Cache(client, namespace=ns)
    cache.informer_for(CONFIG_MAPS)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(30)
        await use(cache, ns)
        tg.cancel_scope.cancel()


async def test_mutates_a_shared_object(apiserver, client):
    async def use(cache, ns):
        settings = await cache.get(CONFIG_MAPS, "settings", ns, shared=True)
        settings["data"]["mode"] = "fast"  # corrupts what every other reader sees
    await read_settings(apiserver, client, use)


async def test_reads_without_mutating(apiserver, client):
    async def use(cache, ns):
        settings = await cache.get(CONFIG_MAPS, "settings", ns, shared=True)
        assert settings["data"]["mode"] == "safe"
        copy = await cache.get(CONFIG_MAPS, "settings", ns)
        copy["data"]["mode"] = "fast"  # a copy is the caller's own
    await read_settings(apiserver, client, use)
'''


def test_the_pytest_plugin_fails_the_test_that_mutates_a_cached_object(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """An inner session on this session's backend: the test that changed a shared object
    fails, naming it and the field; the one that did not passes."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    monkeypatch.delenv(ENV, raising=False)
    pytester.makepyfile(test_inner=INNER_TEST)
    pytester.makeini("[pytest]\nasyncio_mode = auto\n"
                     "asyncio_default_fixture_loop_scope = function\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_inner.py::test_mutates_a_shared_object - *"])
    result.stdout.re_match_lines([
        r"E +\S*CachedObjectMutated: configmaps/v1 \S+/settings: a shared read was mutated "
        r"by its reader at \.data\.mode "
        r"\(was 'safe', now 'fast'\).*"])


async def test_a_cache_can_share_the_reads_of_chosen_kinds_by_default(
        apiserver: Cluster, client: Client) -> None:
    ns = apiserver.namespace
    await client.create(PODS, pod("a"), ns)
    await client.create(CONFIG_MAPS, {"metadata": {"name": "c"}, "data": {"k": "v"}}, ns)
    cache = Cache(client, namespace=ns, shared_reads={PODS})
    cache.informer_for(PODS)
    cache.informer_for(CONFIG_MAPS)
    async with running(cache):
        assert await cache.get(PODS, "a", ns) is await cache.get(PODS, "a", ns)
        assert (await cache.list(PODS, ns))[0] is await cache.get(PODS, "a", ns)
        assert await cache.get(PODS, "a", ns, shared=False) is not await cache.get(PODS, "a", ns)
        assert await cache.get(CONFIG_MAPS, "c", ns) is not await cache.get(CONFIG_MAPS, "c", ns)
        assert await cache.get(CONFIG_MAPS, "c", ns, shared=True) is await cache.get(
            CONFIG_MAPS, "c", ns, shared=True)
    assert DETECTOR.take() == []


def test_the_record_is_checked_and_emptied_when_it_reaches_its_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    detector = MutationDetector()
    monkeypatch.setattr(mutation_detector, "RECORD_LIMIT", 3)
    changed: dict[str, Any] = {"a": 1}
    detector.record("pods", ObjectKey("n", "p0"), b'{"a":1}', changed)
    changed["a"] = 2  # noticed by the check the third record makes
    detector.record("pods", ObjectKey("n", "p1"), b'{"a":1}', {"a": 1})
    assert detector._shared and not detector._found
    detector.record("pods", ObjectKey("n", "p2"), b'{"a":1}', {"a": 1})
    assert not detector._shared
    (found,) = detector.take()
    assert "pods n/p0: a shared read was mutated by its reader at .a (was 1, now 2)" in found
