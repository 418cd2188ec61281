"""``status (JOBFILE | --store PATH)``: print every task in a store, and exit.

It reads the store read-only and takes no lock, so it works while a ``run`` holds the store;
it says whether one does (asking the lock without taking it), because that decides what a
past due time means: a held store's task may be running now, an unheld one's is overdue.
Threads: the caller's.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

from actors.cli import exits
from actors.cli.jobfile import load_jobfile
from actors.cli.rows import row_from_stored, shown_path, table_text
from actors.errors import JobFileError, StoreError
from actors.store import SQLiteStore
from actors.store.lockfile import LockState, lock_path_of, lock_state

__all__ = ["status"]


def status(jobfile: str | None, store: str | None, now: datetime | None = None) -> int:
    """Print the tasks of the store named by ``store``, else by the job file; return the exit code."""
    now = now or datetime.now().astimezone()
    if store is None:
        assert jobfile is not None
        try:
            path = load_jobfile(jobfile).store
        except JobFileError as error:
            print("\n".join(error.problems), file=sys.stderr)
            return exits.BAD_INPUT
        if path is None:
            print(
                f'{jobfile}: store = ":memory:": nothing is kept, so there is no status to show',
                file=sys.stderr,
            )
            return exits.BAD_INPUT
    else:
        path = Path(store).expanduser()
    try:
        with SQLiteStore.inspect(path) as reader:
            tasks = reader.tasks()
    except StoreError as error:
        hint = " (a run of the job file creates it)" if not path.exists() else ""
        print(f"{error}{hint}", file=sys.stderr)
        return exits.FAILURE
    live = sum(task.live for task in tasks)
    holder = lock_state(lock_path_of(str(path)))
    print(f"{shown_path(path)}: {len(tasks)} task(s), {live} live; times in {now:%Z} (UTC{now:%z})")
    print(f"{shown_path(path)}: {_holder_line(holder)}")
    rows = [row_from_stored(task) for task in tasks]
    print(table_text(rows, now, maybe_running=holder.held is not False))
    return exits.OK


def _holder_line(holder: LockState) -> str:
    """Say whether a scheduler holds the store, and so what a past due time means."""
    if holder.held is None:
        return "whether a scheduler holds it cannot be told on this system"
    if holder.held:
        who = "a scheduler" if holder.pid is None else f"a scheduler (process {holder.pid})"
        return f"held by {who}: it runs the tasks; a task due a while ago may be running"
    return "no scheduler holds it: nothing runs until one starts"
