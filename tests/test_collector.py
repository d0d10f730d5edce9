"""``collector_paused``: the garbage collector off for a block, on again after it exactly
if it was on before, whether the block returns or raises."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from reconcilekit._foundations.collector import collector_paused


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    yield
    gc.enable()


def test_the_collector_is_off_in_the_block_and_on_after_it() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_on_again_after_a_block_that_raises() -> None:
    with pytest.raises(KeyError), collector_paused():
        raise KeyError("x")
    assert gc.isenabled()


def test_a_collector_disabled_by_someone_else_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_resume_once_at_the_outermost() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
