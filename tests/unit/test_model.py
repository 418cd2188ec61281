"""A stateful hypothesis test: the Timetable against a tiny, obviously correct reference model.

The model is a plain list of dicts, recomputed by brute force on every step (O(n) and slow
by design); the Timetable must agree with it on running tasks, statuses, counters, due
times, final states and the exact sequence of events.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from actors.errors import DuplicateTaskError, SchedulerShutdownError
from actors.timetable import COMPACT_MIN_STALE, Timetable
from messages import EventKind, FixedDelay, FixedRate, Once, TaskStatus
from tests.unit.helpers import ALL_KINDS, make

IDS = ["a", "b", "c", "d", "e"]
TERMINAL = {"completed", "failed", "cancelled"}
STATUS = {
    "pending": TaskStatus.SCHEDULED,
    "ready": TaskStatus.SCHEDULED,
    "running": TaskStatus.RUNNING,
    "completed": TaskStatus.COMPLETED,
    "failed": TaskStatus.FAILED,
    "cancelled": TaskStatus.CANCELLED,
}

Event = tuple[EventKind, str, int | None, float, float | None]  # kind, task, run, at, due_at


class Model:
    """The reference: every task ever scheduled, as dicts, in scheduling order."""

    def __init__(self, workers: int, history: int) -> None:
        self.tasks: list[dict[str, Any]] = []
        self.idle: set[int] = set(range(workers))
        self.running: dict[int, dict[str, Any]] = {}
        self.history = history
        self.finish_log: list[dict[str, Any]] = []  # terminal tasks, in the order they ended
        self.events: list[Event] = []
        self.closed = False
        self.counter = itertools.count()

    # -- queries

    def live(self) -> list[dict[str, Any]]:
        return [t for t in self.tasks if t["state"] not in TERMINAL]

    def live_task(self, task_id: str) -> dict[str, Any] | None:
        return next((t for t in self.live() if t["id"] == task_id), None)

    def remembered(self, task_id: str) -> dict[str, Any] | None:
        """The task ``find`` must describe: the live one, else one among the last ``history`` ended."""
        task = self.live_task(task_id)
        if task is not None:
            return task
        kept: list[dict[str, Any]] = []
        for ended in reversed(self.finish_log):
            if all(k["id"] != ended["id"] for k in kept):
                kept.append(ended)
        kept = kept[: self.history]
        return next((t for t in kept if t["id"] == task_id), None)

    def anything_due(self, now: float) -> bool:
        return any(t["state"] in ("pending", "ready") and t["due_at"] <= now for t in self.live())

    def next_due(self) -> float | None:
        dues = [t["due_at"] for t in self.live() if t["state"] == "pending"]
        return min(dues) if dues else None

    # -- changes

    def emit(self, kind: EventKind, task: dict[str, Any], at: float, run: int | None) -> None:
        self.events.append((kind, task["id"], run, at, task["due_at"] if run is not None else None))

    def end(self, task: dict[str, Any], state: str, at: float) -> None:
        task["state"] = state
        if state == "cancelled":
            self.emit(EventKind.CANCELLED, task, at, None)
        self.finish_log.append(task)

    def push(self, task: dict[str, Any], due_at: float) -> None:
        task["state"] = "pending"
        task["due_at"] = due_at
        task["seq"] = next(self.counter)

    def release(self, now: float, workers_chosen: list[int]) -> list[tuple[str, int]]:
        """Move due tasks to ready, then start ready ones on ``workers_chosen`` (the real choice)."""
        due = sorted(
            (t for t in self.live() if t["state"] == "pending" and t["due_at"] <= now),
            key=lambda t: (t["due_at"], t["seq"]),
        )
        for task in due:
            task["state"] = "ready"
            task["ready_order"] = next(self.counter)
            self.emit(EventKind.DUE, task, now, task["runs"] + 1)
        ready = sorted((t for t in self.live() if t["state"] == "ready"), key=lambda t: t["ready_order"])
        count = min(len(ready), len(self.idle))
        assert len(workers_chosen) == count, (workers_chosen, count)
        assert len(set(workers_chosen)) == count
        started = []
        for task, worker in zip(ready, workers_chosen, strict=False):
            assert worker in self.idle
            self.idle.discard(worker)
            self.running[worker] = task
            task["state"] = "running"
            task["started_at"] = now
            self.emit(EventKind.STARTED, task, now, task["runs"] + 1)
            started.append((task["id"], task["runs"] + 1))
        return started

    def schedule(self, task_id: str, trigger: Any, max_failures: int | None, now: float) -> str | None:
        if self.closed:
            return "shutdown"
        if self.live_task(task_id) is not None:
            return "duplicate"
        first = trigger.at if isinstance(trigger, Once) else trigger.first_at
        task = {
            "id": task_id,
            "trigger": trigger,
            "max_failures": max_failures,
            "runs": 0,
            "failures": 0,
            "consecutive": 0,
            "last_error": None,
            "slot": 0,
            "cancel_after_run": False,
        }
        self.tasks.append(task)
        self.push(task, first)
        return None

    def cancel(self, task_id: str, now: float) -> bool:
        task = self.live_task(task_id)
        if task is None:
            return False
        if task["state"] in ("pending", "ready"):
            self.end(task, "cancelled", now)
            return True
        if isinstance(task["trigger"], Once) or task["cancel_after_run"]:
            return False
        task["cancel_after_run"] = True
        return True

    def finish(self, worker: int, error: BaseException | None, finished_at: float) -> None:
        task = self.running.pop(worker)
        self.idle.add(worker)
        task["runs"] += 1
        run = task["runs"]
        if error is None:
            task["consecutive"] = 0
            self.emit(EventKind.COMPLETED, task, finished_at, run)
        else:
            task["failures"] += 1
            task["consecutive"] += 1
            task["last_error"] = error
            self.emit(EventKind.FAILED, task, finished_at, run)
        trigger = task["trigger"]
        if task["cancel_after_run"]:
            self.end(task, "cancelled", finished_at)
        elif isinstance(trigger, Once):
            self.end(task, "completed" if error is None else "failed", finished_at)
        elif error is not None and task["max_failures"] is not None and task["consecutive"] >= task["max_failures"]:
            self.end(task, "failed", finished_at)
        elif isinstance(trigger, FixedDelay):
            self.push(task, finished_at + trigger.delay)
        else:
            slot = task["slot"] + 1
            while trigger.first_at + slot * trigger.interval < finished_at:
                slot += 1
            task["slot"] = slot
            self.push(task, trigger.first_at + slot * trigger.interval)

    def shut_down(self, now: float) -> None:
        self.closed = True
        for task in self.live():
            if task["state"] in ("pending", "ready"):
                self.end(task, "cancelled", now)
            elif not isinstance(task["trigger"], Once):
                task["cancel_after_run"] = True


triggers = st.one_of(
    st.builds(lambda at: ("once", at), st.integers(-3, 8)),
    st.builds(lambda at, p: ("rate", at, p), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
    st.builds(lambda at, p: ("delay", at, p), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
)


class TimetableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.table: Timetable
        self.model: Model
        self.workers = 0
        self.errors = 0
        self.seen_ids: set[str] = set()
        self.real_events: list[Event] = []
        # independent FIFO check on the real event stream: (task, run) due and not yet started
        self.waiting: list[tuple[str, int]] = []

    @initialize(workers=st.integers(1, 3), history=st.integers(0, 4))
    def start(self, workers: int, history: int) -> None:
        self.workers = workers
        self.table = Timetable(workers=workers, history=history)
        self.table.wanted = ALL_KINDS
        self.model = Model(workers, history)

    # -- helpers

    def apply(self) -> list[tuple[int, str, int]]:
        """Take the real effects; return its dispatches and check its events against the model."""
        effects = self.table.take_effects()
        got = [(e.kind, e.task_id, e.run, e.at, e.due_at) for e in effects.events]
        self.check_fifo(got)
        self.real_events.extend(got)
        for _, info, _ in effects.finished:  # no sinks given
            raise AssertionError(f"unexpected sink delivery for {info}")
        return [(worker, msg.task_id, msg.run) for worker, msg in effects.dispatches]

    def check_fifo(self, got: list[Event]) -> None:
        step_due = [e for e in got if e[0] is EventKind.DUE]
        assert [e[4] for e in step_due] == sorted(e[4] for e in step_due)  # one release: by due time
        for kind, task_id, run, _, _ in got:
            if kind is EventKind.DUE:
                assert run is not None
                self.waiting.append((task_id, run))
            elif kind is EventKind.STARTED:
                assert self.waiting[0] == (task_id, run), "started out of FIFO order"
                self.waiting.pop(0)
            elif kind is EventKind.CANCELLED:
                self.waiting = [w for w in self.waiting if w[0] != task_id]

    def release_model(self, dispatches: list[tuple[int, str, int]], now: float) -> None:
        started = self.model.release(now, [w for w, _, _ in dispatches])
        assert started == [(t, r) for _, t, r in dispatches]

    # -- rules

    @rule(task_id=st.sampled_from(IDS), spec=triggers, max_failures=st.sampled_from([None, 1, 2]))
    def schedule(self, task_id: str, spec: tuple[Any, ...], max_failures: int | None) -> None:
        at = self.now + spec[1]
        trigger: Any
        if spec[0] == "once":
            trigger, max_failures = Once(at), None
        elif spec[0] == "rate":
            trigger = FixedRate(spec[2], at)
        else:
            trigger = FixedDelay(spec[2], at)
        expected = self.model.schedule(task_id, trigger, max_failures, self.now)
        cmd = make(task_id, trigger, max_consecutive_failures=max_failures)
        if expected == "shutdown":
            with pytest.raises(SchedulerShutdownError):
                self.table.schedule(cmd, now=self.now)
        elif expected == "duplicate":
            with pytest.raises(DuplicateTaskError):
                self.table.schedule(cmd, now=self.now)
        else:
            self.seen_ids.add(task_id)
            self.table.schedule(cmd, now=self.now)
        dispatches = self.apply()
        if expected is None and at <= self.now:
            self.release_model(dispatches, self.now)
        else:
            assert not dispatches

    @rule(task_id=st.sampled_from([*IDS, "unknown"]))
    def cancel(self, task_id: str) -> None:
        assert self.table.cancel(task_id, now=self.now) is self.model.cancel(task_id, self.now)
        assert not self.apply()

    @rule(step=st.sampled_from([0, 0.5, 1, 2, 5]))
    def advance_and_tick(self, step: float) -> None:
        self.now += step
        self.table.tick(now=self.now)
        self.release_model(self.apply(), self.now)

    @precondition(lambda self: self.model.running)
    @rule(pick=st.integers(0, 2), ok=st.booleans(), took=st.sampled_from([0, 0.5, 1, 3]), late=st.booleans())
    def finish(self, pick: int, ok: bool, took: float, late: bool) -> None:
        workers = sorted(self.model.running)
        worker = workers[pick % len(workers)]
        task = self.model.running[worker]
        run = task["runs"] + 1
        if late:  # the report arrives after time moved on: finished_at in [start, now]
            finished_at = max(task["started_at"], self.now - took)
        else:
            self.now += took
            finished_at = self.now
        if ok:
            self.table.completed(worker, task["id"], run, None, finished_at=finished_at, now=self.now)
            error = None
        else:
            self.errors += 1
            error = RuntimeError(self.errors)
            self.table.failed(worker, task["id"], run, error, finished_at=finished_at, now=self.now)
        self.model.finish(worker, error, finished_at)
        self.release_model(self.apply(), self.now)

    @rule(worker=st.integers(0, 3), task_id=st.sampled_from(IDS), run=st.integers(0, 4), ok=st.booleans())
    def stale_report(self, worker: int, task_id: str, run: int, ok: bool) -> None:
        held = self.model.running.get(worker)
        if held is not None and held["id"] == task_id and held["runs"] + 1 == run:
            return  # that one is not stale
        if ok:
            self.table.completed(worker, task_id, run, None, finished_at=self.now, now=self.now)
        else:
            self.table.failed(worker, task_id, run, RuntimeError(), finished_at=self.now, now=self.now)
        assert not self.apply()

    @rule()
    def shut_down(self) -> None:
        self.table.shut_down(now=self.now)
        self.model.shut_down(self.now)
        assert not self.apply()

    # -- invariants

    @invariant()
    def same_events(self) -> None:
        assert self.real_events == self.model.events

    @invariant()
    def same_tasks(self) -> None:
        live = self.model.live()
        assert [info.task_id for info in self.table.infos()] == [t["id"] for t in live]
        assert self.table.live_count == len(live)
        for task_id in self.seen_ids | {"unknown"}:
            info = self.table.find(task_id)
            task = self.model.remembered(task_id)
            if task is None:
                assert info is None, task_id
                continue
            assert info is not None, task_id
            waiting = task["state"] in ("pending", "ready")
            assert (
                info.status,
                info.trigger,
                info.name,
                info.run_count,
                info.failure_count,
                info.consecutive_failures,
                info.next_run_at,
            ) == (
                STATUS[task["state"]],
                task["trigger"],
                "noop",
                task["runs"],
                task["failures"],
                task["consecutive"],
                task["due_at"] if waiting else None,
            ), task_id
            assert info.last_error is task["last_error"]

    @invariant()
    def same_running(self) -> None:
        running = {t.task_id for t in self.table.infos() if t.status is TaskStatus.RUNNING}
        assert running == {t["id"] for t in self.model.running.values()}
        assert self.table.running_count == len(self.model.running) <= self.workers
        assert self.model.idle.isdisjoint(self.model.running)
        assert len(self.model.idle) + len(self.model.running) == self.workers

    @invariant()
    def same_due_and_settled(self) -> None:
        assert self.table.next_due() == self.model.next_due()
        assert self.table.is_settled(self.now) == (not self.model.running and not self.model.anything_due(self.now))
        assert self.table.heap_size - self.table.live_count <= COMPACT_MIN_STALE + self.table.live_count


TimetableMachine.TestCase.settings = settings(
    max_examples=200, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_timetable_matches_model = TimetableMachine.TestCase


@pytest.mark.stress
def test_timetable_matches_model_stress() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        TimetableMachine, settings=settings(max_examples=3000, stateful_step_count=100, deadline=None)
    )
