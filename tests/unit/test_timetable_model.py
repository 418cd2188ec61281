"""A stateful hypothesis test: the Timetable against a tiny, obviously correct reference model.

The model is a plain list of dicts, recomputed by brute force on every step (O(n) by design):
each task's state (pending, ready, handed, cancelling, or how it ended), its token (mirrored
move by move from the table in ``actors/sync/token.py``), its counters and due time, and the exact
events. Which worker gets which run is the Timetable's choice; the test plays the workers with
``Pool`` (claim a run, ``try_start`` it, run it, ``end_run``, claim the next run before
reporting) one step at a time, so that anything may happen in the gaps, and checks every
choice: batches go only to idle workers, hold only due runs in FIFO order, are at most
``BATCH`` long, and while any worker is idle no due run waits.

Some tasks are *parked* (``Timetable.park``, as ``schedule_many`` sends them): they have no
record until the timetable makes one (they come due, are cancelled by id, or a caller asks for
the record), and the model only learns the record when it shows (``adopt``). Until then they
are listed after the others, and a caller cannot revoke their token.

Every task has a token. A caller may revoke any task's token at any step
(``TaskHandle.cancel``); the ``Cancelled`` report reaches the timetable later, at a step of its
own (or inside a batch), so every interleaving with claims, starts, reports, cancels, lost
workers and shutdown is explored. What the timetable learns it learns from moves and reports
only: the model decides with what the timetable could know, never by looking at a token.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actors.core.dealer import BATCH
from actors.core.due_heap import COMPACT_MIN_STALE
from actors.core.effects import Effects
from actors.core.parked import Batch, Parcel
from actors.core.policies import Policies
from actors.core.task_record import PLAIN, TaskRecord, TaskSpec
from actors.core.task_state import FINAL_STATES, TOKEN_AT_END
from actors.core.timetable import Timetable
from actors.errors import DuplicateTaskError, SchedulerShutdownError, WorkerLostError
from messages import (
    Cancelled,
    Completed,
    EventKind,
    Failed,
    FixedDelay,
    FixedRate,
    Once,
    RunTask,
    Skipped,
    Started,
    TaskStatus,
)
from tests.unit.helpers import ALL_KINDS, Pool, make, noop, take, traceback_of

IDS = ["a", "b", "c", "d", "e", "f"]
TERMINAL = {"completed", "failed", "cancelled"}
LIVE = {"pending", "ready", "handed", "cancelling"}
FINAL_STATUS = {
    "completed": TaskStatus.COMPLETED,
    "failed": TaskStatus.FAILED,
    "cancelled": TaskStatus.CANCELLED,
}

# The token's table, as the model plays it: (state, move) -> new state; a move not listed fails.
TOKEN_MOVES = {
    ("free", "start-one-time"): "taken",
    ("free", "start-recurring"): "running",
    ("free", "revoke"): "revoked",
    ("free", "take"): "taken",
    ("running", "end_run"): "ran",
    ("running", "revoke"): "revoked",
    ("ran", "run_reported"): "free",
    ("ran", "revoke"): "revoked",
    ("revoked", "end_run"): "revoked",
    ("revoked", "run_reported"): "revoked",
}
IN_FLIGHT = ("running", "ran")  # a recurring run is in flight: started, or ended and not reported

# kind, task, run, at, due_at, final, value, error, traceback, reason
Event = tuple[
    EventKind,
    str,
    int | None,
    float,
    float | None,
    bool,
    object,
    BaseException | None,
    str | None,
    str | None,
]


def as_tuple(event: Any) -> Event:
    return (
        event.kind,
        event.task_id,
        event.run,
        event.at,
        event.due_at,
        event.final,
        event.value,
        event.error,
        event.traceback,
        event.reason,
    )


class Model:
    """The reference: every task ever scheduled, as dicts, in scheduling order."""

    def __init__(self, history: int) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.history = history
        self.finish_log: list[dict[str, Any]] = []  # terminal tasks, in the order they ended
        self.events: list[Event] = []
        self.closed = False
        self.counter = itertools.count()
        self.table_order = itertools.count()  # where a task with a record stands in the table

    # -- queries

    def live(self) -> list[dict[str, Any]]:
        """The live tasks in the table's order: those with records as they got them, then the parked."""
        live = [t for t in self.tasks if t["state"] in LIVE]
        return sorted((t for t in live if not t["parked"]), key=lambda t: t["order"]) + [
            t for t in live if t["parked"]
        ]

    def live_task(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.live() if t["id"] == task_id), None)

    def of(self, record: object) -> dict[str, Any]:
        assert record is not None
        return next(t for t in self.tasks if t["record"] is record)

    def adopt(self, record: TaskRecord) -> None:
        """The timetable made the record of a parked task: the model takes it (and its place)."""
        task = next((t for t in self.tasks if t["parked"] and t["id"] == record.task_id), None)
        if task is not None and not any(t["record"] is record for t in self.tasks):
            task["record"], task["parked"] = record, False
            task["order"] = next(self.table_order)

    def live_of(self, record: object) -> dict[str, Any] | None:
        task = self.of(record)
        return task if task["state"] in LIVE else None

    def remembered(self, task_id: str) -> dict[str, Any] | None:
        """The task ``find`` must describe: the live one, else one of the last ``history`` ended."""
        task = self.live_task(task_id)
        if task is not None:
            return task
        kept: list[dict[str, Any]] = []
        for ended in reversed(self.finish_log):
            if all(k["id"] != ended["id"] for k in kept):
                kept.append(ended)
        return next((t for t in kept[: self.history] if t["id"] == task_id), None)

    def in_state(self, *states: str) -> list[dict[str, Any]]:
        return [t for t in self.tasks if t["state"] in states]

    def next_due(self) -> float | None:
        return min((t["due_at"] for t in self.in_state("pending")), default=None)

    # -- the token

    @staticmethod
    def move(task: dict[str, Any], move: str) -> bool:
        new = TOKEN_MOVES.get((task["token"], move))
        if new is None:
            return False
        task["token"] = new
        return True

    def revoke(self, task: dict[str, Any]) -> str:
        before = task["token"]
        self.move(task, "revoke")
        return before

    def try_start(self, task: dict[str, Any]) -> bool:
        return self.move(task, "start-one-time" if isinstance(task["trigger"], Once) else "start-recurring")

    # -- changes

    def emit(self, kind: EventKind, task: dict[str, Any], at: float, run: int | None, **extra: Any) -> None:
        due_at = task["due_at"] if run is not None else None
        self.events.append(
            (
                kind,
                task["id"],
                run,
                at,
                due_at,
                extra.get("final", False),
                extra.get("value"),
                extra.get("error"),
                extra.get("traceback"),
                extra.get("reason"),
            )
        )

    def end(self, task: dict[str, Any], state: str, at: float, outcome: object = None) -> None:
        task["state"] = state
        task["outcome"] = outcome
        if state == "cancelled":
            self.emit(EventKind.CANCELLED, task, at, None, final=True)
        self.finish_log.append(task)

    def push(self, task: dict[str, Any], due_at: float) -> None:
        task["state"] = "pending"
        task["due_at"] = due_at
        task["seq"] = next(self.counter)

    def release(self, now: float) -> None:
        due = sorted(
            (t for t in self.in_state("pending") if t["due_at"] <= now), key=lambda t: (t["due_at"], t["seq"])
        )
        for task in due:
            task["state"] = "ready"
            task["fifo"] = next(self.counter)
            self.emit(EventKind.DUE, task, now, task["runs"] + 1)

    def schedule(
        self, task_id: str, trigger: Any, max_failures: int | None, *, parked: bool = False
    ) -> str | dict[str, Any]:
        if self.closed:
            return "shutdown"
        if self.live_task(task_id) is not None:
            return "duplicate"
        first = trigger.at if isinstance(trigger, Once) else trigger.first_at
        task = {
            "id": task_id,
            "record": None,  # the timetable's record, once it made one
            "trigger": trigger,
            "max_failures": max_failures,
            "runs": 0,
            "failures": 0,
            "consecutive": 0,
            "last_error": None,
            "last_traceback": None,
            "slot": 0,
            "token": "free",
            "outcome": None,
            "parked": parked,
            "order": None if parked else next(self.table_order),
        }
        self.tasks.append(task)
        self.push(task, first)
        return task

    def end_cancelled(self, task: dict[str, Any], now: float, *, mid_run: bool, claimed: bool) -> None:
        """A cancel won: the task ends now, unless its worker holds the run and it may be in progress."""
        if task["state"] == "handed" and claimed and mid_run:
            task["state"] = "cancelling"
        else:
            self.end(task, "cancelled", now)

    def cancel(self, task_id: str, now: float, *, claimed: bool) -> bool:
        """A ``Cancel`` message: the timetable revokes the token itself."""
        task = self.live_task(task_id)
        if task is None or task["state"] == "cancelling":
            return False
        before = self.revoke(task)
        if before not in ("free", *IN_FLIGHT):
            return False
        self.end_cancelled(task, now, mid_run=before in IN_FLIGHT, claimed=claimed)
        return True

    def cancelled(self, report: Cancelled, now: float, *, claimed: bool, in_batch: bool) -> None:
        """A caller's ``Cancelled`` report reaches the timetable."""
        task = self.live_of(report.task)
        if task is None or task["state"] == "cancelling":
            return
        if in_batch:
            self.release(now)  # what fell due before the cancel is released first
        self.end_cancelled(task, now, mid_run=report.mid_run, claimed=claimed)

    def started(self, task: dict[str, Any], at: float) -> None:
        assert task["state"] == "handed"
        task["started_at"] = at
        self.emit(EventKind.STARTED, task, at, task["runs"] + 1)

    def skipped(self, record: object, now: float) -> None:
        task = self.live_of(record)
        if task is not None:  # else it ended when it was cancelled: the report only frees the worker
            self.end(task, "cancelled", now)

    def reported(  # noqa: PLR0912 (the model spells every case out)
        self,
        record: object,
        finished_at: float,
        *,
        value: object,
        error: BaseException | None,
        traceback: str,
        started_at: float | None = None,
    ) -> None:
        """A worker reports a run (``Completed`` or ``Failed``; a lost worker's runs fail: no ``started_at``).

        Slots skipped because the run ended past them are ``MISSED``: ``"catch_up"`` those due
        before the run started (or ended, if it reported no start), ``"overlap"`` the others.
        """
        task = self.live_of(record)
        assert task is not None
        assert task["state"] in ("handed", "cancelling")
        task["runs"] += 1
        run = task["runs"]
        one_time = isinstance(task["trigger"], Once)
        if not one_time:
            self.move(task, "run_reported")
        if error is None:
            task["consecutive"] = 0
            if one_time and task["state"] == "handed":
                self.emit(EventKind.COMPLETED, task, finished_at, run, value=value, final=True)
                self.end(task, "completed", finished_at, value)
                return
            self.emit(EventKind.COMPLETED, task, finished_at, run, value=value)
            ending = "cancelled" if task["state"] == "cancelling" else None
        else:
            task["failures"] += 1
            task["consecutive"] += 1
            task["last_error"] = error
            task["last_traceback"] = traceback
            limit = task["max_failures"]
            if task["state"] == "cancelling":
                ending = "cancelled"
            elif one_time:  # failed, unless a caller's cancel won before its (lost) worker started it
                ending = "failed" if task["token"] == "taken" or self.move(task, "take") else "cancelled"
            elif limit is not None and task["consecutive"] >= limit:
                ending = "failed" if self.move(task, "take") else "cancelled"  # a revoke may have won
            else:
                ending = None
            self.emit(
                EventKind.FAILED,
                task,
                finished_at,
                run,
                error=error,
                traceback=traceback,
                final=ending == "failed",
            )
        if ending is not None:
            self.end(task, ending, finished_at)
            return
        trigger = task["trigger"]
        if isinstance(trigger, FixedDelay):
            self.push(task, finished_at + trigger.delay)
        else:
            slot = task["slot"] + 1
            since = finished_at if started_at is None else started_at
            skipped: list[tuple[int, float, str]] = []
            while trigger.first_at + slot * trigger.interval < finished_at:
                time = trigger.first_at + slot * trigger.interval
                skipped.append((slot, time, "catch_up" if time <= since else "overlap"))
                slot += 1
            if task.get("queue") and skipped and skipped[-1][2] == "overlap":
                slot = skipped.pop()[0]  # overlap="queue": the latest slot the run overran runs next
            run_next = task["runs"] + 1
            for _, time, reason in skipped:
                missed = (
                    EventKind.MISSED,
                    task["id"],
                    run_next,
                    finished_at,
                    time,
                    False,
                    None,
                    None,
                    None,
                    reason,
                )
                self.events.append(missed)
            task["slot"] = slot
            self.push(task, trigger.first_at + slot * trigger.interval)

    def shut_down(self, now: float, *, claimed: set[int], held: list[object]) -> None:
        """``claimed``: ids of the records whose run a worker claimed; ``held``: records whose run
        a worker holds unclaimed, in the timetable's order (batch by batch, as workers got them)."""
        self.closed = True
        taken_back = [*sorted(self.in_state("ready"), key=lambda t: t["fifo"]), *map(self.of, held)]
        for task in taken_back:
            self.revoke(task)
            self.end(task, "cancelled", now)
        for task in self.live():  # the table's order: the parked ones get their records last
            if task["state"] != "cancelling" and self.revoke(task) in ("free", *IN_FLIGHT, "revoked"):
                self.end_cancelled(task, now, mid_run=True, claimed=id(task["record"]) in claimed)
            # else: a worker started its one-time run (it took the token): it finishes as usual

    def status(self, task: dict[str, Any], heads: set[int]) -> TaskStatus:
        if task["state"] in FINAL_STATUS:
            return FINAL_STATUS[task["state"]]
        if task["state"] == "cancelling" or (task["state"] == "handed" and id(task["record"]) in heads):
            return TaskStatus.RUNNING
        return TaskStatus.SCHEDULED

    @staticmethod
    def end_reason(task: dict[str, Any]) -> str | None:
        state = task["state"]
        if state == "failed" and not isinstance(task["trigger"], Once):
            limit = task["max_failures"]
            return f"stopped after {limit} consecutive failures (max_consecutive_failures={limit})"
        return {"completed": "completed", "failed": "the run failed", "cancelled": "cancelled"}.get(state)


triggers = st.one_of(
    st.tuples(st.just("once"), st.integers(-3, 8)),
    st.tuples(st.just("rate"), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
    st.tuples(st.just("rate-queue"), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
    st.tuples(st.just("delay"), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
)


class TimetableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.workers = 0
        self.errors = 0
        self.values = 0
        self.seen_ids: set[str] = set()
        self.real_events: list[Event] = []
        self.lost: set[int] = set()
        self.reports: list[Cancelled] = []  # Cancelled reports on their way
        self.batch_order: list[int] = []  # workers in the order they got their latest batch
        self.table: Timetable
        self.pool: Pool
        self.model: Model

    @initialize(workers=st.integers(1, 3), history=st.integers(0, 4))
    def start_up(self, workers: int, history: int) -> None:
        self.workers = workers
        self.table = Timetable(workers=workers, history=history)
        self.table.wanted = ALL_KINDS
        self.pool = Pool(self.table, announce=True)
        self.model = Model(history)

    # -- helpers

    def fifo(self, msg: RunTask) -> int:
        return self.model.of(msg.task)["fifo"]

    def anyone_busy(self) -> bool:
        return any(self.pool.busy(w) for w in range(self.workers))

    def held(self) -> dict[int, list[RunTask]]:
        return {w: self.pool.held(w) for w in range(self.workers)}

    def claimed(self) -> set[int]:
        """The records whose run a worker has claimed (started or not), by id."""
        runs = [*self.pool.claimed.values(), *self.pool.current.values()]
        return {id(run.task) for run in runs}

    def is_claimed(self, record: object) -> bool:
        claimed = id(record) in self.claimed()
        if not claimed and self.model.of(record)["state"] == "handed":  # then a worker holds it unclaimed
            assert any(run.task is record for runs in self.held().values() for run in runs)
        return claimed

    def apply(self, earlier: Effects | None = None, *, one_release: bool = True) -> None:
        """Take the Timetable's effects, check them against the model, hand runs to the pool."""
        self.model.release(self.now)
        effects = take(self.table)
        for record in [*self.table.tasks.values(), *(r for r, _ in effects.finished)]:
            self.model.adopt(record)  # parked tasks the timetable has made records for
        if earlier is not None:
            for record, outcome in earlier.finished:
                record.finish(outcome)
            effects.events[:0] = earlier.events
            effects.finished[:0] = earlier.finished
        for record, outcome in effects.finished:
            task = self.model.of(record)
            assert task["state"] in FINAL_STATUS, f"{task['id']} ended in the timetable only"
            assert record.snapshot().status is FINAL_STATUS[task["state"]]
            assert outcome == task["outcome"]
            assert task["token"] != "finished", f"{task['id']} finished twice"
            task["token"] = "finished"
        assert all(t["token"] == "finished" for t in self.model.in_state(*TERMINAL)), "an end not published"
        got = [as_tuple(e) for e in effects.events]
        if one_release:
            due_times = [e[4] for e in got if e[0] is EventKind.DUE]
            assert due_times == sorted(due_times)  # one release: earliest due first
        self.real_events.extend(got)
        handed = [(m.task_id, m.run) for _, m in effects.dispatches]
        assert len(handed) == len(set(handed)), "a run handed out twice"
        for _, msg in effects.dispatches:
            task = self.model.live_of(msg.task)
            assert task is not None
            assert task["state"] in ("ready", "handed")  # handed: taken back from another batch
            if task["state"] == "handed":
                assert not self.is_claimed(msg.task), "a claimed run handed again"
            task["state"] = "handed"
            assert (msg.task_id, msg.run, msg.due_at) == (task["id"], task["runs"] + 1, task["due_at"])
            assert (msg.one_time, msg.announce) == (isinstance(task["trigger"], Once), True)
        self.pool.receive(effects)
        for worker, batch in effects.batches:
            assert 0 <= worker < self.workers
            assert worker not in self.lost
            assert 1 <= len(batch) <= BATCH
            held = self.pool.holding(worker)
            assert all(any(run is mine for mine in batch) for run in held), (
                f"worker {worker} got a batch while busy"
            )
            orders = [self.fifo(m) for m in batch]
            assert orders == sorted(orders), "a batch out of FIFO order"
            if worker in self.batch_order:
                self.batch_order.remove(worker)
            self.batch_order.append(worker)

    def step(self, worker: int) -> None:
        """``worker`` tries to start its claimed run: ``Started``, or ``Skipped`` (its next run claimed)."""
        run = self.pool.claimed[worker]
        task = self.model.of(run.task)
        expected = self.model.try_start(task)
        started = self.pool.step(worker, self.now)
        assert (started is not None) is expected
        if started is not None:
            self.model.started(task, self.now)
        else:
            self.model.skipped(run.task, self.now)

    def finish(self, worker: int, *, ok: bool, finished_at: float) -> None:
        """``worker`` ends its run: ``end_run``, claims its next run, reports."""
        run = self.pool.current[worker]
        task = self.model.of(run.task)
        if not run.one_time:
            self.model.move(task, "end_run")
        error = None
        self.values += 1
        value = f"value {self.values}"
        if not ok:
            self.errors += 1
            error = RuntimeError(self.errors)
        self.pool.finish(worker, at=finished_at, now=self.now, value=value, error=error, start_next=False)
        traceback = traceback_of(error) if error is not None else ""
        self.model.reported(
            run.task,
            finished_at,
            value=None if error else value,
            error=error,
            traceback=traceback,
            started_at=task["started_at"],
        )

    def add(self, task_id: str, trigger: Any, max_failures: int | None, *, queue: bool = False) -> None:
        """Schedule a task (``queue``: a fixed-rate one with ``overlap="queue"``)."""
        expected = self.model.schedule(task_id, trigger, max_failures)
        cmd = make(task_id, trigger, max_consecutive_failures=max_failures)
        if expected == "shutdown":
            with pytest.raises(SchedulerShutdownError):
                self.table.schedule(cmd, now=self.now)
        elif expected == "duplicate":
            with pytest.raises(DuplicateTaskError):
                self.table.schedule(cmd, now=self.now)
        else:
            assert isinstance(expected, dict)
            self.seen_ids.add(task_id)
            record = expected["record"] = self.table.schedule(cmd, now=self.now)
            if queue:  # (a Schedule message has no policies: the record gets them before its first run)
                spec = record.spec
                record.spec = TaskSpec(spec.trigger, spec.failure_limit, policies=Policies(overlap="queue"))
            expected["queue"] = queue

    # -- rules

    @rule(task_id=st.sampled_from(IDS), spec=triggers, max_failures=st.sampled_from([None, 1, 2]))
    def schedule(self, task_id: str, spec: tuple[Any, ...], max_failures: int | None) -> None:
        at = self.now + spec[1]
        trigger: Any
        if spec[0] == "once":
            trigger, max_failures = Once(at), None
        elif spec[0] in ("rate", "rate-queue"):
            trigger = FixedRate(spec[2], at)
        else:
            trigger = FixedDelay(spec[2], at)
        self.add(task_id, trigger, max_failures, queue=spec[0] == "rate-queue")
        self.apply()

    @rule(
        ids=st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True),
        offsets=st.lists(st.sampled_from([-1, 0, 1, 2, 4]), min_size=3, max_size=3),
    )
    def park(self, ids: list[str], offsets: list[int]) -> None:
        """Tasks of ``schedule_many`` arrive: one-time, parked (their ids are new: minted)."""
        ids = [task_id for task_id in ids if self.model.live_task(task_id) is None]
        if not ids:
            return
        due_at = [self.now + offset for offset in offsets[: len(ids)]]
        parcel = Parcel(Batch(noop, {}, "noop", PLAIN), ids, due_at, None)
        if self.model.closed:
            with pytest.raises(SchedulerShutdownError):
                self.table.park(parcel, now=self.now)
            return
        for task_id, due in zip(ids, due_at, strict=True):
            self.model.schedule(task_id, Once(due), None, parked=True)
            self.seen_ids.add(task_id)
        self.table.park(parcel, now=self.now)
        self.apply()

    @rule(task_id=st.sampled_from(IDS))
    def ask_record(self, task_id: str) -> None:
        """A caller asks for a task's record (``Scheduler.handle``): a parked one gets it now."""
        task = self.model.live_task(task_id)
        record = self.table.record(task_id)
        if task is None:
            assert record is None
            return
        assert record is not None
        if task["parked"]:
            self.model.adopt(record)
        assert task["record"] is record
        self.apply()

    @rule(task_id=st.sampled_from([*IDS, "unknown"]))
    def cancel(self, task_id: str) -> None:
        task = self.model.live_task(task_id)
        claimed = task is not None and task["record"] is not None and self.is_claimed(task["record"])
        expected = self.model.cancel(task_id, self.now, claimed=claimed)
        assert self.table.cancel(task_id, now=self.now) is expected
        self.apply()

    @precondition(lambda self: self.model.tasks)
    @rule(pick=st.integers(0, 30), among=st.sampled_from(["running", "claimed", "live", "any"]))
    def caller_cancel(self, pick: int, among: str) -> None:
        """A caller revokes a task's token (``TaskHandle.cancel``): any task, even one that has ended."""
        if among == "running":
            records = [self.pool.current[w].task for w in sorted(self.pool.current)]
        elif among == "claimed":
            records = [self.pool.claimed[w].task for w in sorted(self.pool.claimed)]
        elif among == "live":
            records = [t["record"] for t in self.model.live() if t["record"] is not None]
        else:
            records = [t["record"] for t in self.model.tasks if t["record"] is not None]
        if not records:
            return
        task = self.model.of(records[pick % len(records)])
        expected = self.model.revoke(task)
        before = task["record"].revoke()
        assert before.name.lower() == expected
        if expected in ("free", *IN_FLIGHT):  # it won: the report goes on its way
            self.reports.append(Cancelled(task["record"], mid_run=expected in IN_FLIGHT))

    @precondition(lambda self: self.reports)
    @rule(count=st.integers(1, 3))
    def deliver_cancelled(self, count: int) -> None:
        """The oldest ``Cancelled`` reports reach the timetable."""
        for report in self.reports[:count]:
            self.model.cancelled(report, self.now, claimed=self.is_claimed(report.task), in_batch=False)
            self.table.cancelled(report, now=self.now)
            self.apply()
        del self.reports[:count]

    @precondition(lambda self: self.anyone_busy())
    @rule(pick=st.integers(0, 5), which=st.sampled_from(["current", "claimed", "held"]))
    def cancel_handed(self, pick: int, which: str) -> None:
        """Cancel a run a worker holds: one it runs, one it claimed but not started, or one not claimed."""
        if which == "current":
            runs = [self.pool.current[w] for w in sorted(self.pool.current)]
        elif which == "claimed":
            runs = [self.pool.claimed[w] for w in sorted(self.pool.claimed)]
        else:
            runs = [m for msgs in self.held().values() for m in msgs]
        if runs:
            self.cancel(runs[pick % len(runs)].task_id)

    @rule(step=st.sampled_from([0, 0.5, 1, 2, 5]))
    def advance_and_tick(self, step: float) -> None:
        self.now += step
        self.table.tick(now=self.now)
        self.apply()

    @rule(
        ids=st.lists(st.sampled_from(IDS), min_size=2, max_size=5, unique=True),
        offset=st.integers(-1, 2),
        recurring=st.booleans(),
    )
    def burst(self, ids: list[str], offset: int, recurring: bool) -> None:
        """Several tasks due at the same time: backlogs, batches and FIFO ties."""
        for task_id in ids:
            if self.model.closed or self.model.live_task(task_id) is not None:
                continue
            trigger: Any = FixedDelay(1, self.now + offset) if recurring else Once(self.now + offset)
            self.add(task_id, trigger, None)
            self.apply()

    @rule(
        ids=st.lists(st.sampled_from(IDS), max_size=4, unique=True),
        offset=st.integers(-1, 1),
        reports=st.integers(0, 3),
        fail=st.booleans(),
        cancels=st.integers(0, 2),
    )
    def drain(self, ids: list[str], offset: int, reports: int, fail: bool, cancels: int) -> None:
        """What the scheduler does with its outbox: tasks, worker reports and cancels applied in one batch."""
        with self.table.batch(now=self.now):
            for task_id in ids:
                if self.model.closed or self.model.live_task(task_id) is not None:
                    continue
                self.add(task_id, Once(self.now + offset), None)
            for worker in sorted({*self.pool.current, *self.pool.claimed})[:reports]:
                if worker in self.pool.current:
                    self.finish(worker, ok=not fail, finished_at=self.now)
                else:
                    self.step(worker)
            for report in self.reports[:cancels]:
                self.model.cancelled(report, self.now, claimed=self.is_claimed(report.task), in_batch=True)
                self.table.cancelled(report, now=self.now)
            del self.reports[:cancels]
            so_far = self.table.take_effects()
            assert not so_far.dispatches  # nothing handed out before the end
            if not cancels:
                assert not [e for e in so_far.events if e.kind is EventKind.DUE]  # nor released
        self.apply(so_far, one_release=not cancels)

    @precondition(lambda self: self.anyone_busy())
    @rule(
        pick=st.integers(0, 2),
        phases=st.integers(1, 3),
        ok=st.booleans(),
        took=st.sampled_from([0, 0.5, 1, 3]),
        late=st.booleans(),
    )
    def work(self, pick: int, phases: int, ok: bool, took: float, late: bool) -> None:
        """A worker with runs takes a few steps: claim its next run, try to start it, finish it."""
        workers = [w for w in range(self.workers) if self.pool.busy(w)]
        if not workers:
            return
        worker = workers[pick % len(workers)]
        for _ in range(phases):
            if worker in self.pool.current:
                started_at = self.model.of(self.pool.current[worker].task)["started_at"]
                if late:  # the report arrives after time moved on: finished_at in [start, now]
                    finished_at = max(started_at, self.now - took)
                else:
                    self.now += took
                    finished_at = self.now
                self.finish(worker, ok=ok, finished_at=finished_at)
            elif worker in self.pool.claimed:
                self.step(worker)
            elif self.pool.busy(worker):
                assert self.pool.claim(worker) is not None
            else:
                return
            self.apply()

    @precondition(lambda self: self.anyone_busy())
    @rule(ok=st.booleans())
    def every_worker_steps(self, ok: bool) -> None:
        """Every worker with runs takes one step (finishing at once), in worker order."""
        for worker in range(self.workers):
            if worker in self.pool.current:
                self.finish(worker, ok=ok, finished_at=self.now)
            elif worker in self.pool.claimed:
                self.step(worker)
            elif self.pool.busy(worker):
                assert self.pool.claim(worker) is not None
            self.apply()

    @rule(
        worker=st.integers(0, 3),
        task_id=st.sampled_from(IDS),
        run=st.integers(0, 4),
        kind=st.sampled_from(["completed", "failed", "skipped", "started"]),
    )
    def stale_report(self, worker: int, task_id: str, run: int, kind: str) -> None:
        mine = self.pool.holding(worker) if worker < self.workers else []
        if any((m.task_id, m.run) == (task_id, run) for m in mine):
            return  # not stale
        activity = self.table.activity
        if kind == "completed":
            self.table.completed(Completed(worker, task_id, run, None, self.now), now=self.now)
        elif kind == "failed":
            self.table.failed(Failed(worker, task_id, run, RuntimeError(), "", self.now), now=self.now)
        elif kind == "skipped":
            self.table.skipped(Skipped(worker, task_id, run), now=self.now)
        else:
            self.table.started(Started(worker, task_id, run, self.now))
        assert not self.table.take_effects()
        assert self.table.activity == activity

    @rule(pick=st.integers(0, 2))
    def replace_worker(self, pick: int) -> None:
        """A worker dies (its claimed run fails, its unclaimed runs go back); a new one takes its place."""
        worker = pick % self.workers
        error = WorkerLostError("gone")
        running = self.pool.current.get(worker)
        claimed = running or self.pool.claimed.get(worker)
        if running is not None and not running.one_time:
            self.model.move(self.model.of(running.task), "end_run")  # the dying worker's finally
        for run in self.pool.held(worker):  # back to the front of the FIFO, in their order
            task = self.model.of(run.task)
            assert task["state"] == "handed"
            task["state"] = "ready"
        self.pool.lose(worker)
        self.table.worker_lost(worker, error, now=self.now)
        if claimed is not None and self.model.live_of(claimed.task) is not None:
            self.model.reported(claimed.task, self.now, value=None, error=error, traceback="")
        self.lost.add(worker)
        self.apply()
        self.lost.discard(worker)
        self.table.add_worker(worker, now=self.now)
        self.apply()

    @rule(chance=st.integers(0, 7))
    def shut_down(self, chance: int) -> None:
        """Shut down (one time in eight: after it little is left to explore)."""
        if chance:
            return
        held = [run.task for worker in self.batch_order for run in self.pool.held(worker)]
        claimed = self.claimed()
        self.table.shut_down(now=self.now)
        self.model.shut_down(self.now, claimed=claimed, held=held)
        self.apply()

    # -- invariants

    @invariant()
    def same_events(self) -> None:
        assert self.real_events == self.model.events

    @invariant()
    def same_tasks(self) -> None:
        live = self.model.live()
        assert [info.task_id for info in self.table.infos()] == [t["id"] for t in live]
        assert dict(self.table.tasks) == {t["id"]: t["record"] for t in live if not t["parked"]}
        assert self.table.live_count == len(live)
        heads = {id(runs[0].task) for w in range(self.workers) if (runs := self.pool.holding(w))}
        for task_id in self.seen_ids | {"unknown"}:
            info = self.table.find(task_id)
            task = self.model.remembered(task_id)
            if task is None:
                assert info is None, task_id
                continue
            assert info is not None, task_id
            status = self.model.status(task, heads)
            assert (
                info.status,
                info.trigger,
                info.name,
                info.run_count,
                info.failure_count,
                info.consecutive_failures,
                info.next_run_at,
                info.last_traceback,
                info.end_reason,
            ) == (
                status,
                task["trigger"],
                "noop",
                task["runs"],
                task["failures"],
                task["consecutive"],
                task["due_at"] if status is TaskStatus.SCHEDULED else None,
                task["last_traceback"],
                self.model.end_reason(task),
            ), task_id
            assert info.last_error is task["last_error"]

    @invariant()
    def same_tokens(self) -> None:
        for task in self.model.tasks:
            record: TaskRecord = task["record"]
            if record is None:
                assert task["parked"], task["id"]
                continue
            assert record.token_state.name.lower() == task["token"], task["id"]
            if task["token"] == "finished":
                assert record.outcome == task["outcome"]

    @invariant()
    def token_ends_with_its_task(self) -> None:
        """``TOKEN_AT_END`` holds after every step: a task's token has ended iff its state is final."""
        for task in self.model.tasks:
            record: TaskRecord | None = task["record"]
            if record is None:
                continue
            if record.state in FINAL_STATES:
                assert record.token_state is TOKEN_AT_END[record.state], task["id"]
            else:
                assert record.token_state not in TOKEN_AT_END.values(), task["id"]

    @invariant()
    def same_running(self) -> None:
        holding = [w for w in range(self.workers) if self.pool.busy(w)]
        assert self.table.running_count == len(holding) <= self.workers

    @invariant()
    def same_due_and_settled(self) -> None:
        assert self.table.next_due() == self.model.next_due()
        assert all(t["due_at"] > self.now for t in self.model.in_state("pending"))  # all due released
        busy = any(self.pool.busy(w) for w in range(self.workers))
        assert self.table.busy == busy
        assert self.table.is_settled(self.now) == (not busy)
        assert self.table.heap_size <= 2 * len(self.model.in_state("pending")) + COMPACT_MIN_STALE

    @invariant()
    def no_due_run_waits_while_a_worker_is_idle(self) -> None:
        held = self.held()
        holding = {id(m.task): m.task for w in range(self.workers) for m in self.pool.holding(w)}
        handed = {id(t["record"]) for t in self.model.in_state("handed", "cancelling")}
        assert handed <= set(holding)
        for key in set(holding) - handed:  # a run claimed before its task ended: its Skipped is to come
            assert key in self.claimed()
            assert self.model.of(holding[key])["state"] in TERMINAL
        unheld = self.model.in_state("ready")
        for msgs in held.values():  # handed runs were all due before any run still unhanded
            for msg in msgs:
                assert all(self.fifo(msg) < t["fifo"] for t in unheld)
        if all(self.pool.busy(w) for w in range(self.workers)):
            return
        assert not unheld, "a due run waits while a worker is idle"
        for worker in range(self.workers):
            runs = len(self.pool.holding(worker))
            assert runs <= 1, f"worker {worker} holds {runs} runs while another worker is idle"


TimetableMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# A model run takes 10-30 s alone and longer beside other tests on two cores; a timeout cut
# in the middle of an example reads to hypothesis as flaky data generation, not as slowness.
test_timetable_matches_model = pytest.mark.timeout(300)(TimetableMachine.TestCase)


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_timetable_matches_model_stress() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        TimetableMachine, settings=settings(max_examples=3000, stateful_step_count=100, deadline=None)
    )
