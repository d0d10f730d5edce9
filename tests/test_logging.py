"""Structured logging: records made inside a reconcile name the controller and key."""

from __future__ import annotations

import io
import logging

import orjson

from reconcilekit import ReconcileContextFilter, configure_logging, log_context


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
