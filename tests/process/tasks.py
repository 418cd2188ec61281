"""Task functions the process tests send to a child by reference (they must be importable)."""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import sys
import threading
from pathlib import Path


def add(a: int, b: int = 0) -> int:
    return a + b


def echo(value: object) -> object:
    return value


def pid() -> int:
    return os.getpid()


def noop() -> None:
    return None


class CustomError(Exception):
    """Pickles like any exception: its args rebuild it."""


class Unreconstructable(Exception):
    """Pickles, but does not unpickle: its __init__ takes two arguments and passes one on."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"code {code}: {detail}")


class HoldsALock(Exception):
    """Does not pickle at all: one of its args is a lock."""


def raise_value_error(*args: object) -> None:
    raise ValueError(*args)


def raise_custom(message: str) -> None:
    raise CustomError(message, 7)


def raise_unreconstructable() -> None:
    raise Unreconstructable(3, "gone wrong")


def raise_unpicklable() -> None:
    raise HoldsALock("with a lock", threading.Lock())


def return_unpicklable() -> object:
    return threading.Lock()


def exit_politely(code: int) -> None:
    raise SystemExit(code)


def keyboard_interrupt() -> None:
    raise KeyboardInterrupt


def exit_hard(code: int) -> None:
    os._exit(code)


def segfault() -> None:
    ctypes.string_at(0)


def make_unstoppable() -> int:
    """Ignore SIGTERM and hang at interpreter exit, so only SIGKILL can end this process."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    atexit.register(threading.Event().wait)
    return os.getpid()


def read_file(path: str) -> str:
    return Path(path).read_text()


def sys_path() -> list[str]:
    return list(sys.path)


def announce_and_block(address: str) -> None:
    """Tell the test listening on ``address`` our pid (we are inside the task now), then block."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(address)
        connection.sendall(f"{os.getpid()}\n".encode())
    threading.Event().wait()


TASKS_CONSTANT = "not callable"
