"""Cron arithmetic: when a cron expression fires next, read on the wall clock of a time zone.

Rule: this module reads no clock and keeps no state that changes an answer (only a cache of
checked expressions). Time comes in as ``after`` and goes out as UTC POSIX timestamps (float
seconds), the numbers the scheduler's core counts in; ``next_fires`` is the same arithmetic in
aware datetimes, for people and the command line. Zones are named and resolved by
``actors.core.zones`` (``resolve_zone``, ``zone_name``, re-exported here).

cronsim parses the expression and walks the calendar, on *naive* wall-clock times only. What a
wall-clock time means in a zone, and the daylight-saving policy, is decided here, because
cronsim's own zone handling was found wrong in two ways (checked with cronsim 2.8): started
inside a repeated hour it can answer a time *before* its start (Europe/Berlin, 2026-10-25,
``30 2 * * *`` from 01:00 UTC gives 00:30 UTC), and for wall-clock jobs (below) it drops runs in zones
whose clocks move by half an hour or off the hour (``30 * * * *`` misses 02:30 on the day
Australia/Lord_Howe springs forward; ``*/15 2 * * *`` misses 02:00 and 02:15 on the day it
falls back).

The policy is Debian/Vixie cron's (cron(8)):

* A *fixed-time* job (neither the minute nor the hour field starts with ``*``) whose time falls
  in a skipped interval runs once, when the interval ends (the first instant after the gap); one
  whose time falls in a repeated interval runs once, at the first occurrence.
* A *wall-clock* job (the minute or the hour field starts with ``*``, e.g. ``*/15 * * * *``,
  ``0 * * * *``, ``@hourly``) runs whenever the zone's clock shows a matching time: not at all
  for times the clock skips, twice for matching times the clock shows twice.

What a ``next_fire`` costs, and why sparse calendars cost more, is measured by
``python -m benchmarks.cron`` (docs/performance.md, "Cron arithmetic").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from types import MappingProxyType
from typing import Final, final

from cronsim import CronSim, CronSimError

from actors.core.zones import resolve_zone, zone_name
from messages.triggers import require_finite

__all__ = [
    "ALIASES",
    "FIELD_NAMES",
    "CronSchedule",
    "check_cron",
    "next_fire",
    "next_fires",
    "resolve_zone",
    "zone_name",
]

FIELD_NAMES: Final = ("minute", "hour", "day-of-month", "month", "day-of-week")
"""The five fields of a cron expression, in order."""

_FIELD_VALUES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "minute": "0-59",
        "hour": "0-23",
        "day-of-month": "1-31",
        "month": "1-12 or JAN-DEC",
        "day-of-week": "0-7 or SUN-SAT, 0 and 7 both Sunday",
    }
)

ALIASES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "@yearly": "0 0 1 1 *",
        "@annually": "0 0 1 1 *",
        "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *",
        "@hourly": "0 * * * *",
    }
)
"""The ``@`` aliases and the 5-field expressions they stand for (cronsim accepts none of them)."""

_FIELD_FORM: Final = "minute hour day-of-month month day-of-week"
_PARSE_START: Final = datetime(2000, 1, 1)  # any naive time: cronsim parses in its constructor

_PROBE_STEP: Final = 3 * 86_400
"""How far apart, in seconds, a zone's UTC offset is probed for changes.

No two offset changes of any zone in tzdata 2026 since 1970 are closer than 6.96 days (Brazil
2000, Gaza/Hebron's predicted ones), so probing every three days sees each change on its own
and bisection then finds its second.
"""

# A day's margin inside datetime's range, so that reading them in any zone stays in range.
_EARLIEST: Final = datetime(2, 1, 1, tzinfo=UTC).timestamp()
_LATEST: Final = datetime(9998, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


@final
@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A checked cron expression in a zone, ready to compute firing times again and again.

    Construct it with the expression as written and a zone: the expression is checked and
    normalised (aliases expanded, fields separated by one space) and the zone resolved once,
    so each ``next_fire`` only walks the calendar.

    Attributes:
        expr: The normalised 5-field expression.
        zone: The zone whose wall clock the expression is read on.
        follows_wall_clock: Whether the minute or the hour field starts with ``*``: such a job
            runs whenever the clock shows a matching time; any other runs once per matching
            wall-clock time, daylight-saving changes notwithstanding (see the module docstring).
    """

    expr: str
    zone: tzinfo = UTC
    follows_wall_clock: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        expr, follows_wall_clock = _checked(_require_str(self.expr))
        object.__setattr__(self, "expr", expr)
        object.__setattr__(self, "zone", resolve_zone(self.zone))
        object.__setattr__(self, "follows_wall_clock", follows_wall_clock)

    @classmethod
    def parse(cls, expr: str, tz: str | tzinfo = "UTC") -> CronSchedule:
        """Return the schedule of ``expr`` in the zone ``tz`` (a name or a ``tzinfo``).

        Raises:
            TypeError: ``expr`` is not a str, or ``tz`` neither a str nor a ``tzinfo``.
            ValueError: ``expr`` is not a cron expression (the message names the field), or
                ``tz`` is not a zone the scheduler can store by name.
        """
        return cls(expr, resolve_zone(tz))

    @property
    def zone_name(self) -> str:
        """The name to store the zone by (see ``zone_name``)."""
        return zone_name(self.zone)

    def next_fire(self, after: float) -> float:
        """Return the first firing time strictly after ``after``, both UTC POSIX timestamps.

        Raises:
            TypeError: ``after`` is not a number.
            ValueError: ``after`` is not finite or not within the years 2-9998, or the
                expression does not fire within 50 years after it (or before the year 10000).
        """
        after = require_finite("after", after)
        if not _EARLIEST <= after <= _LATEST:
            raise ValueError(f"after must be a timestamp within the years 2-9998, got {after!r}")
        lower = math.floor(after) + 1  # firing times are whole seconds
        try:
            if self.follows_wall_clock:
                return float(_next_on_wall_clock(self.expr, self.zone, lower))
            return float(_next_fixed_time(self.expr, self.zone, lower))
        except (StopIteration, OverflowError, ValueError) as error:
            # cronsim gives up after 50 years without a match; datetime ends with the year 9999.
            raise ValueError(
                f"cron expression {self.expr!r} does not fire after {after!r} "
                f"(not within 50 years, nor before the year 10000)"
            ) from error

    def next_fires(self, after: datetime, count: int) -> list[datetime]:
        """Return the next ``count`` firing times strictly after ``after``, in the schedule's zone.

        Args:
            after: An aware datetime, in any zone.
            count: How many firing times to return (0 or more).

        Raises:
            TypeError: ``after`` is not a datetime or ``count`` not an int.
            ValueError: ``after`` is naive, ``count`` is negative, or the expression stops firing.
        """
        if not isinstance(after, datetime):
            raise TypeError(f"after must be an aware datetime, got {after!r}")
        if after.utcoffset() is None:
            raise ValueError(f"after must be an aware datetime (with a tzinfo), got {after!r}")
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, got {count!r}")
        if count < 0:
            raise ValueError(f"count must be 0 or more, got {count!r}")
        fires: list[datetime] = []
        instant = after.timestamp()
        for _ in range(count):
            instant = self.next_fire(instant)
            fires.append(datetime.fromtimestamp(instant, self.zone))
        return fires


def check_cron(expr: str) -> str:
    """Return ``expr`` normalised: an alias expanded, the five fields separated by one space.

    Raises:
        TypeError: ``expr`` is not a str.
        ValueError: ``expr`` is not a 5-field cron expression or a known alias; the message
            names the expression and, where one is to blame, the field and what it accepts.
    """
    return _checked(_require_str(expr))[0]


def next_fire(expr: str, zone: tzinfo, after: float) -> float:
    """Return the first time ``expr`` fires strictly after ``after``, read on ``zone``'s clock.

    Both times are UTC POSIX timestamps (float seconds). Repeated calls with the same
    expression and zone reuse one checked ``CronSchedule``.

    Raises:
        TypeError: ``expr`` is not a str, or ``after`` not a number.
        ValueError: ``expr`` is not a cron expression, ``zone`` has no storable name, or
            there is no firing time after ``after``.
    """
    return _schedule(_require_str(expr), zone).next_fire(after)


def next_fires(expr: str, tz: str | tzinfo, after: datetime, count: int) -> list[datetime]:
    """Return the next ``count`` times ``expr`` fires strictly after ``after``, aware in ``tz``.

    Raises:
        TypeError: a wrong type for any argument.
        ValueError: a bad expression or zone, a naive ``after``, or a negative ``count``.
    """
    return CronSchedule.parse(expr, tz).next_fires(after, count)


@functools.lru_cache(maxsize=1024)
def _checked(expr: str) -> tuple[str, bool]:
    """Return the normalised expression and whether it follows the wall clock; cached, as it parses."""
    fields = expr.split()
    if len(fields) == 1 and fields[0].startswith("@"):
        alias = fields[0].lower()
        if alias not in ALIASES:
            raise ValueError(
                f"cron expression {expr!r}: unknown alias; use one of {', '.join(ALIASES)} "
                f"or five fields ({_FIELD_FORM})"
            )
        fields = ALIASES[alias].split()
    if len(fields) != len(FIELD_NAMES):
        what = "is empty" if not fields else f"has {len(fields)} field{'s' if len(fields) > 1 else ''}"
        raise ValueError(
            f"cron expression {expr!r} {what}; expected 5 ({_FIELD_FORM}) or an alias such as @daily"
        )
    normalised = " ".join(fields)
    try:
        CronSim(normalised, _PARSE_START)
    except CronSimError as error:
        raise ValueError(_explain(expr, fields, str(error))) from None
    # Debian/Vixie cron: a job with '*' leading the minute or hour field runs on the wall clock.
    return normalised, fields[0].startswith("*") or fields[1].startswith("*")


def _require_str(expr: str) -> str:
    # Checked before the caches, which would refuse an unhashable value with a vaguer message.
    if not isinstance(expr, str):
        raise TypeError(f"a cron expression must be a str, got {expr!r}")
    return expr


def _explain(expr: str, fields: list[str], problem: str) -> str:
    """Turn cronsim's "Bad <field>" into a sentence naming the field, its text and what it takes."""
    for index, name in enumerate(FIELD_NAMES):
        if problem == f"Bad {name}":
            text = fields[index]
            if name == "day-of-month" and _day_parses(text):
                # cronsim refuses a day no month of the month field has (30 in February).
                return (
                    f"cron expression {expr!r}: day-of-month {text!r} never occurs "
                    f"in month {fields[3]!r}, so it would never fire"
                )
            return (
                f"cron expression {expr!r}: bad {name} field {text!r} "
                f"(expected {_FIELD_VALUES[name]}, as a value, list, range or step)"
            )
    return f"cron expression {expr!r}: {problem}"


def _day_parses(text: str) -> bool:
    try:
        CronSim(f"0 0 {text} * *", _PARSE_START)
    except CronSimError:
        return False
    return True


@functools.lru_cache(maxsize=1024)
def _schedule(expr: str, zone: tzinfo) -> CronSchedule:
    return CronSchedule(expr, zone)


def _next_fixed_time(expr: str, zone: tzinfo, lower: int) -> int:
    """Return the first firing time at or after ``lower`` of a fixed-time job (Vixie's rules)."""
    # Walk matching wall times from the wall time at `lower`. Where the clock went back, the
    # walk meets wall times whose first occurrence is already past: those ran, so skip them.
    for wall in CronSim(expr, _wall_time(lower - 1, zone)):
        fire = _first_instant(wall, zone)
        if fire >= lower:
            return fire
    raise StopIteration


def _next_on_wall_clock(expr: str, zone: tzinfo, lower: int) -> int:
    """Return the first instant at or after ``lower`` at which ``zone``'s clock shows a match."""
    while True:
        # While the UTC offset holds, wall time is instant + offset: the first matching wall time
        # gives the first firing instant, unless the offset changes before it. Then start again
        # from the change, with the new offset.
        local = datetime.fromtimestamp(lower, zone)
        offset = local.utcoffset()
        base = local.replace(tzinfo=None)
        wall = next(CronSim(expr, base - _ONE_SECOND))
        fire = lower + int((wall - base).total_seconds())
        if isinstance(zone, timezone):  # a fixed offset never changes
            return fire
        change = _first_offset_change(zone, lower, offset, fire)
        if change is None:
            return fire
        lower = change


_ONE_SECOND: Final = timedelta(seconds=1)


def _wall_time(instant: int, zone: tzinfo) -> datetime:
    return datetime.fromtimestamp(instant, zone).replace(tzinfo=None)


def _offset_at(instant: int, zone: tzinfo) -> timedelta | None:
    return datetime.fromtimestamp(instant, zone).utcoffset()


def _first_instant(wall: datetime, zone: tzinfo) -> int:
    """Return when ``zone``'s clock first shows ``wall``, or, if it skips ``wall``, when the skip ends."""
    fire = int(wall.replace(tzinfo=zone).timestamp())  # fold=0: the first of two repeated times
    if isinstance(zone, timezone) or _wall_time(fire, zone) == wall:
        return fire
    # In a gap, fold=0 reads `wall` with the offset before the change, landing after it, and
    # fold=1 with the offset after, landing before it: the change lies between the two.
    return _offset_change(zone, int(wall.replace(tzinfo=zone, fold=1).timestamp()), fire)


def _first_offset_change(zone: tzinfo, start: int, offset: timedelta | None, end: int) -> int | None:
    """Return the first instant in ``(start, end]`` whose UTC offset is not ``offset``, or ``None``."""
    probe = start
    while probe < end:
        next_probe = min(probe + _PROBE_STEP, end)
        if _offset_at(next_probe, zone) != offset:
            return _offset_change(zone, probe, next_probe)
        probe = next_probe
    return None


def _offset_change(zone: tzinfo, before: int, after: int) -> int:
    """Return the instant in ``(before, after]`` where the offset changes (it differs at the ends)."""
    offset = _offset_at(before, zone)
    while after - before > 1:
        middle = (before + after) // 2
        if _offset_at(middle, zone) == offset:
            before = middle
        else:
            after = middle
    return after
