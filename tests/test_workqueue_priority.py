"""WorkQueue's order: priorities, moving up, aging, round-robin across lanes, bad input."""

from __future__ import annotations

import pytest
from test_workqueue import drain

from reconcilekit.testing import FakeClock
from reconcilekit.workqueue import LOW_PRIORITY, ItemExponentialFailureRateLimiter, WorkQueue


def lane(key: str) -> str:
    """Keys are "lane/name"."""
    return key.split("/")[0]


async def test_higher_priorities_are_served_first_fifo_within_one() -> None:
    queue: WorkQueue[str] = WorkQueue(aging=100)
    for key, priority in [("low1", LOW_PRIORITY), ("a", 0), ("high", 5), ("low2", LOW_PRIORITY),
                          ("b", 0)]:
        queue.add(key, priority)
    assert drain(queue) == ["high", "a", "b", "low1", "low2"]


async def test_a_pending_key_moves_up_never_down() -> None:
    queue: WorkQueue[str] = WorkQueue(aging=100)
    for key in ("a", "b", "c"):
        queue.add(key, LOW_PRIORITY)
    queue.add("x", 0)
    queue.add("c", 0)  # moves up, behind x
    queue.add("a", LOW_PRIORITY - 5)  # lower: stays where it is
    queue.add("b", LOW_PRIORITY)  # equal: stays
    queue._check_invariants()
    assert drain(queue) == ["x", "c", "a", "b"]


async def test_a_key_added_while_held_comes_back_at_the_highest_priority_given() -> None:
    queue: WorkQueue[str] = WorkQueue(aging=100)
    queue.add("k", LOW_PRIORITY)
    assert await queue.get_with_priority() == ("k", LOW_PRIORITY)
    queue.add("k", LOW_PRIORITY)
    queue.add("k", 3)
    queue.add("other", 1)
    queue.done("k")
    assert await queue.get_with_priority() == ("k", 3)
    queue.done("k")
    assert drain(queue) == ["other"]


async def test_waits_keep_the_highest_priority_and_add_takes_it_over() -> None:
    clock = FakeClock()
    queue: WorkQueue[str] = WorkQueue(clock=clock, aging=100)
    queue.add_after("a", 5, priority=2)
    queue.add_after("a", 1, priority=LOW_PRIORITY)  # earlier deadline, the higher priority kept
    queue.add_after("b", 1)
    queue.add("c", 1)
    clock.advance(1)
    assert drain(queue) == ["a", "c", "b"]
    queue.add_after("d", 10, priority=7)
    queue.add("d")  # pending now, at the wait's 7
    queue.add("e", 6)
    assert drain(queue) == ["d", "e"]


async def test_rate_limited_adds_carry_a_priority() -> None:
    clock = FakeClock()
    limiter: ItemExponentialFailureRateLimiter[str] = ItemExponentialFailureRateLimiter(1.0, 8.0)
    queue: WorkQueue[str] = WorkQueue(clock=clock, rate_limiter=limiter, aging=100)
    assert queue.add_rate_limited("a", LOW_PRIORITY) == 1.0
    assert queue.add_rate_limited("a", 4) is None  # waiting: no failure counted, priority raised
    assert queue.num_requeues("a") == 1
    queue.add_after("b", 1, priority=3)
    clock.advance(1)
    assert drain(queue) == ["a", "b"]


async def test_after_aging_keys_in_a_row_a_lower_priority_gets_one() -> None:
    """A steady stream of normal keys does not starve low ones: one in every aging + 1."""
    queue: WorkQueue[str] = WorkQueue(aging=3)
    for i in range(4):
        queue.add(f"low{i}", LOW_PRIORITY)
    order = []
    for i in range(12):  # one new normal key per key handed out
        queue.add(f"n{i}")
        key = queue.get_nowait()
        order.append(key)
        queue.done(key)
        queue._check_invariants()
    assert order == ["n0", "n1", "n2", "low0", "n3", "n4", "n5", "low1", "n6", "n7", "n8",
                     "low2"]


async def test_aging_turns_go_to_the_lower_priority_served_least_recently() -> None:
    queue: WorkQueue[str] = WorkQueue(aging=1)
    for i in range(3):
        queue.add(f"mid{i}", 0)
        queue.add(f"low{i}", LOW_PRIORITY)
    order = []
    for i in range(6):
        queue.add(f"top{i}", 10)
        order.append(key := queue.get_nowait())
        queue.done(key)
    # the streak starts at the top: top0, then mid (made first), top, low, top, mid
    assert order == ["top0", "mid0", "top1", "low0", "top2", "mid1"]


async def test_keys_of_one_priority_take_turns_across_lanes() -> None:
    queue: WorkQueue[str] = WorkQueue(fairness=lane)
    for i in range(5):
        queue.add(f"busy/{i}")
    queue.add("quiet/0")
    queue.add("other/0")
    queue.add("quiet/1")
    assert drain(queue) == ["busy/0", "quiet/0", "other/0", "busy/1", "quiet/1", "busy/2",
                            "busy/3", "busy/4"]


async def test_a_ready_key_keeps_the_lane_it_became_ready_in() -> None:
    """A lane function may read state that changes (a label of the object a key names),
    with lanes_change: a ready key stays in its lane, moved up or not, until it is
    handed out."""
    lanes = {"k1": "a", "k2": "a", "k3": "b"}
    queue: WorkQueue[str] = WorkQueue(fairness=lambda key: lanes.get(key, "other"),
                                      aging=100, lanes_change=True)
    for key in ("k1", "k2", "k3"):
        queue.add(key, LOW_PRIORITY)
    lanes.update(k1="b", k2="c", k3="a")  # the labels change while the keys are ready
    queue.add("k2", 0)  # moves up in lane a, where it became ready
    queue.add("x", 0)  # lane "other"
    queue._check_invariants()
    assert queue.get_nowait() == "k2"
    queue.done("k2")
    queue.add("k2", 0)  # ready again: its lane is read again, c now
    queue._check_invariants()
    assert drain(queue) == ["x", "k2", "k1", "k3"]


async def test_a_key_of_a_new_lane_waits_behind_one_key_per_busy_lane() -> None:
    queue: WorkQueue[str] = WorkQueue(fairness=lane)
    for i in range(10_000):
        queue.add(f"a/{i}")
    for i in range(100):
        queue.add(f"b/{i}")
    for _ in range(7):
        queue.done(queue.get_nowait())
    queue.add("new/0")
    ahead = []
    while (key := queue.get_nowait()) != "new/0":
        ahead.append(key)
        queue.done(key)
    assert len(ahead) <= 2 and {lane(k) for k in ahead} <= {"a", "b"}


async def test_without_fairness_keys_are_first_come_first_served() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for i in range(5):
        queue.add(f"busy/{i}")
    queue.add("quiet/0")
    assert drain(queue) == [*(f"busy/{i}" for i in range(5)), "quiet/0"]


async def test_fairness_changes_only_while_no_key_is_ready() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.set_fairness(lane)
    assert queue.fairness is lane
    queue.add("a/0")
    with pytest.raises(RuntimeError, match="cannot change"):
        queue.set_fairness(None)
    with pytest.raises(TypeError, match="fairness must be a function"):
        WorkQueue(fairness="namespace")  # type: ignore[arg-type]


async def test_moves_leave_no_pile_of_stale_entries() -> None:
    queue: WorkQueue[str] = WorkQueue(fairness=lane)
    for round_ in range(50):
        for i in range(20):
            queue.add(f"a/{i}", LOW_PRIORITY)
        for i in range(20):
            queue.add(f"a/{i}", round_)
        queue._check_invariants()  # stale entries stay within max(64, live)
        assert sorted(drain(queue)) == sorted(f"a/{i}" for i in range(20))


def test_bad_priorities_and_aging_are_refused_by_name() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for bad in (1.5, "high", None, True):
        with pytest.raises(TypeError, match="a priority is an int"):
            queue.add("k", bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="a priority is an int"):
            queue.add_after("k", 1, bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="a priority is an int"):
            queue.add_rate_limited("k", bad)  # type: ignore[arg-type]
    for aging in (0, -1, 2.5):
        with pytest.raises(ValueError, match="aging must be an int >= 1"):
            WorkQueue(aging=aging)  # type: ignore[arg-type]
