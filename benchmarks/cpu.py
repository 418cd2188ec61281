"""A CPU-bound task for the benchmarks: importable by reference, so it can run in a worker process."""

from __future__ import annotations

import time


def burn(seconds: float) -> int:
    """Spin a pure Python loop (it holds the GIL) for ``seconds``; return how many turns it made."""
    deadline = time.perf_counter() + seconds
    turns = 0
    while time.perf_counter() < deadline:
        turns += 1
    return turns
