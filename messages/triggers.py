"""When a task runs: the triggers a `Schedule` can carry.

``Once``, ``FixedRate`` and ``FixedDelay`` count seconds on the scheduler's clock (monotonic),
never wall-clock time: absolute clock times, or delays counted from when the scheduler receives
the ``Schedule`` (``Once(delay=...)``, ``initial_delay=``), for an actor that cannot read the
clock. ``Cron`` is the exception: a calendar rule, read on the wall clock of a
time zone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
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
    """Run once: at clock time ``at``, or ``delay`` seconds after the scheduler receives it.

    Give exactly one. A time already past (or a negative delay) means as soon as possible.
    The relative form lets an actor that cannot read the scheduler's clock schedule with a
    message alone: ``Schedule(fn, Once(delay=5.0))``.
    """

    at: float | None = None
    delay: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        at = self.at
        if type(at) is float and at - at == 0.0 and self.delay is None:  # the common case, fast
            return
        if (at is None) == (self.delay is None):
            raise ValueError(f"Once needs exactly one of at and delay, got at={at!r}, delay={self.delay!r}")
        if at is not None:
            object.__setattr__(self, "at", require_finite("at", at))
        else:
            object.__setattr__(self, "delay", require_finite("delay", self.delay))  # type: ignore[arg-type]

    def resolved(self, now: float) -> Once:
        """This trigger with an absolute ``at``, ``now`` being when the scheduler received it."""
        return self if self.delay is None else Once(now + self.delay)


@final
@dataclass(frozen=True, slots=True)
class FixedRate:
    """Run at ``first_at + k * interval`` for k = 0, 1, 2, ...

    ``first_at`` is a clock time; instead, ``initial_delay`` counts from when the scheduler
    receives it (give at most one; neither means at once). A run never overlaps the previous
    one: after a run, the next run is the first later slot not already past when the run
    finished; missed slots are skipped.
    """

    interval: float
    first_at: float | None = None
    initial_delay: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "interval", require_positive_duration("interval", self.interval))
        _check_start(self, self.first_at, self.initial_delay)

    def resolved(self, now: float) -> FixedRate:
        """This trigger with an absolute ``first_at``, ``now`` being when the scheduler received it."""
        if self.first_at is not None:
            return self
        return FixedRate(self.interval, now + (self.initial_delay or 0.0))


@final
@dataclass(frozen=True, slots=True)
class FixedDelay:
    """Run first at ``first_at``, then ``delay`` seconds after each run finishes.

    ``first_at`` is a clock time; instead, ``initial_delay`` counts from when the scheduler
    receives it (give at most one; neither means at once).
    """

    delay: float
    first_at: float | None = None
    initial_delay: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "delay", require_positive_duration("delay", self.delay))
        _check_start(self, self.first_at, self.initial_delay)

    def resolved(self, now: float) -> FixedDelay:
        """This trigger with an absolute ``first_at``, ``now`` being when the scheduler received it."""
        if self.first_at is not None:
            return self
        return FixedDelay(self.delay, now + (self.initial_delay or 0.0))


def _check_start(trigger: object, first_at: float | None, initial_delay: float | None) -> None:
    """Check a recurring trigger's start: at most one of ``first_at`` and ``initial_delay``, finite."""
    if first_at is not None and initial_delay is not None:
        raise ValueError(f"give first_at or initial_delay, not both: {trigger!r}")
    if first_at is not None:
        object.__setattr__(trigger, "first_at", require_finite("first_at", first_at))
    elif initial_delay is not None:
        object.__setattr__(trigger, "initial_delay", require_finite("initial_delay", initial_delay))


@final
@dataclass(frozen=True, slots=True)
class Cron:
    """Run at the wall-clock times a cron expression names, read in the time zone ``tz``.

    ``expr`` is a 5-field expression or an alias such as ``@daily``; ``tz`` is an IANA name
    (``"Europe/Berlin"``), ``"UTC"`` or a fixed offset (``"UTC+05:30"``). Only the types are
    checked here: whether the expression parses and the zone exists is checked by
    ``actors.core.cron`` where a schedule enters, since messages depend on nothing in ``actors``.
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
