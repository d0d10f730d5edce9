"""Structured logging: every record made during a reconcile names its controller and key.

The controller sets two context variables around each reconcile;
:class:`ReconcileContextFilter` copies them onto every log record (as
``record.controller`` and ``record.key``, empty outside a reconcile), so a
user's own ``logging.getLogger(...).info(...)`` inside ``reconcile`` is
attributed without passing anything around. :func:`configure_logging`
installs the filter with a key=value or JSON formatter on the root logger.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import sys
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["ReconcileContextFilter", "configure_logging", "log_context"]

current_controller: contextvars.ContextVar[str] = contextvars.ContextVar(
    "reconcilekit_controller", default="")
current_key: contextvars.ContextVar[str] = contextvars.ContextVar(
    "reconcilekit_key", default="")


@contextlib.contextmanager
def log_context(controller: str, key: str) -> Iterator[None]:
    """Set the controller and key for log records made inside the block."""
    tokens = current_controller.set(controller), current_key.set(key)
    try:
        yield
    finally:
        current_key.reset(tokens[1])
        current_controller.reset(tokens[0])


class ReconcileContextFilter(logging.Filter):
    """Adds ``controller`` and ``key`` to every record (keeps values already set)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "controller", ""):
            record.controller = current_controller.get()
        if not getattr(record, "key", ""):
            record.key = current_key.get()
        return True


class _KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [f"{self.formatTime(record)} {record.levelname:<7} {record.name}"]
        for field in ("controller", "key"):
            value = getattr(record, field, "")
            if value:
                parts.append(f"{field}={value}")
        parts.append(record.getMessage())
        text = " ".join(parts)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname,
                               "logger": record.name, "message": record.getMessage()}
        for field in ("controller", "key"):
            value = getattr(record, field, "")
            if value:
                doc[field] = value
        if record.exc_info:
            doc["error"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


def configure_logging(level: int | str = logging.INFO, *, json: bool = False) -> None:
    """Log to stderr with controller and key on every record (``json=True`` for JSON lines)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(ReconcileContextFilter())
    handler.setFormatter(_JSONFormatter() if json else _KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
