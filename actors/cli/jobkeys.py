"""The job file's keys: for each, how its TOML value is checked and converted (data, not code paths).

A new key is one entry in ``SCHEDULER_KEYS`` or ``JOB_KEYS``, its converter if none here fits,
and, for a job key, a ``JobSpec`` field of the same name (``actors/cli/jobfile.py``).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time
from types import MappingProxyType
from typing import Any, Final, Literal, cast, final

from actors.core.cron import check_cron, resolve_zone, zone_name
from actors.core.retry import Retry
from actors.core.task_record import PROCESSES, THREADS
from actors.references import parse_reference, resolve
from actors.runtime.limits import MAX_PROCESSES

__all__ = [
    "CATCH_UP_NAMES",
    "DURATION_FORMS",
    "EXECUTORS",
    "JOB_KEYS",
    "MAX_DURATION",
    "MAX_NESTING",
    "MEMORY_STORE",
    "OVERLAP_NAMES",
    "SCHEDULER_KEYS",
    "TRIGGERS",
    "Key",
    "Kind",
    "RetrySpec",
    "parse_duration",
    "show",
    "value_problem",
    "wrong_type",
]

Kind = Literal["every", "delay", "cron", "at"]

DURATION_FORMS: Final = "use e.g. 500ms, 10s, 5m, 1h30m, 2d"
MEMORY_STORE: Final = ":memory:"
MAX_DURATION: Final = 36_525 * 86_400.0
"""The longest duration taken: 100 years (``"36525d"``), so every time computed from one is a date."""
MAX_NESTING: Final = 32
"""How deep arrays and tables may be nested in a value: more is a mistake (or an attack), not data."""
EXECUTORS: Final = (THREADS, PROCESSES)
_LONGEST_SHOWN: Final = 80
_INT64: Final = range(-(2**63), 2**63)  # TOML's integers: larger ones cannot be kept losslessly
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
        ValueError: a string of another form, a negative number, NaN or infinity, or longer
            than ``MAX_DURATION`` (100 years).
    """
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if not value.strip() or match is None:
            raise ValueError(f"{show(value)} is not a duration ({DURATION_FORMS})")
        seconds = sum(
            float(amount) * unit for amount, unit in zip(match.groups(), _UNIT_SECONDS, strict=True) if amount
        )
        return _at_most_max(value, seconds)
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
    return _at_most_max(value, seconds)


def _at_most_max(value: str | float, seconds: float) -> float:
    if not seconds <= MAX_DURATION:  # also NaN, which an amount such as 1e400 * 0 could give
        raise ValueError(f"{show(value)} is longer than 100 years (36525d), the longest duration taken")
    return seconds


def value_problem(value: object) -> str | None:
    """Say what makes a TOML value unusable whatever its key, or return ``None``.

    Arrays and tables nested more than ``MAX_NESTING`` deep, and integers outside TOML's 64-bit
    range (which ``tomllib`` reads anyway): what would overflow a store's column or the
    interpreter's stack later is refused here, with where it is (``[0]['region']``). The walk
    is a loop, not a recursion, so a deep value cannot exhaust the stack itself.
    """
    stack: list[tuple[object, int, str]] = [(value, 0, "")]
    while stack:
        item, depth, where = stack.pop()
        at = f" (at {where})" if where else ""
        if isinstance(item, int) and not isinstance(item, bool) and item not in _INT64:
            digits = len(str(abs(item)))
            return f"the integer{at} has {digits} digits: TOML integers are 64-bit, -2^63 to 2^63-1"
        if isinstance(item, list | dict) and depth >= MAX_NESTING:
            return f"arrays and tables nested more than {MAX_NESTING} deep; flatten the value"
        if isinstance(item, list):
            stack.extend((element, depth + 1, f"{where}[{index}]") for index, element in enumerate(item))
        elif isinstance(item, dict):
            stack.extend((element, depth + 1, f"{where}[{key!r}]") for key, element in item.items())
    return None


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


def _number(least: float, most: float | None = None) -> Callable[[object], float]:
    expected = f"a number of {least:g} or more" if most is None else f"a number from {least:g} to {most:g}"

    def convert(value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong_type(expected, value)
        number = float(value)
        if not least <= number <= (math.inf if most is None else most) or not math.isfinite(number):
            raise ValueError(f"expected {expected}, found {show(value)}")
        return number

    return convert


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise wrong_type("true or false", value)
    return value


def _executor(value: object) -> str:
    if not isinstance(value, str) or value not in EXECUTORS:
        raise wrong_type(" or ".join(show(name) for name in EXECUTORS), value)
    return value


@final
@dataclass(frozen=True, slots=True)
class RetrySpec:
    """A job's ``retry`` table, checked: plain data (the exception classes by reference, not imported).

    Attributes:
        attempts, delay, backoff, max_delay, jitter: As ``actors.Retry``'s (its defaults for a key left out).
        on: The exception classes retried, as references ``"module:Class"`` (``"builtins:OSError"``).
    """

    attempts: int
    delay: float
    backoff: float
    max_delay: float
    jitter: float
    on: tuple[str, ...]

    def to_retry(self) -> Retry:
        """Import the exception classes and return the ``Retry`` policy.

        Raises:
            ImportError, TypeError, ValueError: a class does not import, or is no exception class.
        """
        classes = []
        for reference in self.on:
            kind = resolve(reference)
            if not (isinstance(kind, type) and issubclass(kind, BaseException)):
                raise TypeError(f"{reference!r} names {type(kind).__name__} object, not an exception class")
            classes.append(kind)
        return Retry(
            attempts=self.attempts,
            delay=self.delay,
            backoff=self.backoff,
            max_delay=self.max_delay,
            jitter=self.jitter,
            on=tuple(classes),
        )


def _exception_reference(value: object) -> str:
    if not isinstance(value, str):
        raise wrong_type('an exception class, "ConnectionError" or "module:Class"', value)
    if value.isidentifier():  # a bare name is a builtin's: on = ["ConnectionError"]
        return f"builtins:{value}"
    parse_reference(value)
    return value


def _exception_references(value: object) -> tuple[str, ...]:
    names = value if isinstance(value, list) else [value]
    if not names:
        raise ValueError("an empty array: name an exception class, or leave 'on' out (any Exception)")
    return tuple(_exception_reference(name) for name in names)


_RETRY_KEYS: Final[Mapping[str, Callable[[object], object]]] = MappingProxyType(
    {
        "attempts": _integer(1),
        "delay": _duration,
        "backoff": _number(1.0),
        "max_delay": _duration,
        "jitter": _number(0.0, 1.0),
        "on": _exception_references,
    }
)


def _retry(value: object) -> RetrySpec:
    if not isinstance(value, dict):
        raise wrong_type('a table such as { attempts = 5, delay = "1s", on = ["ConnectionError"] }', value)
    errors, given = [], {}
    for key, raw in value.items():
        convert = _RETRY_KEYS.get(key)
        if convert is None:
            close = difflib.get_close_matches(key, list(_RETRY_KEYS), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else f"; the keys are {', '.join(_RETRY_KEYS)}"
            errors.append(f"{key}: unknown key{hint}")
            continue
        try:
            given[key] = convert(raw)
        except (TypeError, ValueError) as error:
            errors.append(f"{key}: {error}")
    if errors:
        raise ValueError("; ".join(errors))
    defaults = Retry()  # the library's defaults for what the table leaves out
    on = given.get("on") or tuple(f"{kind.__module__}:{kind.__qualname__}" for kind in defaults.on)
    return RetrySpec(
        attempts=cast(int, given.get("attempts", defaults.attempts)),
        delay=cast(float, given.get("delay", defaults.delay)),
        backoff=cast(float, given.get("backoff", defaults.backoff)),
        max_delay=cast(float, given.get("max_delay", defaults.max_delay)),
        jitter=cast(float, given.get("jitter", defaults.jitter)),
        on=cast(tuple[str, ...], on),
    )


def _one_of(names: tuple[str, ...]) -> Callable[[object], str]:
    def convert(value: object) -> str:
        expected = " or ".join(show(name) for name in names)
        if not isinstance(value, str):
            raise wrong_type(expected, value)
        if value not in names:
            close = difflib.get_close_matches(value, list(names), n=1)
            hint = f" (did you mean {show(close[0])}?)" if close else ""
            raise ValueError(f"expected {expected}, found {show(value)}{hint}")
        return value

    return convert


OVERLAP_NAMES: Final = ("skip", "queue", "allow", "replace")
"""The ``overlap`` policies a job may name (the library says which it runs: ``check_policies``)."""
CATCH_UP_NAMES: Final = ("latest", "all", "none")
"""The ``catch_up`` policies."""


def _store(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise wrong_type(
            f'a file name such as "jobs.db", a URL "postgresql://...", or "{MEMORY_STORE}" for none', value
        )
    return value


_RECURRING: Final[tuple[Kind, ...]] = ("every", "delay", "cron")

SCHEDULER_KEYS: Final[Mapping[str, Key]] = MappingProxyType(
    {
        "workers": Key(_integer(1, 1024)),
        "processes": Key(_integer(0, MAX_PROCESSES)),
        "store": Key(_store),
        "tz": Key(_zone),
        "hung_grace": Key(_duration),
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
        "timeout": Key(_positive_duration),
        "retry": Key(_retry),
        "executor": Key(_executor),
        "durable": Key(_boolean),
        "overlap": Key(_one_of(OVERLAP_NAMES), only_with=_RECURRING),
        "max_instances": Key(_integer(1), only_with=_RECURRING),
        "catch_up": Key(_one_of(CATCH_UP_NAMES), only_with=_RECURRING),
        "max_catch_up": Key(_integer(1), only_with=_RECURRING),
        "jitter": Key(_duration, only_with=_RECURRING),
        "keep_result": Key(_boolean),
        "paused": Key(_boolean),
    }
)
"""The keys of a ``[jobs.<id>]`` table; each is also a ``JobSpec`` field of the same name."""

TRIGGERS: Final = tuple(key for key, rule in JOB_KEYS.items() if rule.trigger)
"""The trigger keys; a job has exactly one, and its name is the job's ``kind``."""


def show(value: object) -> str:
    """Write a value as it would appear in TOML: strings double-quoted, booleans lower case."""
    if isinstance(value, str):
        if len(value) > _LONGEST_SHOWN:  # a megabyte pasted by mistake is not repeated back
            start = json.dumps(value[:_LONGEST_SHOWN], ensure_ascii=False)[:-1]
            return f'{start}..." ({len(value)} characters)'
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
