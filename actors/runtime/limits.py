"""The limits every caller is held to, and the checks the actor shell makes itself.

Split out of ``actors/api/validation.py`` (which checks what callers pass to ``Scheduler``) so
that the runtime (the scheduler actor, loading durable tasks) and the command line check
counts without importing the facade's layer.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MAX_PROCESSES", "MAX_WORKERS", "check_count"]

MAX_WORKERS: Final = 1024
"""The most worker threads a scheduler runs (each is a real thread; more only costs)."""

MAX_PROCESSES: Final = 256
"""The most worker processes a scheduler runs (each is a whole interpreter)."""


def check_count(label: str, value: object, least: int, most: int | None = None) -> int:
    """Return ``value`` if it is an int in ``[least, most]``.

    Raises:
        TypeError: not an int (``bool`` is not one here).
        ValueError: out of range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{label} must be an int, got {value!r}")
    if value < least:
        raise ValueError(f"{label} must be at least {least}, got {value!r}")
    if most is not None and value > most:
        raise ValueError(f"{label} must be at most {most}, got {value!r}")
    return value
