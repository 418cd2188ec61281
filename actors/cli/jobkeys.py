"""The job file's keys: for each, how its TOML value is checked and converted (data, not code paths).

A new key is one entry in ``SCHEDULER_KEYS`` or ``JOB_KEYS``, its converter if none here fits,
and, for a job key, a ``JobSpec`` field of the same name (``actors/cli/jobfile.py``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from types import MappingProxyType
from typing import Any, Final, Literal, final

from actors.cron import check_cron, resolve_zone, zone_name
from actors.references import parse_reference

__all__ = [
    "DURATION_FORMS",
    "JOB_KEYS",
    "MEMORY_STORE",
    "SCHEDULER_KEYS",
    "TRIGGERS",
    "Key",
    "Kind",
    "parse_duration",
    "show",
    "wrong_type",
]

Kind = Literal["every", "delay", "cron", "at"]

DURATION_FORMS: Final = "use e.g. 500ms, 10s, 5m, 1h30m, 2d"
MEMORY_STORE: Final = ":memory:"
_AMOUNT: Final = r"(\d+(?:\.\d+)?)"
_DURATION: Final = re.compile(
    rf"(?:{_AMOUNT}d)?(?:{_AMOUNT}h)?(?:{_AMOUNT}m)?(?:{_AMOUNT}s)?(?:{_AMOUNT}ms)?"
)
_UNIT_SECONDS: Final = (86_400.0, 3_600.0, 60.0, 1.0, 0.001)


def parse_duration(value: str | float) -> float:
    """Return a duration in seconds: a number of seconds (int or float), or a string of units.

    The string form is one or more of ``<n>d``, ``<n>h``, ``<n>m``, ``<n>s``, ``<n>ms``, in
    that order, each at most once (``"500ms"``, ``"10s"``, ``"1h30m"``, ``"1.5h"``, ``"2d"``).

    Raises:
        TypeError: ``value`` is neither a str nor a number (``bool`` counts as neither).
        ValueError: a string of another form, a negative number, or NaN or infinity.
    """
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if not value.strip() or match is None:
            raise ValueError(f"{show(value)} is not a duration ({DURATION_FORMS})")
        return sum(
            float(amount) * unit for amount, unit in zip(match.groups(), _UNIT_SECONDS, strict=True) if amount
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"a duration is a number of seconds or a string ({DURATION_FORMS}), got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ValueError(f"{show(value)} is not a finite number of seconds")
    if seconds < 0:
        raise ValueError(f"{show(value)} is negative; a duration is 0 seconds or more")
    return seconds


@final
@dataclass(frozen=True, slots=True)
class Key:
    """How one key of the job file is read.

    Attributes:
        convert: Turns the TOML value into the field's value; raises ``TypeError`` or
            ``ValueError`` with a message that says what was expected and what was found.
        trigger: Whether the key is one of a job's four triggers (exactly one per job).
        only_with: The triggers the key is allowed with; empty means any.
    """

    convert: Callable[[Any], object]
    trigger: bool = False
    only_with: tuple[Kind, ...] = ()


# -- converters: each returns the field's value or raises with what was expected and found --------


def wrong_type(expected: str, value: object) -> TypeError:
    """Return the error for a value of the wrong TOML type: what was expected, what was found."""
    return TypeError(f"expected {expected}, found {_found(value)}")


def _function_reference(value: object) -> str:
    if not isinstance(value, str):
        raise wrong_type('a string "module:function"', value)
    parse_reference(value)
    return value


def _duration(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise wrong_type(f"a duration (a number of seconds, or a string: {DURATION_FORMS})", value)
    return parse_duration(value)


def _positive_duration(value: object) -> float:
    seconds = _duration(value)
    if seconds <= 0:
        raise ValueError(f"{show(value)} is no time at all; it must be longer than zero")
    return seconds


def _cron_expression(value: object) -> str:
    if not isinstance(value, str):
        raise wrong_type('a cron expression such as "0 9 * * MON-FRI"', value)
    check_cron(value)
    return value


def _aware_datetime(value: object) -> datetime:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(
                f"{value.isoformat()} has no UTC offset, so it means a different instant on every "
                f"machine; add one, e.g. {value.isoformat()}+01:00 or {value.isoformat()}Z"
            )
        return value
    hint = " (unquoted)" if isinstance(value, str) else ""
    raise wrong_type(f"an offset datetime such as 2026-12-24T18:00:00+01:00{hint}", value)


def _zone(value: object) -> str:
    if not isinstance(value, str):
        raise wrong_type('a time zone name such as "Europe/Berlin"', value)
    return zone_name(resolve_zone(value))


def _array(value: object) -> tuple[object, ...]:
    if not isinstance(value, list):
        raise wrong_type("an array such as [1, 2]", value)
    return tuple(value)


def _table(value: object) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise wrong_type('a table such as { region = "eu" }', value)
    return MappingProxyType(dict(value))


def _integer(least: int, most: int | None = None) -> Callable[[object], int]:
    expected = f"an integer of {least} or more" if most is None else f"an integer from {least} to {most}"

    def convert(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise wrong_type(expected, value)
        if value < least or (most is not None and value > most):
            raise ValueError(f"expected {expected}, found {value}")
        return value

    return convert


def _store(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise wrong_type(
            f'a file name such as "jobs.db", a URL "postgresql://...", or "{MEMORY_STORE}" for none', value
        )
    return value


SCHEDULER_KEYS: Final[Mapping[str, Key]] = MappingProxyType(
    {
        "workers": Key(_integer(1, 1024)),
        "store": Key(_store),
        "tz": Key(_zone),
    }
)
"""The keys of ``[scheduler]``."""

JOB_KEYS: Final[Mapping[str, Key]] = MappingProxyType(
    {
        "fn": Key(_function_reference),
        "every": Key(_positive_duration, trigger=True),
        "delay": Key(_positive_duration, trigger=True),
        "cron": Key(_cron_expression, trigger=True),
        "at": Key(_aware_datetime, trigger=True),
        "initial_delay": Key(_duration, only_with=("every", "delay")),
        "args": Key(_array),
        "kwargs": Key(_table),
        "max_consecutive_failures": Key(_integer(1), only_with=("every", "delay", "cron")),
        "misfire_grace": Key(_duration),
        "tz": Key(_zone, only_with=("cron",)),
    }
)
"""The keys of a ``[jobs.<id>]`` table; each is also a ``JobSpec`` field of the same name."""

TRIGGERS: Final = tuple(key for key, rule in JOB_KEYS.items() if rule.trigger)
"""The trigger keys; a job has exactly one, and its name is the job's ``kind``."""


def show(value: object) -> str:
    """Write a value as it would appear in TOML: strings double-quoted, booleans lower case."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, date | time):
        return value.isoformat()
    return repr(value)


def _found(value: object) -> str:
    if isinstance(value, datetime):
        what = "an offset datetime" if value.tzinfo is not None else "a local datetime"
    else:
        what = next((name for kind, name in _TOML_TYPES if isinstance(value, kind)), type(value).__name__)
    return what if isinstance(value, dict | list) else f"{what} {show(value)}"


_TOML_TYPES: Final = (
    (bool, "a boolean"),
    (str, "a string"),
    (int, "an integer"),
    (float, "a float"),
    (date, "a local date"),
    (time, "a local time"),
    (list, "an array"),
    (dict, "a table"),
)
