"""``OperatorProcess``: a small Python child stands in for an operator (no API server, so
both passes run the same): its lines read from both streams, waits for a line and for the
exit, their errors naming what was awaited with the output's tail, SIGTERM, SIGKILL after
the grace period."""

from __future__ import annotations

import signal
import sys
import textwrap
from pathlib import Path

import pytest

from reconcilekit.testing import OperatorProcess


def child(code: str, log: Path | None = None) -> OperatorProcess:
    """``python -c code``, unbuffered, as an OperatorProcess named "child"."""
    return OperatorProcess(sys.executable, "-u", "-c", textwrap.dedent(code), log=log,
                           name="child")


async def test_lines_of_both_streams_are_read_in_order_and_stdout_apart(tmp_path: Path) -> None:
    log = tmp_path / "child.log"
    async with child("""
            import sys
            print("one")
            print("two", file=sys.stderr, flush=True)
            print("three", end="")
            """, log=log) as proc:
        assert await proc.wait(within=30) == 0
        assert proc.lines == ["one", "two", "three"]
        assert proc.stdout == ["one", "three"]
    assert log.read_text() == "one\ntwo\nthree\n"


async def test_a_log_is_appended_to_by_each_process_in_turn(tmp_path: Path) -> None:
    log = tmp_path / "slot.log"
    for word in ("first", "second"):
        async with child(f"print({word!r})", log=log) as proc:
            await proc.wait(within=30)
    assert log.read_text() == "first\nsecond\n"


async def test_a_wait_for_a_line_returns_its_match_read_already_or_later() -> None:
    async with child("""
            import time
            print("serving on port 8080")
            print("ready", flush=True)
            time.sleep(0.5)
            print("late", flush=True)
            time.sleep(60)
            """) as proc:
        late = await proc.wait_for_line(r"^late$", within=30)
        assert late.string == "late"
        port = await proc.wait_for_line(r"port (\d+)", within=1)  # read already
        assert port.group(1) == "8080"
        assert (await proc.wait_for_line("ready|late", within=1, since=2)).string == "late"


async def test_a_wait_that_times_out_names_the_line_and_shows_the_output_tail() -> None:
    async with child("""
            import time
            for i in range(40):
                print(f"line {i}")
            time.sleep(60)
            """) as proc:
        await proc.wait_for_line("line 39", within=30)
        with pytest.raises(AssertionError) as failed:
            await proc.wait_for_line("started 3 controller", within=0.2)
    message = str(failed.value)
    assert message.startswith("child: a line matching 'started 3 controller' not read within "
                              "0.2s; the last lines of its output:\nline 10\n")
    assert message.endswith("\n".join(f"line {i}" for i in range(10, 40)))
    assert "line 9\n" not in message


async def test_a_wait_for_a_line_fails_as_soon_as_the_process_exits_without_it() -> None:
    async with child("""
            import sys
            print("Traceback (most recent call last):", file=sys.stderr)
            sys.exit(3)
            """) as proc:
        with pytest.raises(AssertionError) as failed:
            await proc.wait_for_line("leading", within=60)
    assert str(failed.value) == ("child: exited with code 3 before a line matching 'leading'; "
                                 "the last lines of its output:\n"
                                 "Traceback (most recent call last):")


async def test_a_wait_for_the_exit_that_times_out_says_so() -> None:
    async with child("print('up', flush=True); import time; time.sleep(60)") as proc:
        with pytest.raises(AssertionError) as failed:
            await proc.wait(within=0.2)
    assert str(failed.value) == ("child: did not exit within 0.2s; the last lines of its "
                                 "output:\nup")


async def test_stop_sigterms_and_a_process_that_handles_it_exits_with_its_code() -> None:
    proc = await child("""
            import signal, sys
            signal.signal(signal.SIGTERM, lambda *_: (print("stopping"), sys.exit(0)))
            print("ready")
            signal.pause()
            """).start()
    await proc.wait_for_line("ready", within=30)
    assert await proc.stop(grace=30) == 0
    assert proc.returncode == 0
    assert proc.lines == ["ready", "stopping"]
    assert await proc.stop() == 0  # stopped already: nothing more


async def test_stop_sigkills_a_process_that_ignores_sigterm_after_the_grace() -> None:
    proc = await child("""
            import signal
            signal.signal(signal.SIGTERM, lambda *_: print("ignored", flush=True))
            print("ready", flush=True)
            while True:
                signal.pause()
            """).start()
    await proc.wait_for_line("ready", within=30)
    assert await proc.stop(grace=0.5) == -signal.SIGKILL
    assert proc.lines == ["ready", "ignored"]  # one SIGTERM, then the SIGKILL


async def test_kill_is_a_sigkill_and_wait_reaps_it() -> None:
    async with child("print('ready', flush=True); import time; time.sleep(60)") as proc:
        await proc.wait_for_line("ready", within=30)
        proc.kill()
        assert await proc.wait(within=30) == -signal.SIGKILL
        proc.kill()  # exited: nothing to do
    assert proc.returncode == -signal.SIGKILL


async def test_a_process_is_started_once_and_used_only_once_started() -> None:
    proc = child("pass")
    with pytest.raises(RuntimeError, match="child is not started"):
        proc.kill()
    await proc.start()
    with pytest.raises(RuntimeError, match="child was started already"):
        await proc.start()
    assert await proc.wait(within=30) == 0
    with pytest.raises(ValueError, match="needs a command"):
        OperatorProcess()
