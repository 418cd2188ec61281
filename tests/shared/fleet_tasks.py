"""The task the fleet tests schedule: a side effect that says which process ran which run, and when.

Each execution appends one line, ``<run key> <pid> <wall time>``, to a log file (``O_APPEND``:
whole lines, from any number of processes), then works a little (sleeps), so that runs are in
flight when a fault strikes.
"""

from __future__ import annotations

import os
import time

from actors import current_run


def effect(log: str, pause: float) -> None:
    """Record this execution in ``log``, then take ``pause`` seconds."""
    line = f"{current_run().key} {os.getpid()} {time.time():.6f}\n".encode()
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    time.sleep(pause)


def effect_first_long(log: str, first: float, later: float) -> None:
    """``effect``, taking ``first`` seconds in a task's run 1 and ``later`` in every other run."""
    effect(log, first if current_run().run == 1 else later)
