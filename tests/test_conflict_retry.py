"""retry_on_conflict: a read-modify-write run again while it loses the race, and no longer."""

from __future__ import annotations

import pytest

from reconcilekit import Conflict, NotFound, retry_on_conflict


def _conflict() -> Conflict:
    return Conflict("the object has been modified", status=409, reason="Conflict")


async def test_retries_a_conflict_until_the_attempt_succeeds() -> None:
    calls: list[int] = []

    async def attempt() -> str:
        calls.append(len(calls))
        if len(calls) < 3:
            raise _conflict()
        return "written"

    assert await retry_on_conflict(attempt) == "written"
    assert calls == [0, 1, 2]


async def test_the_last_conflict_propagates_unchanged_after_all_attempts() -> None:
    raised: list[Conflict] = []

    async def attempt() -> None:
        raised.append(_conflict())
        raise raised[-1]

    with pytest.raises(Conflict) as caught:
        await retry_on_conflict(attempt, attempts=4)
    assert len(raised) == 4
    assert caught.value is raised[-1]


async def test_an_error_that_is_not_retriable_propagates_at_once() -> None:
    calls = 0

    async def attempt() -> None:
        nonlocal calls
        calls += 1
        raise NotFound("gone", status=404, reason="NotFound")

    with pytest.raises(NotFound):
        await retry_on_conflict(attempt)
    assert calls == 1


async def test_retriable_decides_which_errors_mean_read_again() -> None:
    calls = 0

    async def attempt() -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise NotFound("gone", status=404, reason="NotFound")
        return calls

    assert await retry_on_conflict(attempt, retriable=lambda e: isinstance(e, NotFound)) == 2


async def test_attempts_below_one_is_a_clear_error() -> None:
    async def attempt() -> None:
        raise AssertionError("must not run")

    with pytest.raises(ValueError, match="attempts must be >= 1, got 0"):
        await retry_on_conflict(attempt, attempts=0)
