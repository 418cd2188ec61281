"""Cron arithmetic (actors.core.cron) and the Cron trigger message: syntax, zones, daylight-saving time."""

from __future__ import annotations

import bisect
import dataclasses
import importlib.resources
import itertools
import re
import typing
import zoneinfo
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone, tzinfo

import pytest
from cronsim import CronSim
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import messages
from actors.core.cron import ALIASES, CronSchedule, check_cron, next_fire, next_fires, resolve_zone, zone_name
from messages import Cron, Trigger

BERLIN = zoneinfo.ZoneInfo("Europe/Berlin")
LORD_HOWE = zoneinfo.ZoneInfo("Australia/Lord_Howe")
CHATHAM = zoneinfo.ZoneInfo("Pacific/Chatham")


def utc(text: str) -> float:
    """``"2026-03-29 01:00"`` read as UTC, as a POSIX timestamp."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def fires(expr: str, zone: tzinfo, after: float, until: float) -> list[float]:
    """Every firing time in ``(after, until]``, by iterating next_fire."""
    schedule = CronSchedule.parse(expr, zone)
    found: list[float] = []
    while (after := schedule.next_fire(after)) <= until:
        found.append(after)
    return found


def as_utc(instants: Iterable[float]) -> list[str]:
    return [datetime.fromtimestamp(t, UTC).strftime("%m-%d %H:%M") for t in instants]


def as_local(instants: Iterable[float], zone: tzinfo) -> list[str]:
    return [datetime.fromtimestamp(t, zone).strftime("%m-%d %H:%M%z") for t in instants]


# -- the daylight-saving policy, pinned (docs/calendar.md has the same table) ---------------------


def test_fixed_time_in_a_spring_gap_runs_once_right_after_the_gap() -> None:
    # Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); 02:30 never happens.
    found = fires("30 2 * * *", BERLIN, utc("2026-03-27 12:00"), utc("2026-03-30 12:00"))
    assert as_utc(found) == ["03-28 01:30", "03-29 01:00", "03-30 00:30"]
    assert as_local(found, BERLIN) == ["03-28 02:30+0100", "03-29 03:00+0200", "03-30 02:30+0200"]


def test_fixed_time_in_a_repeated_hour_runs_once_at_the_first_occurrence() -> None:
    # Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET (01:00 UTC); 02:30 happens twice.
    found = fires("30 2 * * *", BERLIN, utc("2026-10-23 12:00"), utc("2026-10-26 12:00"))
    assert as_utc(found) == ["10-24 00:30", "10-25 00:30", "10-26 01:30"]
    assert as_local(found, BERLIN) == ["10-24 02:30+0200", "10-25 02:30+0200", "10-26 02:30+0100"]


@pytest.mark.parametrize(
    "after", ["2026-10-25 00:30", "2026-10-25 01:00", "2026-10-25 01:30", "2026-10-25 01:59"]
)
def test_started_in_the_repeated_hour_a_fixed_time_job_waits_for_the_next_day(after: str) -> None:
    # cronsim itself answers 00:30 UTC here, before its start; the first occurrence has passed.
    assert as_utc([next_fire("30 2 * * *", BERLIN, utc(after))]) == ["10-26 01:30"]


def test_a_fixed_time_job_due_in_the_gap_is_still_due_just_before_it_ends() -> None:
    gap_end = utc("2026-03-29 01:00")
    assert next_fire("30 2 * * *", BERLIN, gap_end - 0.5) == gap_end
    assert as_utc([next_fire("30 2 * * *", BERLIN, gap_end)]) == ["03-30 00:30"]


def test_hourly_job_runs_every_real_hour_through_the_autumn_change() -> None:
    found = fires("0 * * * *", BERLIN, utc("2026-10-24 22:30"), utc("2026-10-25 02:30"))
    assert as_utc(found) == ["10-24 23:00", "10-25 00:00", "10-25 01:00", "10-25 02:00"]
    assert as_local(found, BERLIN) == [
        "10-25 01:00+0200",
        "10-25 02:00+0200",
        "10-25 02:00+0100",  # the same wall time again, one real hour later
        "10-25 03:00+0100",
    ]


def test_hourly_job_runs_every_real_hour_through_the_spring_change() -> None:
    found = fires("0 * * * *", BERLIN, utc("2026-03-28 22:30"), utc("2026-03-29 02:30"))
    assert as_utc(found) == ["03-28 23:00", "03-29 00:00", "03-29 01:00", "03-29 02:00"]
    assert as_local(found, BERLIN) == [
        "03-29 00:00+0100",
        "03-29 01:00+0100",
        "03-29 03:00+0200",  # no 02:00 local that day
        "03-29 04:00+0200",
    ]


@pytest.mark.parametrize("change", ["2026-03-29 01:00", "2026-10-25 01:00"])
def test_every_quarter_hour_follows_elapsed_time_across_both_changes(change: str) -> None:
    found = fires("*/15 * * * *", BERLIN, utc(change) - 6 * 3600, utc(change) + 6 * 3600)
    assert len(found) == 48
    assert {b - a for a, b in itertools.pairwise(found)} == {900.0}


def test_a_wall_clock_job_inside_the_changing_hour_follows_the_wall_clock() -> None:
    # '*' leads the minute field: Vixie cron runs it whenever the clock shows 02:xx.
    autumn = fires("*/15 2 * * *", BERLIN, utc("2026-10-24 12:00"), utc("2026-10-25 12:00"))
    assert as_local(autumn, BERLIN) == [
        *(f"10-25 02:{m:02}+0200" for m in (0, 15, 30, 45)),
        *(f"10-25 02:{m:02}+0100" for m in (0, 15, 30, 45)),
    ]
    spring = fires("*/15 2 * * *", BERLIN, utc("2026-03-28 12:00"), utc("2026-03-30 12:00"))
    assert as_local(spring, BERLIN) == [f"03-30 02:{m:02}+0200" for m in (0, 15, 30, 45)]


def test_a_30_minute_shift_lord_howe() -> None:
    # 2026-10-04 02:00 +10:30 jumps to 02:30 +11:00 (15:30 UTC on the 3rd);
    # 2026-04-05 02:00 +11:00 goes back to 01:30 +10:30 (15:00 UTC on the 4th).
    in_gap = fires("15 2 * * *", LORD_HOWE, utc("2026-10-02 12:00"), utc("2026-10-04 12:00"))
    assert as_local(in_gap, LORD_HOWE) == ["10-03 02:15+1030", "10-04 02:30+1100"]
    repeated = fires("45 1 * * *", LORD_HOWE, utc("2026-04-03 12:00"), utc("2026-04-05 12:00"))
    assert as_utc(repeated) == ["04-03 14:45", "04-04 14:45"]  # not again at 15:15 UTC
    # Wall-clock jobs: cronsim alone drops these runs (02:30 right after the gap, 02:00 after the fold).
    spring = fires("30 * * * *", LORD_HOWE, utc("2026-10-03 13:00"), utc("2026-10-03 17:00"))
    assert as_local(spring, LORD_HOWE) == [
        "10-04 00:30+1030",
        "10-04 01:30+1030",
        "10-04 02:30+1100",
        "10-04 03:30+1100",
    ]
    autumn = fires("*/15 2 * * *", LORD_HOWE, utc("2026-04-04 12:00"), utc("2026-04-05 12:00"))
    assert as_local(autumn, LORD_HOWE) == [f"04-05 02:{m:02}+1030" for m in (0, 15, 30, 45)]


def test_monthly_on_the_31st_skips_shorter_months() -> None:
    found = fires("0 0 31 * *", UTC, utc("2026-01-01 00:00"), utc("2026-12-31 23:59"))
    assert as_utc(found) == [
        f"{m} 00:00" for m in ("01-31", "03-31", "05-31", "07-31", "08-31", "10-31", "12-31")
    ]


def test_february_29th_waits_for_a_leap_year() -> None:
    assert datetime.fromtimestamp(next_fire("0 0 29 2 *", UTC, utc("2026-03-01 00:00")), UTC) == datetime(
        2028, 2, 29, tzinfo=UTC
    )
    later = next_fires("0 0 29 2 *", "Europe/Berlin", datetime(2026, 3, 1, tzinfo=BERLIN), 2)
    assert later == [datetime(2028, 2, 29, tzinfo=BERLIN), datetime(2032, 2, 29, tzinfo=BERLIN)]


def test_weekday_ranges_and_names() -> None:
    friday_evening = datetime(2026, 7, 24, 18, 0, tzinfo=BERLIN)
    found = next_fires("0 9 * * MON-FRI", "Europe/Berlin", friday_evening, 6)
    assert [d.strftime("%a %d") for d in found] == [
        "Mon 27",
        "Tue 28",
        "Wed 29",
        "Thu 30",
        "Fri 31",
        "Mon 03",
    ]
    assert all(d.hour == 9 and d.minute == 0 and d.tzinfo is BERLIN for d in found)
    assert next_fires("0 9 * * mon,wed", "UTC", friday_evening, 2) == next_fires(
        "0 9 * * 1,3", "UTC", friday_evening, 2
    )
    sundays = {tuple(next_fires(f"0 9 * * {d}", "UTC", friday_evening, 3)) for d in ("0", "7", "SUN")}
    assert len(sundays) == 1


def test_month_names_lists_and_steps() -> None:
    start = datetime(2026, 1, 15, tzinfo=UTC)
    assert [d.month for d in next_fires("0 0 1 JAN,JUL *", "UTC", start, 3)] == [7, 1, 7]
    assert [d.minute for d in next_fires("5-20/5 * * * *", "UTC", start, 5)] == [5, 10, 15, 20, 5]


@pytest.mark.parametrize(("alias", "fields"), sorted(ALIASES.items()))
def test_aliases_fire_like_their_five_fields(alias: str, fields: str) -> None:
    start = datetime(2026, 5, 17, 13, 45, tzinfo=BERLIN)
    assert check_cron(alias) == fields
    assert next_fires(alias, BERLIN, start, 3) == next_fires(fields, BERLIN, start, 3)
    assert check_cron(alias.upper()) == fields


def test_alias_table() -> None:
    assert dict(ALIASES) == {
        "@yearly": "0 0 1 1 *",
        "@annually": "0 0 1 1 *",
        "@monthly": "0 0 1 * *",
        "@weekly": "0 0 * * 0",
        "@daily": "0 0 * * *",
        "@midnight": "0 0 * * *",
        "@hourly": "0 * * * *",
    }


# -- against a brute-force model of Vixie cron, minute by minute ----------------------------------


def vixie_model(expr: str, zone: tzinfo, start: int, end: int) -> list[float]:
    """What Debian/Vixie cron runs in ``(start, end]``, stepping real minutes (an independent model).

    A wall-clock job runs whenever the clock shows a matching minute. A fixed-time job runs at a
    minute if some matching wall time lies between the highest wall time seen so far (excluded)
    and the clock's (included): that one rule gives normal minutes, one run after a gap for
    everything the gap skipped, and nothing while the clock repeats times already seen.
    """
    fields = check_cron(expr).split()
    wall_clock = fields[0].startswith("*") or fields[1].startswith("*")
    first = start - start % 60 + 60

    def wall(t: int) -> datetime:
        return datetime.fromtimestamp(t, zone).replace(tzinfo=None)

    walls = [wall(t) for t in range(first, end + 1, 60)]
    seen = wall(first - 60)
    matching: list[datetime] = []  # naive, ascending: cronsim's plain calendar, no zone involved
    for match in CronSim(" ".join(fields), min(*walls, seen) - timedelta(seconds=1)):
        if match > max(walls):
            break
        matching.append(match)
    found: list[float] = []
    for t, now in zip(range(first, end + 1, 60), walls, strict=True):
        if wall_clock:
            index = bisect.bisect_left(matching, now)
            if index < len(matching) and matching[index] == now:
                found.append(float(t))
        elif now > seen:
            index = bisect.bisect_right(matching, seen)
            if index < len(matching) and matching[index] <= now:
                found.append(float(t))
            seen = now
    return found


TRANSITIONS = [
    ("Europe/Berlin", "2026-03-29 01:00"),
    ("Europe/Berlin", "2026-10-25 01:00"),
    ("America/New_York", "2026-11-01 06:00"),
    ("Australia/Lord_Howe", "2026-04-04 15:00"),
    ("Australia/Lord_Howe", "2026-10-03 15:30"),
    ("Pacific/Chatham", "2026-04-04 14:00"),
    ("Pacific/Chatham", "2026-09-26 14:00"),
    ("America/Santiago", "2026-09-06 04:00"),  # at midnight: 24:00 is 01:00
    ("Antarctica/Troll", "2026-03-29 01:00"),  # a two-hour shift
    ("Pacific/Apia", "2011-12-30 10:00"),  # a whole day skipped
]
MODEL_EXPRESSIONS = [
    "30 2 * * *",
    "15 2 * * *",
    "45 1 * * *",
    "0 0 * * *",
    "0,30 0-3 * * *",
    "0 0-23/2 * * *",
    "0 * * * *",
    "30 * * * *",
    "*/15 * * * *",
    "*/15 2 * * *",
    "* 2 * * *",
    "0 */2 * * *",
    "*/7 9-17 * * MON-FRI",
]


@pytest.mark.parametrize(("zone_key", "change"), TRANSITIONS, ids=[f"{z}@{c[:10]}" for z, c in TRANSITIONS])
def test_agrees_with_a_minute_by_minute_model_of_vixie_cron(zone_key: str, change: str) -> None:
    zone = zoneinfo.ZoneInfo(zone_key)
    start, end = int(utc(change)) - 14 * 3600, int(utc(change)) + 14 * 3600
    for expr in MODEL_EXPRESSIONS:
        expected = vixie_model(expr, zone, start, end)
        assert as_local(fires(expr, zone, start, end), zone) == as_local(expected, zone), expr


# -- properties -----------------------------------------------------------------------------------

MINUTES = ["*", "*/15", "*/7", "0", "30", "45", "0,30", "5-10", "10-50/20"]
HOURS = ["*", "*/2", "*/5", "0", "1", "2", "3", "1-3", "9-17", "23", "0-23/3"]
DAYS = ["*", "*", "1", "15", "29", "31", "*/10", "L"]
MONTHS = ["*", "*", "*", "2", "3,10", "MAR-NOV", "*/4"]
WEEKDAYS = ["*", "*", "MON-FRI", "SUN", "6", "SAT,SUN"]
PROPERTY_ZONES = [
    "UTC",
    "UTC+05:30",
    "Europe/Berlin",
    "America/New_York",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "America/Santiago",
    "Asia/Beirut",
    "America/Havana",
    "Antarctica/Troll",
    "Asia/Kolkata",
]
expressions = st.one_of(
    st.tuples(*(st.sampled_from(f) for f in (MINUTES, HOURS, DAYS, MONTHS, WEEKDAYS))).map(" ".join),
    st.sampled_from(sorted(ALIASES)),
)
starts = st.floats(min_value=utc("1990-01-01 00:00"), max_value=utc("2060-01-01 00:00"))


@st.composite
def around_a_change(draw: st.DrawFn) -> tuple[str, str, float]:
    """A daily job at the hours a daylight-saving change touches, started within 3 hours of it."""
    zone_key, change = draw(st.sampled_from([t for t in TRANSITIONS if t[1].startswith("2026")]))
    zone, instant = zoneinfo.ZoneInfo(zone_key), utc(change)
    hours = sorted({datetime.fromtimestamp(instant + d, zone).hour for d in (-3600, -1, 0, 3600)})
    hour = draw(st.sampled_from([*map(str, hours), f"{hours[0]}-{hours[-1]}", "*", "*/2"]))
    expr = f"{draw(st.sampled_from(MINUTES))} {hour} * * *"
    return expr, zone_key, instant + draw(st.floats(min_value=-3 * 3600, max_value=3 * 3600))


cases = st.one_of(
    st.tuples(expressions, st.sampled_from(PROPERTY_ZONES), starts),
    around_a_change(),
)


def parse_or_reject(expr: str, zone_key: str) -> CronSchedule:
    """The schedule, or hypothesis skips the example: the fields can combine to 31 February."""
    try:
        return CronSchedule.parse(expr, zone_key)
    except ValueError as error:
        reason = str(error)
    assume("never occurs" not in reason)
    raise AssertionError(reason)


def wall_offset(t: float, zone: tzinfo) -> timedelta | None:
    return datetime.fromtimestamp(t, zone).utcoffset()


def matches(expr: str, wall: datetime) -> bool:
    """Whether the wall-clock time ``wall`` (naive) matches ``expr`` on cronsim's plain calendar."""
    return next(CronSim(check_cron(expr), wall - timedelta(seconds=1))) == wall


@settings(deadline=None)  # a shared, loaded machine must not turn a slow example into a failure
@given(cases)
def test_firing_times_increase_and_are_matching_wall_times(case: tuple[str, str, float]) -> None:
    expr, zone_key, after = case
    schedule = parse_or_reject(expr, zone_key)
    zone = schedule.zone
    found: list[float] = []
    instant = after
    for _ in range(25):
        instant = schedule.next_fire(instant)
        found.append(instant)
    assert found[0] > after
    assert all(a < b for a, b in itertools.pairwise(found))
    assert all(t == int(t) for t in found)
    walls = [datetime.fromtimestamp(t, zone).replace(tzinfo=None) for t in found]
    for t, wall in zip(found, walls, strict=True):
        offset_changed = datetime.fromtimestamp(t - 1, zone).utcoffset() != wall_offset(t, zone)
        # A fixed-time job skipped by a gap runs as the gap ends, at a wall time that may not match.
        assert matches(expr, wall) or (not schedule.follows_wall_clock and offset_changed), (wall, t)
    if not schedule.follows_wall_clock:
        assert len(set(walls)) == len(walls), "a fixed-time job ran twice at one wall time"


@settings(deadline=None)
@given(cases)
def test_next_fire_is_the_first_of_next_fires(case: tuple[str, str, float]) -> None:
    expr, zone_key, after = case
    zone = parse_or_reject(expr, zone_key).zone
    start = datetime.fromtimestamp(after, zone)
    listed = next_fires(expr, zone_key, start, 3)
    assert listed[0].timestamp() == next_fire(expr, zone, start.timestamp())  # datetime keeps only µs
    assert all(d.tzinfo == zone for d in listed)


@given(st.text(max_size=40))
def test_any_text_is_an_expression_or_a_value_error(text: str) -> None:
    try:
        check_cron(text)
    except ValueError as error:
        message = str(error)
    else:
        return
    assert repr(text) in message


# -- bad expressions -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("61 * * * *", "cron expression '61 * * * *': bad minute field '61' (expected 0-59,"),
        ("0 24 * * *", "cron expression '0 24 * * *': bad hour field '24' (expected 0-23,"),
        ("0 0 0 * *", "cron expression '0 0 0 * *': bad day-of-month field '0' (expected 1-31,"),
        ("0 0 * 13 *", "cron expression '0 0 * 13 *': bad month field '13' (expected 1-12 or JAN-DEC,"),
        ("0 0 * JANUARY *", "bad month field 'JANUARY'"),
        (
            "0 9 * * MON-FRY",
            "cron expression '0 9 * * MON-FRY': bad day-of-week field 'MON-FRY' (expected 0-7",
        ),
        ("*/0 * * * *", "bad minute field '*/0'"),
        ("5-1 * * * *", "bad minute field '5-1'"),
        ("0 0 30 2 *", "cron expression '0 0 30 2 *': day-of-month '30' never occurs in month '2'"),
        (
            "0 0 * *",
            "cron expression '0 0 * *' has 4 fields; expected 5 (minute hour day-of-month month day-of-week)",
        ),
        ("0 0 0 * * *", "cron expression '0 0 0 * * *' has 6 fields; expected 5"),
        ("@daily 5", "has 2 fields; expected 5"),
        ("", "cron expression '' is empty; expected 5"),
        ("   ", "cron expression '   ' is empty"),
        ("@reboot", "cron expression '@reboot': unknown alias; use one of @yearly, @annually, @monthly"),
    ],
)
def test_bad_expressions_name_the_expression_and_the_field(expr: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_cron(expr)
    with pytest.raises(ValueError, match=re.escape(message)):
        CronSchedule.parse(expr)


@pytest.mark.parametrize("expr", [None, 5, ["0", "*", "*", "*", "*"], b"0 * * * *"])
def test_a_non_str_expression_is_a_type_error(expr: object) -> None:
    with pytest.raises(TypeError, match="cron expression must be a str"):
        check_cron(expr)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cron expression must be a str"):
        next_fire(expr, UTC, 0.0)  # type: ignore[arg-type]


def test_expressions_are_normalised() -> None:
    assert check_cron("  0   9 *\t* mon-fri ") == "0 9 * * mon-fri"
    assert CronSchedule.parse("0  9 * * *", "UTC") == CronSchedule.parse("0 9 * * *", UTC)
    assert CronSchedule.parse("@daily").expr == "0 0 * * *"
    assert CronSchedule.parse("@hourly").follows_wall_clock
    assert not CronSchedule.parse("0 0-23/2 * * *").follows_wall_clock  # Vixie: only a leading '*' counts


# -- zones -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "name"),
    [
        (UTC, "UTC"),
        (timezone(timedelta(0)), "UTC"),
        (timezone(timedelta(hours=5, minutes=30)), "UTC+05:30"),
        (timezone(timedelta(hours=-3)), "UTC-03:00"),
        (timezone(timedelta(hours=-9, minutes=-30)), "UTC-09:30"),
        (timezone(timedelta(minutes=53, seconds=28), "LMT"), "UTC+00:53:28"),
        (zoneinfo.ZoneInfo("Europe/Berlin"), "Europe/Berlin"),
        (zoneinfo.ZoneInfo("UTC"), "UTC"),
        (zoneinfo.ZoneInfo("Etc/GMT+5"), "Etc/GMT+5"),
    ],
)
def test_zone_names_round_trip(zone: tzinfo, name: str) -> None:
    assert zone_name(zone) == name
    back = resolve_zone(name)
    moment = datetime(2026, 7, 1, 12, tzinfo=UTC)
    assert back.utcoffset(moment.astimezone(back)) == zone.utcoffset(moment.astimezone(zone))
    assert zone_name(back) == name
    assert resolve_zone(zone) is zone


def test_names_resolve_to_zones() -> None:
    assert resolve_zone("UTC") is UTC
    assert resolve_zone("UTC+00:00") is UTC
    assert resolve_zone("UTC+05:30") == timezone(timedelta(hours=5, minutes=30))
    assert resolve_zone("UTC-03:00") == timezone(timedelta(hours=-3))
    assert resolve_zone("Europe/Berlin") is BERLIN


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "Mars/Olympus_Mons",
            "unknown time zone 'Mars/Olympus_Mons'; use an IANA name such as 'Europe/Berlin'",
        ),
        ("europe/berlin", "unknown time zone 'europe/berlin' (did you mean 'Europe/Berlin'?)"),
        ("Europe/Berln", "(did you mean 'Europe/Berlin'?)"),
        ("Europe", "unknown time zone 'Europe'"),
        ("", "unknown time zone ''"),
        ("../../etc/passwd", "unknown time zone '../../etc/passwd'"),
        ("/etc/localtime", "unknown time zone '/etc/localtime'"),
        ("UTC+24:00", "fixed offset 'UTC+24:00' is out of range"),
        ("UTC+05:60", "fixed offset 'UTC+05:60' is out of range"),
        ("localtime", "'localtime' is this machine's zone"),
    ],
)
def test_unknown_zones_are_value_errors_naming_the_zone(name: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as caught:
        resolve_zone(name)
    assert not isinstance(caught.value, KeyError)  # not zoneinfo's ZoneInfoNotFoundError
    with pytest.raises(ValueError, match=re.escape(message)):
        CronSchedule.parse("0 0 * * *", name)


class UnnamedZone(tzinfo):
    def utcoffset(self, dt: datetime | None) -> timedelta:
        return timedelta(hours=1)

    def dst(self, dt: datetime | None) -> timedelta:
        return timedelta(0)


def test_zones_without_a_name_are_refused_with_what_to_pass() -> None:
    with importlib.resources.files("tzdata.zoneinfo").joinpath("UTC").open("rb") as data:
        from_file = zoneinfo.ZoneInfo.from_file(data)
    for zone in (UnnamedZone(), from_file):
        with pytest.raises(ValueError, match="pass an IANA name such as 'Europe/Berlin'"):
            zone_name(zone)
        with pytest.raises(ValueError, match="pass an IANA name"):
            resolve_zone(zone)
    with pytest.raises(ValueError, match="fraction of a second"):
        zone_name(timezone(timedelta(microseconds=5)))


def test_a_zone_of_the_wrong_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="a time zone must be"):
        resolve_zone(5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a time zone must be"):
        zone_name("Europe/Berlin")  # type: ignore[arg-type]


# -- the number and datetime APIs ------------------------------------------------------------------


def test_next_fire_is_strictly_after() -> None:
    on_the_hour = utc("2026-05-01 10:00")
    assert next_fire("0 * * * *", UTC, on_the_hour) == on_the_hour + 3600
    assert next_fire("0 * * * *", UTC, on_the_hour - 0.001) == on_the_hour
    assert isinstance(next_fire("0 * * * *", UTC, 0), float)


@pytest.mark.parametrize(
    ("after", "error"), [(float("nan"), ValueError), (float("inf"), ValueError), ("0", TypeError)]
)
def test_next_fire_refuses_a_bad_after(after: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="after"):
        next_fire("0 * * * *", UTC, after)  # type: ignore[arg-type]


@pytest.mark.parametrize("after", [1e18, -1e18, datetime(9999, 6, 1, tzinfo=UTC).timestamp()])
def test_next_fire_outside_datetimes_years_is_a_value_error(after: float) -> None:
    with pytest.raises(ValueError, match="within the years 2-9998"):
        next_fire("0 0 1 1 *", BERLIN, after)


def test_no_firing_time_before_the_year_10000_is_a_value_error() -> None:
    with pytest.raises(ValueError, match=r"does not fire after .* nor before the year 10000"):
        next_fire("0 0 29 2 *", BERLIN, datetime(9997, 1, 1, tzinfo=UTC).timestamp())  # 9996 was the last


def test_next_fires_are_aware_in_the_jobs_zone() -> None:
    after = datetime(2026, 3, 28, 23, 30, tzinfo=UTC)  # any zone will do
    found = next_fires("0 * * * *", "Europe/Berlin", after, 3)
    assert [d.isoformat() for d in found] == [
        "2026-03-29T01:00:00+01:00",
        "2026-03-29T03:00:00+02:00",
        "2026-03-29T04:00:00+02:00",
    ]
    assert next_fires("0 * * * *", "UTC", after, 0) == []


def test_next_fires_refuses_a_naive_start_and_a_bad_count() -> None:
    with pytest.raises(ValueError, match="aware datetime"):
        next_fires("0 * * * *", "UTC", datetime(2026, 1, 1), 1)
    with pytest.raises(ValueError, match="0 or more"):
        next_fires("0 * * * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC), -1)
    with pytest.raises(TypeError, match="count"):
        next_fires("0 * * * *", "UTC", datetime(2026, 1, 1, tzinfo=UTC), True)


# -- the Cron trigger message ----------------------------------------------------------------------


def test_cron_message_holds_an_expression_and_a_zone_name() -> None:
    trigger = Cron("0 9 * * MON-FRI", "Europe/Berlin")
    assert (trigger.expr, trigger.tz) == ("0 9 * * MON-FRI", "Europe/Berlin")
    assert Cron("@daily").tz == "UTC"
    assert Cron("@daily") == Cron("@daily", "UTC")
    assert Cron in typing.get_args(Trigger)
    assert messages.Cron is Cron
    assert "Cron" in messages.__all__
    with pytest.raises(dataclasses.FrozenInstanceError):
        trigger.tz = "UTC"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "field"),
    [((5,), "expr"), ((None, "UTC"), "expr"), (("@daily", BERLIN), "tz"), (("@daily", None), "tz")],
)
def test_cron_message_checks_types_only(args: tuple[object, ...], field: str) -> None:
    with pytest.raises(TypeError, match=f"^{field} must be"):
        Cron(*args)  # type: ignore[arg-type]
    Cron("not checked here", "nor is this")  # semantics are actors.core.cron's, where schedules enter
