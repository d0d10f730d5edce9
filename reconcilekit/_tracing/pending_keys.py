"""``PendingKeys``: what queued each key of a controller since its last reconcile.

Kept beside the controller's work queue (which it never reads): when a
watch event maps to a key, when a failed reconcile schedules it again after
its backoff, when a reconcile asks to run again later. A worker taking the
key takes its record: how long the key waited for a worker (from when it
became pending: the event, or the end of the delay it was scheduled with),
that delay and why, and the watch events that queued it.

Guarantees:
  * a key's record holds the first ``max_links`` events' links (several
    events collapse into one key) and counts all of them;
  * a key keeps the earliest time it became pending: an event for a key
    scheduled for later makes it pending now (the queue hands it out now);
  * memory is bounded: at most ``max_keys`` records are kept, the oldest
    forgotten first (a key a worker never took: dropped at shutdown, or not
    this replica's shard).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

__all__ = ["Pending", "PendingKeys"]

MAX_LINKS = 32
"""Watch events linked from one reconcile; the others are counted."""


@dataclass(slots=True)
class Pending:
    """One key's record: pending since ``since`` (seconds of the controller's clock),
    scheduled with ``delay`` seconds for ``reason`` (``rate_limited`` or
    ``requeue_after``; None and ``""`` when an event queued it), the ``links`` of the
    first events that queued it and how many ``events`` did."""

    since: float
    delay: float | None = None
    reason: str = ""
    links: list[object] = field(default_factory=list)
    events: int = 0

    def queued(self, link: object | None, now: float, max_links: int) -> None:
        """An event queued the key at ``now``: counted, and ``link`` kept if there
        is room; a key scheduled for later is pending from now on."""
        if self.since > now:
            self.since, self.delay, self.reason = now, None, ""
        self.events += 1
        if link is not None and len(self.links) < max_links:
            self.links.append(link)


class PendingKeys:
    """The records of one controller's pending keys (module docstring)."""

    def __init__(self, *, max_keys: int = 100_000, max_links: int = MAX_LINKS) -> None:
        if max_keys < 1 or max_links < 0:
            raise ValueError(f"max_keys must be >= 1 and max_links >= 0, "
                             f"got {max_keys} and {max_links}")
        self.max_keys = max_keys
        self.max_links = max_links
        self._keys: dict[Hashable, Pending] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def event(self, keys: Iterable[Hashable], link: object | None, now: float) -> None:
        """A watch event queued ``keys`` (each once) at ``now``; ``link`` (None:
        nothing to link) is its span context."""
        records = self._keys
        for key in keys:
            record = records.get(key)
            if record is None:
                record = records[key] = Pending(now)
                self._bound()
            record.queued(link, now, self.max_links)

    def scheduled(self, key: Hashable, now: float, delay: float, reason: str) -> None:
        """``key`` was scheduled at ``now`` to be queued after ``delay`` seconds; a key
        already pending (an event came in meanwhile) keeps its record."""
        if key not in self._keys:
            self._keys[key] = Pending(now + delay, delay, reason)
            self._bound()

    def take(self, key: Hashable) -> Pending | None:
        """A worker took ``key``: its record, now forgotten (None: none kept)."""
        return self._keys.pop(key, None)

    def _bound(self) -> None:
        if len(self._keys) > self.max_keys:
            del self._keys[next(iter(self._keys))]
