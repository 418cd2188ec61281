"""Counting task runs without sleeping: the task itself reports, the workload waits."""

from __future__ import annotations

import itertools
import threading

__all__ = ["Completions"]


class Completions:
    """Counts task runs and signals when ``target`` of them happened.

    ``hit`` is meant to be called from inside the task function; it is
    lock-free (``next`` on :class:`itertools.count` is atomic in CPython).
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self._counter = itertools.count(1)
        self._done = threading.Event()
        self._last = 0

    def hit(self) -> None:
        """Record one completion."""
        n = next(self._counter)
        self._last = n
        if n >= self.target:
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """Block until ``target`` completions happened or ``timeout`` s passed."""
        return self._done.wait(timeout)

    @property
    def count(self) -> int:
        """Completions seen so far (approximate while tasks still run)."""
        return self._last
