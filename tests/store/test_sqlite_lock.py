"""One scheduler per SQLite file: the flock on ``<file>.lock``, across threads, processes and kills."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from actors.errors import StoreError, StoreLockedError
from actors.store import SQLiteStore
from actors.store.lockfile import LockState, lock_path_of, lock_state
from tests.store.helpers import definition, spawn


def test_a_second_open_in_the_same_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    second = SQLiteStore(path)
    with SQLiteStore(path) as first:
        first.add(definition("a"))
        with pytest.raises(StoreLockedError, match="this process") as refused:
            second.open()
        assert str(path) in str(refused.value)
        first.add(definition("b"))  # the holder is unaffected

    second.open()  # free once the holder closed
    assert [t.task_id for t in second.load()] == ["a", "b"]
    second.close()


def test_opening_an_open_store_again_is_an_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "s.db") as store:
        with pytest.raises(StoreError, match="open already"):
            store.open()
        store.add(definition("a"))


def test_another_name_for_the_file_is_the_same_lock(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    link = tmp_path / "link.db"
    with SQLiteStore(path):
        link.symlink_to(path)
        with pytest.raises(StoreLockedError):
            SQLiteStore(link).open()


def test_a_store_held_by_another_process_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = spawn("hold", str(path))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == f"held {holder.pid}\n"
        with pytest.raises(StoreLockedError, match=f"process {holder.pid} holds"):
            SQLiteStore(path).open()
    finally:
        holder.communicate(timeout=10)  # closes its stdin: it closes the store and exits
    assert holder.returncode == 0

    with SQLiteStore(path) as store:
        assert store.load() == []


def test_the_lock_dies_with_a_killed_holder(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = spawn("hold", str(path))
    assert holder.stdout is not None
    assert holder.stdout.readline().startswith("held ")

    holder.kill()
    holder.communicate(timeout=10)
    assert holder.returncode == -signal.SIGKILL

    with SQLiteStore(path) as store:  # at once: no lease to wait out, no retry
        store.add(definition("a"))


def test_a_forked_child_neither_uses_the_store_nor_keeps_it_locked(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    holder = spawn("hold-fork", str(path))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == f"held {holder.pid}\n"
        _, child, state = holder.stdout.readline().split()
        assert state == "refused"

        holder.kill()
        holder.wait(timeout=10)
        os.kill(int(child), 0)  # the forked child still runs, with the inherited descriptor

        with SQLiteStore(path) as store:
            store.add(definition("a"))
    finally:
        holder.kill()
        holder.communicate(timeout=10)  # closes the pipes: the child reads EOF and exits


def test_whether_the_lock_is_held_can_be_asked_without_taking_it(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    lock = lock_path_of(str(path))
    assert lock_state(lock) == LockState(held=False)  # no lock file yet
    holder = spawn("hold", str(path))
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == f"held {holder.pid}\n"
        if not Path("/proc/locks").exists():
            assert lock_state(lock) == LockState(held=None)
            return
        assert lock_state(lock) == LockState(held=True, pid=holder.pid)
        assert lock_state(lock) == LockState(held=True, pid=holder.pid)  # asking took nothing
    finally:
        holder.communicate(timeout=10)
    assert holder.returncode == 0
    assert lock_state(lock) == LockState(held=False)  # the file stays, the lock is gone
    with SQLiteStore(path):  # and it is free to take
        assert lock_state(lock) == LockState(held=True, pid=os.getpid())
