"""A CronJob's ``schedule`` and ``timeZone``, checked as kube-apiserver 1.28 checks them.

kube-apiserver parses the schedule with robfig/cron's standard parser
(``cron.ParseStandard``): five fields (minute, hour, day of month, month,
day of week; months and days also by three-letter name), each a
comma-separated list of ``*``, ``?``, ``N`` or ``N-M`` with an optional
``/step``; or a descriptor (``@yearly``, ``@annually``, ``@monthly``,
``@weekly``, ``@daily``, ``@midnight``, ``@hourly``, ``@every DURATION``);
optionally after a ``TZ=zone`` or ``CRON_TZ=zone`` prefix. :func:`schedule_error`
gives the parser's own error text; :func:`time_zone_error` that of
``validateTimeZone``.
"""

from __future__ import annotations

import datetime
import re
import zoneinfo
from typing import NamedTuple

__all__ = ["next_run", "schedule_error", "time_zone_error"]


class _Bounds(NamedTuple):
    low: int
    high: int
    names: dict[str, int]


_MONTHS = {m: i + 1 for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"))}
_DAYS = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
_FIELDS = (_Bounds(0, 59, {}), _Bounds(0, 23, {}), _Bounds(1, 31, {}), _Bounds(1, 12, _MONTHS),
           _Bounds(0, 6, _DAYS))
_DESCRIPTORS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily",
                          "@midnight", "@hourly"})
_UNITS = ("ns", "us", "µs", "μs", "ms", "s", "m", "h")


class _Invalid(Exception):
    pass


def _go_int(text: str) -> int:
    """``mustParseInt``: strconv.Atoi, and no negative number."""
    if not re.fullmatch(r"[+-]?\d+", text):
        raise _Invalid(f'failed to parse int from {text}: strconv.Atoi: parsing "{text}": '
                       "invalid syntax")
    number = int(text)
    if number < 0:
        raise _Invalid(f"negative number ({number}) not allowed: {text}")
    return number


def _int_or_name(text: str, names: dict[str, int]) -> int:
    return names[text.lower()] if text.lower() in names else _go_int(text)


def _check_range(expr: str, bounds: _Bounds) -> range:
    """``getRange``: one ``start[-end][/step]`` of a field, as the values it allows."""
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    if low_and_high[0] in ("*", "?"):
        start, end = bounds.low, bounds.high
    else:
        start = _int_or_name(low_and_high[0], bounds.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _int_or_name(low_and_high[1], bounds.names)
        else:
            raise _Invalid(f"too many hyphens: {expr}")
    step = 1
    if len(range_and_step) == 2:
        step = _go_int(range_and_step[1])
        if len(low_and_high) == 1:  # "N/step" means "N-max/step"
            end = bounds.high
    elif len(range_and_step) > 2:
        raise _Invalid(f"too many slashes: {expr}")
    if start < bounds.low:
        raise _Invalid(f"beginning of range ({start}) below minimum ({bounds.low}): {expr}")
    if end > bounds.high:
        raise _Invalid(f"end of range ({end}) above maximum ({bounds.high}): {expr}")
    if start > end:
        raise _Invalid(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise _Invalid(f"step of range should be a positive number: {expr}")
    return range(start, end + 1, step)


def _parse(spec: str) -> None:
    if not spec:
        raise _Invalid("empty spec string")
    if spec.startswith(("TZ=", "CRON_TZ=")):
        zone, _, spec = spec.partition(" ")
        name = zone.partition("=")[2]
        if (problem := _unknown_zone(name)) is not None:
            raise _Invalid(f"provided bad location {name}: {problem}")
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return
        if spec.startswith("@every "):
            problem = _duration_error(spec.removeprefix("@every "))
            if problem is not None:
                raise _Invalid(f"failed to parse duration {spec}: {problem}")
            return
        raise _Invalid(f"unrecognized descriptor: {spec}")
    fields = spec.split()
    if len(fields) != 5:
        raise _Invalid(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    for field, bounds in zip(fields, _FIELDS, strict=True):
        for expr in field.split(","):
            _check_range(expr, bounds)


_EXPANDED = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
             "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *",
             "@hourly": "0 * * * *"}


def next_run(schedule: str, zone: str | None, after: float) -> float | None:
    """The first time (seconds since the epoch) after ``after`` that ``schedule`` fires,
    in ``zone`` (a CronJob's ``timeZone``, else a ``TZ=`` prefix, else UTC), as
    robfig/cron's ``SpecSchedule.Next`` finds it; None for an invalid schedule or none
    within five years."""
    if schedule_error(schedule) is not None:
        return None
    spec = schedule
    if spec.startswith(("TZ=", "CRON_TZ=")):
        prefix, _, spec = spec.partition(" ")
        zone = zone or prefix.partition("=")[2]
    if spec.startswith("@every "):
        seconds = _seconds(spec.removeprefix("@every "))
        return float(int(after) + max(int(seconds), 1))
    fields = _EXPANDED.get(spec, spec).split()
    sets = [{v for expr in field.split(",") for v in _check_range(expr, bounds)}
            for field, bounds in zip(fields, _FIELDS, strict=True)]
    minutes, hours, doms, months, dows = sets
    star_day = fields[2].startswith(("*", "?")) or fields[4].startswith(("*", "?"))
    tz = zoneinfo.ZoneInfo(zone) if zone and zone != "UTC" else datetime.UTC
    t = datetime.datetime.fromtimestamp(int(after) // 60 * 60 + 60, tz)
    end = t + datetime.timedelta(days=5 * 366)
    while t < end:
        dom_ok, dow_ok = t.day in doms, (t.weekday() + 1) % 7 in dows
        day_ok = (dom_ok and dow_ok) if star_day else (dom_ok or dow_ok)
        if t.month not in months or not day_ok:
            t = (t + datetime.timedelta(days=1)).replace(hour=0, minute=0)
            continue
        if t.hour not in hours:
            t = (t + datetime.timedelta(hours=1)).replace(minute=0)
            continue
        if t.minute not in minutes:
            t += datetime.timedelta(minutes=1)
            continue
        return t.timestamp()
    return None


def _seconds(text: str) -> float:
    """A Go duration (``1h30m``) in seconds."""
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0,
             "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[u] for n, u in re.findall(r"([\d.]+)([^\d.]+)", text))


def _duration_error(text: str) -> str | None:
    """``time.ParseDuration``'s error for ``text`` (None: a duration)."""
    quoted = f'"{text}"'
    rest = text[1:] if text[:1] in "+-" else text
    if rest == "0":
        return None
    if not rest:
        return f"time: invalid duration {quoted}"
    while rest:
        number = re.match(r"\d*(\.\d*)?", rest)
        assert number is not None
        if number.group(0) in ("", "."):
            return f"time: invalid duration {quoted}"
        rest = rest[number.end():]
        unit = re.match(r"[^\d.]*", rest)
        assert unit is not None
        if not unit.group(0):
            return f"time: missing unit in duration {quoted}"
        if unit.group(0) not in _UNITS:
            return f'time: unknown unit "{unit.group(0)}" in duration {quoted}'
        rest = rest[unit.end():]
    return None


def schedule_error(schedule: str) -> str | None:
    """robfig/cron ``ParseStandard``'s error for ``schedule`` (None: it parses)."""
    try:
        _parse(schedule)
    except _Invalid as err:
        return str(err)
    return None


def _unknown_zone(name: str) -> str | None:
    """``time.LoadLocation``'s error for ``name`` (None: a zone, or no zone database
    here to tell)."""
    if name in ("", "UTC"):
        return None
    if not zoneinfo.available_timezones():
        return None
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"unknown time zone {name}"
    return None


_ZONE_PART = re.compile(r"[A-Za-z\.\-_0-9+]{1,14}")


def time_zone_error(zone: str) -> str | None:
    """``validateTimeZone``'s error for a CronJob's ``timeZone`` (None: valid)."""
    if not zone:
        return "timeZone must be nil or non-empty string"
    for part in zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _ZONE_PART.fullmatch(part):
            return f"unknown time zone {zone}"
    if zone.lower() == "local":
        return ("timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones")
    return _unknown_zone(zone)
