"""``status (JOBFILE | --store STORE)``: print every task in a store, and exit.

It reads an SQLite store read-only and takes no lock, so it works while a ``run`` holds the
store, and says whether one does (asking the lock without taking it), because that decides what
a past due time means: a held store's task may be running now, an unheld one's is overdue. A
PostgreSQL store (``postgresql://...``) is read as any client of the database reads it.
Threads: the caller's.
"""

from __future__ import annotations

import dataclasses
import sys
from datetime import datetime
from pathlib import Path
from typing import Final

from actors.cli import exits
from actors.cli.jobfile import load_jobfile
from actors.cli.rows import JobRow, row_from_stored, table_text
from actors.cli.stores import StoreName, shown_store, store_name
from actors.errors import JobFileError, StoreError
from actors.store import KeepsPaused, SQLiteStore, StoredTask
from actors.store.lockfile import LockState, lock_path_of, lock_state

__all__ = ["status"]

_SQLITE_HEADER: Final = b"SQLite format 3\x00"


def status(jobfile: str | None, store: str | None, now: datetime | None = None) -> int:
    """Print the tasks of the store named by ``store``, else by the job file; return the exit code."""
    now = now or datetime.now().astimezone()
    try:
        name = _store_to_read(jobfile, store)
    except JobFileError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return exits.BAD_INPUT
    try:
        tasks, paused = _read(name)
    except ImportError as error:
        print(f"a PostgreSQL store needs psycopg ({error}): pip install 'pykka-taskscheduler[postgres]'",
              file=sys.stderr)  # fmt: skip
        return exits.FAILURE
    except StoreError as error:
        hint = " (a run of the job file creates it)" if isinstance(name, Path) and not name.exists() else ""
        print(f"{error}{hint}", file=sys.stderr)
        return exits.FAILURE
    live = sum(task.live for task in tasks)
    shown = shown_store(name)
    holder = lock_state(lock_path_of(str(name))) if isinstance(name, Path) else None
    print(f"{shown}: {len(tasks)} task(s), {live} live; times in {now:%Z} (UTC{now:%z})")
    print(f"{shown}: {_holder_line(holder)}")
    rows = [_paused_row(row_from_stored(task)) if task.task_id in paused else row_from_stored(task)
            for task in tasks]  # fmt: skip
    print(table_text(rows, now, maybe_running=holder is None or holder.held is not False))
    return exits.OK


def _holder_line(holder: LockState | None) -> str:
    """Say whether a scheduler holds the store, and so what a past due time means."""
    if holder is None:  # a PostgreSQL database: shared, never locked by one scheduler
        return "a shared database: any run on it may hold these tasks; a task due a while ago may be running"
    if holder.held is None:
        return "whether a scheduler holds it cannot be told on this system"
    if holder.held:
        who = "a scheduler" if holder.pid is None else f"a scheduler (process {holder.pid})"
        return f"held by {who}: it runs the tasks; a task due a while ago may be running"
    return "no scheduler holds it: nothing runs until one starts"


def _store_to_read(jobfile: str | None, store: str | None) -> StoreName:
    """The store ``--store`` names, else the job file's.

    Raises:
        JobFileError: the job file is bad, is a store itself, or keeps nothing.
    """
    if store is not None:
        name = store_name(store, Path.cwd())
        if name is None:
            raise JobFileError(["status: --store :memory: keeps nothing, so there is no status to show"])
        return name
    assert jobfile is not None
    if _looks_like_a_store(jobfile):
        raise JobFileError(
            [
                f"{jobfile}: this looks like a task store (an SQLite database), not a job file; "
                f"to read it: status --store {jobfile}"
            ]
        )
    name = load_jobfile(jobfile).store
    if name is None:
        raise JobFileError([f'{jobfile}: store = ":memory:": nothing is kept, so there is no status to show'])
    return name


def _read(store: StoreName) -> tuple[list[StoredTask], frozenset[str]]:
    """Every stored task, and the ids of the live ones stored as paused."""
    if isinstance(store, Path):
        with SQLiteStore.inspect(store) as reader:
            return reader.tasks(), reader.paused_ids()
    from actors.cli.shared_store import open_shared  # noqa: PLC0415 - psycopg is optional

    with open_shared(store) as shared:
        paused = shared.paused_ids() if isinstance(shared, KeepsPaused) else frozenset()
        return shared.tasks(), paused


def _paused_row(row: JobRow) -> JobRow:
    """A paused task's row: its status says so, and it has no next run until it is resumed."""
    return dataclasses.replace(row, status="paused", next_run=None)


def _looks_like_a_store(path: str) -> bool:
    """Whether ``path`` is an SQLite database (given where a job file was meant)."""
    try:
        with open(path, "rb") as file:
            return file.read(len(_SQLITE_HEADER)) == _SQLITE_HEADER
    except OSError:
        return False  # loading it says why
