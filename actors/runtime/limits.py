"""The limits every caller is held to, and the checks the actor shell makes itself.

Split out of ``actors/api/validation.py`` (which checks what callers pass to ``Scheduler``) so
that the runtime (the scheduler actor, loading durable tasks) and the command line check
counts and coroutines without importing the facade's layer.
"""

from __future__ import annotations

import inspect
import types
from typing import Final

__all__ = ["MAX_PROCESSES", "MAX_WORKERS", "check_count", "is_coroutine_function", "makes_coroutine"]

MAX_WORKERS: Final = 1024
"""The most worker threads a scheduler runs (each is a real thread; more only costs)."""

MAX_PROCESSES: Final = 256
"""The most worker processes a scheduler runs (each is a whole interpreter)."""

_CO_COROUTINE: Final = inspect.CO_COROUTINE


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


_NEVER_COROUTINES: Final = frozenset({types.BuiltinFunctionType, types.MethodWrapperType})


def makes_coroutine(fn: object) -> bool:
    """``is_coroutine_function``, fast for the common callables (a function, a builtin)."""
    code = getattr(fn, "__code__", None)
    if code is not None:
        return bool(code.co_flags & _CO_COROUTINE)
    if type(fn) in _NEVER_COROUTINES:
        return False
    return is_coroutine_function(fn)


def is_coroutine_function(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine: an ``async def`` function (or ``__call__``)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004
