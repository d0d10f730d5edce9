"""Expectations and ResourceVersion expectations: observation, UIDs, timeouts."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry

from reconcilekit import Expectations, ResourceVersionExpectations
from reconcilekit.metrics import ExpectationMetrics, PrometheusExpectationMetrics
from reconcilekit.testing import FakeClock

LOGGER = "reconcilekit.expectations"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def exp(clock: FakeClock, registry: CollectorRegistry) -> Expectations[str]:
    return Expectations(
        name="cloneset",
        clock=clock,
        metrics=PrometheusExpectationMetrics(registry, "cloneset"),
    )


def timeouts(registry: CollectorRegistry, controller: str = "cloneset") -> float | None:
    return registry.get_sample_value(
        "reconcilekit_expectation_timeouts_total", {"controller": controller}
    )


# -- counted and UID expectations -------------------------------------------------


def test_nothing_expected_is_satisfied(exp: Expectations[str]) -> None:
    assert exp.satisfied("ns/a")
    assert exp.time_until_expiry("ns/a") is None


def test_creations_are_satisfied_once_all_are_observed(exp: Expectations[str]) -> None:
    exp.expect_creations("ns/a", 2)
    exp.creation_observed("ns/a")
    assert not exp.satisfied("ns/a")
    exp.creation_observed("ns/a")
    assert exp.satisfied("ns/a")
    assert len(exp) == 0
    exp._check_invariants()


def test_counted_deletions(exp: Expectations[str]) -> None:
    exp.expect_deletions("ns/a", 1)
    exp.creation_observed("ns/a")  # the wrong kind changes nothing
    assert not exp.satisfied("ns/a")
    exp.deletion_observed("ns/a")
    assert exp.satisfied("ns/a")


def test_uid_deletion_is_counted_once_for_update_and_delete(exp: Expectations[str]) -> None:
    exp.expect_deletions_of("ns/a", ["uid-1", "uid-2"])
    exp.deletion_observed_uid("ns/a", "uid-1")  # update: deletionTimestamp set
    exp.deletion_observed_uid("ns/a", "uid-1")  # the final delete event
    exp.deletion_observed_uid("ns/a", "uid-9")  # not ours
    assert not exp.satisfied("ns/a")
    exp.deletion_observed_uid("ns/a", "uid-2")
    assert exp.satisfied("ns/a")
    exp._check_invariants()


def test_observations_never_satisfy_a_later_expectation(exp: Expectations[str]) -> None:
    for _ in range(3):
        exp.creation_observed("ns/a")
        exp.deletion_observed("ns/a")
    exp.expect_creations("ns/a", 1)
    exp.expect_deletions("ns/a", 1)
    assert not exp.satisfied("ns/a")
    exp._check_invariants()


def test_expecting_more_joins_the_pending_record_and_keeps_its_deadline(
    exp: Expectations[str], clock: FakeClock
) -> None:
    exp.expect_creations("ns/a", 1)
    clock.advance(100)
    exp.expect_creations("ns/a", 1)
    exp.expect_deletions_of("ns/a", ["uid-1"])
    assert exp.time_until_expiry("ns/a") == 200
    exp.expect_creations("ns/a", 0)
    exp.expect_deletions("ns/b", 0)
    assert exp.satisfied("ns/b")
    with pytest.raises(ValueError):
        exp.expect_creations("ns/a", -1)


def test_delete_forgets_without_a_timeout(
    exp: Expectations[str], clock: FakeClock, registry: CollectorRegistry
) -> None:
    exp.expect_creations("ns/a", 3)
    exp.delete("ns/a")
    assert exp.satisfied("ns/a")
    clock.advance(1000)
    assert exp.satisfied("ns/a")
    assert timeouts(registry) == 0


def test_expectations_time_out_incident_2(
    exp: Expectations[str],
    clock: FakeClock,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The CloneSet expectations incident (docs/reliability.md): the event that would satisfy an
    expectation never arrives.

    The watch broke and the relist came after the Pod was created and
    deleted, so neither event is ever observed. The key must not freeze:
    at the timeout it is satisfied, logged once with key and age, counted
    once, and ``time_until_expiry`` told the reconciler when to look again.

    Checked against the buggy behaviour by breaking the code and running
    this test: with ``TimedRecords.expire`` never dropping records (no
    timeout, the original bug) the key stays unsatisfied and the test fails;
    with it dropping records without logging or counting, the caplog and
    metric assertions fail.
    """
    caplog.set_level(logging.WARNING, logger=LOGGER)
    exp.expect_creations("ns/web", 1)
    clock.advance(299.5)
    assert not exp.satisfied("ns/web")
    assert exp.time_until_expiry("ns/web") == pytest.approx(0.5)
    assert caplog.records == []
    clock.advance(0.5)
    assert exp.satisfied("ns/web")
    assert exp.time_until_expiry("ns/web") is None
    [record] = caplog.records
    assert record.name == LOGGER
    assert record.levelno == logging.WARNING
    assert "'ns/web'" in record.getMessage() and "300.000s" in record.getMessage()
    assert record.__dict__["key"] == "ns/web" and record.__dict__["age"] == 300.0
    assert timeouts(registry) == 1
    exp.satisfied("ns/web")
    assert len(caplog.records) == 1 and timeouts(registry) == 1


def test_an_unvisited_expired_record_is_reported_by_the_next_call(
    exp: Expectations[str],
    clock: FakeClock,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    exp.expect_creations("ns/a", 1)
    clock.advance(10)
    exp.expect_deletions("ns/b", 1)
    clock.advance(400)
    exp.creation_observed("ns/other")  # any call notices both
    assert [r.__dict__["key"] for r in caplog.records] == ["ns/a", "ns/b"]
    assert [r.__dict__["age"] for r in caplog.records] == [410.0, 400.0]
    assert timeouts(registry) == 2
    assert len(exp) == 0


def test_timeout_is_configurable_and_must_be_positive(clock: FakeClock) -> None:
    exp: Expectations[str] = Expectations(timeout=5, clock=clock)
    exp.expect_creations("a", 1)
    clock.advance(5)
    assert exp.satisfied("a")
    with pytest.raises(ValueError):
        Expectations(timeout=0)


def test_metrics_hook_default_does_nothing_and_counters_share_a_registry(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    ExpectationMetrics().on_timeout()
    first = PrometheusExpectationMetrics(registry, "a")
    second = PrometheusExpectationMetrics(registry, "b")
    first.on_timeout()
    second.on_timeout()
    second.on_timeout()
    assert timeouts(registry, "a") == 1
    assert timeouts(registry, "b") == 2


# -- resourceVersion expectations -------------------------------------------------

Key = tuple[str, str]
POD: Key = ("pods", "ns/web-0")


@pytest.fixture
def rv(clock: FakeClock, registry: CollectorRegistry) -> ResourceVersionExpectations[Key]:
    return ResourceVersionExpectations(
        name="cloneset", clock=clock, metrics=PrometheusExpectationMetrics(registry, "cloneset")
    )


def test_rv_unsatisfied_until_the_cache_observes_the_written_version(
    rv: ResourceVersionExpectations[Key],
) -> None:
    assert rv.satisfied(POD)
    rv.observed(POD, "100")
    rv.expect(POD, "105")
    assert not rv.satisfied(POD)
    rv.observed(POD, "104")
    rv.observed(("pods", "ns/other"), "200")
    assert not rv.satisfied(POD)
    rv.observed(POD, "105")
    assert rv.satisfied(POD)
    rv._check_invariants()


def test_rv_a_newer_observation_satisfies(rv: ResourceVersionExpectations[Key]) -> None:
    rv.expect(POD, "9")
    rv.observed(POD, "10")  # integer order, not string order
    assert rv.satisfied(POD)


def test_rv_an_observation_before_expect_counts(rv: ResourceVersionExpectations[Key]) -> None:
    rv.observed(POD, "105")  # the watch was faster than the write's response
    rv.observed(POD, "103")  # an older version does not lower what was seen
    rv.expect(POD, "105")
    assert rv.satisfied(POD)
    rv.expect(POD, "106")
    assert not rv.satisfied(POD)


def test_rv_a_newer_expect_raises_the_wanted_version_and_restarts_the_timeout(
    rv: ResourceVersionExpectations[Key], clock: FakeClock
) -> None:
    rv.expect(POD, "110")
    clock.advance(100)
    rv.expect(POD, "105")  # lower: the wanted version stays 110
    assert rv.time_until_expiry(POD) == 300
    rv.observed(POD, "105")
    assert not rv.satisfied(POD)
    rv.observed(POD, "110")
    assert rv.satisfied(POD)
    rv._check_invariants()


def test_rv_non_integer_versions_are_satisfied_by_the_next_observation(
    rv: ResourceVersionExpectations[Key],
) -> None:
    rv.observed(POD, "zzz")
    rv.expect(POD, "abc")
    assert not rv.satisfied(POD)  # an earlier observation cannot be ordered
    rv.observed(POD, "aaa")
    assert rv.satisfied(POD)
    rv.expect(POD, "7")
    rv.observed(POD, "not-a-number")
    assert rv.satisfied(POD)


def test_rv_expectation_times_out_incident_2(
    rv: ResourceVersionExpectations[Key],
    clock: FakeClock,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The CloneSet expectations incident (docs/reliability.md) for resourceVersions: the
    event carrying my write is lost.

    Checked against the buggy behaviour like the counted variant: with
    ``TimedRecords.expire`` never dropping records the object stays stale
    forever and this test fails.
    """
    caplog.set_level(logging.WARNING, logger=LOGGER)
    rv.expect(POD, "42")
    clock.advance(299)
    assert not rv.satisfied(POD)
    clock.advance(1)
    assert rv.satisfied(POD)
    [record] = caplog.records
    assert record.__dict__["key"] == POD and record.__dict__["age"] == 300.0
    assert "'42'" in record.getMessage()
    assert timeouts(registry) == 1


def test_rv_forgets_observations_after_the_timeout(
    rv: ResourceVersionExpectations[Key], clock: FakeClock
) -> None:
    for i in range(100):
        rv.observed(("pods", f"ns/p{i}"), str(i))
    clock.advance(301)
    rv.observed(POD, "1")
    assert len(rv._seen) == 1
    rv.delete(POD)
    assert len(rv._seen) == 0
    rv.expect(POD, "5")
    rv.delete(POD)
    assert rv.satisfied(POD)
