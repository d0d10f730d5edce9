"""``reconcilekit.crd.install_crds`` on an API server: CRDs created (or applied) and
served before it returns, a name clash refused at once with kube-apiserver's words, and
a custom kind's standard conditions field validated as ``metav1.Condition``.

On a real cluster the CRDs (group install.reconcilekit.dev) are deleted when the session
ends; the objects go with the test's namespace.
"""

from __future__ import annotations

import logging
from typing import NotRequired, TypedDict

import pytest
from cache_helpers import running

from reconcilekit import Cache, Client, Invalid
from reconcilekit.crd import CRDInstallError, CustomKind, Version, install_crds
from reconcilekit.kinds import CUSTOM_RESOURCE_DEFINITIONS, Condition, ObjectMeta
from reconcilekit.testing import Cluster

GROUP = "install.reconcilekit.dev"


class GaugeStatus(TypedDict, total=False):
    conditions: list[Condition]


class Gauge(TypedDict):
    apiVersion: str
    kind: str
    metadata: ObjectMeta
    status: NotRequired[GaugeStatus]


def _kind(kind: str, plural: str, **names: str) -> CustomKind[Gauge]:
    return CustomKind(group=GROUP, kind=kind, plural=plural,
                      versions=[Version("v1", Gauge, storage=True)], **names)


async def _install(apiserver: Cluster, client: Client, kinds: list[CustomKind[Gauge]],
                   **options: bool) -> list[str]:
    for kind in kinds:
        apiserver.delete_at_end(CUSTOM_RESOURCE_DEFINITIONS.path(name=f"{kind.plural}.{GROUP}"))
    return await install_crds(client, kinds, **options)


async def test_installed_crds_are_served_when_it_returns_and_kept_unless_updated(
        apiserver: Cluster) -> None:
    gauges = _kind("Gauge", "gauges")
    async with Client(apiserver.configuration) as client:
        assert await _install(apiserver, client, [gauges]) == [f"gauges.{GROUP}"]
        # served at once: a list and a create need no retry
        assert (await client.list(gauges.resource, apiserver.namespace))["items"] == []
        await client.create(gauges.resource, {"metadata": {"name": "g"}}, apiserver.namespace)

        assert await install_crds(client, [gauges]) == []  # there already: kept as is
        wider = CustomKind(group=GROUP, kind="Gauge", plural="gauges", short_names=["gg"],
                           versions=[Version("v1", Gauge, storage=True)])
        assert await install_crds(client, [wider]) == []
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, f"gauges.{GROUP}")
        assert "shortNames" not in crd["spec"]["names"]

        assert await install_crds(client, [wider], update=True) == [f"gauges.{GROUP}"]
        crd = await client.get(CUSTOM_RESOURCE_DEFINITIONS, f"gauges.{GROUP}")
        assert crd["spec"]["names"].get("shortNames") == ["gg"]


async def test_a_cache_started_right_after_the_install_lists_at_once_and_logs_nothing(
        apiserver: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    needles = _kind("Needle", "needles")
    caplog.set_level(logging.INFO, logger="reconcilekit")
    async with Client(apiserver.configuration) as client:
        await _install(apiserver, client, [needles])
        cache = Cache(client, namespace=apiserver.namespace)
        cache.informer_for(needles.resource)
        async with running(cache):
            assert await cache.list(needles.resource, apiserver.namespace) == []
        errors = client.statistics().errors
        assert not {key: n for key, n in errors.items() if key[1] == "needles"}, errors
    noise = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert noise == []


async def test_a_crd_whose_names_clash_fails_at_once_with_the_servers_reason(
        apiserver: Cluster) -> None:
    async with Client(apiserver.configuration) as client:
        await _install(apiserver, client, [_kind("Dial", "dials")])
        clash = _kind("Dial", "dialsagain", singular="dialagain")
        with pytest.raises(CRDInstallError) as caught:
            await _install(apiserver, client, [clash])
        assert str(caught.value) == (
            f'CRD dialsagain.{GROUP} cannot be established: ListKindConflict: '
            '"DialList" is already in use')


async def test_a_crd_the_server_refuses_is_an_error_naming_it(apiserver: Cluster) -> None:
    crd = _kind("Knob", "knobs").crd()
    crd["metadata"]["name"] = "knobs.elsewhere.reconcilekit.dev"  # not plural.group
    async with Client(apiserver.configuration) as client:
        with pytest.raises(CRDInstallError) as caught:
            await install_crds(client, [crd])
        assert str(caught.value).startswith(
            "cannot install CRD knobs.elsewhere.reconcilekit.dev: "), caught.value
        assert "must be spec.names.plural+\".\"+spec.group" in str(caught.value), caught.value
        with pytest.raises(CRDInstallError, match=r"needs metadata\.name"):
            await install_crds(client, [{"spec": crd["spec"]}])


async def test_a_malformed_condition_in_a_custom_kinds_status_is_refused(
        apiserver: Cluster) -> None:
    meters = _kind("Meter", "meters")
    ns = apiserver.namespace
    async with Client(apiserver.configuration) as client:
        await _install(apiserver, client, [meters])
        await client.create(meters.resource, {"metadata": {"name": "m"}}, ns)
        good: Condition = {"type": "Ready", "status": "True", "reason": "Measured",
                           "message": "", "lastTransitionTime": "2026-11-29T08:00:00Z"}
        stored = await client.patch_status(meters.resource, "m",
                                           {"status": {"conditions": [good]}}, ns)
        assert stored["status"]["conditions"] == [good]
        for field, value, detail in [
                ("status", "Maybe", 'Unsupported value: "Maybe"'),
                ("reason", "not camel", "should match"),
                ("type", "", "should match"),
                ("lastTransitionTime", "yesterday", "must be of type date-time"),
                ("message", "m" * 32769, "Too long")]:
            with pytest.raises(Invalid) as caught:
                await client.patch_status(meters.resource, "m", {"status": {
                    "conditions": [{**good, field: value}]}}, ns)
            assert f"conditions[0].{field}: " in caught.value.message, caught.value.message
            assert detail in caught.value.message, caught.value.message
        with pytest.raises(Invalid) as caught:
            await client.patch_status(meters.resource, "m", {"status": {"conditions": [
                good, {**good, "status": "False"}]}}, ns)
        assert "Duplicate value" in caught.value.message, caught.value.message
