"""Structured logging: records made inside a reconcile name the controller and key."""

from __future__ import annotations

import io
import logging

import aiohttp
import orjson
import pytest

from reconcilekit import (
    NotFound,
    ReconcileContextFilter,
    RepeatFilter,
    configure_logging,
    describe_error,
    log_context,
)
from reconcilekit.testing import FakeClock


def test_filter_adds_controller_and_key_inside_a_reconcile_only() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ReconcileContextFilter())
    handler.setFormatter(logging.Formatter("%(controller)s|%(key)s|%(message)s"))
    log = logging.getLogger("user.code")
    log.addHandler(handler)
    log.propagate = False
    try:
        with log_context("claims", "ns/claim-1"):
            log.warning("inside")
        log.warning("outside")
    finally:
        log.removeHandler(handler)
        log.propagate = True
    assert stream.getvalue().splitlines() == ["claims|ns/claim-1|inside", "||outside"]


def test_configure_logging_json_lines(capsys: object) -> None:
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging(logging.INFO, json=True)
        with log_context("claims", "ns/c"):
            logging.getLogger("user").info("hello %s", "world")
        handler = root.handlers[0]
        assert isinstance(handler, logging.StreamHandler)
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    doc = orjson.loads(err.strip().splitlines()[-1])
    assert doc["message"] == "hello world"
    assert doc["controller"] == "claims" and doc["key"] == "ns/c"


def test_repeat_filter_logs_once_a_window_and_counts_the_rest(
        caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    repeats = RepeatFilter(window=60, clock=clock)
    log = logging.getLogger("reconcilekit.test")
    caplog.set_level(logging.INFO, logger="reconcilekit.test")
    said = [repeats.log(log, logging.WARNING, "down", "server down: %s", n) for n in range(3)]
    assert said == [True, False, False]
    assert repeats.log(log, logging.WARNING, "other", "another failure")  # keys apart
    clock.advance(60)
    assert repeats.log(log, logging.WARNING, "down", "server down: %s", 3)
    assert [r.getMessage() for r in caplog.records] == [
        "server down: 0", "another failure",
        "server down: 3 (and 2 more like it in the last 60s)"]
    assert all(r.filename == "test_logging.py" for r in caplog.records)  # the caller's line


def test_repeat_filter_memory_is_bounded() -> None:
    repeats = RepeatFilter(window=60, max_keys=2, clock=FakeClock())
    log = logging.getLogger("reconcilekit.test")
    for key in range(1000):
        repeats.log(log, logging.DEBUG, key, "x")
    assert len(repeats._last) == 2
    assert repeats.log(log, logging.DEBUG, 0, "x")  # forgotten: logged again, never lost


def test_errors_are_described_in_plain_words() -> None:
    class _Private(Exception):
        pass

    assert describe_error(NotFound("pods \"x\" not found", status=404, reason="NotFound")) == (
        '404 NotFound: pods "x" not found')
    assert describe_error(aiohttp.ServerDisconnectedError()) == (
        "the server closed the connection")
    assert describe_error(ConnectionResetError(104, "Connection reset by peer")) == (
        "connection lost ([Errno 104] Connection reset by peer)")
    assert describe_error(TimeoutError()) == "no data within the read timeout"
    assert describe_error(_Private("odd")) == "Private: odd"  # no private names
