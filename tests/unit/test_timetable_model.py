"""A stateful hypothesis test: the Timetable against a tiny, obviously correct reference model.

The model is a plain list of dicts, recomputed by brute force on every step (O(n) by design):
which tasks are pending, waiting (due, not started), running or finished, their counters and
due times, and the exact events. Which worker gets which run is the Timetable's choice; the
test plays the workers with ``Pool`` (claims taken in order, the next one claimed before a
report) and checks every choice: batches go only to idle workers, hold only waiting runs in
FIFO order, are at most ``BATCH`` long, and while any worker is idle no due run waits.

In half the examples every task has a sink holding its token, and a caller may revoke it
(``TaskHandle.cancel``) at any step; the ``Cancelled`` report reaches the timetable later, at a
step of its own, so every interleaving with runs, reports, cancels and shutdown is explored.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from actors.dealer import BATCH
from actors.errors import DuplicateTaskError, SchedulerShutdownError, WorkerLostError
from actors.timetable import COMPACT_MIN_STALE, Timetable
from messages import EventKind, FixedDelay, FixedRate, Once, RunTask, TaskEvent, TaskStatus
from tests.unit.helpers import ALL_KINDS, Pool, Sink, make

IDS = ["a", "b", "c", "d", "e", "f"]
TERMINAL = {"completed", "failed", "cancelled"}
STATUS = {
    "pending": TaskStatus.SCHEDULED,
    "waiting": TaskStatus.SCHEDULED,
    "running": TaskStatus.RUNNING,
    "completed": TaskStatus.COMPLETED,
    "failed": TaskStatus.FAILED,
    "cancelled": TaskStatus.CANCELLED,
}

Event = tuple[EventKind, str, int | None, float, float | None]  # kind, task, run, at, due_at


class Model:
    """The reference: every task ever scheduled, as dicts, in scheduling order."""

    def __init__(self, history: int) -> None:
        self.tasks: list[dict[str, Any]] = []
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
        return [t for t in self.live() if t["state"] in states]

    def next_due(self) -> float | None:
        return min((t["due_at"] for t in self.in_state("pending")), default=None)

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

    def release(self, now: float) -> None:
        due = sorted(
            (t for t in self.in_state("pending") if t["due_at"] <= now), key=lambda t: (t["due_at"], t["seq"])
        )
        for task in due:
            task["state"] = "waiting"
            task["fifo"] = next(self.counter)
            self.emit(EventKind.DUE, task, now, task["runs"] + 1)

    def schedule(self, task_id: str, trigger: Any, max_failures: int | None, sink: Sink | None) -> str | None:
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
            "sink": sink,
            "revoked": False,  # the caller revoked its token; the timetable may not know yet
        }
        self.tasks.append(task)
        self.push(task, first)
        return None

    def start(self, task_id: str, run: int, at: float) -> None:
        task = self.live_task(task_id)
        assert task is not None
        assert (task["state"], task["runs"] + 1) == ("waiting", run)
        task["state"] = "running"
        task["started_at"] = at

    def caller_cancel(self, task_id: str) -> bool:
        task = self.live_task(task_id)
        if task is None or task["sink"] is None or task["revoked"] or task["cancel_after_run"]:
            return False  # the scheduler's own cancel (a Cancel message, shutdown) revoked it too
        if isinstance(task["trigger"], Once) and task["state"] == "running":
            return False  # its worker took the token
        task["revoked"] = True
        return True

    def deliver_cancelled(self, task_id: str, sink: Sink, now: float) -> None:
        task = self.live_task(task_id)
        if task is None or task["sink"] is not sink or task["cancel_after_run"]:
            return
        if task["state"] in ("pending", "waiting"):
            self.end(task, "cancelled", now)
        else:
            task["cancel_after_run"] = True

    def skip(self, task_id: str, run: int, now: float) -> None:
        task = self.live_task(task_id)
        assert task is not None
        assert (task["state"], task["runs"] + 1, task["revoked"]) == ("waiting", run, True)
        self.end(task, "cancelled", now)

    def cancel(self, task_id: str, now: float) -> bool:
        task = self.live_task(task_id)
        if task is None or task["revoked"]:
            return False
        if task["state"] in ("pending", "waiting"):
            self.end(task, "cancelled", now)
            return True
        if isinstance(task["trigger"], Once) or task["cancel_after_run"]:
            return False
        task["cancel_after_run"] = True
        return True

    def finish(self, task_id: str, error: BaseException | None, finished_at: float) -> None:
        task = self.live_task(task_id)
        assert task is not None
        assert task["state"] == "running"
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
        limit = task["max_failures"]
        if task["cancel_after_run"] or task["revoked"]:
            self.end(task, "cancelled", finished_at)
        elif isinstance(trigger, Once):
            self.end(task, "completed" if error is None else "failed", finished_at)
        elif error is not None and limit is not None and task["consecutive"] >= limit:
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
            if task["state"] in ("pending", "waiting"):
                self.end(task, "cancelled", now)
            elif not isinstance(task["trigger"], Once):
                task["cancel_after_run"] = True


triggers = st.one_of(
    st.tuples(st.just("once"), st.integers(-3, 8)),
    st.tuples(st.just("rate"), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
    st.tuples(st.just("delay"), st.integers(-3, 8), st.sampled_from([0.5, 1, 2, 3])),
)


class TimetableMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 100.0
        self.workers = 0
        self.errors = 0
        self.seen_ids: set[str] = set()
        self.real_events: list[Event] = []
        self.lost: set[int] = set()
        self.tokens = False  # whether tasks get sinks (and so tokens)
        self.reports: list[tuple[str, Sink]] = []  # Cancelled reports on their way
        self.table: Timetable
        self.pool: Pool
        self.model: Model

    @initialize(workers=st.integers(1, 3), history=st.integers(0, 4), tokens=st.booleans())
    def start_up(self, workers: int, history: int, tokens: bool) -> None:
        self.workers = workers
        self.tokens = tokens
        self.table = Timetable(workers=workers, history=history)
        self.table.wanted = ALL_KINDS
        self.pool = Pool(self.table)
        self.model = Model(history)

    # -- helpers

    def fifo(self, msg: RunTask) -> int:
        task = self.model.live_task(msg.task_id)
        assert task is not None
        return task["fifo"]

    def held(self) -> dict[int, list[RunTask]]:
        return {w: self.pool.held(w) for w in range(self.workers)}

    def apply(self, earlier: Sequence[TaskEvent] = ()) -> None:
        """Take the Timetable's effects, check them against the model, hand runs to the pool."""
        self.model.release(self.now)
        effects = self.table.take_effects()
        for sink, final, value in effects.finished:
            assert isinstance(sink, Sink)
            task = next(t for t in self.model.tasks if t["sink"] is sink)
            assert final.snapshot().status == STATUS[task["state"]]
            sink.task_finished(final, value)
        got = [(e.kind, e.task_id, e.run, e.at, e.due_at) for e in [*earlier, *effects.events]]
        due_times = [e[4] for e in got if e[0] is EventKind.DUE]
        assert due_times == sorted(due_times)  # one release: earliest due first
        self.real_events.extend(got)
        for box in self.pool.inbox.values():  # forget runs the timetable took back
            for msg in [m for m in box if m.claim.taken]:
                box.remove(msg)
        handed = [(m.task_id, m.run) for _, m in effects.dispatches]
        assert len(handed) == len(set(handed)), "a run handed out twice"
        batches: dict[int, list[RunTask]] = {}
        for worker, msg in effects.dispatches:
            batches.setdefault(worker, []).append(msg)
        held_elsewhere = {(m.task_id, m.run) for msgs in self.held().values() for m in msgs}
        held_elsewhere |= {(m.task_id, m.run) for m in self.pool.current.values()}
        for worker, batch in batches.items():
            assert 0 <= worker < self.workers
            assert worker not in self.lost
            assert not self.pool.busy(worker), f"worker {worker} got a batch while busy"
            assert 1 <= len(batch) <= BATCH
            for msg in batch:
                task = self.model.live_task(msg.task_id)
                assert task is not None
                assert task["state"] == "waiting"
                assert (msg.run, msg.announce) == (task["runs"] + 1, True)
                assert (msg.task_id, msg.run) not in held_elsewhere
                assert not msg.claim.taken
            orders = [self.fifo(m) for m in batch]
            assert orders == sorted(orders), "a batch out of FIFO order"
        self.pool.receive(effects)

    def start_run(self, msg: RunTask | None, at: float) -> None:
        """Mirror what the pool just did: the runs it skipped (reported ``Skipped``), the run it started."""
        for task_id, run, now in self.pool.skipped:
            self.model.skip(task_id, run, now)
        self.pool.skipped.clear()
        if msg is not None:
            self.model.start(msg.task_id, msg.run, at)

    def new_sink(self) -> Sink | None:
        return Sink() if self.tokens else None

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
        sink = self.new_sink()
        expected = self.model.schedule(task_id, trigger, max_failures, sink)
        cmd = make(task_id, trigger, max_consecutive_failures=max_failures, sink=sink)
        if expected == "shutdown":
            with pytest.raises(SchedulerShutdownError):
                self.table.schedule(cmd, now=self.now)
        elif expected == "duplicate":
            with pytest.raises(DuplicateTaskError):
                self.table.schedule(cmd, now=self.now)
        else:
            self.seen_ids.add(task_id)
            self.table.schedule(cmd, now=self.now)
        self.apply()

    @rule(task_id=st.sampled_from([*IDS, "unknown"]))
    def cancel(self, task_id: str) -> None:
        expected = self.model.cancel(task_id, self.now)
        assert self.table.cancel(task_id, now=self.now) is expected
        self.apply()

    @rule(pick=st.integers(0, 5))
    def caller_cancel(self, pick: int) -> None:
        """A caller revokes a live task's token (``TaskHandle.cancel``); the report goes on its way."""
        live = self.model.live()
        if not live:
            return
        task = live[pick % len(live)]
        task_id, sink = task["id"], task["sink"]
        expected = self.model.caller_cancel(task_id)
        assert (sink is not None and sink.revoke_token()) is expected
        if expected:
            assert sink is not None
            self.reports.append((task_id, sink))

    @rule(count=st.integers(1, 3))
    def deliver_cancelled(self, count: int) -> None:
        """The oldest ``Cancelled`` reports reach the timetable."""
        for task_id, sink in self.reports[:count]:
            self.model.deliver_cancelled(task_id, sink, self.now)
            self.table.cancelled(task_id, sink, now=self.now)
            self.apply()
        del self.reports[:count]

    @rule(pick=st.integers(0, 5), started=st.booleans())
    def cancel_handed(self, pick: int, started: bool) -> None:
        """Cancel a run a worker holds: one it runs, or one it has not started yet."""
        if started:
            runs = [self.pool.current[w] for w in sorted(self.pool.current)]
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
            sink = self.new_sink()
            self.model.schedule(task_id, trigger, None, sink)
            self.seen_ids.add(task_id)
            self.table.schedule(make(task_id, trigger, sink=sink), now=self.now)
            self.apply()

    @rule(
        ids=st.lists(st.sampled_from(IDS), max_size=4, unique=True),
        offset=st.integers(-1, 1),
        finishes=st.integers(0, 3),
        fail=st.booleans(),
    )
    def drain(self, ids: list[str], offset: int, finishes: int, fail: bool) -> None:
        """What the scheduler does with its outboxes: schedules and reports applied in one batch."""
        with self.table.batch(now=self.now):
            for task_id in ids:
                if self.model.closed or self.model.live_task(task_id) is not None:
                    continue
                trigger = Once(self.now + offset)
                sink = self.new_sink()
                self.model.schedule(task_id, trigger, None, sink)
                self.seen_ids.add(task_id)
                self.table.schedule(make(task_id, trigger, sink=sink), now=self.now)
            for worker in sorted(self.pool.current)[:finishes]:
                msg = self.pool.current[worker]
                self.errors += 1
                error = RuntimeError(self.errors) if fail else None
                self.pool.finish(worker, at=self.now, now=self.now, error=error)
                self.model.finish(msg.task_id, error, self.now)
                self.start_run(self.pool.current.get(worker), self.now)
            so_far = self.table.take_effects()
            assert not so_far.dispatches  # nothing handed out before the end
            assert not [e for e in so_far.events if e.kind is EventKind.DUE]  # nor released
            earlier = list(so_far.events)  # a copy: an empty Effects may be the live one
        self.apply(earlier)

    @rule(pick=st.integers(0, 2), ok=st.booleans(), took=st.sampled_from([0, 0.5, 1, 3]), late=st.booleans())
    def work(self, pick: int, ok: bool, took: float, late: bool) -> None:
        """A worker with runs to do starts the next one it can claim, or finishes the one it runs."""
        workers = [w for w in range(self.workers) if self.pool.busy(w)]
        if not workers:
            return
        worker = workers[pick % len(workers)]
        if worker not in self.pool.current:
            self.start_run(self.pool.start(worker, self.now), self.now)
            self.apply()  # runs it skipped ended the tasks and may have freed the worker
            return
        msg = self.pool.current[worker]
        task = self.model.live_task(msg.task_id)
        assert task is not None
        if late:  # the report arrives after time moved on: finished_at in [start, now]
            finished_at = max(task["started_at"], self.now - took)
        else:
            self.now += took
            finished_at = self.now
        error = None
        if not ok:
            self.errors += 1
            error = RuntimeError(self.errors)
        self.pool.finish(worker, at=finished_at, now=self.now, value=None, error=error)
        self.model.finish(msg.task_id, error, finished_at)
        self.model.release(self.now)  # as the timetable did on the report, before any skip
        self.start_run(self.pool.current.get(worker), finished_at)  # claimed before reporting
        self.apply()

    @rule(worker=st.integers(0, 3), task_id=st.sampled_from(IDS), run=st.integers(0, 4), ok=st.booleans())
    def stale_report(self, worker: int, task_id: str, run: int, ok: bool) -> None:
        mine = [*self.pool.held(worker), *filter(None, [self.pool.current.get(worker)])]
        if any((m.task_id, m.run) == (task_id, run) for m in mine):
            return  # not stale
        if ok:
            self.table.completed(worker, task_id, run, None, finished_at=self.now, now=self.now)
        else:
            self.table.failed(worker, task_id, run, RuntimeError(), finished_at=self.now, now=self.now)
        effects = self.table.take_effects()
        assert not effects

    @rule(pick=st.integers(0, 2))
    def replace_worker(self, pick: int) -> None:
        """A worker dies (its started run fails, the others go back) and a new one takes its place."""
        worker = pick % self.workers
        error = WorkerLostError("gone")
        running = self.pool.current.get(worker)
        self.table.worker_lost(worker, error, now=self.now)
        self.pool.lose(worker)
        if running is not None:
            self.model.finish(running.task_id, error, self.now)
        self.lost.add(worker)
        self.apply()
        self.lost.discard(worker)
        self.table.add_worker(worker, now=self.now)
        self.apply()

    @rule()
    def shut_down(self) -> None:
        self.table.shut_down(now=self.now)
        self.model.shut_down(self.now)
        self.apply()

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
            waiting = task["state"] in ("pending", "waiting")
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
        running = {m.task_id for m in self.pool.current.values()}
        assert running == {t["id"] for t in self.model.in_state("running")}
        assert self.table.running_count == len(running) <= self.workers

    @invariant()
    def same_due_and_settled(self) -> None:
        assert self.table.next_due() == self.model.next_due()
        assert all(t["due_at"] > self.now for t in self.model.in_state("pending"))  # all due released
        busy = any(self.pool.busy(w) for w in range(self.workers))
        assert self.table.busy == busy
        assert self.table.is_settled(self.now) == (not busy)
        assert self.table.heap_size - self.table.live_count <= COMPACT_MIN_STALE + self.table.live_count

    @invariant()
    def no_due_run_waits_while_a_worker_is_idle(self) -> None:
        held = self.held()
        holding = {(m.task_id, m.run) for msgs in held.values() for m in msgs}
        unheld = [t for t in self.model.in_state("waiting") if (t["id"], t["runs"] + 1) not in holding]
        for msgs in held.values():  # handed runs were all due before any run still unhanded
            for msg in msgs:
                assert all(self.fifo(msg) < t["fifo"] for t in unheld)
        if all(self.pool.busy(w) for w in range(self.workers)):
            return
        assert not unheld, "a due run waits while a worker is idle"
        for worker in range(self.workers):
            runs = len(held[worker]) + (worker in self.pool.current)
            assert runs <= 1, f"worker {worker} holds {runs} runs while another worker is idle"


TimetableMachine.TestCase.settings = settings(
    max_examples=400, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_timetable_matches_model = TimetableMachine.TestCase


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_timetable_matches_model_stress() -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        TimetableMachine, settings=settings(max_examples=3000, stateful_step_count=100, deadline=None)
    )
