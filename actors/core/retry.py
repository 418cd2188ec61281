"""``Retry``: how a failed run is tried again (a pure policy: no clock, no threads).

The core asks it two things after a failed attempt: whether to try again (``applies``) and
how long to wait first (``delay_before``). Jitter is drawn from a generator seeded with the
task, run and attempt, so the same failure waits the same time: a pure function, which tests
(and a restarted scheduler) can rely on.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from messages.triggers import require_finite

__all__ = ["Retry"]


@dataclass(frozen=True, slots=True)
class Retry:
    """Try a failed run again: up to ``attempts`` runs in all, waiting longer each time.

    Attempt ``n + 1`` (n >= 1) starts ``delay * backoff ** (n - 1)`` seconds after attempt
    ``n`` failed, at most ``max_delay``, then moved by up to ``± jitter`` of itself. Only
    exceptions of the types in ``on`` are retried (default: any ``Exception``). Only after
    the last attempt does the run count as failed (for ``max_consecutive_failures`` and the
    task's counters); a recurring task computes its next slot after that.

    Raises:
        ValueError: ``attempts < 1``, a negative or non-finite ``delay`` or ``max_delay``,
            ``backoff < 1``, ``jitter`` outside ``[0, 1]``.
        TypeError: a value of the wrong type; ``on`` not an exception class or a tuple of them.
    """

    attempts: int = 3
    delay: float = 1.0
    backoff: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.1
    on: tuple[type[BaseException], ...] = field(default=(Exception,))

    def __post_init__(self) -> None:
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int):
            raise TypeError(f"attempts must be an int, got {self.attempts!r}")
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts!r}")
        for name in ("delay", "max_delay"):
            value = require_finite(name, getattr(self, name))
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {value!r}")
            object.__setattr__(self, name, value)
        backoff = require_finite("backoff", self.backoff)
        if backoff < 1:
            raise ValueError(f"backoff must be at least 1, got {self.backoff!r}")
        jitter = require_finite("jitter", self.jitter)
        if not 0.0 <= jitter <= 1.0:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter!r}")
        object.__setattr__(self, "backoff", backoff)
        object.__setattr__(self, "jitter", jitter)
        on: object = self.on
        if isinstance(on, type):
            on = (on,)
        if not isinstance(on, tuple) or not on or not all(_is_exception_class(kind) for kind in on):
            raise TypeError(f"on must be an exception class or a non-empty tuple of them, got {self.on!r}")
        object.__setattr__(self, "on", on)

    def applies(self, error: BaseException, attempt: int) -> bool:
        """Whether attempt ``attempt`` (from 1), which raised ``error``, is followed by another."""
        return attempt < self.attempts and isinstance(error, self.on)

    def delay_before(self, attempt: int, seed: str) -> float:
        """Seconds to wait before attempt ``attempt`` (from 2), jittered as ``seed`` draws it."""
        try:
            wait = min(self.max_delay, self.delay * self.backoff ** (attempt - 2))
        except OverflowError:
            wait = self.max_delay
        if self.jitter and wait:
            wait *= 1.0 + self.jitter * (2.0 * random.Random(seed).random() - 1.0)  # jitter, not secrecy
        return wait if math.isfinite(wait) else self.max_delay


def _is_exception_class(kind: object) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseException)
