"""The order a work queue hands its ready keys out in: by priority, fairly across lanes, aged."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

__all__ = ["DEFAULT_AGING", "FairOrder", "LaneOf"]

K = TypeVar("K", bound=Hashable)

LaneOf = Callable[[K], Hashable]
"""What a key is served fairly across (its lane): the same value for a key every time,
unless the order is told its lanes change (``lanes_change``)."""

DEFAULT_AGING: Final = 8
_COMPACT_MIN: Final = 64


class _Level(Generic[K]):
    """The ready keys of one priority: a FIFO per lane, and the lanes in the order they
    take their turns.

    ``stale`` counts, per key, the entries left behind in its lane when the key moved to
    a higher level; they come before the key's live entry in that lane (a key's lane
    never changes), so popping skips as many entries of the key as are stale.
    ``lane_stale`` counts them per lane: a lane left with stale entries only is dropped
    at once, so every lane in the rotation has a live key.
    """

    __slots__ = ("lane_stale", "lanes", "live", "priority", "served", "stale", "stale_total",
                 "turns")

    def __init__(self, priority: int, served: int) -> None:
        self.priority = priority
        self.lanes: dict[Hashable, deque[K]] = {}
        self.turns: deque[Hashable] = deque()  # every lane in ``lanes``, next to serve first
        self.stale: dict[K, int] = {}
        self.lane_stale: dict[Hashable, int] = {}
        self.stale_total = 0
        self.live = 0
        self.served = served  # the hand-out count when last served (or when made)

    def push(self, key: K, lane: Hashable) -> None:
        fifo = self.lanes.get(lane)
        if fifo is None:
            fifo = self.lanes[lane] = deque()
            self.turns.append(lane)
        fifo.append(key)
        self.live += 1

    def pop(self, handed: int) -> K:
        """The next key: the first live one of the lane whose turn it is."""
        self.served = handed
        turns = self.turns
        lane = turns[0]
        fifo = self.lanes[lane]
        key = fifo.popleft()
        if self.stale:
            stale = self.stale
            while n := stale.get(key):  # the lane has a live key: it comes later
                if n == 1:
                    del stale[key]
                else:
                    stale[key] = n - 1
                self.stale_total -= 1
                self.lane_stale[lane] -= 1
                key = fifo.popleft()
            left = self.lane_stale.get(lane)
            if left == len(fifo):  # nothing live left: the lane leaves the rotation
                self._forget_lane(lane, fifo)
                fifo.clear()
            elif left == 0:
                del self.lane_stale[lane]
        if not fifo:
            turns.popleft()
            del self.lanes[lane]
        elif len(turns) > 1:
            turns.rotate(-1)
        self.live -= 1
        return key

    def retire(self, key: K, lane: Hashable) -> None:
        """``key``, live here, moved to another level: its entry here is stale."""
        self.live -= 1
        if not self.live:
            return  # the level is dropped whole
        fifo = self.lanes[lane]
        self.stale[key] = self.stale.get(key, 0) + 1
        self.stale_total += 1
        self.lane_stale[lane] = self.lane_stale.get(lane, 0) + 1
        if self.lane_stale[lane] == len(fifo):  # nothing live left: it leaves the rotation
            self.turns.remove(lane)
            del self.lanes[lane]
            self._forget_lane(lane, fifo)
        elif self.stale_total > _COMPACT_MIN and self.stale_total > self.live:
            self._compact()

    def live_entries(self, lane: Hashable) -> list[K]:
        skip = dict(self.stale)
        live = []
        for key in self.lanes[lane]:
            if skip.get(key):
                skip[key] -= 1
            else:
                live.append(key)
        return live

    def _forget_lane(self, lane: Hashable, fifo: deque[K]) -> None:
        """Forget the counts of a lane whose entries are all stale."""
        self.stale_total -= self.lane_stale.pop(lane)
        stale = self.stale
        for key in fifo:
            if stale[key] > 1:
                stale[key] -= 1
            else:
                del stale[key]

    def _compact(self) -> None:
        """Drop the stale entries (and lanes holding nothing else); the order stays."""
        lanes: dict[Hashable, deque[K]] = {}
        for lane in self.turns:
            live = self.live_entries(lane)
            if live:
                lanes[lane] = deque(live)
        self.lanes = lanes
        self.turns = deque(lanes)
        self.stale.clear()
        self.lane_stale.clear()
        self.stale_total = 0


def _served(level: _Level[K]) -> int:
    return level.served


class FairOrder(Generic[K]):
    """The ready keys of a queue, and which one is handed out next.

    The order:
      * priority first: a key of the highest priority ready is handed out,
        except that after ``aging`` keys in a row from the highest priority
        while keys of a lower one wait, the next key comes from a lower
        priority: the one served least recently (or, if never, the one that
        has waited longest since it got keys), so each lower priority gets
        one key within its number of such turns;
      * within one priority, round-robin across lanes (``lane_of(key)``):
        each lane is a FIFO, the lanes take turns, one key each, in the order
        they got keys; a lane that runs empty leaves the rotation and joins
        at the end when it gets a key again. A key that becomes ready in a
        lane of its own is handed out after at most one key of each other
        lane of its priority (no lane function: one lane, plain FIFO);
      * :meth:`promote` moves a ready key to a higher priority, at the end
        of its lane there.
    A key's lane is ``lane_of(key)`` when it becomes ready. With
    ``lanes_change`` (a lane function that reads state that changes, a label
    of the object the key names) it is kept until the key is handed out, so a
    ready key never moves between lanes; without it ``lane_of`` must answer
    the same for a key every time, and nothing is kept.
    So every ready key is handed out after a bounded number of others, however
    many keys of higher priority or other lanes keep coming: none starves.

    Every operation is O(1) amortized, but for the number of priorities
    ready (a handful): the highest is found again when it empties, and an
    aging turn looks at each once.

    Invariants (whenever no method is running):
      * with ``lanes_change``, ``_lane`` maps exactly the live keys to their
        lanes (without it, it is empty);
      * ``_levels`` holds exactly the priorities with a live key; ``_top`` is
        the highest of them (None when none is ready); ``size`` is the sum
        of their live keys.
      * in a level, ``turns`` lists each lane of ``lanes`` once, and each
        lane's FIFO is non-empty; the entries of a key in its lane are its
        stale ones first, then at most one live one; a key is live in one
        level at most.
      * a level's stale entries are at most ``max(_COMPACT_MIN, live)``.
      * ``_streak`` counts the keys handed out in a row from the highest
        priority while a lower one was ready (a key handed out with nothing
        lower ready, or an aging turn, starts it over); it is at most ``aging``.
    """

    __slots__ = ("_aging", "_handed", "_keep", "_lane", "_lane_of", "_levels", "_streak",
                 "_top", "size")

    def __init__(self, lane_of: LaneOf[K] | None = None, *, aging: int = DEFAULT_AGING,
                 lanes_change: bool = False) -> None:
        self._lane_of = lane_of
        self._keep = lanes_change and lane_of is not None
        self._aging = aging
        self._levels: dict[int, _Level[K]] = {}
        self._top: _Level[K] | None = None
        self._streak = 0  # keys handed out in a row from the top while lower ones were ready
        self._handed = 0  # keys handed out, ever: the clock of ``_Level.served``
        self._lane: dict[K, Hashable] = {}  # with a lane function: each live key's lane
        self.size = 0

    @property
    def lane_of(self) -> LaneOf[K] | None:
        return self._lane_of

    def set_lane_of(self, lane_of: LaneOf[K] | None, *, lanes_change: bool = False) -> None:
        """Serve across ``lane_of`` from now on; only while no key is ready."""
        if self.size:
            raise RuntimeError("the lane function of a queue holding ready keys cannot change")
        self._lane_of = lane_of
        self._keep = lanes_change and lane_of is not None

    def push(self, key: K, priority: int) -> None:
        """Make ``key`` (not ready now) ready at ``priority``, last in its lane."""
        level = self._levels.get(priority)
        if level is None:
            level = self._new_level(priority)
        lane_of = self._lane_of
        if lane_of is None:
            level.push(key, None)
        elif self._keep:
            lane = self._lane[key] = lane_of(key)
            level.push(key, lane)
        else:
            level.push(key, lane_of(key))
        self.size += 1

    def promote(self, key: K, old: int, new: int) -> None:
        """Move ``key``, ready at priority ``old``, to the higher priority ``new``."""
        level = self._levels[old]
        lane_of = self._lane_of
        lane = (None if lane_of is None else self._lane.pop(key) if self._keep
                else lane_of(key))
        level.retire(key, lane)
        self.size -= 1
        if not level.live:
            self._drop(level)
        new_level = self._levels.get(new) or self._new_level(new)
        if self._keep:
            self._lane[key] = lane
        new_level.push(key, lane)  # in the lane it became ready in
        self.size += 1

    def pop(self) -> K:
        """Take the next key (see the class docstring). There must be one."""
        top = self._top
        assert top is not None, "pop from an empty FairOrder"
        level = top
        levels = self._levels
        if len(levels) > 1:
            if self._streak >= self._aging:
                level = min((lv for lv in levels.values() if lv is not top), key=_served)
                self._streak = 0
            else:
                self._streak += 1
        elif self._streak:
            self._streak = 0  # nothing lower waits
        key = level.pop(self._handed)
        if self._keep:
            del self._lane[key]
        self._handed += 1
        self.size -= 1
        if not level.live:
            self._drop(level)
        return key

    def clear(self) -> None:
        self._levels.clear()
        self._lane.clear()
        self._top = None
        self._streak = 0
        self.size = 0

    def entries(self) -> list[tuple[K, int]]:
        """Every ready key with its priority, level by level (highest first), lane by lane
        in turn order, each lane in FIFO order."""
        out: list[tuple[K, int]] = []
        for priority in sorted(self._levels, reverse=True):
            level = self._levels[priority]
            for lane in level.turns:
                out.extend((key, priority) for key in level.live_entries(lane))
        return out

    def _new_level(self, priority: int) -> _Level[K]:
        level: _Level[K] = _Level(priority, self._handed)
        self._levels[priority] = level
        top = self._top
        if top is None or priority > top.priority:
            self._top = level
        return level

    def _drop(self, level: _Level[K]) -> None:
        levels = self._levels
        del levels[level.priority]
        if level is self._top:
            self._top = levels[max(levels)] if levels else None

    def _check_invariants(self) -> None:
        levels = self._levels
        assert all(level.live > 0 for level in levels.values()), "an empty level is kept"
        assert self._top is (levels[max(levels)] if levels else None), "_top is not the highest"
        assert self.size == sum(level.live for level in levels.values()), "size"
        assert 0 <= self._streak <= self._aging, self._streak
        live_keys: list[K] = []
        for priority, level in levels.items():
            assert level.priority == priority
            turns = list(level.turns)
            assert len(set(turns)) == len(turns) and set(turns) == set(level.lanes), "turns"
            assert all(level.lanes.values()), "an empty lane is kept"
            assert level.stale_total == sum(level.stale.values()), "stale_total"
            assert level.stale_total == sum(level.lane_stale.values()), "lane_stale"
            assert all(level.lane_stale.values()), "a zero count in lane_stale"
            assert level.stale_total <= max(_COMPACT_MIN, level.live), "stale entries pile up"
            counts: dict[K, int] = {}
            live_here = 0
            for lane in level.turns:
                for key in level.lanes[lane]:
                    counts[key] = counts.get(key, 0) + 1
                live = level.live_entries(lane)
                if self._keep:
                    assert all(self._lane[key] == lane for key in live), "in another lane"
                elif self._lane_of is not None:
                    assert all(self._lane_of(key) == lane for key in live), "in another lane"
                assert live, f"lane {lane!r} has no live key"
                assert len(level.lanes[lane]) - len(live) == level.lane_stale.get(lane, 0)
                live_here += len(live)
                live_keys.extend(live)
            for key, n in level.stale.items():
                assert 0 < n <= counts.get(key, 0), f"{key!r}: {n} stale of {counts.get(key)}"
            assert live_here == level.live, (priority, live_here, level.live)
        assert len(set(live_keys)) == len(live_keys), "a key is ready twice"
        assert set(self._lane) == (set(live_keys) if self._keep else set()), (
            "_lane is not the live keys")
