"""When a task runs: the three triggers a `Schedule` can carry.

All times are seconds on the scheduler's clock (monotonic), never wall-clock time.
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


Trigger = Once | FixedRate | FixedDelay
"""Any of the triggers."""

TRIGGER_TYPES: frozenset[type] = frozenset({Once, FixedRate, FixedDelay})
"""The trigger classes (all final, so ``type(trigger) in TRIGGER_TYPES`` identifies them)."""
