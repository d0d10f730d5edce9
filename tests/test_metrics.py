"""Controller, leader election and cache metrics under controller-runtime's names."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import anyio
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from reconcilekit import Cache, Client
from reconcilekit.kinds import CONFIG_MAPS
from reconcilekit.metrics import (
    InformerStatistics,
    PrometheusCacheMetrics,
    PrometheusLeaderElectionMetrics,
    PrometheusReconcileMetrics,
)
from reconcilekit.testing import Cluster

RECONCILE_TIME_BUCKETS = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
]  # fmt: skip


def scrape(registry: CollectorRegistry) -> dict[str, tuple[str, str, dict[str, float]]]:
    """Family name -> (type, help, {sample as exposed: value}) from the text exposition."""
    families = {}
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        samples = {}
        for s in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
            samples[f"{s.name}{{{labels}}}"] = s.value
        families[family.name] = (family.type, family.documentation, samples)
    return families


def value(registry: CollectorRegistry, sample: str, /, **labels: str) -> float | None:
    return registry.get_sample_value(sample, labels)


def test_controller_series_exist_from_the_start_with_controller_runtime_names() -> None:
    registry = CollectorRegistry()
    PrometheusReconcileMetrics(registry, "web")
    families = scrape(registry)
    assert {name: (kind, help_) for name, (kind, help_, _) in families.items()} == {
        "controller_runtime_reconcile": (
            "counter", "Total number of reconciliations per controller"),
        "controller_runtime_reconcile_errors": (
            "counter", "Total number of reconciliation errors per controller"),
        "controller_runtime_terminal_reconcile_errors": (
            "counter", "Total number of terminal reconciliation errors per controller"),
        "controller_runtime_reconcile_panics": (
            "counter", "Total number of reconciliation panics per controller"),
        "controller_runtime_reconcile_timeouts": (
            "counter", "Total number of reconciliation timeouts per controller"),
        "controller_runtime_reconcile_time_seconds": (
            "histogram", "Length of time per reconciliation per controller"),
        "controller_runtime_max_concurrent_reconciles": (
            "gauge", "Maximum number of concurrent reconciles per controller"),
        "controller_runtime_active_workers": (
            "gauge", "Number of currently used workers per controller"),
        "reconcilekit_reconcile_retries": (
            "histogram", "Consecutive failed reconciles of a key before it succeeded or was "
                         "forgotten, per controller"),
    }
    assert families["controller_runtime_reconcile"][2] == {
        f'controller_runtime_reconcile_total{{controller="web",result="{result}"}}': 0.0
        for result in ("success", "error", "requeue", "requeue_after")}
    for name in ("controller_runtime_reconcile_errors", "controller_runtime_reconcile_panics",
                 "controller_runtime_terminal_reconcile_errors",
                 "controller_runtime_reconcile_timeouts"):
        assert families[name][2] == {f'{name}_total{{controller="web"}}': 0.0}
    for name in ("controller_runtime_max_concurrent_reconciles",
                 "controller_runtime_active_workers"):
        assert families[name][2] == {f'{name}{{controller="web"}}': 0.0}


def test_no_created_series_are_exported() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    metrics.observe("success", 0.1)
    metrics.observe_retries(2)
    PrometheusLeaderElectionMetrics(registry, "lease")
    assert "_created" not in generate_latest(registry).decode()


def test_observe_counts_the_result_and_times_it_in_controller_runtime_buckets() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    metrics.observe("requeue_after", 0.3)
    metrics.observe("success", 0.004)
    assert value(registry, "controller_runtime_reconcile_total",
                 controller="web", result="requeue_after") == 1
    assert value(registry, "controller_runtime_reconcile_total",
                 controller="web", result="success") == 1
    buckets = {s.labels["le"]: s.value
               for f in text_string_to_metric_families(generate_latest(registry).decode())
               if f.name == "controller_runtime_reconcile_time_seconds"
               for s in f.samples if s.name.endswith("_bucket")}
    assert [float(le) for le in buckets] == [*RECONCILE_TIME_BUCKETS, float("inf")]
    assert (buckets["0.005"], buckets["0.25"], buckets["0.3"], buckets["+Inf"]) == (1, 1, 2, 2)
    assert value(registry, "controller_runtime_reconcile_time_seconds_sum",
                 controller="web") == pytest.approx(0.304)


def test_unknown_result_raises_instead_of_making_a_new_series() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    with pytest.raises(ValueError, match="result must be one of"):
        metrics.observe("failure", 1.0)
    assert value(registry, "controller_runtime_reconcile_total",
                 controller="web", result="failure") is None
    assert value(registry, "controller_runtime_reconcile_time_seconds_count",
                 controller="web") == 0


def test_each_error_method_counts_its_own_family() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    metrics.error()
    metrics.terminal_error()
    metrics.error()
    metrics.timeout()
    assert value(registry, "controller_runtime_reconcile_errors_total", controller="web") == 2
    assert value(registry, "controller_runtime_terminal_reconcile_errors_total",
                 controller="web") == 1
    assert value(registry, "controller_runtime_reconcile_timeouts_total", controller="web") == 1
    assert value(registry, "controller_runtime_reconcile_panics_total", controller="web") == 0


def test_workers_gauges_follow_started_finished_and_max_concurrent() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    metrics.set_max_concurrent(4)
    metrics.worker_started()
    metrics.worker_started()
    metrics.worker_finished()
    assert value(registry, "controller_runtime_max_concurrent_reconciles",
                 controller="web") == 4
    assert value(registry, "controller_runtime_active_workers", controller="web") == 1


def test_retries_histogram_is_per_controller_never_per_key() -> None:
    registry = CollectorRegistry()
    metrics = PrometheusReconcileMetrics(registry, "web")
    for n in (1, 3, 3, 40):
        metrics.observe_retries(n)
    with pytest.raises(ValueError, match="retries must be >= 0"):
        metrics.observe_retries(-1)
    family = next(f for f in text_string_to_metric_families(generate_latest(registry).decode())
                  if f.name == "reconcilekit_reconcile_retries")
    assert {tuple(sorted(s.labels)) for s in family.samples} == {
        ("controller",), ("controller", "le")}
    buckets = {s.labels["le"]: s.value for s in family.samples if s.name.endswith("_bucket")}
    assert buckets == {"1.0": 1, "2.0": 1, "4.0": 3, "8.0": 3, "16.0": 3, "32.0": 3,
                       "64.0": 4, "128.0": 4, "+Inf": 4}
    assert value(registry, "reconcilekit_reconcile_retries_sum", controller="web") == 47


def test_two_controllers_share_one_registry_and_a_duplicate_name_raises() -> None:
    registry = CollectorRegistry()
    web = PrometheusReconcileMetrics(registry, "web")
    db = PrometheusReconcileMetrics(registry, "db")
    web.observe("success", 0.1)
    db.observe("error", 0.2)
    db.error()
    samples = scrape(registry)["controller_runtime_reconcile"][2]
    assert samples['controller_runtime_reconcile_total{controller="web",result="success"}'] == 1
    assert samples['controller_runtime_reconcile_total{controller="db",result="error"}'] == 1
    assert len(samples) == 8
    assert value(registry, "controller_runtime_reconcile_errors_total", controller="web") == 0
    with pytest.raises(ValueError, match="'web' already reports to this registry"):
        PrometheusReconcileMetrics(registry, "web")
    other = CollectorRegistry()
    PrometheusReconcileMetrics(other, "web")  # the same name on another registry is another manager
    assert value(other, "controller_runtime_reconcile_total",
                 controller="web", result="success") == 0


def test_leader_gauge_is_zero_until_leading_and_back_to_zero_on_loss() -> None:
    registry = CollectorRegistry()
    leader = PrometheusLeaderElectionMetrics(registry, "web-lock")
    PrometheusLeaderElectionMetrics(registry, "db-lock")
    family = scrape(registry)["leader_election_master_status"]
    assert family[0] == "gauge"
    assert family[1].startswith("Gauge of if the reporting system is master of the relevant "
                                "lease, 0 indicates backup, 1 indicates master.")
    assert family[2] == {'leader_election_master_status{name="web-lock"}': 0.0,
                         'leader_election_master_status{name="db-lock"}': 0.0}
    leader.set_leader(True)
    assert value(registry, "leader_election_master_status", name="web-lock") == 1
    leader.set_leader(False)
    assert value(registry, "leader_election_master_status", name="web-lock") == 0
    with pytest.raises(ValueError, match="'web-lock' already reports"):
        PrometheusLeaderElectionMetrics(registry, "web-lock")


def informer(resource: str, **changes: object) -> InformerStatistics:
    base = InformerStatistics(resource=resource, objects=0, synced=False, lists=0, relists=0,
                              watch_restarts=0, dead_watches=0, events=0, last_event_age=None,
                              watching=False, last_error=None)
    return dataclasses.replace(base, **changes)  # type: ignore[arg-type]


def test_cache_collector_reads_statistics_at_scrape_time() -> None:
    registry = CollectorRegistry()
    stats = [informer("pods/v1", objects=3, synced=True, relists=1, watch_restarts=4,
                      dead_watches=1, last_event_age=2.5, watching=True, bytes=2048),
             informer("leases.coordination.k8s.io/v1")]
    PrometheusCacheMetrics(registry, lambda: stats)
    families = scrape(registry)
    assert {name: kind for name, (kind, _, _) in families.items()} == {
        "reconcilekit_cache_objects": "gauge",
        "reconcilekit_cache_bytes": "gauge",
        "reconcilekit_cache_relists": "counter",
        "reconcilekit_watch_restarts": "counter",
        "reconcilekit_dead_watches": "counter",
        "reconcilekit_cache_last_event_age_seconds": "gauge",
        "reconcilekit_cache_synced": "gauge",
        "reconcilekit_watch_open": "gauge",
        "reconcilekit_cache_shared_read_bytes": "gauge",
        "reconcilekit_cache_waiting": "gauge",
    }
    pods = '{resource="pods/v1"}'
    leases = '{resource="leases.coordination.k8s.io/v1"}'
    assert families["reconcilekit_cache_relists"][2] == {
        f"reconcilekit_cache_relists_total{leases}": 0,
        f"reconcilekit_cache_relists_total{pods}": 1}
    assert families["reconcilekit_watch_restarts"][2][
        f"reconcilekit_watch_restarts_total{pods}"] == 4
    assert families["reconcilekit_dead_watches"][2][f"reconcilekit_dead_watches_total{pods}"] == 1
    assert families["reconcilekit_cache_objects"][2][f"reconcilekit_cache_objects{pods}"] == 3
    assert families["reconcilekit_cache_bytes"][2][f"reconcilekit_cache_bytes{pods}"] == 2048
    # an informer that has seen nothing yet has no age at all, rather than a made-up one
    assert families["reconcilekit_cache_last_event_age_seconds"][2] == {
        f"reconcilekit_cache_last_event_age_seconds{pods}": 2.5}
    assert families["reconcilekit_cache_synced"][2] == {
        f"reconcilekit_cache_synced{leases}": 0, f"reconcilekit_cache_synced{pods}": 1}
    assert families["reconcilekit_watch_open"][2][f"reconcilekit_watch_open{leases}"] == 0

    assert families["reconcilekit_cache_waiting"][2] == {
        f"reconcilekit_cache_waiting{leases}": 0, f"reconcilekit_cache_waiting{pods}": 0}

    stats[1] = informer("leases.coordination.k8s.io/v1", objects=1, synced=True, watching=True)
    stats.append(informer("kvstores.example.com/v1", shared_bytes=512,
                          waiting_for="CustomResourceDefinition kvstores.example.com"))
    assert value(registry, "reconcilekit_cache_waiting", resource="kvstores.example.com/v1") == 1
    assert value(registry, "reconcilekit_cache_shared_read_bytes",
                 resource="kvstores.example.com/v1") == 512
    stats.pop()  # stopped: its series end
    assert "kvstores" not in str(scrape(registry))
    assert value(registry, "reconcilekit_cache_synced",
                 resource="leases.coordination.k8s.io/v1") == 1
    assert value(registry, "reconcilekit_cache_objects",
                 resource="leases.coordination.k8s.io/v1") == 1


def test_cache_collector_reports_the_memory_budget_when_there_is_one() -> None:
    registry = CollectorRegistry()
    PrometheusCacheMetrics(registry, lambda: [], budget=64 * 2**20)
    assert value(registry, "reconcilekit_cache_memory_budget_bytes") == 64 * 2**20
    unlimited = CollectorRegistry()
    PrometheusCacheMetrics(unlimited, lambda: [])
    assert "reconcilekit_cache_memory_budget_bytes" not in scrape(unlimited)


def test_cache_collector_merges_informers_of_one_resource_into_one_series() -> None:
    registry = CollectorRegistry()
    stats = [informer("pods/v1", objects=5, synced=True, relists=1, watch_restarts=2,
                      last_event_age=9.0, watching=True),
             informer("pods/v1", objects=4, synced=True, relists=2, watch_restarts=1,
                      dead_watches=1, last_event_age=1.0, watching=False)]
    PrometheusCacheMetrics(registry, lambda: stats)
    assert value(registry, "reconcilekit_cache_objects", resource="pods/v1") == 5
    assert value(registry, "reconcilekit_cache_relists_total", resource="pods/v1") == 3
    assert value(registry, "reconcilekit_watch_restarts_total", resource="pods/v1") == 3
    assert value(registry, "reconcilekit_dead_watches_total", resource="pods/v1") == 1
    assert value(registry, "reconcilekit_cache_last_event_age_seconds",
                 resource="pods/v1") == 1.0
    assert value(registry, "reconcilekit_cache_synced", resource="pods/v1") == 1
    assert value(registry, "reconcilekit_watch_open", resource="pods/v1") == 0
    assert sum(1 for line in generate_latest(registry).decode().splitlines()
               if line.startswith("reconcilekit_cache_objects{")) == 1


def test_second_cache_collector_on_a_registry_raises() -> None:
    registry = CollectorRegistry()
    PrometheusCacheMetrics(registry, list)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusCacheMetrics(registry, list)


@pytest.fixture
async def client(apiserver: Cluster) -> AsyncIterator[Client]:
    async with Client(apiserver.configuration) as c:
        yield c


async def test_cache_collector_reports_a_running_cache(apiserver: Cluster,
                                                        client: Client) -> None:
    for i in range(3):
        await client.create(CONFIG_MAPS, {"metadata": {"name": f"cm{i}"}}, apiserver.namespace)
    cache = Cache(client, namespace=apiserver.namespace)
    cache.informer_for(CONFIG_MAPS)
    registry = CollectorRegistry()
    PrometheusCacheMetrics(registry, cache.statistics)
    assert value(registry, "reconcilekit_cache_synced", resource="configmaps/v1") == 0
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await cache.wait_for_sync(10)
        assert value(registry, "reconcilekit_cache_synced", resource="configmaps/v1") == 1
        listed = await client.list(CONFIG_MAPS, apiserver.namespace)  # (+ kube-root-ca.crt)
        assert value(registry, "reconcilekit_cache_objects",
                     resource="configmaps/v1") == len(listed["items"]) >= 3
        assert value(registry, "reconcilekit_cache_relists_total",
                     resource="configmaps/v1") == 0
        tg.cancel_scope.cancel()


async def test_manager_counts_its_clients_requests_by_code(apiserver: Cluster) -> None:
    from reconcilekit import Manager

    async with Client(apiserver.configuration) as client:
        manager = Manager(client)
        ns = apiserver.namespace
        await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "m"}}, ns)
        with pytest.raises(Exception, match="already exists"):
            await client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                             "metadata": {"name": "m"}}, ns)
        registry = manager.registry
        host = apiserver.configuration.host.split("://", 1)[1]
        assert value(registry, "rest_client_requests_total", code="201", method="POST",
                     host=host) == 1
        assert value(registry, "reconcilekit_client_requests_total", verb="create",
                     resource="configmaps", code="409") == 1
        assert "rest_client_requests_created" not in scrape(registry)
