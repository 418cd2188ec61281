"""``JobService``: a job file's jobs on a running ``Scheduler``, kept equal to the file.

It owns the scheduler for the runner: ``apply`` brings the schedule in line with a job file
(at start, and again for every ``SIGHUP`` reload); the store writes each job's fingerprint
with its definition (``actors/cli/fingerprints.py``). ``rows`` says what each job is doing,
for the live view.

Threads: every method on the runner's main thread, except the event listener, which the
scheduler calls on its event bus thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Set
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from actors.api.facade import Scheduler
from actors.cli.apply import carry_out
from actors.cli.board import Board
from actors.cli.fingerprints import (
    Stamps,
    legacy_path,
    read_legacy,
    recorded_fingerprints,
)
from actors.cli.jobfile import JobFile, JobSpec
from actors.cli.reconcile import Held, fingerprints_of, reconcile
from actors.cli.rows import JobRow, describe_spec, last_error, one_line, row_from_stored
from actors.cli.stores import read_stored
from actors.errors import StoreError, UnknownTaskError
from actors.runtime.durable import damage_of
from actors.store import StoredTask
from messages import TaskEvent, TaskInfo

__all__ = ["JobService", "JobStore", "event_listener", "held_of", "read_stored", "to_hold_back"]

logger = logging.getLogger("actors.cli")


class JobStore(Protocol):
    """The runner's store (``HoldBackStore``, ``SharedJobStore``), as the service uses it."""

    @property
    def stamps(self) -> Stamps:
        """The fingerprints it writes into the definitions of the file's jobs."""
        ...

    def tasks(self, *, include_terminal: bool = True) -> list[StoredTask]:
        """Every stored task (``Store.tasks``)."""
        ...

    def reconciling(self) -> AbstractContextManager[object]:
        """Make this run's reconcile the only one on the store while the block runs."""
        ...

    def reconciled(self) -> None:
        """The schedule follows the job file: run whatever it held back until now."""
        ...


class JobService:
    """Runs the jobs of a job file on ``scheduler``, whose store (if any) is ``store``."""

    def __init__(
        self,
        scheduler: Scheduler,
        jobfile: JobFile,
        board: Board | None = None,
        store: JobStore | None = None,
    ) -> None:
        self._scheduler = scheduler
        self._jobfile = jobfile
        self._store = store
        self.board = board if board is not None else Board()  # fed by an event_listener
        # What a memory-only run has recorded; a stored run reads the fingerprints of the rows.
        self._recorded: dict[str, str] = {}
        # Rows of ended tasks the scheduler no longer knows (ended before this process started).
        self._stored_rows: dict[str, StoredTask] = {}

    @property
    def jobfile(self) -> JobFile:
        """The job file the schedule now follows."""
        return self._jobfile

    def listen(self, on_event: Callable[[TaskEvent, float | None], None] | None = None) -> None:
        """Subscribe an ``event_listener`` of this service's board (from now on)."""
        self._scheduler.subscribe(event_listener(self.board, on_event))

    def apply(self, jobfile: JobFile) -> None:
        """Make the schedule follow ``jobfile``: add, replace, keep or cancel each job, logging each.

        Raises:
            StoreError: the store failed; the decisions before the failure were carried out.
        """
        fingerprints = fingerprints_of(jobfile.jobs)
        if self._store is None:
            decisions = reconcile(jobfile.jobs, self._held(jobfile.jobs), self._recorded)
            carry_out(self._scheduler, decisions)
        else:
            with self._store.reconciling():
                stored = self._read_store()
                in_store = held_of(stored)
                held = in_store + self._held(jobfile.jobs, {task.task_id for task in in_store})
                recorded = {**self._recorded, **recorded_fingerprints(stored)}  # memory jobs: this process's
                decisions = reconcile(jobfile.jobs, held, recorded)
                self._store.stamps.expect(fingerprints)
                carry_out(self._scheduler, decisions)
            self._store.reconciled()
        self._jobfile = jobfile
        self._recorded = fingerprints

    def rows(self) -> list[JobRow]:
        """Return one row per job of the file, in its order, as the scheduler sees it now."""
        live = {info.task_id: info for info in self._scheduler.tasks()}
        rows = []
        for spec in self._jobfile.jobs:
            info = live.get(spec.job_id) or self._ended_info(spec.job_id)
            if info is not None:
                rows.append(self._row(spec, info))
            elif spec.job_id in self._stored_rows:
                rows.append(row_from_stored(self._stored_rows[spec.job_id], spec))
        return rows

    def _row(self, spec: JobSpec, info: TaskInfo) -> JobRow:
        last = self.board.last(spec.job_id)
        return JobRow(
            task_id=spec.job_id,
            trigger=describe_spec(spec),
            status=info.status.value,
            next_run=info.next_run_wall,
            runs=info.run_count,
            failures=info.failure_count,
            last_outcome=None if last is None else last.outcome,
            last_error=last_error(info.last_error, info.last_traceback),
        )

    def _ended_info(self, task_id: str) -> TaskInfo | None:
        try:
            return self._scheduler.info(task_id)
        except UnknownTaskError:
            return None

    def _read_store(self) -> list[StoredTask]:
        """Return every stored task, live or ended (the store knows the ended ones across restarts)."""
        assert self._store is not None
        stored = self._store.tasks()
        for task in stored:
            self.board.seed(task.task_id, task.last_outcome, one_line(task.last_error))
        self._stored_rows = {task.task_id: task for task in stored if not task.live}
        return stored

    def _held(self, jobs: tuple[JobSpec, ...], in_store: Set[str] = frozenset()) -> list[Held]:
        """Return every task the scheduler holds in memory, live or ended, but those ``in_store``.

        Without a store that is all of them (its live tasks, and the file's ended ones); with
        one, the ``durable = false`` jobs (the store holds the rest, ended ones included).
        """
        held = {info.task_id: info for info in self._scheduler.tasks() if info.task_id not in in_store}
        for spec in jobs:
            known = spec.job_id in held or spec.job_id in in_store
            if not known and (info := self._ended_info(spec.job_id)) is not None:
                held[spec.job_id] = info
        return [Held(task_id, not info.done, info.status.value) for task_id, info in held.items()]


def held_of(stored: list[StoredTask]) -> list[Held]:
    """Return the diff's view of stored tasks: a live one whose row is damaged says why (``damage_of``).

    The library's own decoding judges the row, so the reconcile replaces exactly the tasks the
    scheduler loaded as stand-ins whose runs fail.
    """
    held = []
    for task in stored:
        damage = damage_of(task) if task.live else None
        if damage is None:
            held.append(Held(task.task_id, task.live, task.status))
        else:
            held.append(Held(task.task_id, task.live, task.status, damage.reason, damage.counters_decode))
    return held


def to_hold_back(jobfile: JobFile) -> set[str]:
    """Return the stored tasks a start must not run before the reconcile: those it will replace or cancel.

    A task whose row is damaged is one it will replace: its run, which can only fail, waits.

    A store that cannot be read yet (an older schema, say) holds nothing back: the scheduler
    migrates it, and the reconcile right after the start replaces or cancels as usual. Only
    an SQLite file holds back (``actors/cli/shared_store.py`` says why a database does not).
    """
    if not isinstance(jobfile.store, Path):
        return set()
    try:
        stored = read_stored(jobfile.store)
    except StoreError:
        return set()
    recorded = recorded_fingerprints(stored, read_legacy(legacy_path(jobfile.store)))
    decisions = reconcile(jobfile.jobs, held_of(stored), recorded)
    return {decision.task_id for decision in decisions if decision.action in ("replace", "cancel")}


def event_listener(
    board: Board, on_event: Callable[[TaskEvent, float | None], None] | None = None
) -> Callable[[TaskEvent], None]:
    """A listener feeding every event to ``board``, then to ``on_event`` with the run's duration.

    It runs on the scheduler's event bus thread. The runner gives it to the ``Scheduler`` as it
    starts (``listeners=``), so the runs of stored jobs due at once are on the board and logged.
    """

    def listener(event: TaskEvent) -> None:
        duration = board.observe(event)
        if on_event is not None:
            on_event(event, duration)

    return listener
