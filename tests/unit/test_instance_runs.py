"""``overlap="allow"`` in the pure core, by hand: up to N runs of one task at once, each its own record.

The timetable is driven with the test pool (``tests/unit/helpers.py``), which plays the workers'
side of the protocol: claims, token moves, reports. No threads, no clock: every time is given.
"""

from __future__ import annotations

import pytest

from actors.core.policies import DEFAULT_POLICIES, Policies, check_policies
from actors.core.retry import Retry
from actors.core.task_record import RunInstance, TaskRecord, TaskSpec
from actors.core.task_state import State
from actors.core.timetable import Timetable
from actors.errors import RunCancelled, TaskTimeoutError
from actors.sync.claim import ABANDONED, INTERRUPTED, NOT_STOPPED, TIMED_OUT
from messages import EventKind, FixedRate, TaskStatus
from tests.unit.helpers import Pool, noop, revoke, timetable


def allowing(
    task_id: str = "a", n: int = 2, *, interval: float = 10.0, failure_limit: int | None = None
) -> TaskRecord:
    spec = TaskSpec(FixedRate(interval, 0.0), failure_limit, policies=Policies("allow", n))
    return TaskRecord(task_id, noop, (), {}, 0.0, None, spec)


def setup(workers: int = 4) -> tuple[Timetable, Pool]:
    table = timetable(workers)
    return table, Pool(table, announce=True)


def events_of(table: Timetable, pool: Pool) -> list[tuple[EventKind, int | None, float | None, str | None]]:
    return [(e.kind, e.run, e.due_at, e.reason) for e in pool.take().events if e.task_id == "a"]


# -- the rules of the options ----------------------------------------------------------------------


def test_allow_keeps_max_instances_and_defaults_it_to_one() -> None:
    assert check_policies("allow", 3, "latest", 100, 0.0, recurring=True).max_instances == 3
    assert check_policies("allow", None, "latest", 100, 0.0, recurring=True).max_instances == 1
    assert check_policies("allow", 2, "latest", 100, 0.0, recurring=True).allows


@pytest.mark.parametrize("overlap", ["skip", "queue", "replace"])
def test_max_instances_one_means_what_every_other_policy_means(overlap: str) -> None:
    policies = check_policies(overlap, 1, "latest", 100, 0.0, recurring=True)
    assert policies.max_instances is None
    if overlap == "skip":
        assert policies is DEFAULT_POLICIES  # the plain path stays one identity test


@pytest.mark.parametrize(
    ("overlap", "max_instances", "error", "words"),
    [
        ("skip", 2, ValueError, 'needs overlap="allow"'),
        ("queue", 5, ValueError, 'needs overlap="allow"'),
        ("allow", 0, ValueError, "at least 1"),
        ("skip", -1, ValueError, "at least 1"),
        ("allow", 2.0, TypeError, "must be an int"),
        ("allow", True, TypeError, "must be an int"),
    ],
)
def test_bad_max_instances_is_refused(
    overlap: str, max_instances: object, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        check_policies(overlap, max_instances, "latest", 100, 0.0, recurring=True)


def test_allow_is_for_recurring_tasks_only() -> None:
    with pytest.raises(ValueError, match="recurring tasks only"):
        check_policies("allow", 2, "latest", 100, 0.0, recurring=False)


# -- runs at once ----------------------------------------------------------------------------------


def test_slots_due_while_fewer_than_n_run_start_new_runs_each_numbered() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    pool.take()
    first = pool.start(0, now=0.0)
    table.tick(now=10.0)
    pool.take()
    second = pool.start(1, now=10.0)
    assert first is not None
    assert second is not None
    assert (first.run, first.due_at, second.run, second.due_at) == (1, 0.0, 2, 10.0)
    assert isinstance(first.task, RunInstance)
    assert first.task is not second.task
    info = table.info("a")
    assert (info.status, info.active_runs, info.next_run_at) == (TaskStatus.SCHEDULED, 2, 20.0)


def test_a_slot_due_with_n_runs_going_is_missed_for_overlap_and_counted() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.tick(now=10.0)
    pool.take()
    pool.start(1, now=10.0)
    events_of(table, pool)
    table.tick(now=20.0)
    assert events_of(table, pool) == [(EventKind.MISSED, 3, 20.0, "overlap")]
    info = table.info("a")
    assert (info.missed_count, info.active_runs, info.next_run_at) == (1, 2, 30.0)
    pool.finish(0, at=25.0)
    table.tick(now=30.0)  # one run ended: the next slot starts a run again
    pool.take()
    third = pool.start(0, now=30.0)
    assert third is not None
    assert third.run == 3  # a missed slot takes no number: its MISSED named the next run's


def test_each_run_reports_its_own_events_and_history_and_the_task_counts_them() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    seen = events_of(table, pool)
    pool.start(0, now=0.0)
    table.tick(now=10.0)
    seen += events_of(table, pool)
    pool.start(1, now=10.0)
    pool.finish(1, at=11.0, value="two")  # the later run ends first
    pool.finish(0, at=12.0, error=RuntimeError("one"))
    seen += events_of(table, pool)
    assert [(kind, run) for kind, run, _, _ in seen] == [
        (EventKind.DUE, 1),
        (EventKind.STARTED, 1),
        (EventKind.DUE, 2),
        (EventKind.STARTED, 2),
        (EventKind.COMPLETED, 2),
        (EventKind.FAILED, 1),
    ]
    info = table.info("a")
    assert (info.run_count, info.failure_count, info.active_runs) == (2, 1, 0)
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.outcome, r.due_at) for r in history] == [(1, "failed", 0.0), (2, "completed", 10.0)]


def test_run_now_starts_another_run_while_fewer_than_n_go_and_keeps_the_grid() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    assert table.run_now("a", now=3.0) is True
    pool.take()
    manual = pool.start(1, now=3.0)
    assert manual is not None
    assert (manual.run, manual.manual) == (2, True)
    assert table.run_now("a", now=4.0) is False  # two go: refused, nothing queued
    assert table.info("a").next_run_at == 10.0
    pool.finish(1, at=5.0)
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.manual) for r in history] == [(2, True)]


def test_cancel_stops_future_runs_and_the_task_ends_when_its_last_run_reports() -> None:
    table, pool = setup(workers=2)
    table.add(allowing(n=3), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.tick(now=10.0)
    pool.take()
    pool.start(1, now=10.0)
    table.tick(now=20.0)  # a third run, due, waiting for a worker
    pool.take()
    assert table.cancel("a", now=21.0) is True
    assert table.info("a").status is TaskStatus.RUNNING  # CANCELLING: two runs go on
    table.tick(now=30.0)
    pool.finish(0, at=31.0)
    assert table.info("a").status is TaskStatus.RUNNING
    pool.finish(1, at=32.0)
    effects = pool.take()
    info = table.info("a")
    assert (info.status, info.run_count) == (TaskStatus.CANCELLED, 2)  # the waiting third never ran
    assert [e.kind for e in effects.events if e.task_id == "a"][-1] is EventKind.CANCELLED
    assert [run for _, _, run in pool.started] == [1, 2]


def test_a_caller_cancel_through_the_token_stops_a_handed_run_from_starting() -> None:
    table, pool = setup(workers=1)
    table.add(allowing(), now=0.0)
    pool.take()
    task = table.record("a")
    assert task is not None
    pool.claim(0)  # the worker claimed run 1, and has not started it
    report = revoke(task)  # the handle's cancel wins the task's token
    assert report is not None
    assert pool.step(0, now=1.0) is None  # the run's own token would let it: the task's does not
    table.cancelled(report, now=1.0)
    pool.take()
    assert table.info("a").status is TaskStatus.CANCELLED
    assert table.info("a").run_count == 0


def test_reaching_the_failure_limit_ends_the_task_and_no_waiting_run_starts() -> None:
    table, pool = setup(workers=1)
    table.add(allowing(n=3, failure_limit=1), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.tick(now=10.0)  # run 2 waits for the one worker
    pool.take()
    pool.finish(0, at=11.0, error=RuntimeError("boom"))
    effects = pool.take()
    failed = [e for e in effects.events if e.kind is EventKind.FAILED]
    assert [(e.run, e.final) for e in failed] == [(1, True)]
    info = table.info("a")
    assert (info.status, info.run_count) == (TaskStatus.FAILED, 1)
    assert [run for _, _, run in pool.started] == [1]


def test_pause_stops_new_runs_and_runs_going_finish() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    assert table.pause("a", now=1.0) is True
    table.tick(now=50.0)
    pool.take()
    assert pool.start(1, now=50.0) is None
    pool.finish(0, at=51.0)
    info = table.info("a")
    assert (info.status, info.run_count, info.active_runs) == (TaskStatus.PAUSED, 1, 0)


def test_the_plain_task_makes_no_run_instance() -> None:
    table, pool = setup()
    table.add(TaskRecord("p", noop, (), {}, 0.0, None, TaskSpec(FixedRate(10.0, 0.0))), now=0.0)
    pool.take()
    run = pool.start(0, now=0.0)
    assert run is not None
    assert not isinstance(run.task, RunInstance)
    assert not table._instances


def test_shutdown_lets_runs_going_end_and_ends_the_task_cancelled() -> None:
    table, pool = setup(workers=1)
    table.add(allowing(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.tick(now=10.0)  # run 2 waits for the worker
    pool.take()
    table.shut_down(now=11.0)
    pool.take()
    assert table.info("a").status is TaskStatus.RUNNING
    pool.finish(0, at=12.0)
    pool.take()
    info = table.info("a")
    assert (info.status, info.run_count) == (TaskStatus.CANCELLED, 1)
    assert not table.busy


# -- each run its own deadline (timeout) -----------------------------------------------------------


def timed(n: int = 2, timeout: float = 5.0) -> TaskRecord:
    spec = TaskSpec(FixedRate(10.0, 0.0), timeout=timeout, policies=Policies("allow", n))
    return TaskRecord("a", noop, (), {}, 0.0, None, spec)


def test_each_run_has_its_own_deadline_and_only_the_late_one_times_out() -> None:
    table, pool = setup()
    table.add(timed(), now=0.0)
    pool.take()
    first = pool.start(0, now=0.0)  # its deadline: 5
    assert table.run_now("a", now=1.0) is True
    pool.take()
    second = pool.start(1, now=1.0)  # its deadline: 6
    assert first is not None
    assert second is not None
    assert table.next_due() == 5.0  # run 1's deadline, before the task's next slot (10)
    events_of(table, pool)
    table.tick(now=5.0)
    assert [(kind, run) for kind, run, _, _ in events_of(table, pool)] == [(EventKind.TIMED_OUT, 1)]
    assert first.claim.stop == TIMED_OUT
    assert second.claim.stop == NOT_STOPPED
    pool.finish(0, at=5.5, error=RunCancelled("asked to stop"))  # run 1 stops as asked
    pool.finish(1, at=5.8, value="two")  # run 2 ends before its deadline
    table.tick(now=6.0)
    effects = pool.take()
    ends = [(e.kind, e.run, type(e.error)) for e in effects.events if e.task_id == "a"]
    assert ends == [(EventKind.FAILED, 1, TaskTimeoutError), (EventKind.COMPLETED, 2, type(None))]
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 2, 1, 0,
    )  # fmt: skip
    assert (info.next_run_at, table.next_due()) == (10.0, 10.0)  # the deadlines are gone, the slot stays
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.outcome) for r in history] == [(2, "completed"), (1, "timed_out")]  # newest first


def test_a_hung_run_is_abandoned_at_its_grace_and_the_other_runs_go_on() -> None:
    table, pool = setup()
    table.add(timed(timeout=2.0), now=0.0)
    pool.take()
    hung = pool.start(0, now=0.0)
    assert hung is not None
    table.tick(now=1.0)
    assert table.run_now("a", now=1.0) is True
    pool.take()
    pool.start(1, now=1.0)  # its deadline: 3
    table.tick(now=2.0)  # run 1 is asked to stop; its grace (5 s, the default) ends at 7
    pool.finish(1, at=2.5)  # run 2 ends in time
    pool.take()
    table.tick(now=7.0)
    effects = pool.take()
    assert effects.abandoned == [0]
    assert hung.claim.stop == TIMED_OUT | ABANDONED
    failed = [e for e in effects.events if e.kind is EventKind.FAILED]
    assert [(e.run, type(e.error)) for e in failed] == [(1, TaskTimeoutError)]
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 2, 1, 0,
    )  # fmt: skip
    assert table.next_due() == 10.0
    table.tick(now=10.0)  # the next slot starts its run as ever (on the other worker)
    pool.take()
    third = pool.start(1, now=10.0)
    assert third is not None
    assert third.run == 3


def test_a_runs_deadline_entry_goes_with_a_shutdown() -> None:
    table, pool = setup()
    table.add(timed(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.shut_down(now=1.0)
    pool.take()
    pool.finish(0, at=2.0)  # its report takes out a deadline the cleared heap no longer counts
    pool.take()
    assert table.info("a").status is TaskStatus.CANCELLED
    assert (table.waiting_in_heap, table.next_due()) == (0, None)
    assert not table.busy


# -- each run its own retries ----------------------------------------------------------------------


def retried(n: int = 2, attempts: int = 2) -> TaskRecord:
    spec = TaskSpec(
        FixedRate(10.0, 0.0),
        retry=Retry(attempts=attempts, delay=3.0, jitter=0.0),
        policies=Policies("allow", n),
    )
    return TaskRecord("a", noop, (), {}, 0.0, None, spec)


def attempts_of(table: Timetable, pool: Pool) -> list[tuple[EventKind, int | None, int, bool]]:
    return [(e.kind, e.run, e.attempt, e.retrying) for e in pool.take().events if e.task_id == "a"]


def test_a_failed_runs_retry_is_its_own_and_blocks_neither_other_runs_nor_the_slots() -> None:
    table, pool = setup()
    table.add(retried(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    pool.finish(0, at=1.0, error=RuntimeError("once"))
    assert attempts_of(table, pool) == [(EventKind.STARTED, 1, 1, False), (EventKind.FAILED, 1, 1, True)]
    info = table.info("a")
    assert (info.active_runs, info.failure_count, info.next_run_at) == (1, 0, 10.0)  # run 1 still goes
    assert table.next_due() == 4.0  # its next attempt, 3 s after it failed
    assert table.run_now("a", now=2.0) is True  # one more run beside it: 2 of 2
    seen = attempts_of(table, pool)
    [other] = pool.start_all(now=2.0)
    assert other.run == 2
    table.tick(now=4.0)
    seen += attempts_of(table, pool)
    [again] = pool.start_all(now=4.0)
    assert (again.run, again.task.parent) == (1, table.record("a"))  # the same run, its second attempt
    assert [*seen, *attempts_of(table, pool)] == [
        (EventKind.DUE, 2, 1, False),
        (EventKind.STARTED, 2, 1, False),
        (EventKind.DUE, 1, 2, False),
        (EventKind.STARTED, 1, 2, False),
    ]
    worker_of = {run.run: worker for worker, run in pool.current.items()}
    pool.finish(worker_of[1], at=5.0, value="one")
    pool.finish(worker_of[2], at=6.0, value="two")
    assert attempts_of(table, pool) == [
        (EventKind.COMPLETED, 1, 2, False),
        (EventKind.COMPLETED, 2, 1, False),
    ]
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 2, 0, 0,
    )  # fmt: skip
    assert (info.next_run_at, table.next_due()) == (10.0, 10.0)
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.outcome, r.attempt, r.due_at) for r in history] == [
        (2, "completed", 1, 2.0),
        (1, "completed", 2, 0.0),  # at its own slot, not its retry's
    ]


def test_a_run_out_of_attempts_fails_once_for_its_task() -> None:
    table, pool = setup()
    table.add(retried(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    pool.finish(0, at=1.0, error=RuntimeError("once"))
    table.tick(now=4.0)
    pool.take()
    pool.start(0, now=4.0)
    pool.finish(0, at=5.0, error=RuntimeError("twice"))
    assert attempts_of(table, pool)[-1] == (EventKind.FAILED, 1, 2, False)
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 1, 1, 0,
    )  # fmt: skip
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.outcome, r.attempt) for r in history] == [(1, "failed", 2)]


def test_a_cancel_takes_back_a_runs_waiting_attempt_and_ends_the_task_at_once() -> None:
    table, pool = setup()
    table.add(retried(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    pool.finish(0, at=1.0, error=RuntimeError("once"))
    assert table.cancel("a", now=2.0) is True
    pool.take()
    info = table.info("a")
    assert (info.status, info.run_count, info.active_runs) == (TaskStatus.CANCELLED, 0, 0)
    assert (table.next_due(), table.waiting_in_heap) == (None, 0)
    table.tick(now=4.0)
    assert not pool.take().dispatches


def test_a_shutdown_ends_a_runs_waiting_attempt() -> None:
    table, pool = setup()
    table.add(retried(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    pool.finish(0, at=1.0, error=RuntimeError("once"))
    table.shut_down(now=2.0)
    pool.take()
    assert table.info("a").status is TaskStatus.CANCELLED
    assert (table.next_due(), table.waiting_in_heap) == (None, 0)
    assert not table.busy


# -- cancel(interrupt=True) ------------------------------------------------------------------------


def test_an_interrupting_cancel_asks_every_run_going_to_stop() -> None:
    table, pool = setup(workers=2)
    table.add(allowing(n=3), now=0.0)
    pool.take()
    first = pool.start(0, now=0.0)
    table.tick(now=10.0)
    pool.take()
    second = pool.start(1, now=10.0)
    table.tick(now=20.0)  # a third run, due, waiting for a worker
    pool.take()
    assert first is not None
    assert second is not None
    assert table.cancel("a", now=21.0, interrupt=True) is True
    assert (first.claim.stop, second.claim.stop) == (INTERRUPTED, INTERRUPTED)
    assert table.info("a").status is TaskStatus.RUNNING  # CANCELLING: two runs go on
    pool.finish(0, at=22.0, error=RunCancelled("asked to stop"))  # run 1 stops as asked
    assert table.info("a").status is TaskStatus.RUNNING
    pool.finish(1, at=23.0, value="anyway")  # run 2 returns all the same: it counts
    effects = pool.take()
    info = table.info("a")
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.CANCELLED, 1, 0)
    assert [e.kind for e in effects.events if e.task_id == "a"] == [EventKind.COMPLETED, EventKind.CANCELLED]
    history = table.runs("a", 10, wall_offset=0.0)
    assert history is not None
    assert [(r.run, r.outcome) for r in history] == [(2, "completed"), (1, "cancelled")]
    assert [run for _, _, run in pool.started] == [1, 2]  # the third never started


def test_an_interrupting_cancel_of_an_allow_task_with_no_run_going_only_cancels() -> None:
    table, pool = setup()
    table.add(allowing(), now=0.0)
    pool.run_everything(0.0)
    assert table.cancel("a", now=1.0, interrupt=True) is True
    pool.take()
    assert table.info("a").status is TaskStatus.CANCELLED


def test_a_pause_lets_a_runs_waiting_attempt_run_as_runs_going_finish() -> None:
    table, pool = setup()
    table.add(retried(), now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    pool.finish(0, at=1.0, error=RuntimeError("once"))
    assert table.pause("a", now=2.0) is True
    table.tick(now=4.0)
    pool.take()
    [again] = pool.start_all(now=4.0)
    assert (again.run, again.attempt) == (1, 2)
    pool.finish(next(iter(pool.current)), at=5.0)
    info = table.info("a")
    assert (info.status, info.run_count, info.active_runs) == (TaskStatus.PAUSED, 1, 0)


# -- a durable task: its store learns each run; a shared node's lease ends with the last ---------


def stored_allowing() -> TaskRecord:
    task = allowing()
    task.store_seq = 7
    task.due_wall = 0.0
    return task


def test_on_a_shared_node_the_task_stays_while_runs_go_and_is_left_to_its_store_with_the_last() -> None:
    table, pool = setup()
    table.durable_runs_once = True  # a shared store's node: a leased task goes back after its runs
    task = stored_allowing()
    table.add(task, now=0.0)
    assert task in pool.take().saves  # its slot came: the store learns the next one (lease kept)
    pool.start(0, now=0.0)
    table.tick(now=10.0)  # a slot while run 1 goes: run 2 beside it, under the same hold
    pool.take()
    pool.start(1, now=10.0)
    pool.finish(0, at=11.0)
    effects = pool.take()
    assert task in effects.saves  # run 1 saved as it ends, while run 2 goes
    assert [outcome.entry.run for outcome in effects.ledger] == [1]
    assert table.info("a").active_runs == 1
    assert table.has("a")
    pool.finish(1, at=12.0)
    effects = pool.take()
    assert task in effects.saves
    assert [outcome.entry.run for outcome in effects.ledger] == [2]
    assert not table.has("a")  # the last run going ended: left to its store (its lease ends)
    assert task.state is State.DETACHED
    assert (task.run_count, task.due_at) == (2, 20.0)
    assert not table.busy


def test_a_stopping_scheduler_leaves_a_durable_task_to_its_store_once_its_runs_going_end() -> None:
    table, pool = setup()
    task = stored_allowing()
    table.add(task, now=0.0)
    pool.take()
    pool.start(0, now=0.0)
    table.shut_down(now=1.0)
    pool.take()
    assert table.has("a")  # its run goes on: its outcome is saved before it is let go
    pool.finish(0, at=2.0)
    effects = pool.take()
    assert task in effects.saves
    assert [outcome.entry.run for outcome in effects.ledger] == [1]
    assert task.state is State.DETACHED
    assert not table.busy
