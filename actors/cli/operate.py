"""``pause``, ``resume``, ``run-now JOBFILE JOB``: operate one job of a schedule, beside its ``run``.

Where the change is made depends on the store (docs/cli.md, "Operating a running schedule"):

- An SQLite file held by a ``run``: the command asks that run through the store's mailbox
  (``actors/cli/control.py``); the run carries it out with the ``Scheduler``'s own call within
  ``POLL`` seconds and answers, and its live view shows the job ``paused``.
- An SQLite file no ``run`` holds: ``pause``/``resume`` take the store's lock for a moment and
  write the task's paused flag (the next ``run`` loads the job paused, or not). ``run-now``
  needs a running scheduler: refused.
- A PostgreSQL database: the command commits the change in the store (``shared_operation``);
  whichever node holds or claims the task obeys within its poll interval.

Exit codes (``actors/cli/exits.py``): 0 done, or nothing to do (already paused, not paused); 1
the job could not be operated (ended, not in the store, a run in progress, no answer); 2 a
bad job file or arguments, a job not in the file, a store that keeps nothing.

Threads: ``operate`` on the caller's; ``answer_request`` on the runner's main thread.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Final

from actors.api.facade import Scheduler
from actors.cli import exits
from actors.cli.control import Answer, Op, ask
from actors.cli.jobfile import JobFile, JobSpec, load_jobfile
from actors.cli.jobkeys import MEMORY_STORE, show
from actors.cli.stores import StoreName, shown_store, store_name
from actors.errors import JobFileError, StoreError, StoreLockedError, UnknownTaskError
from actors.store import SQLiteStore, StoredTask, TaskUpdate
from actors.store.lockfile import lock_path_of, lock_state
from messages import TaskStatus

__all__ = ["PSYCOPG", "answer_request", "find_job", "operate", "shared_operation", "store_of"]

PSYCOPG: Final = "pip install 'pykka-taskscheduler[postgres]'"

_DONE = {"pause": "paused", "resume": "resumed", "run-now": "started a run now"}
_ALREADY = {"pause": "it is paused already", "resume": "it is not paused"}


def operate(op: Op, jobfile: str, job: str, store: str | None) -> int:
    """Apply ``op`` to the job ``job`` of ``jobfile`` (``store``: ``--store``); return the exit code."""
    try:
        loaded = load_jobfile(jobfile)
        name = store_of(loaded, jobfile, store, op)
        spec = find_job(loaded, jobfile, job)
    except JobFileError as error:
        print("\n".join(error.problems), file=sys.stderr)
        return exits.BAD_INPUT
    where = f"{jobfile}: job {job!r}"
    try:
        answer = shared_operation(name, op, job) if isinstance(name, str) else _on_file(name, op, spec)
    except ImportError as error:
        print(f"{where}: a PostgreSQL store needs psycopg ({error}): {PSYCOPG}", file=sys.stderr)
        return exits.FAILURE
    except StoreError as error:
        print(f"{where}: {error}", file=sys.stderr)
        return exits.FAILURE
    if answer.outcome == "refused":
        print(f"{where}: not {_DONE[op].removeprefix('started a ')}: {answer.message}", file=sys.stderr)
        return exits.FAILURE
    print(f"{where}: {answer.message}")
    if op == "resume" and spec.paused is True and answer.outcome == "done":
        print(f"{where}: note: the job file says paused = true, so a reload or restart pauses it again")
    if op == "pause" and spec.paused is False and answer.outcome == "done":
        print(f"{where}: note: the job file says paused = false, so a reload or restart resumes it")
    return exits.OK


def store_of(jobfile: JobFile, label: str, store: str | None, command: str) -> StoreName:
    """The store ``--store`` names, else the job file's.

    Raises:
        JobFileError: the store keeps nothing (``":memory:"``): no other process can reach its jobs.
    """
    name = jobfile.store if store is None else store_name(store, Path.cwd())
    if name is None:
        where = "--store :memory:" if store is not None else f"{label}: store = {show(MEMORY_STORE)}"
        why = f"keeps nothing, so {command} cannot reach the jobs (only their run holds them)"
        raise JobFileError([f"{where} {why}"])
    return name


def find_job(jobfile: JobFile, label: str, job: str) -> JobSpec:
    """The job ``job`` of the file.

    Raises:
        JobFileError: the file has no such job (the message lists the jobs it has).
    """
    for spec in jobfile.jobs:
        if spec.job_id == job:
            return spec
    jobs = ", ".join(repr(spec.job_id) for spec in jobfile.jobs)
    raise JobFileError([f"{label}: no job {job!r} in the file (its jobs: {jobs})"])


def answer_request(scheduler: Scheduler, op: Op, task_id: str) -> Answer:
    """Carry out one request with the scheduler's own call and say what happened (runner's main thread)."""
    if op == "pause":
        changed = scheduler.pause(task_id)
    elif op == "resume":
        changed = scheduler.resume(task_id)
    else:
        changed = scheduler.run_now(task_id)
    if changed:
        return Answer("done", _DONE[op])
    try:
        status = scheduler.info(task_id).status
    except UnknownTaskError:
        return Answer("refused", "the running scheduler does not hold it")
    if status in (TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED):
        return Answer("refused", f"it has ended ({status.value})")
    if op == "run-now":
        why = "a run of it is in progress (overlap"
        return Answer("refused", f"{why} 'skip' queues nothing), or it waits for its dependencies")
    return Answer("already", _ALREADY[op])


def shared_operation(url: str, op: Op, task_id: str) -> Answer:
    """Commit ``op`` of ``task_id`` in the PostgreSQL store at ``url`` (caller's thread).

    The store's own ``pause``, ``resume`` and ``run_now`` (``SharedStore``): committed before
    they return, obeyed by the node that holds or claims the task within its poll interval.

    Raises:
        StoreError: the database cannot be reached, or its store cannot operate tasks.
        ImportError: psycopg is not installed.
    """
    from actors.cli.shared_store import open_shared  # noqa: PLC0415 - psycopg is optional

    with open_shared(url) as store:
        call = getattr(store, op.replace("-", "_"), None)
        if call is None:
            raise StoreError(f"{shown_store(url)}: this version's PostgreSQL store cannot {op} a task")
        row = store.get(task_id)
        if op == "resume" and row is not None:
            changed = bool(call(task_id, delay=_fixed_delay(row)))
        else:
            changed = bool(call(task_id))
        if changed:
            return Answer("done", _DONE[op])
        row = store.get(task_id)
        if row is None:
            return Answer("refused", f"{shown_store(url)} holds no task of this id (a run adds it)")
        if not row.live:
            return Answer("refused", f"it has ended ({row.status})")
        if op == "run-now":
            return Answer("refused", "a run of it is claimed or in progress, or an extra run waits already")
        return Answer("already", _ALREADY[op])


def _on_file(store: Path, op: Op, spec: JobSpec) -> Answer:
    """Operate a job of an SQLite store: through the ``run`` holding it, else on the file."""
    if not store.exists():
        raise StoreError(f"{shown_store(store)}: no such store (a run of the job file creates it)")
    lock = lock_path_of(str(store))
    held = lock_state(lock).held
    # Nobody holds it, or this system cannot tell (then trying the lock tells): try the file.
    if held is False or (held is None and op != "run-now"):
        try:
            return _on_unheld_file(store, op, spec)
        except StoreLockedError:
            pass  # a run holds it: ask that run
    try:
        answer = ask(store, op, spec.job_id)
        if answer is None and lock_state(lock).held is False:  # the run stopped meanwhile
            return _on_unheld_file(store, op, spec)
    except sqlite3.Error as error:
        raise StoreError(f"{shown_store(store)}: cannot ask the run holding it: {error}") from error
    except StoreLockedError as error:
        raise StoreError(f"{shown_store(store)}: runs are starting and stopping on it; try again") from error
    if answer is None:
        raise StoreError(f"{shown_store(store)}: the run holding it did not answer; is it a current version?")
    return answer


def _on_unheld_file(store: Path, op: Op, spec: JobSpec) -> Answer:
    """Pause or resume a job of a store no scheduler holds: its paused flag, under the store's lock."""
    if op == "run-now":
        return Answer("refused", f"no run holds {shown_store(store)}: run-now needs a running scheduler")
    with SQLiteStore(store) as opened:
        row = opened.get(spec.job_id)
        if row is None:
            why = "it is durable = false: only its run holds it" if spec.durable is False else "a run adds it"
            return Answer("refused", f"{shown_store(store)} holds no task of this id ({why})")
        if not row.live:
            return Answer("refused", f"it has ended ({row.status})")
        paused = spec.job_id in opened.paused_ids()
        if paused == (op == "pause"):
            return Answer("already", _ALREADY[op])
        opened.save([_flag(row, paused=op == "pause")])
    word = "paused" if op == "pause" else "resumed"
    return Answer("done", f"{word} (no run holds {shown_store(store)}: the next one starts it {word})")


def _flag(row: StoredTask, *, paused: bool) -> TaskUpdate:
    return TaskUpdate(
        task_id=row.task_id,
        seq=row.seq,
        status=row.status,
        next_due=row.next_due,
        run_count=row.run_count,
        failure_count=row.failure_count,
        consecutive_failures=row.consecutive_failures,
        last_error=row.last_error,
        last_outcome=row.last_outcome,
        paused=paused,
    )


def _fixed_delay(row: StoredTask) -> float | None:
    """A fixed-delay task's delay (its next run is that long after the resume); else ``None``."""
    try:
        trigger = json.loads(row.trigger_json)
    except ValueError:
        return None
    delay = trigger.get("delay") if isinstance(trigger, dict) else None
    return float(delay) if isinstance(delay, int | float) and not isinstance(delay, bool) else None
