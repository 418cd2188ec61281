"""The Timetable driven by hand: no threads, no clock, just ``now`` values, Effects and a Pool."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actors.core.dealer import BATCH
from actors.core.due_heap import COMPACT_MIN_STALE
from actors.core.task_record import TaskRecord
from actors.core.timetable import Timetable
from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError, WorkerLostError
from actors.sync.token import TokenState
from messages import (
    Cancelled,
    Completed,
    EventKind,
    Failed,
    FixedDelay,
    FixedRate,
    Once,
    Schedule,
    Skipped,
    Started,
    TaskStatus,
    Trigger,
)
from tests.unit.helpers import Pool, dispatched, events, make, noop, revoke, take, timetable, traceback_of

DUE, STARTED, COMPLETED, FAILED, CANCELLED = (
    EventKind.DUE,
    EventKind.STARTED,
    EventKind.COMPLETED,
    EventKind.FAILED,
    EventKind.CANCELLED,
)
SCHEDULED, RUNNING = TaskStatus.SCHEDULED, TaskStatus.RUNNING


def status(table: Timetable, task_id: str) -> TaskStatus:
    return table.info(task_id).status


def setup(workers: int = 1, **kwargs: object) -> tuple[Timetable, Pool]:
    table = timetable(workers, **kwargs)  # type: ignore[arg-type]
    return table, Pool(table)


def ended(record: TaskRecord, table: Timetable, outcome: object = None) -> None:
    """``record`` has ended: its token is FINISHED with ``outcome``, and it shows what ``info`` shows."""
    assert (record.token_state, record.outcome) == (TokenState.FINISHED, outcome)
    assert record.snapshot() == table.info(record.task_id)


# -- construction -------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [0, -1])
def test_needs_a_worker(workers: int) -> None:
    with pytest.raises(ValueError, match="workers"):
        Timetable(workers=workers)


def test_history_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="history"):
        Timetable(workers=1, history=-1)


def test_starts_empty() -> None:
    table = timetable(2)
    assert table.next_due() is None
    assert table.is_settled(0.0)
    assert not table.busy
    assert table.infos() == []
    assert dict(table.tasks) == {}
    assert table.running_count == table.heap_size == table.live_count == 0
    assert not table.take_effects()


def test_keeps_live_tasks_in_the_dict_its_owner_gives() -> None:
    live: dict[str, TaskRecord] = {}
    table = Timetable(workers=1, tasks=live)
    a = table.schedule(make("a", Once(5.0)), now=0.0)
    assert live == {"a": a}
    assert table.tasks["a"] is a
    with pytest.raises(TypeError):
        table.tasks["b"] = a  # type: ignore[index]  # read-only for everyone else
    table.cancel("a", now=0.0)
    assert live == {}


# -- adding tasks: schedule builds the record, add adopts one, refuse ends one never added -------


def test_schedule_builds_and_returns_the_record() -> None:
    table = timetable(1)
    record = table.schedule(
        make("a", FixedRate(2.0, 5.0), args=(1,), kwargs={"k": 2}, name="nice", max_consecutive_failures=3),
        now=0.0,
    )
    assert table.tasks["a"] is record
    assert (record.task_id, record.args, dict(record.kwargs), record.name) == ("a", (1,), {"k": 2}, "nice")
    assert (record.trigger, record.due_at, record.failure_limit) == (FixedRate(2.0, 5.0), 5.0, 3)
    assert record.token_state is TokenState.FREE
    assert record.snapshot() == table.info("a")


def test_schedule_without_an_id_takes_the_one_given() -> None:
    table = timetable(1)
    minted = table.schedule(Schedule(fn=noop, trigger=Once(5.0)), now=0.0, task_id="task-7")
    assert minted.task_id == "task-7"
    assert table.info("task-7").status is SCHEDULED
    own = table.schedule(make("mine", Once(5.0)), now=0.0, task_id="task-8")
    assert own.task_id == "mine"  # an id the caller chose is kept


def test_add_adopts_a_record_built_elsewhere() -> None:
    table, pool = setup(1)
    record = TaskRecord.from_schedule(make("a", Once(0.0)), "a", now=0.0, wall_offset=0.0)
    table.add(record, now=0.0)
    assert table.tasks["a"] is record
    ((_, msg),) = pool.take().dispatches
    assert msg.task is record
    with pytest.raises(DuplicateTaskError, match="'a'"):
        table.add(TaskRecord.from_schedule(make("a", Once(0.0)), "a", now=0.0, wall_offset=0.0), now=0.0)
    assert table.tasks["a"] is record


def test_refuse_ends_a_record_never_added() -> None:
    table = timetable(1)
    live = table.schedule(make("a", Once(5.0)), now=0.0)
    take(table)
    duplicate = TaskRecord.from_schedule(make("a", Once(0.0)), "a", now=0.0, wall_offset=0.0)
    with pytest.raises(DuplicateTaskError):
        table.add(duplicate, now=0.0)
    table.refuse(duplicate, now=0.0)
    assert duplicate.token_state is TokenState.REVOKED  # no run of it can ever start
    effects = take(table)
    assert effects.finished == [(duplicate, None)]
    assert not effects.events  # it never was a task: nobody hears of it
    assert duplicate.token_state is TokenState.FINISHED
    assert duplicate.snapshot().status is TaskStatus.CANCELLED
    assert table.tasks["a"] is live
    assert status(table, "a") is SCHEDULED


# -- one-time tasks -----------------------------------------------------------------------------


def test_one_time_runs_once_at_its_due_time() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(10.0)), now=0.0)
    assert not pool.take()
    assert table.next_due() == 10.0
    assert table.info("a").next_run_at == 10.0
    assert table.is_settled(9.999)
    assert not table.is_settled(10.0)
    table.tick(now=9.999)
    assert not pool.take()
    table.tick(now=10.0)
    effects = pool.take()
    assert dispatched(effects) == [(0, "a", 1)]
    assert events(effects) == [(DUE, "a", 1)]  # STARTED comes once the worker says it started
    assert (effects.events[0].at, effects.events[0].due_at) == (10.0, 10.0)
    ((_, msg),) = effects.dispatches
    assert (msg.task, msg.announce, msg.one_time) == (a, True, True)
    # handed: its worker runs it or is about to, so it shows RUNNING already
    info = table.info("a")
    assert (info.status, info.next_run_at, table.running_count, table.busy) == (RUNNING, None, 1, True)
    assert not table.is_settled(10.0)
    assert pool.start(0) is msg
    assert a.token_state is TokenState.TAKEN
    info = table.info("a")
    assert (info.status, info.next_run_at, table.running_count) == (RUNNING, None, 1)
    pool.finish(0, at=10.5, value="value")
    effects = pool.take()
    assert events(effects) == [(COMPLETED, "a", 1)]
    assert (effects.events[0].at, effects.events[0].value, effects.events[0].final) == (10.5, "value", True)
    assert not effects.dispatches
    info = table.info("a")
    assert info.done
    assert (info.status, info.run_count, info.failure_count, info.next_run_at, info.end_reason) == (
        TaskStatus.COMPLETED,
        1,
        0,
        None,
        "completed",
    )
    ended(a, table, "value")
    assert (table.live_count, table.busy, table.running_count) == (0, False, 0)
    table.tick(now=1e9)
    assert not pool.take()
    assert table.is_settled(1e9)


@pytest.mark.parametrize(("trigger", "one_time"), [(Once(0.0), True), (FixedDelay(1.0, 0.0), False)])
def test_run_task_carries_the_task_and_what_to_run(trigger: Once | FixedDelay, one_time: bool) -> None:
    def fn(*args: object, **kwargs: object) -> None:
        return None

    table = timetable(1, wanted=frozenset())
    record = table.schedule(make("a", trigger, fn=fn, args=(1, 2), kwargs={"x": 3}), now=0.0)
    ((_, msg),) = table.take_effects().dispatches
    assert (msg.task, msg.task_id, msg.run, msg.due_at) == (record, "a", 1, 0.0)
    assert (msg.fn, msg.args, dict(msg.kwargs), msg.one_time) == (fn, (1, 2), {"x": 3}, one_time)
    assert msg.announce is False  # nobody listens for STARTED
    assert msg.claim.take()  # a fresh claim: the worker gets it


def test_past_due_time_runs_asap_from_schedule_itself() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(-50.0)), now=0.0)
    effects = pool.take()
    assert dispatched(effects) == [(0, "a", 1)]
    assert (effects.events[0].at, effects.events[0].due_at) == (0.0, -50.0)


def test_due_exactly_now_runs_from_schedule() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(5.0)), now=5.0)
    assert dispatched(pool.take()) == [(0, "a", 1)]


def test_due_task_waits_for_a_busy_worker() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    table.schedule(make("b", Once(0.0)), now=0.0)
    effects = pool.take()
    assert dispatched(effects) == [(0, "a", 1)]
    assert events(effects) == [(DUE, "a", 1), (DUE, "b", 1)]
    assert (status(table, "b"), table.info("b").next_run_at) == (SCHEDULED, 0.0)
    pool.start(0)
    pool.finish(0, at=1.0)
    effects = pool.take()
    assert events(effects) == [(COMPLETED, "a", 1)]
    assert dispatched(effects) == [(0, "b", 1)]


def test_one_time_failure() -> None:
    table, pool = setup(1)
    error = RuntimeError("boom")
    a = table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=2.0, error=error)
    effects = pool.take()
    assert events(effects) == [(FAILED, "a", 1)]
    event = effects.events[0]
    assert (event.error, event.traceback, event.final) == (error, traceback_of(error), True)
    info = table.info("a")
    counters = (info.status, info.run_count, info.failure_count, info.consecutive_failures)
    assert counters == (TaskStatus.FAILED, 1, 1, 1)
    assert (info.last_error, info.last_traceback, info.end_reason) == (
        error,
        traceback_of(error),
        "the run failed",
    )
    ended(a, table, None)


# -- ordering, batches and concurrency ------------------------------------------------------------


def test_equal_due_times_run_in_scheduling_order() -> None:
    table, pool = setup(1)
    for name in "cab":
        table.schedule(make(name, Once(5.0)), now=0.0)
    table.tick(now=5.0)
    assert [t for _, t, _ in pool.run_everything(5.0)] == ["c", "a", "b"]


def test_equal_due_times_dispatch_in_scheduling_order_across_workers() -> None:
    table, pool = setup(3)
    for name in "cab":
        table.schedule(make(name, Once(5.0)), now=0.0)
    table.tick(now=5.0)
    effects = pool.take()
    assert [t for _, t, _ in dispatched(effects)] == ["c", "a", "b"]
    assert len({w for w, _, _ in dispatched(effects)}) == 3


def test_earlier_due_time_first_then_scheduling_order() -> None:
    table, pool = setup(1)
    for name, at in [("x", 3.0), ("y", 1.0), ("z", 3.0), ("w", 2.0), ("v", 1.0)]:
        table.schedule(make(name, Once(at)), now=0.0)
    table.tick(now=10.0)
    assert [t for _, t, _ in pool.run_everything(10.0)] == ["y", "v", "w", "x", "z"]


def test_fifo_across_ticks_with_one_worker_and_backlog() -> None:
    table, pool = setup(1)
    names = [f"t{i}" for i in range(BATCH + 5)]
    for name in names:
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.schedule(make("late", Once(1.5)), now=0.0)
    table.schedule(make("later", Once(2.0)), now=0.0)
    table.tick(now=1.0)
    now = 1.0
    pool.take()
    pool.start(0)
    while pool.current:
        now += 0.25
        table.tick(now=now)  # ticks while the worker is busy change nothing about the order
        pool.take()
        pool.finish(0, at=now)
        pool.take()
        if not pool.current:
            pool.start(0)
    assert [t for _, t, _ in pool.started] == [*names, "late", "later"]


def test_backlog_goes_out_in_batches_of_at_most_batch() -> None:
    table, pool = setup(1, wanted=frozenset())
    count = 2 * BATCH + 3
    for i in range(count):
        table.schedule(make(f"t{i:03}", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    sizes = []
    while True:
        effects = pool.take()
        if not effects.dispatches:
            break
        sizes.append(len(effects.dispatches))
        assert {w for w, _, _ in dispatched(effects)} == {0}
        pool.start(0)
        while pool.current:  # run the whole batch: no new batch before the last report (idle)
            pool.finish(0, at=2.0)
            if pool.current:
                assert not pool.take().dispatches
    assert sizes == [BATCH, BATCH, 3]
    assert [t for _, t, _ in pool.started] == [f"t{i:03}" for i in range(count)]


def test_backlog_is_dealt_evenly_and_in_order() -> None:
    table, pool = setup(3)
    for i in range(8):
        table.schedule(make(f"t{i}", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    effects = pool.take()
    batches: dict[int, list[str]] = {}
    for worker, task, _ in dispatched(effects):
        batches.setdefault(worker, []).append(task)
    assert sorted(len(b) for b in batches.values()) == [2, 3, 3]
    for batch in batches.values():
        assert batch == sorted(batch)  # each worker's batch keeps the FIFO order
    assert sorted(t for b in batches.values() for t in b) == [f"t{i}" for i in range(8)]
    firsts = sorted(b[0] for b in batches.values())
    assert firsts == ["t0", "t1", "t2"]  # the earliest runs start first, one per worker


def test_a_batch_shows_its_head_running_and_the_rest_scheduled() -> None:
    """A worker's current run is the first of its batch it has not reported: RUNNING from the hand-out on."""
    table, pool = setup(1)
    for name in "abc":
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    assert [status(table, t) for t in "abc"] == [RUNNING, SCHEDULED, SCHEDULED]
    assert [table.info(t).next_run_at for t in "abc"] == [None, 1.0, 1.0]
    assert table.running_count == 1
    assert table.infos() == [table.info(t) for t in "abc"]
    pool.start(0)
    pool.finish(0, at=1.5, start_next=False)  # "b" claimed before the report, not started yet
    assert [status(table, t) for t in "bc"] == [RUNNING, SCHEDULED]
    pool.start(0)
    assert [status(table, t) for t in "bc"] == [RUNNING, SCHEDULED]
    pool.finish(0, at=1.6)
    assert status(table, "c") is RUNNING
    pool.finish(0, at=1.7)
    assert (table.running_count, table.busy) == (0, False)


def test_at_most_workers_running() -> None:
    table, pool = setup(3)
    for i in range(10):
        table.schedule(make(f"t{i}", Once(0.0)), now=0.0)
    pool.take()
    pool.start_all()
    assert table.running_count == len(pool.current) == 3
    now = 0.0
    while pool.current:
        now += 1.0
        pool.finish(min(pool.current), at=now)
        pool.take()
        pool.start_all()
        holding = sum(pool.busy(w) for w in range(3))
        assert table.running_count == holding == len(pool.current) <= 3
    assert sorted(t for _, t, _ in pool.started) == sorted(f"t{i}" for i in range(10))
    assert table.is_settled(now)


def test_idle_worker_takes_over_unstarted_runs_behind_a_slow_one() -> None:
    table, pool = setup(2)
    for name in "abcd":
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    effects = pool.take()
    held = {w: [t for ww, t, _ in dispatched(effects) if ww == w] for w in (0, 1)}
    slow = next(w for w in held if "a" in held[w])
    fast = 1 - slow
    behind_slow = held[slow][1]
    assert pool.start(slow).task_id == "a"  # type: ignore[union-attr]
    pool.start(fast)
    pool.finish(fast, at=0.1)
    pool.take()
    pool.finish(fast, at=0.2)  # the fast worker falls idle; the slow one still holds an unstarted run
    effects = pool.take()
    assert dispatched(effects) == [(fast, behind_slow, 1)]
    assert pool.start(fast).task_id == behind_slow  # type: ignore[union-attr]
    pool.finish(slow, at=5.0)  # the slow worker finds its second run taken back: it is idle
    pool.finish(fast, at=5.0)
    assert not pool.current
    assert sorted(t for _, t, _ in pool.started) == ["a", "b", "c", "d"]
    assert not table.busy


def test_new_worker_takes_half_of_a_backlog() -> None:
    table, pool = setup(1)
    for i in range(BATCH):
        table.schedule(make(f"t{i:02}", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    assert len(pool.take().dispatches) == BATCH
    table.add_worker(1, now=1.0)
    effects = pool.take()
    assert dispatched(effects) == [(1, f"t{i:02}", 1) for i in range(BATCH // 2, BATCH)]
    assert pool.start(0).task_id == "t00"  # type: ignore[union-attr]
    assert [m.task_id for m in pool.held(0)] == [f"t{i:02}" for i in range(1, BATCH // 2)]
    ran = pool.run_everything(1.0)
    assert {t for w, t, _ in pool.started if w == 1} == {f"t{i:02}" for i in range(BATCH // 2, BATCH)}
    assert len(ran) == BATCH - 1  # every run once, t00 included above


def test_idle_worker_takes_from_the_batch_with_most_to_spare() -> None:
    table, pool = setup(3)
    for i in range(7):
        table.schedule(make(f"t{i}", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    assert [m.task_id for m in pool.held(0)] == ["t0", "t3", "t6"]
    assert [m.task_id for m in pool.held(1)] == ["t1", "t4"]
    assert [m.task_id for m in pool.held(2)] == ["t2", "t5"]
    pool.start(0)  # worker 0 spares t3 and t6; worker 1, not started yet, spares only t4
    pool.start(2)
    pool.finish(2, at=1.1)
    pool.take()
    pool.finish(2, at=1.2)  # worker 2 falls idle
    assert dispatched(pool.take()) == [(2, "t6", 1)]


def test_due_task_can_be_cancelled_while_waiting_and_never_runs() -> None:
    table, pool = setup(1)
    table.schedule(make("busy", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    waiting = table.schedule(make("waiting", Once(0.0)), now=0.0)
    pool.take()
    assert table.cancel("waiting", now=1.0) is True
    assert events(pool.take()) == [(CANCELLED, "waiting", None)]
    assert status(table, "waiting") is TaskStatus.CANCELLED
    ended(waiting, table)
    pool.finish(0, at=2.0)
    effects = pool.take()
    assert events(effects) == [(COMPLETED, "busy", 1)]
    assert not effects.dispatches
    assert table.is_settled(2.0)


def test_handed_run_not_started_can_be_cancelled_and_never_runs() -> None:
    table, pool = setup(1)
    for name in ("a", "b", "c"):
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    assert [t for _, t, _ in dispatched(pool.take())] == ["a", "b", "c"]  # one batch
    assert table.cancel("b", now=1.0) is True
    assert events(pool.take()) == [(CANCELLED, "b", None)]
    assert [t for _, t, _ in pool.run_everything(1.0)] == ["a", "c"]
    assert not table.busy


def test_cancelling_a_workers_only_run_frees_the_worker() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    assert table.busy
    assert table.cancel("a", now=0.0) is True
    assert not table.busy
    table.schedule(make("b", Once(0.0)), now=0.0)
    assert dispatched(pool.take()) == [(0, "b", 1)]
    assert [t for _, t, _ in pool.run_everything(0.0)] == ["b"]  # "a"'s claim was taken back


# -- cancel ---------------------------------------------------------------------------------------


def test_cancel_pending() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", FixedRate(1.0, 5.0)), now=0.0)
    assert table.cancel("a", now=1.0) is True
    assert a.token_state is TokenState.REVOKED  # decided; published once the owner takes the effects
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "a", None)]
    assert (effects.events[0].at, effects.events[0].final) == (1.0, True)
    assert effects.finished == [(a, None)]
    info = table.info("a")
    assert (info.status, info.next_run_at, info.run_count, info.end_reason) == (
        TaskStatus.CANCELLED,
        None,
        0,
        "cancelled",
    )
    ended(a, table)
    assert table.next_due() is None
    table.tick(now=100.0)
    assert not pool.take()
    assert table.cancel("a", now=101.0) is False  # already cancelled
    assert not pool.take()


@pytest.mark.parametrize("trigger", [FixedRate(1.0, 0.0), FixedDelay(1.0, 0.0)])
@pytest.mark.parametrize("fails", [False, True])
def test_cancel_running_recurring(trigger: FixedRate | FixedDelay, fails: bool) -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", trigger), now=0.0)
    pool.take()
    pool.start(0)
    assert table.cancel("r", now=0.5) is True
    assert not pool.take()  # the run goes on
    assert status(table, "r") is RUNNING
    assert r.token_state is TokenState.REVOKED  # no later run can start
    assert table.cancel("r", now=0.6) is False  # already cancelled
    pool.finish(0, at=0.7, error=ValueError() if fails else None, value="v")
    effects = pool.take()
    assert events(effects) == [(FAILED if fails else COMPLETED, "r", 1), (CANCELLED, "r", None)]
    assert [e.final for e in effects.events] == [False, True]
    assert effects.events[0].value == (None if fails else "v")
    assert effects.events[1].at == 0.7
    assert not effects.dispatches
    info = table.info("r")
    assert (info.status, info.run_count, info.next_run_at) == (TaskStatus.CANCELLED, 1, None)
    ended(r, table)
    assert table.next_due() is None
    table.tick(now=50.0)
    assert not pool.take()


def test_cancel_handed_recurring_before_it_is_claimed() -> None:
    table, pool = setup(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    assert table.cancel("r", now=0.0) is True
    assert events(pool.take()) == [(CANCELLED, "r", None)]
    assert pool.start(0) is None  # its claim was taken back
    assert table.info("r").run_count == 0
    assert not table.busy


@pytest.mark.parametrize("trigger", [Once(0.0), FixedRate(1.0, 0.0)])
def test_cancel_message_for_a_claimed_run_not_started_ends_the_task_at_once(trigger: Trigger) -> None:
    """The worker holds the claim, but the revoke found the token FREE: the run can never start."""
    table, pool = setup(1)
    a = table.schedule(make("a", trigger), now=0.0)
    pool.take()
    assert pool.claim(0) is not None
    assert table.cancel("a", now=0.1) is True
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "a", None)]
    assert (effects.events[0].at, effects.events[0].final) == (0.1, True)
    ended(a, table)
    assert table.busy  # the worker still holds the run: its Skipped report frees it
    assert pool.step(0, now=0.2) is None  # try_start fails: it reports Skipped
    assert pool.skipped == [(0, "a", 1, 0.2)]
    assert not pool.take()  # the task has ended: the report only frees the worker
    assert not table.busy
    assert pool.started == []
    assert (status(table, "a"), table.info("a").run_count) == (TaskStatus.CANCELLED, 0)
    table.schedule(make("b", Once(0.0)), now=1.0)
    assert pool.run_everything(1.0) == [(0, "b", 1)]


def test_skip_of_an_ended_task_hands_the_freed_worker_the_waiting_work() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    assert pool.claim(0) is not None
    table.schedule(make("b", Once(0.0)), now=0.0)  # due; waits for the only worker
    assert table.cancel("a", now=0.1) is True  # ends "a" at once: its claimed run cannot start
    pool.take()
    assert pool.step(0, now=0.2) is None  # Skipped: the worker is free
    assert dispatched(pool.take()) == [(0, "b", 1)]


@pytest.mark.parametrize("by", ["cancel", "caller"])
def test_a_recurring_run_that_ended_just_before_a_cancel_is_still_counted(by: str) -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    r.end_run()  # the worker's run has returned; its report is not sent yet
    if by == "cancel":
        assert table.cancel("r", now=0.5) is True
    else:
        report = revoke(r)
        assert report is not None
        table.cancelled(report, now=0.5)
    got = events(pool.take())
    pool.current.pop(0)
    table.completed(Completed(0, "r", 1, "v", 0.4, True), now=0.6)
    got += events(pool.take())
    assert got == [(COMPLETED, "r", 1), (CANCELLED, "r", None)]
    assert table.info("r").run_count == 1


def test_cancel_running_one_time_returns_false_and_it_completes() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    assert table.cancel("a", now=0.5) is False
    assert a.token_state is TokenState.TAKEN
    assert not pool.take()
    pool.finish(0, at=1.0)
    assert events(pool.take()) == [(COMPLETED, "a", 1)]
    assert status(table, "a") is TaskStatus.COMPLETED


# -- cancels decided through the task's token (``TaskHandle.cancel`` on a caller's thread) ---------


def test_token_revoked_while_pending_then_reported() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(10.0)), now=0.0)
    report = revoke(a)
    assert report is not None
    assert status(table, "a") is SCHEDULED  # the report is on its way
    table.cancelled(report, now=1.0)
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "a", None)]
    assert effects.events[0].at == 1.0
    ended(a, table)
    table.tick(now=20.0)
    assert not pool.take().dispatches
    assert table.next_due() is None


@pytest.mark.parametrize("trigger", [Once(0.0), FixedRate(1.0, 0.0)])
@pytest.mark.parametrize("report_first", [True, False])
def test_token_revoked_after_the_worker_claimed_the_run(trigger: Trigger, report_first: bool) -> None:
    """The worker claimed the run but had not started it: it skips the run, never starts it.

    With the report first, the task ends at once: the revoke found the token FREE, so the
    claimed run can never start, and the worker's ``Skipped`` then only frees the worker.
    """
    table, pool = setup(1)
    a = table.schedule(make("a", trigger), now=0.0)
    pool.take()
    assert pool.claim(0) is not None  # the worker claims "a"...
    report = revoke(a)  # ... and a caller's cancel revokes its token before the worker's try_start
    assert report is not None
    assert (report.task, report.mid_run) == (a, False)
    if report_first:
        table.cancelled(report, now=0.1)
        effects = pool.take()
        assert events(effects) == [(CANCELLED, "a", None)]  # the run cannot start: it ends at once
        assert effects.events[0].at == 0.1
        assert table.busy  # until its worker reports
    assert pool.step(0, now=0.2) is None  # try_start fails: Skipped
    if not report_first:
        effects = pool.take()
        assert events(effects) == [(CANCELLED, "a", None)]
        assert effects.events[0].at == 0.2
        table.cancelled(report, now=0.3)  # late: the task has ended, nothing happens
    assert not pool.take()
    assert not table.busy
    info = table.info("a")
    assert (info.status, info.run_count) == (TaskStatus.CANCELLED, 0)
    ended(a, table)
    table.schedule(make("b", Once(0.0)), now=1.0)
    assert pool.run_everything(1.0) == [(0, "b", 1)]


def test_token_taken_by_the_worker_means_a_one_time_cancel_loses() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    assert a.revoke() is TokenState.TAKEN  # the caller's cancel loses: no report
    assert table.cancel("a", now=0.5) is False
    pool.finish(0, at=1.0, value=7)
    assert events(pool.take()) == [(COMPLETED, "a", 1)]
    ended(a, table, 7)


@pytest.mark.parametrize("fails", [False, True])
@pytest.mark.parametrize("next_due_at_once", [False, True])
def test_recurring_token_revoked_mid_run_reported_after_the_run(fails: bool, next_due_at_once: bool) -> None:
    """The core hears of a caller's cancel only from its report: until then it runs the task as usual.

    A run that reports first is rescheduled; no later run starts (the token is revoked), and the
    task ends when the report arrives, or when its worker skips the next run, whichever is first.
    """
    table, pool = setup(1)
    r = table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    report = revoke(r)
    assert report is not None
    assert report.mid_run  # the run goes on; no further run
    finished_at = 1.0 if next_due_at_once else 0.5
    pool.finish(0, at=finished_at, error=ValueError() if fails else None)
    effects = pool.take()
    assert r.token_state is TokenState.REVOKED  # end_run left it revoked
    due = [(DUE, "r", 2)] if next_due_at_once else []
    assert events(effects) == [(FAILED if fails else COMPLETED, "r", 1), *due]
    if next_due_at_once:
        assert pool.start(0, now=1.1) is None  # its worker skips it: that ends the task
        assert events(pool.take()) == [(CANCELLED, "r", None)]
        table.cancelled(report, now=1.2)  # late: ignored
        assert not pool.take()
    else:
        assert (status(table, "r"), table.next_due()) == (SCHEDULED, 1.0)
        table.cancelled(report, now=0.6)
        effects = pool.take()
        assert events(effects) == [(CANCELLED, "r", None)]
        assert effects.events[0].at == 0.6
    assert table.next_due() is None
    table.tick(now=50.0)
    assert not pool.take()
    assert (status(table, "r"), table.info("r").run_count) == (TaskStatus.CANCELLED, 1)
    assert pool.started == [(0, "r", 1)]
    ended(r, table)


def test_recurring_token_revoked_mid_run_reported_before_the_run_ends() -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", FixedDelay(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    report = revoke(r)
    assert report is not None
    table.cancelled(report, now=0.2)
    assert not pool.take()
    assert status(table, "r") is RUNNING
    assert table.cancel("r", now=0.3) is False  # cancelling already
    pool.finish(0, at=0.5)
    assert events(pool.take()) == [(COMPLETED, "r", 1), (CANCELLED, "r", None)]
    ended(r, table)


def test_recurring_run_handed_after_its_token_was_revoked_is_skipped() -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", FixedDelay(1.0, 0.0)), now=0.0)
    pool.run_everything(0.0)  # run 1
    table.tick(now=1.0)
    pool.take()  # run 2 handed
    report = revoke(r)
    assert report is not None
    assert not report.mid_run
    assert pool.start(0, now=1.1) is None
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "r", None)]
    assert effects.events[0].at == 1.1
    assert table.info("r").run_count == 1
    table.cancelled(report, now=1.2)  # late: ignored
    assert not pool.take()


@pytest.mark.parametrize("revoked", [False, True])
def test_failure_limit_and_a_cancel_race_for_the_token(revoked: bool) -> None:
    """Ending a task after its last allowed failure takes the token; a cancel that revoked it first wins."""
    table, pool = setup(1)
    r = table.schedule(make("r", FixedRate(1.0, 0.0), max_consecutive_failures=1), now=0.0)
    pool.take()
    pool.start(0)
    report = revoke(r) if revoked else None
    pool.finish(0, at=0.5, error=ValueError())
    effects = pool.take()
    ending = [(CANCELLED, "r", None)] if revoked else []
    assert events(effects) == [(FAILED, "r", 1), *ending]
    assert [e.final for e in effects.events] == ([False, True] if revoked else [True])
    assert status(table, "r") is (TaskStatus.CANCELLED if revoked else TaskStatus.FAILED)
    assert r.revoke() is TokenState.FINISHED  # a cancel after the end loses
    if report is not None:
        table.cancelled(report, now=0.6)  # late: ignored
        assert not pool.take()


def test_cancel_message_loses_to_a_revoked_token_and_the_report_ends_the_task() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(10.0)), now=0.0)
    report = revoke(a)
    assert report is not None
    assert table.cancel("a", now=1.0) is False  # cancelled already, by the caller
    assert not pool.take()
    table.cancelled(report, now=2.0)
    assert events(pool.take()) == [(CANCELLED, "a", None)]


def test_cancelled_report_for_a_reused_id_is_ignored() -> None:
    table, pool = setup(1)
    old = table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    report = revoke(old)
    assert report is not None
    assert pool.start(0, now=0.5) is None  # its worker skips it: the old task ends
    assert events(pool.take()) == [(CANCELLED, "a", None)]
    new = table.schedule(make("a", Once(10.0)), now=1.0)
    table.cancelled(report, now=2.0)  # a late report about the old task
    assert not pool.take()
    assert status(table, "a") is SCHEDULED
    assert new.token_state is TokenState.FREE


def test_cancelled_report_in_a_batch_releases_what_is_due_first() -> None:
    table, pool = setup(1)
    table.schedule(make("busy", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    a = table.schedule(make("a", Once(1.0)), now=0.0)
    table.schedule(make("b", Once(0.5)), now=0.0)
    report = revoke(a)
    assert report is not None
    with table.batch(now=1.0):
        table.cancelled(report, now=1.0)
    effects = pool.take()
    assert events(effects) == [(DUE, "b", 1), (DUE, "a", 1), (CANCELLED, "a", None)]
    assert status(table, "b") is SCHEDULED  # due, waiting for the worker


def test_shut_down_sees_revoked_and_taken_tokens() -> None:
    table, pool = setup(2)
    revoked = table.schedule(make("revoked", Once(5.0)), now=0.0)
    table.schedule(make("running", Once(0.0)), now=0.0)
    table.schedule(make("pending", Once(5.0)), now=0.0)
    pool.take()
    pool.start_all()
    report = revoke(revoked)
    assert report is not None
    table.shut_down(now=1.0)
    assert events(pool.take()) == [(CANCELLED, "revoked", None), (CANCELLED, "pending", None)]
    assert status(table, "running") is RUNNING
    table.cancelled(report, now=1.5)  # after shutdown: already ended
    pool.finish(next(iter(pool.current)), at=2.0)
    assert events(pool.take()) == [(COMPLETED, "running", 1)]


def test_cancel_unknown_or_finished() -> None:
    table, pool = setup(1)
    assert table.cancel("nope", now=0.0) is False
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.run_everything(0.0)
    assert table.cancel("a", now=1.0) is False
    assert not pool.take()
    assert status(table, "a") is TaskStatus.COMPLETED


# -- recurring tasks and failures -------------------------------------------------------------------


def test_fixed_delay_runs_delay_after_finish() -> None:
    table, pool = setup(1)
    d = table.schedule(make("d", FixedDelay(2.0, 1.0)), now=0.0)
    assert table.next_due() == 1.0
    table.tick(now=1.0)
    pool.take()
    pool.start(0)
    assert d.token_state is TokenState.RUNNING
    pool.finish(0, at=1.5)
    assert d.token_state is TokenState.FREE  # the worker ended the run before reporting
    info = table.info("d")
    assert (info.status, info.next_run_at, table.next_due()) == (SCHEDULED, 3.5, 3.5)


def run_recurring(table: Timetable, pool: Pool, task_id: str, outcomes: list[bool]) -> None:
    """Run ``task_id`` once per outcome (True: returns, False: raises), one time unit apart."""
    now = table.next_due()
    assert now is not None
    for n, ok in enumerate(outcomes, start=1):
        table.tick(now=now)
        pool.take()
        msg = pool.start(0)
        assert msg is not None
        assert (msg.task_id, msg.run) == (task_id, n)
        pool.finish(0, at=now, error=None if ok else OSError(n))
        pool.take()
        now += 1.0


def test_recurring_counters_and_reset_on_success() -> None:
    table, pool = setup(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=-1.0)
    run_recurring(table, pool, "r", [False, False, True, False, True])
    info = table.info("r")
    assert (info.run_count, info.failure_count, info.consecutive_failures) == (5, 3, 0)
    assert isinstance(info.last_error, OSError)
    assert info.last_error.args == (4,)
    assert info.last_traceback == traceback_of(info.last_error)


@pytest.mark.parametrize("limit", [1, 3])
def test_max_consecutive_failures_stops_with_failed(limit: int) -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", FixedDelay(1.0, 0.0), max_consecutive_failures=limit), now=-1.0)
    # one success in between resets the streak
    run_recurring(table, pool, "r", [False] * (limit - 1) + [True] + [False] * limit)
    table.tick(now=1e6)
    assert not pool.take().dispatches
    info = table.info("r")
    assert info.status is TaskStatus.FAILED
    counters = (info.run_count, info.failure_count, info.consecutive_failures)
    assert counters == (2 * limit, 2 * limit - 1, limit)
    assert info.end_reason == f"stopped after {limit} consecutive failures (max_consecutive_failures={limit})"
    ended(r, table)
    assert table.live_count == 0


def test_max_failures_none_never_stops() -> None:
    table, pool = setup(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=-1.0)
    run_recurring(table, pool, "r", [False] * 50)
    info = table.info("r")
    assert (info.consecutive_failures, info.status) == (50, SCHEDULED)


# -- events ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "wanted",
    [frozenset(), frozenset({CANCELLED}), frozenset({STARTED, FAILED}), frozenset(EventKind)],
)
def test_only_wanted_events_are_built(wanted: frozenset[EventKind]) -> None:
    table = timetable(1, wanted=wanted)
    pool = Pool(table, announce=True)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    table.schedule(make("x", Once(0.5)), now=0.0)
    collected = events(pool.take())
    pool.start(0, now=0.05)
    table.cancel("r", now=0.1)
    pool.finish(0, at=0.2, error=OSError())
    table.tick(now=0.5)
    collected += events(pool.take())
    announce = {handed.run.announce for box in pool.inbox.values() for handed in box}
    pool.start(0, now=0.55)
    pool.finish(0, at=0.6)
    collected += events(pool.take())
    full = [
        (DUE, "r", 1),
        (STARTED, "r", 1),
        (FAILED, "r", 1),
        (CANCELLED, "r", None),
        (DUE, "x", 1),
        (STARTED, "x", 1),
        (COMPLETED, "x", 1),
    ]
    assert collected == [e for e in full if e[0] in wanted]
    assert announce == {STARTED in wanted}


def test_event_order_per_task_over_runs() -> None:
    table, pool = setup(1)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    got = pool.take().events
    pool.start(0)
    pool.finish(0, at=0.1, value="first")
    table.tick(now=1.0)
    got += pool.take().events
    pool.start(0)
    error = OSError()
    pool.finish(0, at=1.1, error=error)
    table.tick(now=2.0)
    got += pool.take().events
    pool.start(0)
    table.cancel("r", now=2.05)
    pool.finish(0, at=2.1, value="last")
    got += pool.take().events
    assert [(e.kind, e.run) for e in got] == [
        (DUE, 1),
        (COMPLETED, 1),
        (DUE, 2),
        (FAILED, 2),
        (DUE, 3),
        (COMPLETED, 3),
        (CANCELLED, None),
    ]
    assert [e.due_at for e in got] == [0.0, 0.0, 1.0, 1.0, 2.0, 2.0, None]
    assert [e.at for e in got] == [0.0, 0.1, 1.0, 1.1, 2.0, 2.1, 2.1]
    assert [e.final for e in got] == [False] * 6 + [True]
    assert [e.value for e in got] == [None, "first", None, None, None, "last", None]
    assert [(e.error, e.traceback) for e in got if e.kind is FAILED] == [(error, traceback_of(error))]
    assert all(e.error is e.traceback is None for e in got if e.kind is not FAILED)
    assert {e.name for e in got} == {"noop"}


def test_the_failure_that_reaches_the_limit_is_final() -> None:
    table, pool = setup(1)
    table.schedule(make("r", FixedRate(1.0, 0.0), max_consecutive_failures=2), now=-1.0)
    got = []
    for now in (0.0, 1.0):
        table.tick(now=now)
        got += pool.take().events
        pool.start(0)
        pool.finish(0, at=now, error=OSError())
        got += pool.take().events
    assert [(e.kind, e.run, e.final) for e in got] == [
        (DUE, 1, False),
        (FAILED, 1, False),
        (DUE, 2, False),
        (FAILED, 2, True),
    ]


def test_event_name_is_given_name() -> None:
    table = timetable(1)
    table.schedule(make("a", Once(0.0), name="nice"), now=0.0)
    effects = table.take_effects()
    table.started(Started(0, "a", 1, 0.0))
    effects.events += table.take_effects().events
    assert [e.name for e in effects.events] == ["nice", "nice"]  # DUE, STARTED
    assert table.info("a").name == "nice"


def test_started_report_publishes_started_for_a_handed_run_only() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    pool.start(0)
    table.started(Started(0, "a", 2, 1.25))  # a stale run number: ignored
    table.started(Started(1, "a", 1, 1.25))  # not this worker's run: ignored
    table.started(Started(0, "zzz", 1, 1.25))  # no such task: ignored
    assert events(pool.take()) == []
    table.started(Started(0, "a", 1, 1.25))
    effects = pool.take()
    assert events(effects) == [(STARTED, "a", 1)]
    assert (effects.events[0].at, effects.events[0].due_at, effects.events[0].final) == (1.25, 1.0, False)


def test_pool_reports_started_as_the_worker_does() -> None:
    table = timetable(1)
    pool = Pool(table, announce=True)
    table.schedule(make("a", Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    pool.start(0, now=1.5)
    effects = pool.take()
    assert events(effects) == [(STARTED, "a", 1)]
    assert effects.events[0].at == 1.5


# -- stale reports -------------------------------------------------------------------------------


def test_stale_reports_are_ignored() -> None:
    table, pool = setup(2)
    table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    ((worker, _, _),) = dispatched(pool.take())
    pool.start(worker)
    other = 1 - worker
    activity = table.activity
    table.completed(Completed(worker, "r", 2, None, 0.1), now=0.1)  # wrong run
    table.completed(Completed(worker, "r", 0, None, 0.1), now=0.1)  # wrong run
    table.completed(Completed(other, "r", 1, None, 0.1), now=0.1)  # wrong worker
    table.failed(Failed(other, "r", 1, OSError(), "", 0.1), now=0.1)  # wrong worker
    table.skipped(Skipped(other, "r", 1), now=0.1)  # wrong worker
    table.completed(Completed(worker, "zzz", 1, None, 0.1), now=0.1)  # wrong task
    table.completed(Completed(7, "r", 1, None, 0.1), now=0.1)  # unknown worker
    table.started(Started(7, "r", 1, 0.1))  # unknown worker
    assert not pool.take()
    assert table.activity == activity
    info = table.info("r")
    assert (info.status, info.run_count, info.failure_count) == (RUNNING, 0, 0)
    pool.finish(worker, at=0.2)
    assert events(pool.take()) == [(COMPLETED, "r", 1)]
    table.completed(Completed(worker, "r", 1, None, 0.3), now=0.3)  # duplicate
    table.skipped(Skipped(worker, "r", 1), now=0.3)  # duplicate
    assert not pool.take()
    assert table.info("r").run_count == 1


def test_report_for_a_later_run_of_the_batch_is_ignored() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=-1.0)
    table.schedule(make("b", Once(0.0)), now=-1.0)
    table.tick(now=0.0)
    assert [t for _, t, _ in dispatched(pool.take())] == ["a", "b"]
    table.completed(Completed(0, "b", 1, None, 0.0, False), now=0.0)  # "a" comes first
    assert not pool.take()
    assert [t for _, t, _ in pool.run_everything(0.0)] == ["a", "b"]


def test_activity_counts_what_happened() -> None:
    table, pool = setup(1)
    before = table.activity
    table.schedule(make("a", Once(5.0)), now=0.0)
    table.info("a")
    table.tick(now=1.0)
    assert table.activity == before  # nothing released, reported or ended
    table.tick(now=5.0)
    released = table.activity
    assert released > before
    pool.take()
    pool.start(0)
    pool.finish(0, at=5.0)
    assert table.activity > released


# -- duplicates, reuse, shutdown ----------------------------------------------------------------------


def test_duplicate_live_id_changes_nothing() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(5.0)), now=0.0)
    before = (table.infos(), table.heap_size, table.next_due())
    with pytest.raises(DuplicateTaskError, match="'a'"):
        table.schedule(make("a", Once(0.0)), now=1.0)
    assert (table.infos(), table.heap_size, table.next_due()) == before
    assert not pool.take()
    table.tick(now=5.0)  # still the original
    assert events(pool.take()) == [(DUE, "a", 1)]
    pool.start(0)
    with pytest.raises(DuplicateTaskError):  # a running task is live too
        table.schedule(make("a", Once(0.0)), now=6.0)


def test_id_reusable_after_finish() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.run_everything(0.0)
    table.schedule(make("a", FixedDelay(1.0, 3.0)), now=1.0)
    info = table.info("a")
    assert (info.status, info.run_count, info.next_run_at) == (SCHEDULED, 0, 3.0)
    assert table.cancel("a", now=1.0) is True
    table.schedule(make("a", Once(2.0)), now=1.0)
    pool.take()
    table.tick(now=2.0)
    assert dispatched(pool.take()) == [(0, "a", 1)]


def test_schedule_after_shut_down_raises() -> None:
    table = timetable(1)
    table.shut_down(now=0.0)
    assert table.closed
    with pytest.raises(SchedulerShutdownError):
        table.schedule(make("a", Once(0.0)), now=0.0)
    with pytest.raises(SchedulerShutdownError):
        table.add(TaskRecord.from_schedule(make("b", Once(0.0)), "b", now=0.0, wall_offset=0.0), now=0.0)
    assert table.find("a") is None
    assert not table.take_effects()


def test_shut_down_cancels_waiting_and_lets_running_finish() -> None:
    table, pool = setup(2)
    table.schedule(make("once", Once(0.0)), now=0.0)
    rec = table.schedule(make("rec", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start_all()  # both running
    table.schedule(make("ready", Once(0.0)), now=0.0)  # due, no worker free
    table.schedule(make("pending", FixedDelay(1.0, 10.0)), now=0.0)
    pool.take()
    table.shut_down(now=1.0)
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "ready", None), (CANCELLED, "pending", None)]
    assert not effects.dispatches
    assert status(table, "once") is status(table, "rec") is RUNNING
    assert rec.token_state is TokenState.REVOKED
    assert (table.next_due(), table.heap_size) == (None, 0)
    assert table.cancel("rec", now=1.0) is False  # it already ends after this run
    for worker in sorted(pool.current):
        pool.finish(worker, at=2.0, value=42)
    effects = pool.take()
    assert sorted(events(effects), key=str) == sorted(
        [(COMPLETED, "once", 1), (COMPLETED, "rec", 1), (CANCELLED, "rec", None)], key=str
    )
    kinds_of_rec = [k for k, t, _ in events(effects) if t == "rec"]
    assert kinds_of_rec == [COMPLETED, CANCELLED]
    assert not effects.dispatches
    assert (status(table, "once"), status(table, "rec")) == (TaskStatus.COMPLETED, TaskStatus.CANCELLED)
    assert (table.live_count, table.busy) == (0, False)
    assert table.is_settled(1e9)


def test_shut_down_takes_back_handed_runs_not_claimed() -> None:
    table, pool = setup(1)
    for name in ("a", "b"):
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    pool.start(0)  # "a" runs, "b" waits in the same batch
    table.shut_down(now=1.0)
    assert events(pool.take()) == [(CANCELLED, "b", None)]
    pool.finish(0, at=1.5)
    assert events(pool.take()) == [(COMPLETED, "a", 1)]
    assert pool.started == [(0, "a", 1)]
    assert not table.busy


@pytest.mark.parametrize("trigger", [Once(0.0), FixedRate(1.0, 0.0)])
def test_shut_down_waits_for_the_worker_of_a_claimed_run_not_started(trigger: Once | FixedRate) -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", trigger), now=0.0)
    pool.take()
    assert pool.claim(0) is not None
    table.shut_down(now=1.0)
    assert not pool.take()
    assert status(table, "a") is RUNNING  # ends when its worker reports
    assert a.token_state is TokenState.REVOKED
    assert pool.step(0, now=1.5) is None  # try_start fails: Skipped
    effects = pool.take()
    assert events(effects) == [(CANCELLED, "a", None)]
    assert effects.events[0].at == 1.5
    ended(a, table)
    assert (table.live_count, table.busy) == (0, False)


def test_abandon_ends_every_live_task_at_once() -> None:
    table, pool = setup(2)
    once = table.schedule(make("once", Once(0.0)), now=0.0)
    rec = table.schedule(make("rec", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start_all()  # both running
    ready = table.schedule(make("ready", Once(0.0)), now=0.0)  # due, no worker free
    pending = table.schedule(make("pending", Once(5.0)), now=0.0)
    pool.take()
    error = SchedulerShutdownError("stopped by force")
    table.abandon(error, now=2.0)
    effects = pool.take()
    assert events(effects) == [
        (FAILED, "once", 1),  # its run started: its outcome will never be known
        (CANCELLED, "rec", None),
        (CANCELLED, "ready", None),
        (CANCELLED, "pending", None),
    ]
    assert all(e.final for e in effects.events)
    assert (effects.events[0].error, effects.events[0].at) == (error, 2.0)
    info = table.info("once")
    assert (info.status, info.last_error, info.run_count) == (TaskStatus.FAILED, error, 1)
    for record in (once, rec, ready, pending):
        ended(record, table)
    assert [status(table, t) for t in ("rec", "ready", "pending")] == [TaskStatus.CANCELLED] * 3
    assert table.closed
    assert (table.live_count, table.busy, table.heap_size, table.next_due()) == (0, False, 0, None)
    for worker in sorted(pool.current):  # late reports change nothing
        pool.finish(worker, at=3.0)
    assert not pool.take()
    assert table.info("once").run_count == 1
    with pytest.raises(SchedulerShutdownError):
        table.schedule(make("new", Once(0.0)), now=3.0)


# -- history and final states ---------------------------------------------------------------------


def test_history_limit_evicts_oldest() -> None:
    table = timetable(1, history=3)
    for i in range(5):
        table.schedule(make(f"t{i}", Once(10.0)), now=0.0)
    for i in [3, 0, 4, 1]:
        table.cancel(f"t{i}", now=1.0)
    assert table.find("t3") is None
    with pytest.raises(UnknownTaskError, match="t3"):
        table.info("t3")
    assert [table.info(t).status for t in ("t0", "t4", "t1")] == [TaskStatus.CANCELLED] * 3
    assert table.info("t2").status is SCHEDULED  # live tasks are never evicted
    table.cancel("t2", now=1.0)
    assert table.find("t0") is None
    assert table.find("t2") is not None


def test_history_reused_id_is_refreshed() -> None:
    table = timetable(1, history=2)
    for name in ["a", "b", "a", "c"]:
        table.schedule(make(name, Once(5.0)), now=0.0)
        table.cancel(name, now=0.0)
    assert table.find("b") is None
    assert table.find("a") is not None
    assert table.find("c") is not None


def test_history_zero_keeps_nothing() -> None:
    table, pool = setup(1, history=0)
    a = table.schedule(make("a", Once(0.0)), now=0.0)
    assert table.find("a") is not None  # live
    pool.run_everything(0.0)
    assert table.find("a") is None
    with pytest.raises(UnknownTaskError):
        table.info("a")
    assert a.token_state is TokenState.FINISHED  # its record still learns its end
    assert a.snapshot().status is TaskStatus.COMPLETED


def test_unknown_task_error_is_a_key_error_with_readable_message() -> None:
    table = timetable(1)
    with pytest.raises(KeyError) as caught:
        table.info("ghost")
    assert str(caught.value) == "no task with id 'ghost'"


def test_infos_in_scheduling_order_live_only() -> None:
    table = timetable(1)
    for name in "zyx":
        table.schedule(make(name, Once(5.0)), now=0.0)
    table.cancel("y", now=0.0)
    assert [i.task_id for i in table.infos()] == ["z", "x"]


def test_snapshots_show_wall_time_only_when_asked_and_scheduled() -> None:
    table, pool = setup(1)
    offset = 1_700_000_000.0
    table.schedule(make("a", Once(5.0)), now=0.0)
    table.schedule(make("far", Once(1e300)), now=0.0)
    assert table.info("a").next_run_wall is None
    assert table.info("a", wall_offset=offset).next_run_wall == datetime.fromtimestamp(offset + 5.0, UTC)
    assert table.info("far", wall_offset=offset).next_run_wall is None  # beyond what a datetime shows
    assert [i.next_run_wall for i in table.infos(wall_offset=offset)] == [
        datetime.fromtimestamp(offset + 5.0, UTC),
        None,
    ]
    table.tick(now=5.0)
    pool.take()
    assert table.info("a", wall_offset=offset).next_run_wall is None  # running: no next run


def test_final_states_handed_over_once_per_task() -> None:
    table, pool = setup(2)
    done = table.schedule(make("done", Once(0.0)), now=0.0)
    cancelled = table.schedule(make("cancelled", Once(9.0)), now=0.0)
    shut = table.schedule(make("shut", FixedRate(1.0, 5.0)), now=0.0)
    assert not pool.take().finished
    pool.start_all()
    pool.finish(0, at=1.0, value="result")
    table.cancel("cancelled", now=1.0)
    table.cancel("cancelled", now=1.0)
    table.shut_down(now=2.0)
    table.shut_down(now=3.0)
    finished = table.take_effects().finished
    got = [(record, record.snapshot().status, outcome) for record, outcome in finished]
    assert got == [
        (done, TaskStatus.COMPLETED, "result"),
        (cancelled, TaskStatus.CANCELLED, None),
        (shut, TaskStatus.CANCELLED, None),
    ]
    for record, outcome in finished:
        record.finish(outcome)
        ended(record, table, outcome)
    assert not table.take_effects()


def test_final_state_does_not_change_when_id_is_reused() -> None:
    table, pool = setup(1)
    old = table.schedule(make("a", Once(0.0)), now=0.0)
    pool.run_everything(0.0)
    new = table.schedule(make("a", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=0.5, error=OSError())
    info = old.snapshot()
    assert (info.status, info.run_count, info.failure_count) == (TaskStatus.COMPLETED, 1, 0)
    assert table.tasks["a"] is new
    assert table.info("a").failure_count == 1


def test_a_finished_record_drops_the_users_objects() -> None:
    table, pool = setup(1)
    a = table.schedule(make("a", Once(0.0), args=([1],), kwargs={"k": object()}), now=0.0)
    pool.run_everything(0.0)
    assert (a.fn, a.args, a.kwargs, a.claim) == (None, None, None, None)
    assert a.snapshot().name == "noop"  # kept: the name snapshots show


# -- heap compaction -----------------------------------------------------------------------------------


def assert_heap_bounded(table: Timetable) -> None:
    assert table.heap_size <= 2 * table.live_count + COMPACT_MIN_STALE, (table.heap_size, table.live_count)


def test_compaction_after_mass_cancel() -> None:
    table, pool = setup(1, wanted=frozenset())
    for i in range(10_000):
        table.schedule(make(f"t{i}", Once(1000.0 + i)), now=0.0)
    assert table.heap_size == 10_000
    for i in range(9_000):
        assert table.cancel(f"t{i}", now=0.0)
        assert_heap_bounded(table)
    assert table.live_count == 1_000
    assert table.heap_size <= 2 * 1_000
    assert table.next_due() == 1000.0 + 9_000
    table.tick(now=1000.0 + 9_000)
    assert dispatched(pool.take()) == [(0, "t9000", 1)]


def test_compaction_under_churn() -> None:
    table = timetable(1, wanted=frozenset())
    table.schedule(make("keep", Once(1e9)), now=0.0)
    peak = 0
    for i in range(100_000):
        table.schedule(make(f"c{i}", FixedRate(1.0, 10.0 + i % 7)), now=0.0)
        table.cancel(f"c{i}", now=0.0)
        peak = max(peak, table.heap_size)
    assert peak <= COMPACT_MIN_STALE + 2
    assert table.live_count == 1
    assert table.next_due() == 1e9


def test_stale_entries_dropped_when_they_surface() -> None:
    table, pool = setup(1, wanted=frozenset())
    for i in range(10):
        table.schedule(make(f"t{i}", Once(float(i))), now=-1.0)
    for i in range(0, 10, 2):
        table.cancel(f"t{i}", now=-1.0)
    assert table.heap_size == 10
    assert table.next_due() == 1.0
    table.tick(now=4.5)
    assert [t for _, t, _ in dispatched(pool.take())] == ["t1", "t3"]
    assert table.heap_size == 5  # t0, t2, t4 dropped; t1, t3 released; t5..t9 stay


# -- workers ---------------------------------------------------------------------------------------


def test_worker_lost_fails_the_started_run_and_worker_is_not_reused() -> None:
    table, pool = setup(2)
    table.schedule(make("a", Once(0.0)), now=0.0)
    ((worker, _, _),) = dispatched(pool.take())
    pool.start(worker)
    error = WorkerLostError("gone")
    pool.lose(worker)
    table.worker_lost(worker, error, now=1.0)
    effects = pool.take()
    assert events(effects) == [(FAILED, "a", 1)]
    assert (effects.events[0].error, effects.events[0].at, effects.events[0].final) == (error, 1.0, True)
    info = table.info("a")
    assert (info.status, info.last_error) == (TaskStatus.FAILED, error)
    table.completed(Completed(worker, "a", 1, None, 1.5), now=1.5)  # a late report is stale
    assert not pool.take()
    assert not table.busy
    for i in range(3):
        table.schedule(make(f"b{i}", Once(2.0)), now=2.0)
    assert {w for w, _, _ in dispatched(pool.take())} == {1 - worker}
    table.add_worker(worker, now=3.0)
    new = dispatched(pool.take())
    assert new
    assert {w for w, _, _ in new} == {worker}
    table.add_worker(worker, now=3.0)  # busy: not idle twice
    assert not pool.take()
    assert sorted(t for _, t, _ in pool.run_everything(3.0)) == ["b0", "b1", "b2"]


def test_worker_lost_gives_back_runs_it_had_not_claimed() -> None:
    table, pool = setup(1)
    for name in ("a", "b", "c"):
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    pool.start(0)  # "a" runs; "b" and "c" wait in its batch
    pool.lose(0)
    table.worker_lost(0, WorkerLostError("gone"), now=2.0)
    effects = pool.take()
    assert events(effects) == [(FAILED, "a", 1)]
    assert not effects.dispatches
    assert (status(table, "b"), status(table, "c")) == (SCHEDULED, SCHEDULED)
    assert (table.busy, table.is_settled(2.0)) == (False, True)
    table.add_worker(0, now=2.0)
    assert [t for _, t, _ in pool.run_everything(2.0)] == ["b", "c"]
    assert (table.info("b").run_count, table.info("c").run_count) == (1, 1)


def test_worker_lost_holding_a_claimed_run_fails_it() -> None:
    """The core cannot tell a claimed run from a started one: it ends the way a started run would."""
    table, pool = setup(1)
    for name in ("a", "b"):
        table.schedule(make(name, Once(1.0)), now=0.0)
    table.tick(now=1.0)
    pool.take()
    pool.start(0)
    pool.finish(0, at=1.5, start_next=False)  # "b" claimed, not started
    pool.take()
    pool.lose(0)
    table.worker_lost(0, WorkerLostError("gone"), now=2.0)
    assert events(pool.take()) == [(FAILED, "b", 1)]
    assert pool.started == [(0, "a", 1)]


def test_worker_lost_before_starting_anything_fails_nothing() -> None:
    table, pool = setup(2)
    table.schedule(make("a", Once(0.0)), now=0.0)
    ((worker, _, _),) = dispatched(pool.take())
    pool.lose(worker)
    table.worker_lost(worker, WorkerLostError("gone"), now=0.0)
    effects = pool.take()
    assert not effects.events
    assert dispatched(effects) == [(1 - worker, "a", 1)]  # straight to the other worker
    assert table.info("a").failure_count == 0


def test_idle_worker_lost_is_not_used() -> None:
    table, pool = setup(1)
    table.worker_lost(0, WorkerLostError("gone"), now=0.0)
    table.worker_lost(0, WorkerLostError("again"), now=0.0)  # unknown now: ignored
    table.schedule(make("a", Once(0.0)), now=0.0)
    effects = pool.take()
    assert not effects.dispatches
    assert events(effects) == [(DUE, "a", 1)]
    table.add_worker(0, now=1.0)
    table.add_worker(0, now=1.0)  # idempotent
    assert dispatched(pool.take()) == [(0, "a", 1)]
    table.schedule(make("b", Once(0.0)), now=1.0)
    assert not pool.take().dispatches


def test_add_new_worker_grows_pool() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    table.schedule(make("b", Once(0.0)), now=0.0)
    assert not pool.take().dispatches
    table.add_worker(5, now=0.0)
    assert dispatched(pool.take()) == [(5, "b", 1)]


def test_worker_lost_with_backlog_does_not_hand_work_to_the_lost_worker() -> None:
    table, pool = setup(1)
    table.schedule(make("a", Once(0.0)), now=0.0)
    pool.take()
    pool.start(0)
    table.schedule(make("b", Once(0.0)), now=0.0)  # waits for the only worker
    pool.take()
    pool.lose(0)
    table.worker_lost(0, WorkerLostError("gone"), now=1.0)
    effects = pool.take()
    assert not effects.dispatches
    assert events(effects) == [(FAILED, "a", 1)]
    assert status(table, "b") is SCHEDULED
    table.add_worker(0, now=1.0)
    assert dispatched(pool.take()) == [(0, "b", 1)]


def test_worker_lost_mid_recurring_run_then_its_next_run_goes_to_the_new_worker() -> None:
    table, pool = setup(1)
    r = table.schedule(make("r", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    pool.lose(0)  # the dying worker's finally still ended the run (end_run)
    table.worker_lost(0, WorkerLostError("gone"), now=1.0)  # slot 1.0 is due at once
    assert r.token_state is TokenState.FREE
    effects = pool.take()
    assert not effects.dispatches
    assert events(effects) == [(FAILED, "r", 1), (DUE, "r", 2)]
    table.add_worker(0, now=1.0)
    assert dispatched(pool.take()) == [(0, "r", 2)]
    assert pool.start(0, now=1.0) is not None  # it runs again
    pool.finish(0, at=1.5)
    assert events(pool.take()) == [(COMPLETED, "r", 2)]


@pytest.mark.parametrize("revoked", [False, True])
def test_worker_lost_mid_recurring_run_counts_toward_the_failure_limit(revoked: bool) -> None:
    """The dying worker ended its run (its ``finally``) before the scheduler heard it died."""
    table, pool = setup(1)
    r = table.schedule(make("r", FixedRate(1.0, 0.0), max_consecutive_failures=1), now=0.0)
    pool.take()
    pool.start(0)
    report = revoke(r) if revoked else None
    pool.lose(0)
    table.worker_lost(0, WorkerLostError("gone"), now=0.5)
    effects = pool.take()
    ending = [(CANCELLED, "r", None)] if revoked else []  # a cancel that won the token first wins
    assert events(effects) == [(FAILED, "r", 1), *ending]
    assert status(table, "r") is (TaskStatus.CANCELLED if revoked else TaskStatus.FAILED)
    if report is not None:
        table.cancelled(report, now=0.6)  # late: ignored
        assert not pool.take()
    ended(r, table)


# -- batch(): several commands and reports, one hand-out -------------------------------------------


def test_batch_hands_out_once_at_the_end() -> None:
    table, pool = setup(2)
    with table.batch(now=1.0):
        for name in "abcd":
            table.schedule(make(name, Once(0.0)), now=1.0)
        effects = pool.take()
        assert not effects.dispatches
        assert not effects.events  # nothing released yet either
    effects = pool.take()
    assert events(effects) == [(DUE, name, 1) for name in "abcd"]
    batches: dict[int, list[str]] = {}
    for worker, task, _ in dispatched(effects):
        batches.setdefault(worker, []).append(task)
    assert sorted(batches.values()) == [["a", "c"], ["b", "d"]]  # dealt evenly, FIFO per worker
    assert sorted(t for _, t, _ in pool.run_everything(1.0)) == ["a", "b", "c", "d"]


def test_batch_releases_in_due_order() -> None:
    table, pool = setup(1)
    with table.batch(now=10.0):
        table.schedule(make("late", Once(5.0)), now=10.0)
        table.schedule(make("early", Once(1.0)), now=10.0)
    assert [t for _, t, _ in dispatched(pool.take())] == ["early", "late"]


def test_batch_with_reports_gives_freed_workers_new_work() -> None:
    table, pool = setup(1)
    table.schedule(make("a", FixedRate(1.0, 0.0)), now=0.0)
    pool.take()
    pool.start(0)
    with table.batch(now=1.0):
        pool.finish(0, at=1.0)  # idle now, and "a" is due again at 1.0
        table.schedule(make("b", Once(0.5)), now=1.0)
        assert not pool.take().dispatches
    effects = pool.take()
    assert [t for _, t, _ in dispatched(effects)] == ["b", "a"]  # "b" was due first
    assert [(k, t, r) for k, t, r in events(effects) if k is DUE] == [(DUE, "b", 1), (DUE, "a", 2)]


def test_batch_releases_even_when_the_body_raises() -> None:
    table, pool = setup(1)

    def schedule_then_fail() -> None:
        with table.batch(now=0.0):
            table.schedule(make("a", Once(0.0)), now=0.0)
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        schedule_then_fail()
    assert dispatched(pool.take()) == [(0, "a", 1)]
    table.schedule(make("b", Once(0.0)), now=0.0)  # not deferred any more
    assert events(pool.take()) == [(DUE, "b", 1)]
    assert [t for _, t, _ in pool.run_everything(0.0)] == ["a", "b"]


def test_effects_taken_earlier_never_change() -> None:
    table = timetable(1)
    empty = table.take_effects()
    table.schedule(make("a", Once(0.0)), now=0.0)
    later = table.take_effects()
    assert dispatched(later) == [(0, "a", 1)]
    assert not empty


def test_cancelled_report_is_compared_by_mid_run_only() -> None:
    """Two reports about different tasks compare equal: a report is matched to its task by identity."""
    table = timetable(1)
    a = table.schedule(make("a", Once(5.0)), now=0.0)
    b = table.schedule(make("b", Once(5.0)), now=0.0)
    assert Cancelled(a) == Cancelled(b)
    table.cancelled(Cancelled(b), now=1.0)
    assert (status(table, "a"), status(table, "b")) == (SCHEDULED, TaskStatus.CANCELLED)
