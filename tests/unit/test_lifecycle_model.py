"""A stateful hypothesis test of a task's lifecycle in the pure core, against a reference model.

The companion of ``test_timetable_model.py`` (dealing, batches, recurring tasks, shutdown):
this one drives tasks with the options that make a run's life eventful (one-time tasks, and
recurring fixed-delay ones with ``max_consecutive_failures``), and compares the Timetable with
a small model after every step. The model says, in plain Python, what the
lifecycle documents (``docs/lifecycle.md``):

- ``timeout``: the run's deadline is in the heap from its ``Started`` report; at it the run is
  asked to stop (``TIMED_OUT``); ``hung_grace`` later, still going, it counts ``FAILED`` with
  ``TaskTimeoutError`` and its worker is abandoned (``Effects.abandoned``; the test then
  ``add_worker``s it, as the scheduler actor does). The abandoned run's ``end_run`` returns
  ``False`` and it reports nothing. A deadline after the run's ``end_run`` abandons nothing.
- interrupts: ``cancel(task_id, interrupt=True)``, or a handle's ``interrupt()`` plus a revoke
  whose ``Cancelled`` report comes later. A stop request is a set of reasons (interrupted,
  timed out); after the run's ``end_run`` none lands.
- a run that was asked to stop may raise ``RunCancelled``, return anyway, or raise something
  else; each ends the task its documented way.
- ``Retry(attempts, delay, jitter=0.0)``: a failed attempt is tried again with the same run
  number; a cancel between attempts wins; a cancel or interrupt during one means no retry.
- ``schedule_after`` (``TaskSpec(after=..., delay=...)``): ``WAITING`` until every task it waits
  for completed, then due ``delay`` later; ``CANCELLED`` with ``DependencyFailedError`` (and so
  are the tasks waiting for it) when one does not complete.
- a lost worker (``worker_lost``): its claimed run fails with the error; its other runs go back.

The workers are played by ``Pool`` one step at a time (claim, start, end the run, report), and
a run's end and its report may be steps apart, so deadlines, interrupts and cancels land in
every gap. The model decides only with what the timetable could know (moves and reports); it
never reads a token or a claim of the implementation. Every step compares: the events (exact,
except that the ``CANCELLED`` events of one step may come in any order: a failure passed down
the graph ends its waiters in an order the lifecycle does not fix), every task's ``TaskInfo``,
the tokens, ``next_due`` (pending due times and running deadlines), and every run handed out.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actors.core.retry import Retry
from actors.core.task_record import TaskRecord, TaskSpec
from actors.core.task_state import FINAL_STATES, TOKEN_AT_END
from actors.core.timetable import Timetable
from actors.errors import (
    DependencyFailedError,
    DuplicateTaskError,
    RunCancelled,
    TaskTimeoutError,
    WorkerLostError,
)
from messages import Cancelled, EventKind, FixedDelay, RunTask, TaskStatus
from tests.unit.helpers import ALL_KINDS, Pool, noop, take, traceback_of

IDS = ["a", "b", "c", "d", "e"]
HUNG_GRACE = 1.0
INTERRUPTED, TIMED_OUT = "interrupted", "timed out"
TERMINAL = {"completed", "failed", "cancelled"}
FINAL_STATUS = {
    "completed": TaskStatus.COMPLETED,
    "failed": TaskStatus.FAILED,
    "cancelled": TaskStatus.CANCELLED,
}

# The token, as the lifecycle describes it: (state, move) -> new state; a move not listed fails.
TOKEN_MOVES = {
    ("free", "start-one-time"): "taken",
    ("free", "start-again"): "running",  # a recurring or retried task's run: a cancel still wins later
    ("free", "revoke"): "revoked",
    ("free", "take"): "taken",
    ("running", "end_run"): "ran",
    ("running", "revoke"): "revoked",
    ("running", "abandon"): "free",
    ("ran", "run_reported"): "free",
    ("ran", "revoke"): "revoked",
    ("ran", "abandon"): "free",
}
WON = ("free", "running", "ran")  # a revoke from these won (the task is the canceller's to end)

Err = tuple[str, object]  # ("object", id), ("timeout", abandoned), ("dependency", task id)


def norm_error(error: BaseException | None) -> Err | None:
    if error is None:
        return None
    if isinstance(error, TaskTimeoutError):
        return ("timeout", "abandoned" in str(error))
    if isinstance(error, DependencyFailedError):
        return ("dependency", error.dependency)
    return ("object", id(error))


def as_tuple(event: Any) -> tuple[Any, ...]:
    return (
        event.kind,
        event.task_id,
        event.run,
        event.at,
        event.due_at,
        event.final,
        event.value,
        norm_error(event.error),
        event.traceback,
        event.attempt,
        event.retrying,
    )


def canonical(events: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The events of one step with its ``CANCELLED`` events sorted among their own places."""
    places = [i for i, e in enumerate(events) if e[0] is EventKind.CANCELLED]
    ordered = sorted((events[i] for i in places), key=repr)
    result = list(events)
    for place, cancelled in zip(places, ordered, strict=True):
        result[place] = cancelled
    return result


class Model:
    """Every task ever added, as dicts in the order they came; what should happen to each."""

    def __init__(self) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.events: list[tuple[Any, ...]] = []
        self.seq = itertools.count()
        self.abandoned: list[tuple[int, dict[str, Any]]] = []  # (worker, task) abandoned this step
        self.keep: list[BaseException] = []  # errors whose id the events name: kept alive

    # -- queries

    def live_task(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.tasks if t["id"] == task_id and t["state"] not in TERMINAL), None)

    def of(self, record: object) -> dict[str, Any]:
        return next(t for t in self.tasks if t["record"] is record)

    def in_state(self, *states: str) -> list[dict[str, Any]]:
        return [t for t in self.tasks if t["state"] in states]

    def next_due(self) -> float | None:
        return min((t["heap"][0] for t in self.tasks if t["heap"] is not None), default=None)

    def waiters(self, task: dict[str, Any]) -> list[dict[str, Any]]:
        return [t for t in self.tasks if t["state"] == "waiting" and not t["blocked"] and task in t["after"]]

    # -- the token and the claim

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

    @staticmethod
    def request_stop(task: dict[str, Any], reason: str) -> bool:
        """Ask the task's run to stop: a run handed out and not yet ended, once per reason."""
        claim = task["claim"]
        if claim is None or claim["ended"] or reason in claim["stop"]:
            return False
        claim["stop"].add(reason)
        return True

    # -- changes

    def emit(self, kind: EventKind, task: dict[str, Any], at: float, run: int | None, **extra: Any) -> None:
        self.events.append(
            (
                kind,
                task["id"],
                run,
                at,
                task["due_at"] if run is not None else None,
                extra.get("final", False),
                extra.get("value"),
                extra.get("error"),
                extra.get("traceback"),
                extra.get("attempt", task["attempt"]),
                extra.get("retrying", False),
            )
        )

    def push(self, task: dict[str, Any], at: float, kind: str) -> None:
        """Put the task in the heap: its due time (``pending``), or its running run's deadline."""
        if kind == "due":
            task["state"] = "pending"
            task["due_at"] = at
        task["heap"] = (at, next(self.seq), kind)

    def end(self, task: dict[str, Any], state: str, at: float, outcome: object = None) -> None:
        """The task ends; what waited for it runs (it completed) or ends too (it did not)."""
        task["state"] = state
        task["outcome"] = outcome
        task["heap"] = None
        task["claim"] = None
        if state == "cancelled":
            self.emit(EventKind.CANCELLED, task, at, None, final=True)
        for waiter in self.waiters(task):
            if state != "completed":
                self.block(waiter, task, at)
            elif all(d["state"] == "completed" for d in waiter["after"]):
                self.push(waiter, at + waiter["delay"], "due")

    def block(self, task: dict[str, Any], dependency: dict[str, Any], at: float) -> None:
        """A task ``task`` waited for did not complete: it never runs, nor do the tasks waiting for it."""
        task["blocked"] = True
        task["last_error"] = ("dependency", dependency["id"])
        if self.revoke(task) == "free":
            self.end(task, "cancelled", at)
        else:  # a caller cancelled it: its Cancelled report ends it; its waiters end now
            for waiter in self.waiters(task):
                self.block(waiter, task, at)

    def add(self, task: dict[str, Any], now: float) -> str | None:
        if self.live_task(task["id"]) is not None:
            return "duplicate"
        task.update(
            state="pending",
            token="free",
            runs=0,
            failures=0,
            consecutive=0,
            last_error=None,
            last_traceback=None,
            attempt=1,
            slot_due=None,
            heap=None,
            claim=None,
            blocked=False,
            outcome=None,
            worker=None,
        )
        self.tasks.append(task)
        if not task["after"]:
            self.push(task, task["due_at"], "due")
            return None
        task["state"] = "waiting"
        failed = [d for d in task["after"] if d["state"] in ("failed", "cancelled")]
        if failed:
            self.block(task, failed[0], now)
        elif all(d["state"] == "completed" for d in task["after"]):
            self.push(task, now + task["delay"], "due")
        return None

    def release(self, now: float) -> None:
        """Take what the heap holds up to ``now``, earliest first: due runs, and deadlines of running runs."""
        while True:
            due = [t for t in self.tasks if t["heap"] is not None and t["heap"][0] <= now]
            if not due:
                return
            task = min(due, key=lambda t: t["heap"][:2])
            kind = task["heap"][2]
            task["heap"] = None
            if kind == "due":
                task["state"] = "ready"
                self.emit(EventKind.DUE, task, now, task["runs"] + 1)
            else:
                self.overdue(task, now)

    def overdue(self, task: dict[str, Any], now: float) -> None:
        """A running run's deadline: ask it to stop; ``hung_grace`` later, still going, abandon it."""
        assert task["state"] in ("handed", "cancelling")
        if self.request_stop(task, TIMED_OUT):
            self.emit(EventKind.TIMED_OUT, task, now, task["runs"] + 1)
            task["heap"] = (now + HUNG_GRACE, next(self.seq), "grace")
            return
        claim = task["claim"]
        if claim["ended"]:
            return  # its report is on its way: its worker is not stuck
        claim["abandoned"] = True
        self.move(task, "abandon")
        self.abandoned.append((task["worker"], task))
        self.lose(task["worker"], task, ("timeout", True), "", now)

    def lose(
        self, worker: int, started: dict[str, Any] | None, error: Err, traceback: str, now: float
    ) -> None:
        """``worker`` is gone: its claimed run (``started``) failed with ``error``; its other runs go back."""
        for task in self.in_state("handed"):
            if task["worker"] == worker and task is not started:
                task["state"] = "ready"
                task["claim"] = None
        if started is not None and started["state"] not in TERMINAL:
            stop = started["claim"]["stop"]
            started["heap"] = None
            started["claim"] = None
            self.fail(started, error, traceback, now, interrupted=INTERRUPTED in stop)

    def started(self, task: dict[str, Any], at: float) -> None:
        self.emit(EventKind.STARTED, task, at, task["runs"] + 1)
        if task["timeout"] is not None:
            self.push(task, at + task["timeout"], "deadline")

    def end_run(self, task: dict[str, Any]) -> None:
        """The worker: the run has ended; its report follows (no stop request lands any more)."""
        if task["claim"] is not None:
            task["claim"]["ended"] = True
        if not task["single"]:
            self.move(task, "end_run")

    def skipped(self, task: dict[str, Any], now: float) -> None:
        if task["state"] not in TERMINAL:
            self.end(task, "cancelled", now)

    def reported(
        self, task: dict[str, Any], at: float, *, value: object, error: BaseException | None, traceback: str
    ) -> None:
        """A worker reports its run: returned ``value``, or raised ``error``."""
        stop = task["claim"]["stop"]
        task["claim"] = None
        task["heap"] = None  # its deadline, if any, is over
        if task["state"] in TERMINAL:
            return
        if error is None:
            self.completed(task, at, value, interrupted=INTERRUPTED in stop)
        elif isinstance(error, RunCancelled) and INTERRUPTED in stop:
            self.end_attempts(task)  # stopped as asked: no failure, the task is cancelled
            if not task["single"]:
                self.move(task, "run_reported")
            self.end(task, "cancelled", at)
        else:
            err: Err = ("object", id(error))
            if isinstance(error, RunCancelled) and TIMED_OUT in stop:
                err = ("timeout", False)
            self.fail(task, err, traceback, at, interrupted=INTERRUPTED in stop)

    def end_attempts(self, task: dict[str, Any]) -> int:
        """The run is over for good: which attempt it was; the task is due at the run's own slot again."""
        attempt = task["attempt"]
        if attempt > 1:
            task["due_at"] = task["slot_due"]
        task["attempt"] = 1
        return attempt

    def completed(self, task: dict[str, Any], at: float, value: object, *, interrupted: bool) -> None:
        task["runs"] += 1
        task["consecutive"] = 0
        attempt = self.end_attempts(task)
        if task["every"] is not None:  # recurring: the run counts; the task goes on unless cancelled
            self.move(task, "run_reported")
            self.emit(EventKind.COMPLETED, task, at, task["runs"], value=value, attempt=attempt)
            if task["state"] == "cancelling":
                self.end(task, "cancelled", at)
            else:
                self.push(task, at + task["every"], "due")
            return
        if task["retry"] is not None:
            self.move(task, "run_reported")
            if not self.move(task, "take"):  # a cancel won its token meanwhile
                interrupted = True
        cancelled = interrupted or task["state"] == "cancelling"
        self.emit(
            EventKind.COMPLETED, task, at, task["runs"], value=value, final=not cancelled, attempt=attempt
        )
        if cancelled:
            self.end(task, "cancelled", at)
        else:
            self.end(task, "completed", at, value)

    def fail(self, task: dict[str, Any], error: Err, traceback: str, at: float, *, interrupted: bool) -> None:
        """A run failed: tried again if its Retry allows and no cancel came; else it counts; the task ends."""
        retry: Retry | None = task["retry"]
        if (
            retry is not None
            and not interrupted
            and task["state"] == "handed"
            and task["attempt"] < retry.attempts
        ):
            if task["attempt"] == 1:
                task["slot_due"] = task["due_at"]
            task["last_error"], task["last_traceback"] = error, traceback
            self.move(task, "run_reported")  # a cancel may still win before the next attempt
            self.emit(
                EventKind.FAILED, task, at, task["runs"] + 1, error=error, traceback=traceback, retrying=True
            )
            task["attempt"] += 1
            wait = retry.delay * retry.backoff ** (task["attempt"] - 2)
            self.push(task, at + wait, "due")
            return
        attempt = self.end_attempts(task)
        task["runs"] += 1
        task["failures"] += 1
        task["consecutive"] += 1
        task["last_error"], task["last_traceback"] = error, traceback
        if not task["single"]:
            self.move(task, "run_reported")
        limit = task["max_failures"]
        ending: str | None
        if interrupted or task["state"] == "cancelling":
            ending = "cancelled"
        elif task["every"] is not None:  # recurring: it goes on, unless it failed too often in a row
            if limit is not None and task["consecutive"] >= limit:
                ending = "failed" if self.move(task, "take") else "cancelled"
            else:
                ending = None
        else:
            # It failed, unless a cancel won its token first: then the cancel is what ends it (a
            # one-time run a lost worker had claimed but not started, a retried one's last attempt).
            ending = "failed" if task["token"] == "taken" or self.move(task, "take") else "cancelled"
        self.emit(
            EventKind.FAILED,
            task,
            at,
            task["runs"],
            error=error,
            traceback=traceback,
            final=ending == "failed",
            attempt=attempt,
        )
        if ending is None:
            self.push(task, at + task["every"], "due")
        else:
            self.end(task, ending, at)

    def end_cancelled(self, task: dict[str, Any], now: float, *, mid_run: bool, claimed: bool) -> None:
        """A cancel won: the task ends now, unless its worker has claimed a run that may be going on."""
        if task["state"] == "handed" and claimed and mid_run:
            task["state"] = "cancelling"
        else:
            self.end(task, "cancelled", now)

    def cancel(self, task_id: str, now: float, *, interrupt: bool, claimed: bool) -> bool:
        """``Timetable.cancel``: what it returns."""
        task = self.live_task(task_id)
        if task is None:
            return False
        signalled = interrupt and self.request_stop(task, INTERRUPTED)
        if task["state"] == "cancelling":
            return signalled
        before = self.revoke(task)
        if before not in WON:
            return signalled
        self.end_cancelled(task, now, mid_run=before != "free", claimed=claimed)
        return True

    def cancelled(self, report: Cancelled, now: float, *, claimed: bool) -> None:
        """A caller's ``Cancelled`` report reaches the timetable."""
        task = self.of(report.task)
        if task["state"] in TERMINAL or task["state"] == "cancelling":
            return
        self.end_cancelled(task, now, mid_run=report.mid_run, claimed=claimed)

    @staticmethod
    def end_reason(task: dict[str, Any]) -> str | None:
        state = task["state"]
        if state == "failed" and task["every"] is not None:
            limit = task["max_failures"]
            return f"stopped after {limit} consecutive failures (max_consecutive_failures={limit})"
        return {"completed": "completed", "failed": "the run failed", "cancelled": "cancelled"}.get(state)

    def status(self, task: dict[str, Any], heads: set[int]) -> TaskStatus:
        state = task["state"]
        if state in FINAL_STATUS:
            return FINAL_STATUS[state]
        if state == "cancelling" or (state == "handed" and id(task["record"]) in heads):
            return TaskStatus.RUNNING
        return TaskStatus.WAITING if state == "waiting" else TaskStatus.SCHEDULED


TASK: dict[str, st.SearchStrategy[Any]] = {  # a new task: its id, due time, options
    "task_id": st.sampled_from(IDS),
    "offset": st.sampled_from([-1.0, 0.0, 1.0, 3.0]),
    "timeout": st.sampled_from([None, 1.0, 2.5]),
    "retry": st.sampled_from([None, (2, 0.0), (2, 1.0), (3, 0.5)]),
    "after": st.lists(st.integers(0, 20), max_size=2, unique=True),
    "delay": st.sampled_from([0.0, 1.0]),
    "every": st.sampled_from([None, None, None, 0.5, 2.0]),  # a recurring task's fixed delay
    "max_failures": st.sampled_from([None, 1, 2]),
}


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.workers = 0
        self.errors = 0
        self.values = 0
        self.table: Timetable
        self.pool: Pool
        self.model = Model()
        self.real_events: list[tuple[Any, ...]] = []
        self.reports: list[Cancelled] = []  # Cancelled reports on their way
        self.ending: dict[int, tuple[Any, BaseException | None]] = {}  # worker -> ended run's report to send
        self.ghosts: list[RunTask] = []  # abandoned runs still going
        self.seen: set[str] = set()

    @initialize(workers=st.integers(1, 2), first=st.lists(st.tuples(*TASK.values()), min_size=1, max_size=4))
    def start_up(self, workers: int, first: list[tuple[Any, ...]]) -> None:
        """Start with a few tasks (examples that begin empty explore little)."""
        self.workers = workers
        self.table = Timetable(workers=workers, hung_grace=HUNG_GRACE)
        self.table.wanted = ALL_KINDS
        self.pool = Pool(self.table, announce=True)
        for args in first:
            self.schedule(**dict(zip(TASK, args, strict=True)))

    # -- helpers

    def claimed(self) -> set[int]:
        return {id(run.task) for run in [*self.pool.claimed.values(), *self.pool.current.values()]}

    def is_claimed(self, record: object) -> bool:
        return id(record) in self.claimed()

    def apply(self) -> None:
        """Release in the model, take the timetable's effects, check them, hand runs to the pool."""
        self.model.release(self.now)
        effects = take(self.table)
        for record, outcome in effects.finished:
            task = self.model.of(record)
            assert task["state"] in TERMINAL, f"{task['id']} ended in the timetable only"
            assert outcome == task["outcome"]
            assert task["token"] != "finished", f"{task['id']} finished twice"
            task["token"] = "finished"
        assert all(t["token"] == "finished" for t in self.model.in_state(*TERMINAL)), "an end not published"
        self.real_events.extend(as_tuple(e) for e in effects.events)
        for e in effects.events:  # what the examples reach (--hypothesis-show-statistics)
            event(f"{e.kind.name}{' retrying' if e.retrying else ''}{' final' if e.final else ''}")
        if effects.abandoned:
            event("worker abandoned")
        assert effects.abandoned == [worker for worker, _ in self.model.abandoned]
        abandoned, self.model.abandoned = self.model.abandoned, []
        for worker, task in abandoned:  # the hung run goes on alone; a new worker takes the place
            run = self.pool.current.pop(worker)
            assert run.task is task["record"]
            assert worker not in self.ending
            self.ghosts.append(run)
            self.pool.inbox.pop(worker, None)  # its other runs were taken back
        self.pool.receive(effects)
        for _, run in effects.dispatches:
            task = self.model.of(run.task)
            assert task["state"] in ("ready", "handed"), f"{task['id']} handed out while {task['state']}"
            if task["state"] == "handed":
                assert not self.is_claimed(run.task), "a claimed run handed again"
            task["state"] = "handed"
            task["claim"] = {"stop": set(), "ended": False, "abandoned": False}
            assert (run.task_id, run.run, run.due_at, run.attempt, run.timeout, run.one_time) == (
                task["id"],
                task["runs"] + 1,
                task["due_at"],
                task["attempt"],
                task["timeout"],
                task["single"],
            )
        for worker, runs in effects.batches:
            for run in runs:
                self.model.of(run.task)["worker"] = worker
        for worker, _ in abandoned:
            self.table.add_worker(worker, now=self.now)
            self.apply()

    # -- rules

    @rule(**TASK)
    def schedule(
        self,
        task_id: str,
        offset: float,
        timeout: float | None,
        retry: tuple[int, float] | None,
        after: list[int],
        delay: float,
        every: float | None,
        max_failures: int | None,
    ) -> None:
        """A new task: one-time (waiting for others, perhaps), or recurring at a fixed delay."""
        tasks = [t for t in self.model.tasks if t["every"] is None]  # only one-time tasks complete
        deps = (
            list({id(tasks[i % len(tasks)]["record"]): tasks[i % len(tasks)] for i in after}.values())
            if tasks
            else []
        )
        policy = None if retry is None else Retry(attempts=retry[0], delay=retry[1], backoff=2.0, jitter=0.0)
        due_at = self.now + offset
        if every is not None:
            deps = []
        else:
            max_failures = None
        spec = TaskSpec(
            None if every is None else FixedDelay(every, due_at),
            max_failures,
            timeout=timeout,
            retry=policy,
            after=tuple(d["record"] for d in deps),
            delay=delay if deps else 0.0,
        )
        record = TaskRecord(task_id, noop, (), {}, due_at if not deps else self.now, None, spec)
        task = {
            "id": task_id,
            "record": record,
            "due_at": due_at,
            "timeout": timeout,
            "retry": policy,
            "after": deps,
            "delay": spec.delay,
            "every": every,
            "max_failures": max_failures,
            "single": every is None and policy is None,  # its run's start takes the token for good
        }
        if self.model.add(task, self.now) == "duplicate":
            with pytest.raises(DuplicateTaskError):
                self.table.add(record, now=self.now)
            return
        self.seen.add(task_id)
        self.table.add(record, now=self.now)
        self.apply()

    @rule(step=st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]))
    def advance_and_tick(self, step: float) -> None:
        self.now += step
        self.table.tick(now=self.now)
        self.apply()

    @rule(
        task_id=st.sampled_from([*IDS, "unknown", "running", "running"]),
        pick=st.integers(0, 3),
        interrupt=st.booleans(),
    )
    def cancel(self, task_id: str, pick: int, interrupt: bool) -> None:
        """``Timetable.cancel`` (a ``Cancel`` message), of an id or (mostly) of a run a worker has claimed."""
        if task_id == "running":
            runs = [*self.pool.current.values(), *self.pool.claimed.values()]
            if not runs:
                return
            task_id = runs[pick % len(runs)].task_id
        task = self.model.live_task(task_id)
        claimed = task is not None and self.is_claimed(task["record"])
        expected = self.model.cancel(task_id, self.now, interrupt=interrupt, claimed=claimed)
        assert self.table.cancel(task_id, now=self.now, interrupt=interrupt) is expected
        self.apply()

    @precondition(lambda self: self.model.tasks)
    @rule(pick=st.integers(0, 20), interrupt=st.booleans(), running=st.booleans())
    def handle_cancel(self, pick: int, interrupt: bool, running: bool) -> None:
        """A caller cancels through a handle: ``interrupt()`` (if asked), then revoke; the report comes later.

        ``running``: a task whose run a worker has claimed, if any; else any task ever added.
        """
        records = [run.task for run in [*self.pool.current.values(), *self.pool.claimed.values()]]
        if not (running and records):
            records = [t["record"] for t in self.model.tasks]
        record = records[pick % len(records)]
        task = self.model.of(record)
        signalled = interrupt and task["state"] not in TERMINAL and self.model.request_stop(task, INTERRUPTED)
        assert (interrupt and record.interrupt()) is signalled
        before = self.model.revoke(task)
        assert record.revoke().name.lower() == before
        if before in WON:
            self.reports.append(Cancelled(record, mid_run=before != "free"))

    @precondition(lambda self: self.reports)
    @rule()
    def deliver_cancelled(self) -> None:
        report = self.reports.pop(0)
        self.model.cancelled(report, self.now, claimed=self.is_claimed(report.task))
        self.table.cancelled(report, now=self.now)
        self.apply()

    @precondition(lambda self: any(self.pool.busy(w) for w in range(self.workers)))
    @rule()
    def start_all(self) -> None:
        """Every worker holding runs but running none claims and starts its next (runs may overrun)."""
        for worker in range(self.workers):
            while self.pool.busy(worker) and worker not in self.pool.current:
                self.step(worker)

    @precondition(lambda self: any(self.pool.busy(w) for w in range(self.workers)))
    @rule(
        pick=st.integers(0, 1),
        outcome=st.sampled_from(["return", "raise", "cancelled"]),
        report=st.booleans(),
        phases=st.integers(1, 4),
    )
    def work(self, pick: int, outcome: str, report: bool, phases: int) -> None:
        """A worker takes its next steps: claim, try to start, end the run, or report the ended run.

        ``report``: a run that ends reports at once; else its report waits for the worker's next step.
        """
        workers = [w for w in range(self.workers) if self.pool.busy(w)]
        worker = workers[pick % len(workers)]
        for _ in range(phases):
            if not self.pool.busy(worker):
                return
            if worker in self.ending:
                self.report(worker)
                self.apply()
            elif worker in self.pool.current:
                self.end_run(worker, outcome)
                if report:
                    self.report(worker)
                self.apply()
            else:
                self.step(worker)

    def step(self, worker: int) -> None:
        """``worker`` claims its next run, or tries to start the one it claimed (``Started``/``Skipped``)."""
        if worker in self.pool.claimed:
            run = self.pool.claimed[worker]
            task = self.model.of(run.task)
            expected = self.model.move(task, "start-one-time" if task["single"] else "start-again")
            started = self.pool.step(worker, self.now)
            assert (started is not None) is expected
            if started is not None:
                self.model.started(task, self.now)
            else:
                self.model.skipped(task, self.now)
        else:
            assert self.pool.claim(worker) is not None
        self.apply()

    def end_run(self, worker: int, outcome: str) -> None:
        run = self.pool.current[worker]
        task = self.model.of(run.task)
        assert run.task.end_run(run.claim), "a run not abandoned ends as its own"
        self.model.end_run(task)
        error: BaseException | None = None
        if outcome == "raise":
            self.errors += 1
            error = RuntimeError(self.errors)
        elif outcome == "cancelled":
            self.errors += 1
            error = RunCancelled(self.errors)
        if error is not None:
            self.model.keep.append(error)
        self.values += 1
        self.ending[worker] = (f"value {self.values}" if error is None else None, error, self.now)

    def report(self, worker: int) -> None:
        value, error, finished_at = self.ending.pop(worker)
        run = self.pool.current[worker]
        task = self.model.of(run.task)
        traceback = traceback_of(error) if error is not None else ""
        self.model.reported(task, finished_at, value=value, error=error, traceback=traceback)
        self.pool.finish(
            worker, at=finished_at, now=self.now, value=value, error=error, start_next=False, ended=True
        )

    @precondition(lambda self: self.ghosts)
    @rule(pick=st.integers(0, 3))
    def abandoned_run_ends(self, pick: int) -> None:
        """An abandoned run ends at last: its ``end_run`` moves nothing, and it reports nothing."""
        run = self.ghosts.pop(pick % len(self.ghosts))
        token = run.task.token_state
        activity = self.table.activity
        assert not run.task.end_run(run.claim)
        assert run.task.token_state is token
        assert not self.table.take_effects()
        assert self.table.activity == activity

    @rule(pick=st.integers(0, 1), chance=st.integers(0, 2))
    def lose_worker(self, pick: int, chance: int) -> None:
        """A worker dies (one time in three): its claimed run fails (``WorkerLostError``); it is replaced."""
        if chance:
            return
        worker = pick % self.workers
        error = WorkerLostError("gone")
        self.model.keep.append(error)
        running = self.pool.current.get(worker)
        claimed = running or self.pool.claimed.get(worker)
        task = None if claimed is None else self.model.of(claimed.task)
        if running is not None and worker not in self.ending:
            self.model.end_run(task)  # the dying worker's finally  # type: ignore[arg-type]
        self.ending.pop(worker, None)
        self.pool.lose(worker)
        self.model.lose(worker, task, ("object", id(error)), "", self.now)
        self.table.worker_lost(worker, error, now=self.now)
        self.apply()
        self.table.add_worker(worker, now=self.now)
        self.apply()

    # -- invariants

    @invariant()
    def same_events(self) -> None:
        assert canonical(self.real_events) == canonical(self.model.events)
        self.real_events.clear()
        self.model.events.clear()

    @invariant()
    def same_tasks(self) -> None:
        live = [t for t in self.model.tasks if t["state"] not in TERMINAL]
        assert [info.task_id for info in self.table.infos()] == [t["id"] for t in live]
        heads = {id(runs[0].task) for w in range(self.workers) if (runs := self.pool.holding(w))}
        for task_id in self.seen:
            info = self.table.find(task_id)
            task = self.model.live_task(task_id) or [t for t in self.model.tasks if t["id"] == task_id][-1]
            assert info is not None, task_id
            status = self.model.status(task, heads)
            waiting = tuple(d["id"] for d in task["after"] if d["state"] != "completed")
            last_error = task["last_error"]
            if last_error is not None and last_error[0] == "dependency":
                # Two tasks it waits for may fail in one step: which one it blames is not fixed.
                blamed = {
                    d["id"] for d in task["after"] if d["state"] in ("failed", "cancelled") or d["blocked"]
                }
                assert last_error[1] in blamed
                assert isinstance(info.last_error, DependencyFailedError), task_id
                assert info.last_error.dependency in blamed, task_id
                last_error = norm_error(info.last_error)
            assert (
                info.status,
                info.run_count,
                info.failure_count,
                info.consecutive_failures,
                info.next_run_at,
                norm_error(info.last_error),
                info.last_traceback,
                info.waiting_for,
            ) == (
                status,
                task["runs"],
                task["failures"],
                task["consecutive"],
                task["due_at"] if status is TaskStatus.SCHEDULED else None,
                last_error,
                task["last_traceback"],
                waiting if status is TaskStatus.WAITING else (),
            ), task_id
            if (
                status is TaskStatus.CANCELLED
                and task["last_error"]
                and task["last_error"][0] == "dependency"
            ):
                assert info.end_reason == str(info.last_error)
            else:
                assert info.end_reason == self.model.end_reason(task), task_id

    @invariant()
    def same_tokens(self) -> None:
        for task in self.model.tasks:
            assert task["record"].token_state.name.lower() == task["token"], task["id"]

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
    def same_due_and_idle(self) -> None:
        assert self.table.next_due() == self.model.next_due()
        busy = [w for w in range(self.workers) if self.pool.busy(w)]
        assert self.table.running_count == len(busy)
        if len(busy) < self.workers:
            assert not self.model.in_state("ready"), "a due run waits while a worker is idle"


LifecycleMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
# A model run takes 10-30 s alone and longer beside other tests on two cores; a timeout cut
# in the middle of an example reads to hypothesis as flaky data generation, not as slowness.
test_lifecycle_matches_model = pytest.mark.timeout(300)(LifecycleMachine.TestCase)


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_lifecycle_matches_model_stress() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        LifecycleMachine, settings=settings(max_examples=3000, stateful_step_count=80, deadline=None)
    )
