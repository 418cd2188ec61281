"""When a task runs: the triggers a `Schedule` can carry.

``Once``, ``FixedRate`` and ``FixedDelay`` count seconds on the scheduler's clock (monotonic),
never wall-clock time. ``Cron`` is the exception: a calendar rule, read on the wall clock of a
time zone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import final


def require_positive_duration(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number greater than zero.

    Raises:
        TypeError: ``value`` is not a real number.
        ValueError: ``value`` is zero, negative, NaN or infinite.
    """
    seconds = require_finite(name, value)
    if seconds <= 0.0:
        raise ValueError(f"{name} must be greater than zero, got {value!r}")
    return seconds


def require_finite(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite real number.

    Raises:
        TypeError: ``value`` is not a real number (``bool`` counts as not one).
        ValueError: ``value`` is NaN or infinite.
    """
    if type(value) is float and value - value == 0.0:  # the common case, fast: finite float
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        raise ValueError(f"{name} must be finite, got {value!r}") from None
    if not math.isfinite(seconds):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return seconds


@final
@dataclass(frozen=True, slots=True)
class Once:
    """Run once, at clock time ``at`` (a time already past means as soon as possible)."""

    at: float

    def __post_init__(self) -> None:
        at = self.at
        if type(at) is not float or at - at != 0.0:  # not a finite float already: check, convert
            object.__setattr__(self, "at", require_finite("at", at))


@final
@dataclass(frozen=True, slots=True)
class FixedRate:
    """Run at ``first_at + k * interval`` for k = 0, 1, 2, ...

    A run never overlaps the previous one: after a run, the next run is the first
    later slot not already past when the run finished; missed slots are skipped.
    """

    interval: float
    first_at: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", require_positive_duration("interval", self.interval))
        object.__setattr__(self, "first_at", require_finite("first_at", self.first_at))


@final
@dataclass(frozen=True, slots=True)
class FixedDelay:
    """Run first at ``first_at``, then ``delay`` seconds after each run finishes."""

    delay: float
    first_at: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "delay", require_positive_duration("delay", self.delay))
        object.__setattr__(self, "first_at", require_finite("first_at", self.first_at))


@final
@dataclass(frozen=True, slots=True)
class Cron:
    """Run at the wall-clock times a cron expression names, read in the time zone ``tz``.

    ``expr`` is a 5-field expression or an alias such as ``@daily``; ``tz`` is an IANA name
    (``"Europe/Berlin"``), ``"UTC"`` or a fixed offset (``"UTC+05:30"``). Only the types are
    checked here: whether the expression parses and the zone exists is checked by
    ``actors.cron`` where a schedule enters, since messages depend on nothing in ``actors``.
    """

    expr: str
    tz: str = "UTC"

    def __post_init__(self) -> None:
        if not isinstance(self.expr, str):
            raise TypeError(f"expr must be a cron expression (str), got {self.expr!r}")
        if not isinstance(self.tz, str):
            raise TypeError(f"tz must be a time zone name (str), got {self.tz!r}")


Trigger = Once | FixedRate | FixedDelay | Cron
"""Any of the four triggers."""

TRIGGER_TYPES: frozenset[type] = frozenset({Once, FixedRate, FixedDelay, Cron})
"""The triggers a ``Schedule`` takes (all final, so ``type(trigger) in TRIGGER_TYPES`` identifies them)."""
