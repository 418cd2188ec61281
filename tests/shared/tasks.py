"""Module-level task functions for the shared-store tests (durable tasks are stored by reference)."""

from __future__ import annotations

import threading
from typing import Any

from actors import current_run

CALLS: list[tuple[str, tuple[Any, ...]]] = []  # (run key, args), every node of this process
LOCK = threading.Lock()
GATES: dict[str, threading.Event] = {}  # name -> opened
ENTERED: dict[str, threading.Event] = {}  # name -> a run is waiting at the gate


def record(*args: Any) -> str:
    """Record the call with the run's key; return the key."""
    key = current_run().key
    with LOCK:
        CALLS.append((key, args))
    return key


def echo(*args: Any, **kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    return args, kwargs


def fail() -> None:
    raise RuntimeError("always fails")


def noop() -> None:
    return None


def gate(name: str) -> str:
    """Record the call, say it is waiting, then wait for the test to open gate ``name``."""
    record(name)
    with LOCK:
        entered = ENTERED.setdefault(name, threading.Event())
        opened = GATES.setdefault(name, threading.Event())
    entered.set()
    opened.wait(30)
    return name


def entered(name: str, timeout: float = 10.0) -> bool:
    with LOCK:
        event = ENTERED.setdefault(name, threading.Event())
    return event.wait(timeout)


def open_gate(name: str) -> None:
    with LOCK:
        GATES.setdefault(name, threading.Event()).set()


def reset() -> None:
    with LOCK:
        CALLS.clear()
        for event in GATES.values():
            event.set()  # nothing may stay blocked after a test
        GATES.clear()
        ENTERED.clear()


def stoppable(name: str) -> str:
    """Say it is running, then wait until its run is asked to stop (raising ``RunCancelled``)."""
    run = current_run()
    record(name)
    with LOCK:
        entered = ENTERED.setdefault(name, threading.Event())
    entered.set()
    deadline = 300  # 30 s in steps of 0.1 s
    while not run.cancel_requested and deadline:
        threading.Event().wait(0.1)
        deadline -= 1
    run.check()  # raises RunCancelled once a stop was asked
    return "never asked to stop"
