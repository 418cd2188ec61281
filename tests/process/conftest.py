"""Fixtures for the process tests: slots that are always stopped, and leak checks for processes and fds."""

from __future__ import annotations

import os
import socket
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.process import slot as process_slot
from actors.process.slot import ProcessSlot

if sys.platform != "linux":  # the checks read /proc; the slot itself is POSIX
    pytest.skip("the process tests read /proc (Linux only)", allow_module_level=True)


def child_pids() -> set[int]:
    """The pids of this process's children, zombies included (read from /proc, reaps nothing)."""
    me = os.getpid()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue  # it ended while we looked
        # Field 2, the command name, may hold spaces and parentheses: the rest follows its last ')'.
        state_and_ppid = stat[stat.rindex(")") + 2 :].split(maxsplit=2)
        if int(state_and_ppid[1]) == me:
            found.add(int(entry.name))
    return found


def open_fds() -> set[str]:
    return {f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}" for fd in _fd_numbers()}


def _fd_numbers() -> list[str]:
    numbers = []
    for name in os.listdir("/proc/self/fd"):
        if os.path.exists(f"/proc/self/fd/{name}"):  # not the descriptor listdir itself used
            numbers.append(name)
    return numbers


@pytest.fixture(autouse=True)
def no_leaked_processes_or_fds() -> Iterator[None]:
    """Fail a test that leaves a child process (or zombie) or an open file descriptor behind."""
    children, fds = child_pids(), open_fds()
    yield
    assert child_pids() - children == set(), "child processes left behind"
    assert open_fds() - fds == set(), "file descriptors left open"


@pytest.fixture(params=["pidfd", "pipes-only"])
def slot(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[ProcessSlot]:
    """A slot, stopped after the test; also without a pidfd, as on a POSIX system other than Linux."""
    if request.param == "pipes-only":
        monkeypatch.setattr(process_slot, "_open_pidfd", lambda pid: None)
    made = ProcessSlot(name="test-slot")
    yield made
    made.stop(timeout=5)


class Listener:
    """An abstract Unix socket a task connects to, to say it is running (and its pid)."""

    def __init__(self) -> None:
        self.address = f"\0pykka-taskscheduler-test-{uuid.uuid4().hex}"
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.bind(self.address)
        self._socket.listen()
        self._socket.settimeout(10)

    def accept_pid(self) -> int:
        """Wait (10 s at most) for a task to connect and send its pid."""
        connection, _ = self._socket.accept()
        connection.settimeout(10)
        with connection, connection.makefile() as lines:
            return int(lines.readline())

    def close(self) -> None:
        self._socket.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    made = Listener()
    yield made
    made.close()
