"""Functions the executor tests run on Celery workers and Dask workers, named by reference."""

from __future__ import annotations

import os
import time
from pathlib import Path


def add(a: int, b: int) -> int:
    return a + b


def fail(message: str) -> None:
    raise ValueError(message)


def hang(pid_file: str, seconds: float = 30.0) -> str:
    """Write this process's pid to ``pid_file`` (for a test to kill it), then sleep."""
    Path(pid_file).write_text(str(os.getpid()))
    time.sleep(seconds)
    return "woke"


def once_hang(marker: str, pid_file: str) -> str:
    """Hang on the first call (``marker`` absent: create it), return at once on the next (a retry)."""
    path = Path(marker)
    if not path.exists():
        path.write_text("first")
        return hang(pid_file)
    return "second"


def count_and_wait(effects: str, release: str, timeout: float = 60.0) -> int:
    """Append a line to ``effects``, wait for the file ``release`` (at most ``timeout``), return the count."""
    with Path(effects).open("a") as log:
        log.write(f"{os.getpid()}\n")
    deadline = time.monotonic() + timeout
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.02)  # another process makes the file: there is nothing to wait on
    return len(Path(effects).read_text().splitlines())


def count_and_sleep(effects: str, seconds: float) -> int:
    """Append a line to ``effects`` (one per execution: the test counts them), sleep, return the count."""
    with Path(effects).open("a") as log:
        log.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    return len(Path(effects).read_text().splitlines())
