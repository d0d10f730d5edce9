"""Which event loop a manager runs on: uvloop when installed, unless told otherwise."""

from __future__ import annotations

import importlib.util

import anyio
import anyio.lowlevel
import pytest

from reconcilekit.lowlevel import event_loop_options


def test_uvloop_when_installed_unless_asyncio_is_asked_for(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECONCILEKIT_EVENT_LOOP", raising=False)
    installed = importlib.util.find_spec("uvloop") is not None
    assert event_loop_options() == ({"use_uvloop": True} if installed else {})
    monkeypatch.setenv("RECONCILEKIT_EVENT_LOOP", "asyncio")
    assert event_loop_options() == {}


def test_the_options_run_a_loop() -> None:
    async def answer() -> int:
        await anyio.lowlevel.checkpoint()
        return 42

    assert anyio.run(answer, backend="asyncio", backend_options=event_loop_options()) == 42
