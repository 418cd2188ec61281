"""Watching the whole process while a workload runs: its memory, its collector, its pauses.

- :func:`rss_bytes`: the resident set size, as the OS counts it;
- :class:`CollectorWatch`: every garbage collection while it is active (through
  ``gc.callbacks``: it only looks; the collector's settings are never touched);
- :class:`PauseProbe`: a plain thread that asks to wake every ``interval`` and records how late
  it woke, so it sees any stop of every Python thread (a collection, a long C call holding
  the GIL) whoever causes it.
"""

from __future__ import annotations

import gc
import math
import os
import threading
import time
from types import TracebackType
from typing import Any, Self

__all__ = ["CollectorWatch", "PauseProbe", "rss_bytes"]


def rss_bytes() -> float:
    """This process's resident set size in bytes (NaN where ``/proc`` is missing)."""
    try:
        with open("/proc/self/statm") as statm:
            resident_pages = int(statm.read().split()[1])
    except (OSError, IndexError, ValueError):
        return math.nan
    return float(resident_pages * os.sysconf("SC_PAGE_SIZE"))


class CollectorWatch:
    """Times every garbage collection while the ``with`` block runs (any thread's)."""

    def __init__(self) -> None:
        self.full = 0  # collections of the oldest generation (every tracked object)
        self.longest_s = 0.0  # the longest collection of any generation
        self.total_s = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        # Collections run one at a time (the collector holds the GIL), so one start time will do.
        if phase == "start":
            self._started = time.perf_counter()
            return
        took = time.perf_counter() - self._started
        self.total_s += took
        self.longest_s = max(self.longest_s, took)
        if info.get("generation") == 2:
            self.full += 1

    def __enter__(self) -> Self:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        gc.callbacks.remove(self._callback)


class PauseProbe:
    """A thread that wakes every ``interval`` seconds and records how late each wake-up was (ms)."""

    def __init__(self, interval: float = 0.010) -> None:
        self.interval = interval
        self.late_ms: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pause-probe", daemon=True)

    def _run(self) -> None:
        clock = time.perf_counter
        while True:
            asked = clock() + self.interval
            if self._stop.wait(self.interval):
                return
            self.late_ms.append((clock() - asked) * 1000.0)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join(5.0)
