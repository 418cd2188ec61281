"""A stateful hypothesis test of pause, resume, run now and reschedule in the pure core.

The companion of ``test_lifecycle_model.py`` and ``test_timetable_model.py``: it drives a
``Timetable`` with fixed-rate and one-time tasks, two workers played by ``Pool`` one step at a
time, cancels, and the four operations of ``actors/core/operations.py``, in any order, and checks
after every step what ``docs/lifecycle.md`` promises of them:

- ``pause``/``resume`` answer as a model of the paused set says (``True`` for a live task not yet
  paused; ``True`` for a paused one), and a paused task shows ``PAUSED``;
- no scheduled run of a paused task is handed to a worker (only ``run_now``'s, marked ``manual``),
  and every manual run handed out answers one ``run_now`` that returned ``True``;
- a fixed-rate task waiting for its next run (in the heap, or paused) is always on its grid
  (``first_at + k * interval``): neither a manual run nor a pause moves it;
- ``run_now`` of a task with a run in flight answers as its overlap policy says (``"skip"``:
  ``False``; ``"queue"``, ``"replace"``: ``True``, one waiting run at most), a waiting one waits
  only behind a run in flight, and each ``True`` ends in one manual run handed out, or in the
  grid's own queued slot standing for it, or in the task's end;
- the table is whole: a ``PENDING`` task is in the heap and nothing else is, a ``PAUSED`` one is
  paused, the heap's live count is the pending tasks', and a task's ``run_count`` is the runs
  reported for it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from actors.core.effects import Effects
from actors.core.policies import Policies
from actors.core.task_record import TaskSpec
from actors.core.task_state import CANCELLING, HANDED, PAUSED, PENDING, READY, State
from actors.core.timetable import Timetable
from messages import FixedRate, Once, TaskStatus
from tests.unit.helpers import ALL_KINDS, Pool, make

IDS = ["a", "b", "c", "d"]
INTERVAL = 10.0


class ModelPool(Pool):
    """A ``Pool`` that shows every batch of effects it takes to the model (``run_everything`` too)."""

    def __init__(self, table: Timetable, seen: Callable[[Effects], None]) -> None:
        super().__init__(table)
        self.seen = seen

    def take(self) -> Effects:
        effects = super().take()
        self.seen(effects)
        return effects


class Operations(RuleBasedStateMachine):
    """The timetable, two hand-played workers, and what the model expects."""

    @initialize()
    def start(self) -> None:
        self.now = 0.0
        self.table = Timetable(workers=2)
        self.table.wanted = ALL_KINDS
        self.pool = ModelPool(self.table, self._seen)
        self.paused: set[str] = set()  # the model: tasks paused and not ended
        self.run_now_ok = 0  # run_now calls that returned True
        self.manual_runs: set[tuple[str, int, int]] = set()  # (task, generation, run): manual runs handed
        self.generation: dict[str, int] = {}  # task -> how often an id was scheduled (records come and go)
        self.reported: dict[str, int] = {}  # task -> runs reported (completed)
        self.rescheduled: set[str] = set()  # tasks given a trigger other than their first
        self.overlap: dict[str, str] = {}  # task -> its overlap policy
        self.queued: set[str] = set()  # tasks whose run_now waits for the run in flight
        self.undealt: set[str] = set()  # tasks whose run_now's run is due, not yet handed out
        self.settled_now = 0  # queued run_now calls answered by a slot's run or by the task's end

    # -- helpers

    def _take(self) -> None:
        self.pool.take()

    def _seen(self, effects: Effects) -> None:
        for _, run in effects.dispatches:
            if run.manual:  # (a run taken back and handed again, or stolen, is one run)
                self.undealt.discard(run.task_id)
                self.manual_runs.add((run.task_id, self.generation.get(run.task_id, 0), run.run))
            else:
                assert run.task_id not in self.paused, (
                    f"a scheduled run of paused {run.task_id!r} was handed out"
                )
        for task_id in sorted(self.queued - set(self.table._queued_now)):
            self.queued.discard(task_id)  # served: its manual run is due (_manual), or it stood down
            record = self.table.record(task_id)
            if task_id in self.table._manual:
                assert record is not None
                if (task_id, self.generation.get(task_id, 0), record.run_count + 1) not in self.manual_runs:
                    self.undealt.add(task_id)  # due, not handed out yet
            else:
                # A slot's queued run stands for it (due already), or the task ended.
                assert record is None or self.overlap.get(task_id, "skip") != "skip", task_id
                self.settled_now += 1
        for record, _ in effects.finished:
            self.paused.discard(record.task_id)
            if record.task_id in self.undealt:  # it ended before its run_now's run was handed out
                self.undealt.discard(record.task_id)
                self.settled_now += 1
        for event in effects.events:
            if event.kind.name == "COMPLETED":
                self.reported[event.task_id] = self.reported.get(event.task_id, 0) + 1

    # -- rules

    @rule(
        task_id=st.sampled_from(IDS),
        recurring=st.booleans(),
        offset=st.sampled_from([0.0, 3.0, 10.0]),
        overlap=st.sampled_from(["skip", "queue", "replace"]),
    )
    def schedule(self, task_id: str, recurring: bool, offset: float, overlap: str) -> None:
        if self.table.has(task_id):
            return
        trigger = FixedRate(INTERVAL, self.now + offset) if recurring else Once(self.now + offset)
        record = self.table.schedule(make(task_id, trigger), now=self.now)
        if recurring and overlap != "skip":  # (a Schedule message has no policies: set them as options do)
            spec = record.spec
            record.spec = TaskSpec(spec.trigger, spec.failure_limit, policies=Policies(overlap=overlap))
        self.overlap[task_id] = overlap if recurring else "skip"
        self.generation[task_id] = self.generation.get(task_id, 0) + 1
        self.queued.discard(task_id)
        self.rescheduled.discard(task_id)
        self.reported.pop(task_id, None)
        self._take()

    @rule(seconds=st.sampled_from([1.0, 4.0, 10.0, 25.0]))
    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.table.tick(now=self.now)
        self._take()

    @rule()
    def start_runs(self) -> None:
        self.pool.start_all(self.now)
        self._take()

    @rule(worker=st.sampled_from([0, 1]))
    def finish(self, worker: int) -> None:
        if worker in self.pool.current:
            self.pool.finish(worker, at=self.now)
            self._take()

    @rule(task_id=st.sampled_from(IDS))
    def pause(self, task_id: str) -> None:
        record = self.table.record(task_id)
        ending = record is None or record.state is State.CANCELLING
        expected = not ending and task_id not in self.paused
        assert self.table.pause(task_id, now=self.now) is expected
        if expected:
            self.paused.add(task_id)
        self._take()

    @rule(task_id=st.sampled_from(IDS))
    def resume(self, task_id: str) -> None:
        expected = task_id in self.paused
        assert self.table.resume(task_id, now=self.now) is expected
        self.paused.discard(task_id)
        self._take()

    @rule(task_id=st.sampled_from(IDS))
    def run_now(self, task_id: str) -> None:
        record = self.table.record(task_id)
        expected = record is not None and record.state in (State.PENDING, State.PAUSED)
        waits = (
            record is not None
            and record.state in (READY, HANDED)
            and record.spec.trigger is not None
            and record.spec.policies.overlap != "skip"
            and task_id not in self.queued
        )
        assert self.table.run_now(task_id, now=self.now) is (expected or waits)
        self.run_now_ok += expected or waits
        if expected:
            self.undealt.add(task_id)
        if waits:
            self.queued.add(task_id)
        self._take()

    @rule(task_id=st.sampled_from(IDS), interval=st.sampled_from([5.0, 10.0, 20.0]), once=st.booleans())
    def reschedule(self, task_id: str, interval: float, once: bool) -> None:
        trigger = Once(self.now + interval) if once else FixedRate(interval)
        record = self.table.record(task_id)
        in_hand = [*self.pool.current.values(), *self.pool.claimed.values()]
        # A run_now's run not started yet gives way to a new trigger (withdrawn).
        withdrawn = (
            record is not None
            and task_id in self.table._manual
            and record.state in (READY, HANDED)
            and not any(run.task is record for run in in_hand)
        )
        key = (task_id, self.generation.get(task_id, 0), record.run_count + 1 if record is not None else 0)
        if self.table.reschedule(task_id, trigger, now=self.now):
            self.rescheduled.add(task_id)
            if withdrawn:
                self.undealt.discard(task_id)
                self.manual_runs.discard(key)
                self.settled_now += 1
        self._take()

    @rule(task_id=st.sampled_from(IDS))
    def cancel(self, task_id: str) -> None:
        self.table.cancel(task_id, now=self.now)
        self._take()

    @rule()
    def settle(self) -> None:
        self.pool.run_everything(self.now)
        self._take()
        assert not self.table._queued_now  # nothing in flight: no run_now waits
        # Every run_now's run was handed out, once (or a queued one stood down).
        assert len(self.manual_runs) + self.settled_now == self.run_now_ok

    # -- invariants

    @invariant()
    def whole(self) -> None:
        table = self.table
        pending = 0
        for task_id, record in table.tasks.items():
            assert (record.state is PENDING) == (record.heap_seq is not None), (task_id, record.state)
            pending += record.state is PENDING
            if record.state is PAUSED:
                assert task_id in self.paused
            status = table.info(task_id).status
            assert (status is TaskStatus.PAUSED) == (task_id in self.paused), (task_id, status)
            trigger = record.spec.trigger
            if isinstance(trigger, FixedRate) and record.state in (PENDING, PAUSED):
                assert trigger.first_at is not None
                slots = (record.due_at - trigger.first_at) / trigger.interval
                assert math.isclose(slots, round(slots), abs_tol=1e-9), (task_id, record.due_at, trigger)
            assert record.run_count == self.reported.get(task_id, 0)
        assert len(table._heap) == pending
        assert len(self.manual_runs) + self.settled_now <= self.run_now_ok
        for task_id in table._queued_now:  # a run_now waits only behind a run in flight
            record = table.record(task_id)
            assert record is not None, task_id
            assert record.state in (READY, HANDED, CANCELLING), (task_id, record.state)
            assert task_id in self.queued
        assert set(table._paused) == self.paused


Operations.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
test_operations = Operations.TestCase
