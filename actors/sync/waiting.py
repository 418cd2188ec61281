"""Blocking waits that accept any timeout a user may pass.

``threading`` refuses timeouts above ``threading.TIMEOUT_MAX`` (about 9.2e9 s on Linux) with
an ``OverflowError``, and ``time.monotonic() + timeout`` stops being exact long before a float
overflows. Every wait in the library goes through these helpers: a timeout is checked once
(a finite number of seconds, at least 0, or ``None`` for no limit), and a wait longer than
``LONGEST_WAIT`` is made of several shorter ones, so ``settle(timeout=1e10)`` simply waits.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from typing import Final, TypeVar

from messages.triggers import require_finite

__all__ = ["LONGEST_WAIT", "Deadline", "check_timeout", "join", "result_within", "wait_until"]

T = TypeVar("T")

LONGEST_WAIT: Final = 86_400.0
"""The longest single blocking call (one day): far below ``threading.TIMEOUT_MAX``."""


def check_timeout(timeout: float | None, name: str = "timeout") -> float | None:
    """Return ``timeout`` as float seconds (``None`` stays ``None``: no limit).

    Raises:
        TypeError: not a number.
        ValueError: negative, NaN or infinite.
    """
    if timeout is None:
        return None
    seconds = require_finite(name, timeout)
    if seconds < 0:
        raise ValueError(f"{name} must not be negative, got {timeout!r}")
    return seconds


class Deadline:
    """A moment ``timeout`` seconds from now on the monotonic clock, or never (``None``)."""

    __slots__ = ("_at",)

    def __init__(self, timeout: float | None) -> None:
        """Start counting now; ``timeout`` is checked (see ``check_timeout``)."""
        seconds = check_timeout(timeout)
        self._at = math.inf if seconds is None else time.monotonic() + seconds

    def remaining(self) -> float | None:
        """Seconds left (at least 0), or ``None`` if it never comes."""
        if self._at == math.inf:
            return None
        return max(0.0, self._at - time.monotonic())

    def passed(self) -> bool:
        """Whether the deadline has come."""
        return time.monotonic() >= self._at

    def wait(self, wait: Callable[[float | None], bool]) -> bool:
        """Call ``wait(seconds)`` (e.g. ``event.wait``) until it returns true or the deadline passes.

        Each call gets at most ``LONGEST_WAIT`` seconds, so any deadline is safe. Returns the
        last result: ``False`` means the deadline passed first.
        """
        while True:
            remaining = self.remaining()
            if remaining is None:
                if wait(LONGEST_WAIT):
                    return True
                continue
            if wait(min(remaining, LONGEST_WAIT)):
                return True
            if remaining <= LONGEST_WAIT:
                return False


def wait_until(wait: Callable[[float | None], bool], timeout: float | None) -> bool:
    """Call ``wait`` (e.g. ``event.wait``) until it returns true or ``timeout`` seconds pass."""
    return Deadline(timeout).wait(wait)


def join(thread: threading.Thread, deadline: Deadline) -> None:
    """Join ``thread`` until it ends or ``deadline`` passes (no-op: the current thread, one never started)."""
    if thread is threading.current_thread() or thread.ident is None:
        return

    def joined(seconds: float | None) -> bool:
        thread.join(seconds)
        return not thread.is_alive()

    deadline.wait(joined)


def join_any_order(threads: list[threading.Thread], deadline: Deadline, step: float = 0.01) -> None:
    """Join ``threads`` until all have ended or ``deadline`` passes, whichever ends first.

    Round-robin, ``step`` seconds at a time, so that one thread that never ends (a worker
    stuck in a task) does not keep the others from being seen to end.
    """
    alive = [
        thread for thread in threads if thread.ident is not None and thread is not threading.current_thread()
    ]
    while alive and not deadline.passed():
        for thread in alive:
            remaining = deadline.remaining()
            thread.join(step if remaining is None else min(step, remaining))
        alive = [thread for thread in alive if thread.is_alive()]


def result_within(future: Future[T], deadline: Deadline) -> T:
    """Return ``future``'s result, waiting until ``deadline`` (chunked, see ``Deadline.wait``).

    Raises:
        TimeoutError: the deadline passed first.
        BaseException: whatever the future holds instead of a result.
    """

    def done(seconds: float | None) -> bool:
        return bool(wait((future,), timeout=seconds).done)

    if not deadline.wait(done):
        raise TimeoutError("no result within the time allowed")
    return future.result()
