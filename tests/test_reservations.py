"""Reservations: exclusive, expiring, in-process holds on keys."""

from __future__ import annotations

import pytest

from reconcilekit import Reservations
from reconcilekit.testing import FakeClock


def test_one_holder_at_a_time_and_reentrant() -> None:
    held: Reservations[str] = Reservations(clock=FakeClock())
    assert held.try_reserve("pod-a", "claim-1")
    assert held.try_reserve("pod-a", "claim-1")  # re-entrant
    assert not held.try_reserve("pod-a", "claim-2")
    assert held.try_reserve("pod-b", "claim-2")
    assert held.holder("pod-a") == "claim-1" and len(held) == 2
    assert held.contended == 1
    held.release("pod-a", "claim-2")  # not the holder: nothing happens
    assert held.holder("pod-a") == "claim-1"
    held.release("pod-a", "claim-1")
    assert held.holder("pod-a") is None
    assert held.try_reserve("pod-a", "claim-2")


def test_a_hold_expires_after_its_ttl_on_the_clock() -> None:
    clock = FakeClock()
    held: Reservations[str] = Reservations(ttl=10.0, clock=clock)
    assert held.try_reserve("k", "dead-task")
    clock.advance(9.9)
    assert not held.try_reserve("k", "other")
    clock.advance(0.1)
    assert held.holder("k") is None and len(held) == 0
    assert held.try_reserve("k", "other")
    held.release("k", "dead-task")  # a late release cannot free the new holder's hold
    assert held.holder("k") == "other"


def test_holding_releases_on_exit_even_on_error() -> None:
    held: Reservations[str] = Reservations(clock=FakeClock())
    with held.holding("k", "a") as mine:
        assert mine
        with held.holding("k", "b") as theirs:
            assert not theirs
    assert held.holder("k") is None
    with pytest.raises(RuntimeError), held.holding("k", "a"):
        raise RuntimeError("boom")
    assert held.holder("k") is None


def test_ttl_must_be_positive() -> None:
    with pytest.raises(ValueError, match="ttl must be > 0"):
        Reservations(ttl=0)
