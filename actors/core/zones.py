"""Time zones the scheduler can store by name, and back: IANA names, UTC and fixed offsets.

A schedule outlives the process that made it (a store, a job file), so its zone travels as a
name. ``zone_name`` gives that name and ``resolve_zone`` turns it back into the same zone;
anything that has no such name is refused where it enters, with what to pass instead.
"""

from __future__ import annotations

import difflib
import re
import zoneinfo
from datetime import UTC, timedelta, timezone, tzinfo
from typing import Final

__all__ = ["resolve_zone", "zone_name"]

_FIXED_OFFSET: Final = re.compile(r"UTC([+-])(\d{2}):(\d{2})(?::(\d{2}))?")
_ZONE_FORMS: Final = "an IANA name such as 'Europe/Berlin', 'UTC', or a fixed offset such as 'UTC+05:30'"


def resolve_zone(name_or_tzinfo: str | tzinfo) -> tzinfo:
    """Return the zone a name stands for, or check that a ``tzinfo`` can be stored by name.

    Names: an IANA name (``"Europe/Berlin"``), ``"UTC"``, or a fixed offset ``"UTC+05:30"``
    (``"UTC-03:00"``, seconds as ``"UTC+00:53:28"``). ``"UTC"`` and a zero offset give
    ``datetime.UTC``. A ``ZoneInfo`` built from a name and a ``datetime.timezone`` are returned
    as they are.

    Raises:
        TypeError: neither a str nor a ``tzinfo``.
        ValueError: an unknown name (the message names it, with a close match if there is one);
            ``"localtime"`` (it differs between machines); or a ``tzinfo`` without a name, such
            as a ``ZoneInfo`` read from a file or another library's zone class.
    """
    if isinstance(name_or_tzinfo, str):
        return _zone_named(name_or_tzinfo)
    if isinstance(name_or_tzinfo, tzinfo):
        zone_name(name_or_tzinfo)  # refuses what cannot be stored by name
        return name_or_tzinfo
    raise TypeError(f"a time zone must be a name (str) or a tzinfo, got {name_or_tzinfo!r}")


def zone_name(tz: tzinfo) -> str:
    """Return the name ``resolve_zone`` turns back into ``tz``: how the scheduler stores a zone.

    A ``ZoneInfo`` gives its key, UTC gives ``"UTC"``, a fixed offset ``"UTC+05:30"``.

    Raises:
        TypeError: ``tz`` is not a ``tzinfo``.
        ValueError: ``tz`` has no such name; the message says to pass an IANA name.
    """
    if isinstance(tz, zoneinfo.ZoneInfo):
        key = tz.key
        if key is None:
            raise ValueError(f"{tz!r} was not loaded by name; pass an IANA name such as 'Europe/Berlin'")
        if key == "localtime":
            raise ValueError(_LOCALTIME)
        return key
    if isinstance(tz, timezone):
        return _offset_name(tz.utcoffset(None))
    if isinstance(tz, tzinfo):
        raise ValueError(
            f"{tz!r} ({type(tz).__qualname__}) has no name the scheduler can store and load again; "
            "pass an IANA name such as 'Europe/Berlin' (or a zoneinfo.ZoneInfo)"
        )
    raise TypeError(f"a time zone must be a tzinfo, got {tz!r}")


_LOCALTIME: Final = (
    "'localtime' is this machine's zone, which another machine (or this one, later) reads "
    "differently; pass an IANA name such as 'Europe/Berlin'"
)


def _zone_named(name: str) -> tzinfo:
    if name == "UTC":
        return UTC
    fixed = _FIXED_OFFSET.fullmatch(name)
    if fixed is not None:
        sign, hours, minutes, seconds = fixed.groups()
        if int(minutes) >= 60 or int(seconds or 0) >= 60 or int(hours) >= 24:
            raise ValueError(f"fixed offset {name!r} is out of range (from UTC-23:59 to UTC+23:59)")
        offset = timedelta(hours=int(hours), minutes=int(minutes), seconds=int(seconds or 0))
        return UTC if not offset else timezone(-offset if sign == "-" else offset)
    if name == "localtime":
        raise ValueError(_LOCALTIME)
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        # Not found (a KeyError), a malformed key (ValueError) or a directory (OSError).
        pass
    raise ValueError(f"unknown time zone {name!r}{_close_zone(name)}; use {_ZONE_FORMS}")


def _close_zone(name: str) -> str:
    """Return ``" (did you mean 'X'?)"`` for a close zone name, else ``""``.

    Called only to explain an error: it lists every zone on disk.
    """
    by_folded = {zone.casefold(): zone for zone in zoneinfo.available_timezones()}
    close = difflib.get_close_matches(name.casefold(), by_folded, n=1)
    return f" (did you mean {by_folded[close[0]]!r}?)" if close else ""


def _offset_name(offset: timedelta | None) -> str:
    if not offset:
        return "UTC"
    if offset.microseconds:
        raise ValueError(f"offset {offset} has a fraction of a second; pass an IANA name or whole seconds")
    sign = "-" if offset < timedelta(0) else "+"
    hours, rest = divmod(abs(int(offset.total_seconds())), 3600)
    minutes, seconds = divmod(rest, 60)
    return f"UTC{sign}{hours:02}:{minutes:02}" + (f":{seconds:02}" if seconds else "")
