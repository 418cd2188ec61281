"""Module-level task functions for the durability tests (durable tasks are stored by reference)."""

from __future__ import annotations

import os
import threading
from typing import Any

from actors import current_run

CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
LOCK = threading.Lock()


def record(*args: Any, **kwargs: Any) -> str:
    """Record the call (with the run's key) and return the key."""
    key = current_run().key
    with LOCK:
        CALLS.append((key, args, kwargs))
    return key


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def fail() -> None:
    raise RuntimeError("always fails")


def noop() -> None:
    return None


def append_key(path: str) -> None:
    """Append this run's key to the file ``path`` (one line per run; O_APPEND: whole lines)."""
    line = (current_run().key + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def fail_on_second_run() -> None:
    run = current_run().run
    if run == 2:
        raise RuntimeError(f"failed on run {run}")
