"""Shared pieces of the generated-bad-input tests: hypothesis inside an async test, logs.

Hypothesis drives synchronous functions; the servers under test live in the
test's event loop. :func:`explore` runs the ``@given`` function in a worker
thread and each example hops back into the loop (``anyio.from_thread``), so
one server (and one fixture, on either backend) serves every example.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

T = TypeVar("T")

# Scalars and small containers of JSON, integers beyond 64 bits and non-ASCII text included.
JSON_SCALARS = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12))
JSON = st.recursive(JSON_SCALARS,
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=10)


EXPLORE = bool(os.environ.get("RECONCILEKIT_FUZZ_EXPLORE"))


async def explore(strategy: st.SearchStrategy[T], check: Callable[[T], Awaitable[None]], *,
                  max_examples: int) -> None:
    """Run ``check`` on ``max_examples`` generated examples, in this event loop.

    Slow examples (network round trips) are expected: no deadline, and the
    ``too_slow`` health check is off; big generated bodies are built from
    small drawn sizes, so ``data_too_large`` stays on. The examples are the
    same on every run (derandomized from the test's name, none replayed from
    hypothesis's database), so a pass stays a pass; with
    ``RECONCILEKIT_FUZZ_EXPLORE=1`` each run draws new ones, to look for what
    no run has reached yet.
    """
    derandomize = not EXPLORE

    @settings(max_examples=max_examples, deadline=None, derandomize=derandomize,
              database=None if derandomize else settings.default.database,
              suppress_health_check=[HealthCheck.too_slow])
    @given(strategy)
    def one(example: T) -> None:
        anyio.from_thread.run(check, example)

    await anyio.to_thread.run_sync(one)


@dataclass(frozen=True)
class Big:
    """A string of ``size`` characters, written out only when serialized (short repr)."""

    size: int


@dataclass(frozen=True)
class Deep:
    """``depth`` nested arrays, written out only when serialized (short repr)."""

    depth: int


def dumps(value: Any) -> bytes:
    """JSON as Go or Python would write it (integers of any size, unlike orjson), with
    :class:`Big` and :class:`Deep` placeholders expanded."""
    expansions: dict[bytes, bytes] = {}

    def expand(placeholder: Any) -> str:
        token = f"@@{len(expansions)}@@"
        if isinstance(placeholder, Big):
            expansions[f'"{token}"'.encode()] = b'"' + b"x" * placeholder.size + b'"'
        elif isinstance(placeholder, Deep):
            expansions[f'"{token}"'.encode()] = (b"[" * placeholder.depth + b"1"
                                                 + b"]" * placeholder.depth)
        else:
            raise TypeError(type(placeholder).__name__)
        return token

    raw = json.dumps(value, ensure_ascii=False, default=expand).encode("utf-8", "surrogatepass")
    for token, text in expansions.items():
        raw = raw.replace(token, text)
    return raw


def depth(value: Any) -> int:
    """How deeply ``value`` nests (placeholders counted as they expand)."""
    if isinstance(value, Deep):
        return value.depth
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0


class LogWindow:
    """The records ``caplog`` captured since the last :meth:`take`."""

    def __init__(self, caplog: pytest.LogCaptureFixture) -> None:
        self.caplog = caplog
        caplog.set_level(logging.DEBUG)
        self._seen = len(caplog.records)

    def take(self) -> list[logging.LogRecord]:
        records = self.caplog.records[self._seen:]
        self._seen = len(self.caplog.records)
        return records


def assert_quiet_failure(records: list[logging.LogRecord], *, allowed: int) -> None:
    """No traceback, nothing above WARNING, at most ``allowed`` lines at INFO or WARNING."""
    for record in records:
        assert record.exc_info is None, f"traceback logged: {record.getMessage()[:300]}"
        assert record.levelno <= logging.WARNING, f"logged above WARNING: {record.getMessage()}"
    loud = [r for r in records if r.levelno >= logging.INFO]
    assert len(loud) <= allowed, [r.getMessage()[:200] for r in loud]
