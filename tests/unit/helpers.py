"""Helpers shared by the unit tests: build commands and drive a Timetable by hand, no threads.

``Pool`` plays the workers' side of the protocol the way ``WorkerActor`` does: it takes each
run's ``Claim`` before doing anything with it (a run the timetable took back cannot be
claimed), starts a claimed run only if the task's token lets it (``try_start``), ends every
run with ``end_run`` before reporting it (and reports nothing of a run abandoned), reports
``Skipped`` when the token said no, and claims the next run of its batch *before* reporting,
so the report says whether it is now idle.

The pool never looks at a claim or a token to learn what the timetable did. It learns which
runs the timetable took back from the timetable's effects, as an observer of both sides
would: a run handed to another worker was taken back from the first, and a run whose task
ended before its worker claimed it was taken back too. When a worker reaches such a run, it
still tries the claim (as the real worker does), and the pool checks that the claim is gone:
a timetable that re-handed or ended a run without taking back its claim would let two parties
own it. (``Timetable.abandon`` ends tasks without taking their claims back, on purpose: do not
let a pool's workers claim runs after it.)
"""

from __future__ import annotations

import dataclasses
from collections import deque
from typing import Any

from actors.core.effects import Effects
from actors.core.task_record import TaskRecord
from actors.core.timetable import Timetable
from actors.sync.token import FREE, RAN, RUNNING
from messages import Cancelled, Completed, EventKind, Failed, RunTask, Schedule, Skipped, Started, Trigger

ALL_KINDS = frozenset(EventKind)


def noop() -> None:
    return None


def make(task_id: str, trigger: Trigger, **kwargs: Any) -> Schedule:
    kwargs.setdefault("fn", noop)
    return Schedule(task_id=task_id, trigger=trigger, **kwargs)


def timetable(
    workers: int = 1, *, history: int = 10_000, wanted: frozenset[EventKind] = ALL_KINDS
) -> Timetable:
    table = Timetable(workers=workers, history=history)
    table.wanted = wanted
    return table


def events(effects: Effects) -> list[tuple[EventKind, str, int | None]]:
    return [(e.kind, e.task_id, e.run) for e in effects.events]


def dispatched(effects: Effects) -> list[tuple[int, str, int]]:
    """``(worker, task_id, run)`` for every run handed out."""
    return [(worker, msg.task_id, msg.run) for worker, msg in effects.dispatches]


def take(table: Timetable) -> Effects:
    """``take_effects``, then publish each task's end on its record, as the scheduler actor does."""
    effects = table.take_effects()
    for record, outcome in effects.finished:
        record.finish(outcome)
    return effects


def revoke(record: TaskRecord) -> Cancelled | None:
    """A caller's cancel (``TaskHandle.cancel``): revoke the token; the report to send if that won."""
    before = record.revoke()
    if before in (FREE, RUNNING, RAN):
        return Cancelled(record, mid_run=before is not FREE)  # RUNNING or RAN: a run is in flight
    return None


def traceback_of(error: BaseException) -> str:
    """The text a pool's worker sends as a failed run's traceback."""
    return f"Traceback (played by the test pool):\n{error!r}\n"


@dataclasses.dataclass
class Handed:
    """A run in a worker's inbox, not yet claimed by it."""

    run: RunTask
    taken_back: bool = False  # the effects showed the timetable took it back (re-handed it, or ended it)


class Pool:
    """The workers, played by hand: ``take`` collects effects; ``start``/``finish`` run runs.

    A worker's runs go through: inbox (handed) -> ``claimed`` (claim taken, not started) ->
    ``current`` (``try_start`` said yes) -> reported. ``start`` and ``finish`` go through the
    steps the way the worker does them without a pause; ``claim``, ``step`` and
    ``finish(start_next=False)`` stop between them, to let a test act in the gaps.
    """

    def __init__(self, table: Timetable, *, announce: bool = False) -> None:
        self.table = table
        self.announce = announce  # report Started for runs that ask for it, as the worker does
        self.inbox: dict[int, deque[Handed]] = {}
        self.claimed: dict[int, RunTask] = {}  # worker -> the run it claimed but has not started
        self.current: dict[int, RunTask] = {}  # worker -> the run it started and runs
        self.started: list[tuple[int, str, int]] = []  # (worker, task_id, run), in start order
        self.started_at: dict[int, float] = {}  # worker -> when its current run started
        self.skipped: list[tuple[int, str, int, float]] = []  # (worker, task_id, run, now) reported Skipped

    # -- the timetable's side

    def take(self) -> Effects:
        """Take the timetable's effects (records told), deliver its batches to the inboxes."""
        return self.receive(take(self.table))

    def receive(self, effects: Effects) -> Effects:
        for worker, run in effects.dispatches:  # a run handed again was taken back where it was
            self._mark_taken_back(lambda h, run=run: h.run.task is run.task and h.run.run == run.run)
            self.inbox.setdefault(worker, deque()).append(Handed(run))
        for record, _ in effects.finished:  # a task ended: its unclaimed run was taken back
            self._mark_taken_back(lambda h, record=record: h.run.task is record)
        return effects

    def _mark_taken_back(self, match: Any) -> None:
        for box in self.inbox.values():
            for handed in box:
                if match(handed):
                    handed.taken_back = True

    # -- what the timetable should believe

    def held(self, worker: int) -> list[RunTask]:
        """Runs handed to ``worker`` that it has not claimed and the timetable has not taken back."""
        return [h.run for h in self.inbox.get(worker, ()) if not h.taken_back]

    def holding(self, worker: int) -> list[RunTask]:
        """``worker``'s batch as the timetable sees it: its claimed or current run, then the held ones."""
        head = self.current.get(worker) or self.claimed.get(worker)
        return [*([head] if head is not None else []), *self.held(worker)]

    def busy(self, worker: int) -> bool:
        """Whether the timetable should count ``worker`` as holding a batch."""
        return bool(self.holding(worker))

    # -- the worker's moves

    def _claim_next(self, worker: int) -> RunTask | None:
        box = self.inbox.get(worker, deque())
        while box:
            handed = box.popleft()
            if handed.run.claim.take():
                assert not handed.taken_back, (
                    f"the timetable re-handed or ended {handed.run.task_id!r} run {handed.run.run} "
                    "without taking its claim back"
                )
                return handed.run
        return None

    def claim(self, worker: int) -> RunTask | None:
        """``worker`` claims the next run of its inbox (and stops there, before ``try_start``)."""
        assert worker not in self.claimed, f"worker {worker} has claimed a run already"
        assert worker not in self.current, f"worker {worker} is running a run"
        run = self._claim_next(worker)
        if run is not None:
            self.claimed[worker] = run
        return run

    def step(self, worker: int, now: float = 0.0) -> RunTask | None:
        """``worker`` tries to start its claimed run: return it if it started.

        If the token says no, it claims its next run (left claimed, not started) and reports
        ``Skipped``.
        """
        run = self.claimed.pop(worker)
        verdict = run.task.try_start(run.one_time, run.manual)
        if verdict > 0:
            self.current[worker] = run
            self.started.append((worker, run.task_id, run.run))
            self.started_at[worker] = now  # the reports say when the run started, as a worker's do
            if self.announce and run.announce:
                self.table.started(Started(worker, run.task_id, run.run, now))
            return run
        following = self._claim_next(worker)
        if following is not None:
            self.claimed[worker] = following
        self.table.skipped(Skipped(worker, run.task_id, run.run, following is None, verdict < 0), now=now)
        self.skipped.append((worker, run.task_id, run.run, now))
        return None

    def start(self, worker: int, now: float = 0.0) -> RunTask | None:
        """``worker`` starts the first run it can claim and start (reporting the skipped ones)."""
        assert worker not in self.current, f"worker {worker} is running already"
        if worker not in self.claimed and self.claim(worker) is None:
            return None
        while worker in self.claimed:
            run = self.step(worker, now)
            if run is not None:
                return run
        return None

    def start_all(self, now: float = 0.0) -> list[RunTask]:
        workers = sorted({*self.inbox, *self.claimed} - set(self.current))
        return [run for w in workers if (run := self.start(w, now))]

    def finish(
        self,
        worker: int,
        *,
        at: float,
        now: float | None = None,
        value: object = None,
        error: BaseException | None = None,
        start_next: bool = True,
        ended: bool = False,
    ) -> RunTask:
        """``worker``'s run ends at ``at``: ``end_run``, claim the next, report (at ``now``).

        Then it starts its next run, unless ``start_next`` is false (it stays claimed). A run
        the timetable abandoned reports nothing, as its worker does. ``ended``: the test made
        the run's ``end_run`` itself, earlier (to act between the run's end and its report).
        """
        run = self.current.pop(worker)
        if not ended and not run.task.end_run(run.claim):
            return run
        following = self._claim_next(worker)
        idle = following is None
        if following is not None:
            self.claimed[worker] = following
        now = at if now is None else now
        started_at = self.started_at.pop(worker, None)
        if error is None:
            report_done = Completed(worker, run.task_id, run.run, value, at, idle, started_at=started_at)
            self.table.completed(report_done, now=now)
        else:
            report = Failed(
                worker, run.task_id, run.run, error, traceback_of(error), at, idle, started_at=started_at
            )
            self.table.failed(report, now=now)
        if start_next and following is not None:
            self.start(worker, now)
        return run

    def lose(self, worker: int) -> None:
        """Forget everything ``worker`` held (it died; its ``finally`` still ended a recurring run)."""
        run = self.current.pop(worker, None)
        if run is not None:
            run.task.end_run(run.claim)
        self.claimed.pop(worker, None)
        self.started_at.pop(worker, None)
        self.inbox.pop(worker, None)

    def run_everything(self, now: float) -> list[tuple[int, str, int]]:
        """Start and finish (instantly, at ``now``) every run until no worker holds one."""
        first = len(self.started)
        while True:
            self.take()
            self.start_all(now)
            self.take()
            if not self.current:
                if self.claimed or any(self.held(w) for w in self.inbox):
                    continue  # a skip freed a worker, and it was handed more
                return self.started[first:]
            for worker in sorted(self.current):
                self.finish(worker, at=now)
                self.take()
