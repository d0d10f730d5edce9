"""Rate limiters: client-go's defaults and arithmetic, driven by a FakeClock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconcilekit.testing import FakeClock
from reconcilekit.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    default_controller_rate_limiter,
)


def test_exponential_doubles_from_base_delay_to_the_cap() -> None:
    limiter = ItemExponentialFailureRateLimiter()
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == [0.005, 0.01, 0.02, 0.04]
    assert delays[17] == 655.36
    assert delays[18:] == [1000.0, 1000.0]
    assert limiter.num_requeues("a") == 20


def test_exponential_never_overflows() -> None:
    limiter = ItemExponentialFailureRateLimiter(1e300, 1e308)
    for _ in range(1100):
        assert limiter.when("a") <= 1e308
    assert limiter.when("a") == 1e308
    tiny = ItemExponentialFailureRateLimiter(5e-324, 1.0)
    assert max(tiny.when("b") for _ in range(1100)) == 1.0


def test_exponential_counts_items_separately_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(1.0, 100.0)
    assert [limiter.when("a"), limiter.when("a"), limiter.when("b")] == [1.0, 2.0, 1.0]
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.num_requeues("b") == 1
    assert limiter.when("a") == 1.0


def test_bucket_allows_a_burst_then_spaces_retries_by_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10, 100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    clock.advance(0.2)  # both reservations are now due; nothing saved
    assert limiter.when("z") == pytest.approx(0.1)
    assert limiter.num_requeues("x") == 0
    limiter.forget("x")


def test_bucket_refills_only_up_to_the_burst() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(2, 3, clock=clock)
    for _ in range(3):
        limiter.when("a")
    clock.advance(1000)
    assert [limiter.when("a") for _ in range(4)] == [0.0, 0.0, 0.0, 0.5]


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_bucket_rejects_a_bucket_that_never_fills(qps: float, burst: int) -> None:
    with pytest.raises(ValueError):
        BucketRateLimiter(qps, burst, clock=FakeClock())


@settings(max_examples=100, deadline=None)
@given(
    qps=st.floats(0.5, 50),
    burst=st.integers(1, 20),
    gaps=st.lists(st.floats(0, 2), min_size=1, max_size=200),
)
def test_bucket_never_grants_more_than_burst_plus_rate(
    qps: float, burst: int, gaps: list[float]
) -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(qps, burst, clock=clock)
    start = clock.monotonic()
    granted = []
    for gap in gaps:
        clock.advance(gap)
        granted.append(clock.monotonic() + limiter.when("k"))
    assert granted == sorted(granted)
    for n, at in enumerate(granted, start=1):
        assert n <= burst + (at - start) * qps + 1e-6


def test_fast_slow_switches_after_max_fast_attempts() -> None:
    limiter = ItemFastSlowRateLimiter(0.1, 10.0, 3)
    assert [limiter.when("a") for _ in range(5)] == [0.1, 0.1, 0.1, 10.0, 10.0]
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert limiter.when("a") == 0.1


def test_max_of_returns_the_longest_delay_and_forgets_everywhere() -> None:
    fast_slow = ItemFastSlowRateLimiter(0.1, 10.0, 1)
    exponential = ItemExponentialFailureRateLimiter(1.0, 100.0)
    limiter: MaxOfRateLimiter[str] = MaxOfRateLimiter(fast_slow, exponential)
    assert [limiter.when("a") for _ in range(4)] == [1.0, 10.0, 10.0, 10.0]
    assert limiter.when("a") == 16.0
    assert limiter.num_requeues("a") == 5
    limiter.forget("a")
    assert fast_slow.num_requeues("a") == exponential.num_requeues("a") == 0
    with pytest.raises(ValueError):
        MaxOfRateLimiter()


def test_default_controller_rate_limiter_is_per_item_backoff_under_a_bucket() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock=clock)
    assert [limiter.when("a") for _ in range(3)] == [0.005, 0.01, 0.02]
    for i in range(97):
        assert limiter.when(i) == 0.005
    # 100 tokens spent: the bucket now dominates for a fresh item
    assert limiter.when("fresh") == pytest.approx(0.1)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_a_custom_limiter_satisfies_the_protocol_and_combines() -> None:
    class Constant:
        def when(self, item: str) -> float:
            return 7.0

        def forget(self, item: str) -> None:
            pass

        def num_requeues(self, item: str) -> int:
            return 0

    limiter: RateLimiter[str] = Constant()
    combined: MaxOfRateLimiter[str] = MaxOfRateLimiter(limiter, ItemExponentialFailureRateLimiter())
    assert combined.when("a") == 7.0
    assert combined.num_requeues("a") == 1
