"""Structured logging: every record made during a reconcile names its controller and key.

The controller sets three context variables around each reconcile (its
controller, its key and a reconcile ID, a fresh random UUID per reconcile
as controller-runtime's ``reconcileID``); :class:`ReconcileContextFilter`
copies them onto every log record (as ``record.controller``, ``record.key``
and ``record.reconcile_id``, empty outside a reconcile), so a user's own
``logging.getLogger(...).info(...)`` inside ``reconcile`` is attributed
without passing anything around. With tracing on
(:func:`reconcilekit.tracing.enable`) it also adds ``record.trace_id`` and
``record.span_id``, the current span's (empty when there is none, and always
when tracing is off). :func:`configure_logging` installs the filter with a
key=value or JSON formatter on the root logger.

:class:`RepeatFilter` keeps a failure that repeats from flooding the log: the
first occurrence of a key is logged, the same key again within ``window``
seconds is only counted, and the next line logged for it says how many were
left out.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import random
import sys
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from .clock import Clock, SystemClock

__all__ = ["ReconcileContextFilter", "RepeatFilter", "configure_logging", "log_context"]

current_controller: contextvars.ContextVar[str] = contextvars.ContextVar(
    "reconcilekit_controller", default="")
current_key: contextvars.ContextVar[str] = contextvars.ContextVar(
    "reconcilekit_key", default="")
current_reconcile_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "reconcilekit_reconcile_id", default="")

TraceIds = Callable[[], "tuple[str, str] | None"]
_trace_ids: TraceIds | None = None


def set_trace_ids(source: TraceIds | None) -> None:
    """Where :class:`ReconcileContextFilter` reads the current trace and span IDs
    (hexadecimal, or None outside a span): tracing sets it when turned on, and None
    when turned off (the filter then reads nothing)."""
    global _trace_ids
    _trace_ids = source


_random_bits = random.getrandbits
_UUID4_CLEAR, _UUID4_SET = 0xFFFFFFFF_FFFF_0FFF_3FFF_FFFFFFFFFFFF, 0x4000_8000_000000000000


def new_reconcile_id() -> str:
    """A random (version 4) UUID naming one reconcile, as controller-runtime's
    ``reconcileID``: unique enough to find one reconcile's lines, not a secret
    (Python's ``random``, a third of ``uuid.uuid4()``'s cost)."""
    h = f"{_random_bits(128) & _UUID4_CLEAR | _UUID4_SET:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@contextlib.contextmanager
def log_context(controller: str, key: str, *, reconcile_id: str = "") -> Iterator[None]:
    """Set the controller, key and reconcile ID for log records made inside the block."""
    tokens = (current_controller.set(controller), current_key.set(key),
              current_reconcile_id.set(reconcile_id))
    try:
        yield
    finally:
        current_reconcile_id.reset(tokens[2])
        current_key.reset(tokens[1])
        current_controller.reset(tokens[0])


class ReconcileContextFilter(logging.Filter):
    """Adds ``controller``, ``key`` and ``reconcile_id`` to every record, and
    ``trace_id`` and ``span_id`` (empty unless tracing is on and a span is current);
    keeps values already set."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "controller", ""):
            record.controller = current_controller.get()
        if not getattr(record, "key", ""):
            record.key = current_key.get()
        if not getattr(record, "reconcile_id", ""):
            record.reconcile_id = current_reconcile_id.get()
        ids = _trace_ids() if _trace_ids is not None else None
        if not getattr(record, "trace_id", ""):
            record.trace_id, record.span_id = ids or ("", "")
        return True


_FIELDS = ("controller", "key", "resource", "reconcile_id", "trace_id", "span_id")


class _KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        parts = [f"{self.formatTime(record)} {record.levelname:<7} {record.name}"]
        message = record.getMessage()
        for field in _FIELDS:
            value = getattr(record, field, "")
            if value and not message.startswith(f"{value}:"):  # said once is enough
                parts.append(f"{field}={value}")
        parts.append(message)
        text = " ".join(parts)
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class _JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {"time": self.formatTime(record), "level": record.levelname,
                               "logger": record.name, "message": record.getMessage()}
        for field in _FIELDS:
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


class RepeatFilter:
    """Log a repeating failure once per ``window`` seconds, with a count of the rest.

    ``log(logger, level, key, msg, *args)`` logs when ``key`` has not been
    logged within the last ``window`` seconds (of ``clock``), else counts it;
    the next line logged for the key says how many were left out. Memory is
    bounded: at most ``max_keys`` keys are remembered (the one seen longest
    ago is forgotten first, which can only make a line appear, never vanish).
    """

    def __init__(self, *, window: float = 60.0, max_keys: int = 4096,
                 clock: Clock | None = None) -> None:
        self.window = window
        self.max_keys = max_keys
        self._clock = clock or SystemClock()
        self._last: dict[object, tuple[float, int]] = {}  # key -> (logged at, left out since)

    def log(self, logger: logging.Logger, level: int, key: object, msg: str, *args: object,
            extra: dict[str, object] | None = None,
            exc_info: BaseException | None = None) -> bool:
        """Log (True) or count (False) one occurrence of ``key``."""
        now = self._clock.monotonic()
        logged_at, left_out = self._last.pop(key, (None, 0))
        if logged_at is not None and now - logged_at < self.window:
            self._last[key] = (logged_at, left_out + 1)
            return False
        if left_out:
            msg += f" (and {left_out} more like it in the last {self.window:.0f}s)"
        self._last[key] = (now, 0)
        if len(self._last) > self.max_keys:
            del self._last[next(iter(self._last))]
        logger.log(level, msg, *args, extra=extra, exc_info=exc_info, stacklevel=2)
        return True
