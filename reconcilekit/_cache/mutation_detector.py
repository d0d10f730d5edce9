"""``MutationDetector``: proof that no reader changed an object the cache shares.

A shared read (``cache.get(..., shared=True)``, ``cache.list(..., shared=True)``)
hands out the cache's own decoded object, the same one to every reader, as
client-go's listers do: changing it would change what every later reader sees,
and what the cache compares the next event with. The detector is client-go's
``KUBE_CACHE_MUTATION_DETECTOR`` for reconcilekit: every object a store decodes
for shared reads is recorded with the JSON it was decoded from, and
:meth:`MutationDetector.check` compares each with that JSON again, naming the
resource, the object and the first field that differs.

It is off in production (recording keeps every shared object alive until the
next check) and on where tests run: the pytest plugin turns it on for the
session and checks after every test, failing the test that mutated; the
in-process test servers turn it on when they start; ``RECONCILEKIT_CACHE_
MUTATION_DETECTOR=1`` in the environment turns it on anywhere, and
``Cache(detect_mutations=...)`` decides for one cache.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from .._foundations.objects import Obj, ObjectKey

__all__ = ["DETECTOR", "ENV", "RECORD_LIMIT", "CachedObjectMutated", "MutationDetector",
           "detection_default", "enable_by_default", "first_difference"]

log = logging.getLogger("reconcilekit.cache")

ENV: Final = "RECONCILEKIT_CACHE_MUTATION_DETECTOR"
RECORD_LIMIT: Final = 50_000
_enabled_by_default = False


class CachedObjectMutated(AssertionError):
    """A reader changed an object the cache shares (see :class:`MutationDetector`)."""


class MutationDetector:
    """The shared objects handed out since the last :meth:`check`, with their JSON.

    Invariant: every entry's object was decoded from its JSON and handed out
    by a shared read; :meth:`check` forgets every entry it compared. Not
    thread-safe: one event loop's caches use it.
    """

    def __init__(self) -> None:
        self._shared: list[tuple[str, ObjectKey, bytes, Obj]] = []
        self._found: list[str] = []

    def record(self, resource: str, key: ObjectKey, raw: bytes, obj: Obj) -> None:
        """``obj``, decoded from ``raw``, is now shared by readers of ``resource``.

        The record is bounded: at :data:`RECORD_LIMIT` entries they are all
        checked (and forgotten) at once, so that a long run with the detector
        on (an operator against the in-process server) does not keep every
        object it ever shared; a change made to one after that is not seen."""
        self._shared.append((resource, key, raw, obj))
        if len(self._shared) >= RECORD_LIMIT:
            self.check()

    def check(self) -> list[str]:
        """One message for each recorded object that no longer equals its JSON (each also
        logged as an ERROR, and kept for :meth:`take`); the record is emptied either way."""
        shared, self._shared = self._shared, []
        found = []
        for resource, key, raw, obj in shared:
            original = orjson.loads(raw)
            if original == obj:
                continue
            path, was, now = first_difference(original, obj)
            message = (f"{resource} {key}: a shared read was mutated by its reader at {path} "
                       f"(was {_show(was)}, now {_show(now)}). Objects from shared=True reads "
                       "belong to the cache and every reader sees them: copy.deepcopy() it, "
                       "or read without shared=True, before changing it")
            log.error("%s", message)
            found.append(message)
        self._found.extend(found)
        return found

    def take(self) -> list[str]:
        """:meth:`check`, then every message found since the last :meth:`take` (a cache
        that stopped checked its own objects already)."""
        self.check()
        found, self._found = self._found, []
        return found

    def raise_if_mutated(self) -> None:
        """:meth:`take`, raising :class:`CachedObjectMutated` with every message."""
        found = self.take()
        if found:
            raise CachedObjectMutated("\n".join(found))


DETECTOR: Final = MutationDetector()


def enable_by_default() -> None:
    """Caches made from now on detect mutations unless told otherwise (test backends)."""
    global _enabled_by_default
    _enabled_by_default = True


def detection_default() -> bool:
    """Whether a cache made now detects mutations when not told: the environment's
    :data:`ENV` (``1``/``true``), else whether a test backend turned it on."""
    value = os.environ.get(ENV, "").strip().lower()
    if value:
        return value in ("1", "true", "yes", "on")
    return _enabled_by_default


_MISSING: Final = object()


def first_difference(was: Any, now: Any, path: str = "") -> tuple[str, Any, Any]:
    """The first path (``.spec.containers[0].image``) where ``was`` and ``now`` differ,
    with the value on each side (:data:`_MISSING` shown as absent). Assumes they differ."""
    if isinstance(was, Mapping) and isinstance(now, Mapping):
        for name in (*was, *(k for k in now if k not in was)):
            a, b = was.get(name, _MISSING), now.get(name, _MISSING)
            if a != b or type(a) is not type(b):
                return first_difference(a, b, f"{path}.{name}")
    elif (isinstance(was, Sequence) and isinstance(now, Sequence)
          and not isinstance(was, str) and not isinstance(now, str)):
        for i in range(max(len(was), len(now))):
            a = was[i] if i < len(was) else _MISSING
            b = now[i] if i < len(now) else _MISSING
            if a != b or type(a) is not type(b):
                return first_difference(a, b, f"{path}[{i}]")
    return path or ".", was, now


def _show(value: Any) -> str:
    if value is _MISSING:
        return "absent"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
